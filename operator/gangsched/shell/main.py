"""Running the operator: the runtime, its liveness endpoint, and kopf for its login.

Every object the core observes (pods, nodes, Applications, PodGroups, Queues) comes
through the runtime's own reflectors (see :mod:`gangsched.shell.watch` for why: a kopf
relist reports no deletions, and one source per object keeps the core consistent). The
scheduling loop runs only while this replica holds the leader Lease.

kopf logs in through :func:`build_registry`'s login handler, which hands it the same
refreshing credentials as the runtime's client (kopf asks again on a 401 and when the
token's expiration passes). The liveness endpoint is served here, not by kopf: it fails
when kopf's tasks ended, a supervised task failed, or the loop, the Lease or a watch
stopped making progress (see :mod:`gangsched.shell.health`). :func:`operate` says why
the operator must exit non-zero, and ``gangsched run`` does so, so that the kubelet
restarts it.

Start-up, in the order the first binds need things:

1. the connection and the client (aiohttp), then (without leader election) the first
   page of every list the runtime starts with (:data:`FIRST_LISTS`) is asked for at
   once, read ahead while
2. the runtime, the core and the translation are imported, in a thread (0.15 to 0.25 s
   of CPU from bytecode, during which the API server prepares the pages);
3. the runtime lists (reading those pages, then the rest) and schedules. A replica that
   elects a leader asks for all its lists at once when it holds the Lease.
4. the first cycle's binds are carried out as the core decides them, not at its end
   (:mod:`gangsched.shell.early`, with :data:`SWITCH_INTERVAL`).

Python's cyclic garbage collector is paused until then too: start-up makes hundreds of
thousands of objects that live on (modules, then the cluster's state) and next to no
reference cycles, and each collection on the way walked them all again (a tenth of
the CPU of a large first list). Once the first cycle is out, what start-up left is
moved out of the collector's way for good (``gc.freeze``) and it runs again.

Nothing waits for kopf nor the metrics endpoint. The metrics endpoint starts once the
first cycle has dispatched its decisions (or after :data:`KOPF_START_DELAY` seconds, for
a replica that does not lead), so that the first lists and the first binds are not
behind it. kopf's import (about half a second of CPU, in a thread that takes the
interpreter's lock from the event loop as much as the core's thread does) waits longer:
until the binds are done for now too (none queued or under way, none submitted or ended
for :data:`BINDS_SETTLE` seconds), at most :data:`KOPF_START_LIMIT` seconds from the
start. Started after 2 s, it took about as much CPU as the event loop in the first
seconds of binding a backlog of 3,000 pods. kopf only logs in and applies its settings:
the runtime's own reflectors watch every kind, and the liveness endpoint is served here
(from the start, when asked for).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import importlib
import logging
import signal
import sys
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gangsched.shell import logs
from gangsched.shell.client import KubeClient, load_connection
from gangsched.shell.health import Health, HealthServer, fresh
from gangsched.shell.settings import OperatorSettings

if TYPE_CHECKING:
    import kopf

    from gangsched.core.values.profile import ProfileConfig
    from gangsched.shell.dashboard import Dashboard
    from gangsched.shell.metrics import MetricsServer
    from gangsched.shell.runtime import Runtime

log = logging.getLogger(__name__)

KOPF_START_DELAY = 2.0
"""Seconds after which kopf and the metrics endpoint start even if no cycle ran yet (a
replica that waits for the Lease)."""

KOPF_START_LIMIT = 30.0
"""Seconds from the start after which kopf starts even while binds go on."""

BINDS_SETTLE = 0.1
"""Seconds without a bind submitted or ended after which kopf may start (the next
cycle's binds follow within that while a backlog is bound)."""

FIRST_LISTS = (
    "/apis/scheduling.k8s.io/v1/priorityclasses",
    "/apis/gangsched.io/v1alpha1/queues",
    "/apis/gangsched.io/v1alpha1/applications",
    "/apis/gangsched.io/v1alpha1/podgroups",
    "/apis/scheduling.x-k8s.io/v1alpha1/podgroups",
    "/apis/scheduling.volcano.sh/v1beta1/podgroups",
    "/api/v1/persistentvolumes",
    "/api/v1/persistentvolumeclaims",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/storage.k8s.io/v1/csinodes",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
    "/apis/resource.k8s.io/v1/resourceclaims",
    "/api/v1/namespaces",
    "/api/v1/nodes",
    "/api/v1/pods",
)
"""What :meth:`Runtime.sync <gangsched.shell.runtime.Runtime.sync>` lists, in its order
(a test keeps them alike), asked for before the runtime is imported. Written out here,
not gathered from the modules that watch them: those import the core."""


def build_registry(runtime: Runtime) -> kopf.OperatorRegistry:
    """The kopf handlers, bound to one runtime: settings and login. No resource handlers:
    the runtime's reflectors watch every kind it needs."""
    import kopf

    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False  # the handlers only relay: gangsched posts Events
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        c = runtime.client.connection
        credentials = runtime.client.credentials
        if credentials.refreshing:
            credentials.invalidate()  # kopf asks after a 401 or expiry: obtain it afresh
        token = await credentials.token()
        return kopf.ConnectionInfo(
            server=c.host, token=token, ca_path=c.ca_file, certificate_path=c.cert_file,
            private_key_path=c.key_file, insecure=not c.verify,
            scheme="Bearer" if token else None, expiration=credentials.expiration,
        )


    return registry


def build_health(runtime: Runtime, kopf_task: asyncio.Task[None] | None) -> Health:
    """The liveness checks of one replica (see :mod:`gangsched.shell.health`)."""
    settings, now = runtime.settings, runtime.monotonic
    health = Health()
    health.add("supervision", lambda: runtime.failed)
    if kopf_task is not None:
        health.add("kopf", lambda: "kopf stopped" if kopf_task.done() else "")
    health.add("loop", fresh("scheduling cycle",
                             lambda: runtime.last_cycle if runtime.leading.is_set() else None,
                             now, settings.liveness_stale))
    elector = runtime.elector
    if elector is not None:
        health.add("lease", fresh("lease attempt", lambda: elector.last_attempt, now,
                                  settings.liveness_stale))

    def watches() -> str:
        if not runtime.leading.is_set():
            return ""
        for path, seen in sorted(runtime.client.watch_activity.items()):
            if now() - seen > settings.liveness_stale:
                return f"watch {path} silent for {now() - seen:.0f}s"
        return ""

    health.add("watches", watches)
    return health


SWITCH_INTERVAL = 0.0005
"""Seconds a thread that holds the interpreter's lock keeps it while another waits for
it (Python's default is 5 ms). While the core's thread works through a long cycle, the
event loop needs the lock at every step of a bind's request (each wait on the sockets
gives it up): at 5 ms a step, the binds of a cycle's first placements, carried out
early (:mod:`gangsched.shell.early`), came back only as the cycle ended. At 0.5 ms the
first of 3,000 binds on 500 nodes is served about 70 ms into the cycle instead of 400;
the core's cycle gets longer by what the loop does meanwhile, no more."""


async def operate(settings: OperatorSettings, stop: asyncio.Event, *,
                  kubeconfig: str | None = None, liveness: str | None = None,
                  clock: Callable[[], float] = time.time,
                  monotonic: Callable[[], float] = time.monotonic,
                  started: Callable[[Runtime], None] | None = None) -> str:
    """Run kopf and the runtime until ``stop`` is set, leadership is lost or a
    supervised task fails. Returns why the operator must exit non-zero ("" if not)."""
    collecting = gc.isenabled()
    gc.disable()  # until the first cycle is out (see the module docstring)
    switching = sys.getswitchinterval()
    sys.setswitchinterval(min(switching, SWITCH_INTERVAL))
    try:
        return await _operate(settings, stop, kubeconfig=kubeconfig, liveness=liveness,
                              clock=clock, monotonic=monotonic, started=started,
                              collecting=collecting)
    finally:
        sys.setswitchinterval(switching)
        if collecting:
            gc.enable()


async def _operate(settings: OperatorSettings, stop: asyncio.Event, *,
                   kubeconfig: str | None, liveness: str | None,
                   clock: Callable[[], float], monotonic: Callable[[], float],
                   started: Callable[[Runtime], None] | None, collecting: bool) -> str:
    connection = await load_connection(kubeconfig, token_refresh=settings.token_refresh)
    async with KubeClient(connection, max_connections=settings.max_connections,
                          timeout=settings.request_timeout, qps=settings.qps,
                          burst=settings.burst, monotonic=monotonic,
                          user_agent=f"gangsched ({settings.identity})") as client:
        if not settings.leader_election:
            # The only replica: nothing is written meanwhile by another scheduler. (A
            # replica that elects lists once it holds the Lease, after the last writes
            # of the one before it.)
            for path in FIRST_LISTS:
                client.prefetch(path)
        runtime_module = await asyncio.to_thread(importlib.import_module,
                                                 "gangsched.shell.runtime")
        runtime: Runtime = runtime_module.Runtime(client, settings, clock=clock,
                                                  monotonic=monotonic)
        if started is not None:
            started(runtime)
        metrics: list[MetricsServer | Dashboard] = []
        kopf_task = asyncio.create_task(_after_start(runtime, stop, metrics, collecting),
                                        name="kopf")
        runtime.health = build_health(runtime, kopf_task)
        health = await _serve_health(runtime.health, liveness)
        try:
            await runtime.run(stop)
        finally:
            stop.set()
            done, _ = await asyncio.wait({kopf_task}, timeout=settings.shutdown_timeout)
            if not done:
                kopf_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await kopf_task
            for server in (*metrics, health):
                if server is not None:
                    await server.stop()
        return runtime.failed


async def _serve_health(health: Health, liveness: str | None) -> HealthServer | None:
    """Serve the liveness endpoint at ``liveness`` (``http://host:port/path``; none if
    None). A URL that is not ``http`` is a usage error (ValueError)."""
    if not liveness:
        return None
    parts = urllib.parse.urlsplit(liveness)
    if parts.scheme != "http":
        raise ValueError(f"the liveness endpoint must be http://host:port/path, got {liveness}")
    server = HealthServer(health, host=parts.hostname or "0.0.0.0",
                          port=80 if parts.port is None else parts.port,
                          path=parts.path or "/healthz")
    await server.start()
    return server


async def _serve_metrics(runtime: Runtime, port: int) -> MetricsServer | None:
    """Serve ``/metrics`` on ``port`` (none for 0). A port that cannot be bound is logged:
    scheduling matters more than its metrics."""
    if not port:
        return None
    from gangsched.shell.metrics import MetricsServer

    server = MetricsServer(runtime.metrics, port=port)
    try:
        await server.start()
    except OSError as error:
        log.error("cannot serve metrics on port %d: %s; running without them", port, error)
        return None
    return server


async def _serve_dashboard(runtime: Runtime, port: int) -> Dashboard | None:
    """Serve the web dashboard on ``port`` (none for 0); a port that cannot be bound is
    logged, as for the metrics."""
    if not port:
        return None
    from gangsched.shell.dashboard import Dashboard

    server = Dashboard(runtime, port=port)
    try:
        await server.start()
    except OSError as error:
        log.error("cannot serve the dashboard on port %d: %s; running without it", port, error)
        return None
    return server


async def _after_start(runtime: Runtime, stop: asyncio.Event,
                       metrics: list[MetricsServer | Dashboard], collecting: bool) -> None:
    """Once the first cycle is out (see the module docstring): collect garbage again
    (if ``collecting``), serve the metrics (the server is added to ``metrics``), import
    kopf in a thread and run it; only the first if ``stop`` is set first."""
    loop = asyncio.get_running_loop()
    began = loop.time()
    waiters = [asyncio.create_task(e.wait()) for e in (runtime.cycled, stop)]
    try:
        await asyncio.wait(waiters, timeout=KOPF_START_DELAY,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if collecting:
        gc.freeze()
        gc.enable()
    if stop.is_set():
        return
    server = await _serve_metrics(runtime, runtime.settings.metrics_port)
    if server is not None:
        metrics.append(server)
    dashboard = await _serve_dashboard(runtime, runtime.settings.dashboard_port)
    if dashboard is not None:
        metrics.append(dashboard)
    await _binds_done(runtime, stop, began + KOPF_START_LIMIT)
    if stop.is_set():
        return
    await asyncio.to_thread(importlib.import_module, "kopf")
    if stop.is_set():
        return
    await _kopf(build_registry(runtime), stop)


async def _binds_done(runtime: Runtime, stop: asyncio.Event, deadline: float) -> None:
    """Wait until the runtime's binds are done for now (see the module docstring), or
    ``stop`` is set, or the loop's clock reaches ``deadline``."""
    loop = asyncio.get_running_loop()
    binds = runtime.binds
    while not stop.is_set() and loop.time() < deadline:
        if not runtime.leading.is_set():
            return  # a replica that waits for the Lease binds nothing
        if (runtime.cycled.is_set() and not binds.busy
                and loop.time() - binds.active_at >= BINDS_SETTLE):
            return
        await asyncio.sleep(BINDS_SETTLE / 2)


async def _kopf(registry: kopf.OperatorRegistry, stop: asyncio.Event) -> None:
    """Run kopf's root tasks until one ends; then the whole operator stops.

    Not ``kopf.operator()``: when it exits it cancels every task created after its
    start-up, whoever made them (here the runtime's workers and Lease renewal, which
    would leave a loop that believes it leads). Its root tasks clean up their own
    workers. kopf ending for any reason (SIGTERM, which kopf takes over, or a crash)
    sets ``stop`` first, so that kopf does not treat it as a hung exit.
    """
    import kopf

    tasks = await kopf.spawn_tasks(registry=registry, clusterwide=True, standalone=True,
                                   stop_flag=stop)
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("kopf task %s failed: %r", task.get_name(), task.exception())
    finally:
        if not stop.is_set():
            log.error("kopf stopped; stopping the operator")
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def read_profile(path: str) -> ProfileConfig:
    """The profile in the YAML or JSON file ``path`` (see ``gangsched.translate.profile``).

    Raises OSError when the file cannot be read, ValueError (a YAML error, or a
    TranslationError/ConstraintError naming the field) when its content is wrong."""
    import yaml

    from gangsched.translate.profile import profile_from_k8s

    with open(path, encoding="utf-8") as stream:
        try:
            raw = yaml.safe_load(stream)
        except yaml.YAMLError as error:
            raise ValueError(f"not YAML or JSON: {error}") from None
    return profile_from_k8s(raw)


def run_operator(args: argparse.Namespace) -> int:
    """Entry point of ``gangsched run``."""
    try:
        logs.configure(getattr(args, "log_level", "INFO"), getattr(args, "log_format", None))
    except ValueError as error:  # a bad GANGSCHED_LOG_FORMAT
        print(f"gangsched run: {error}", file=sys.stderr)
        return 2
    names = getattr(args, "scheduler_name", None) or ["gangsched"]
    settings = OperatorSettings(
        scheduler_names=frozenset(names),
        placeholder_image=getattr(args, "placeholder_image", None)
        or OperatorSettings().placeholder_image,
        leader_election=not getattr(args, "no_leader_election", False),
        scheduled_events=not getattr(args, "no_scheduled_events", False),
    )
    for flag, field_name in (("kube_api_qps", "qps"), ("kube_api_burst", "burst")):
        value = getattr(args, flag, None)
        if value is not None:
            settings = dataclasses.replace(settings, **{field_name: value})
    for flag in ("metrics_port", "dashboard_port"):
        port = getattr(args, flag, None)
        if port is not None:
            settings = dataclasses.replace(settings, **{flag: port})
    core: dict[str, object] = {}
    for flag, field_name in (("actions", "actions"), ("overcommit_factor", "overcommit_factor"),
                             ("starvation_threshold", "starvation_threshold"),
                             ("reservation_timeout", "reservation_timeout"),
                             ("deadlock_backoff", "deadlock_backoff"),
                             ("nomination_timeout", "nomination_timeout"),
                             ("eviction_backoff", "eviction_backoff"),
                             ("demand_placeholders", "demand_placeholders"),
                             ("gather_window", "gather_window"),
                             ("placeholders", "placeholders")):
        value = getattr(args, flag, None)
        if flag == "placeholders" and value is not None:
            from gangsched.core.values.model import PlaceholderPolicy

            value = PlaceholderPolicy(value)
        if value is not None:
            core[field_name] = value
    profile_file = getattr(args, "profile", None)
    if profile_file:
        try:
            core["profile"] = read_profile(profile_file)
        except (OSError, ValueError) as error:
            print(f"gangsched run: --profile {profile_file}: {error}", file=sys.stderr)
            return 2
    if core:
        settings = dataclasses.replace(
            settings, core=dataclasses.replace(settings.core, **core))  # type: ignore[arg-type]

    async def main() -> str:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        return await operate(settings, stop, kubeconfig=getattr(args, "kubeconfig", None),
                             liveness=getattr(args, "liveness", None))

    failed = asyncio.run(main())
    if failed:
        log.error("exiting non-zero: %s", failed)
        return 1
    return 0
