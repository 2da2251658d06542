"""Running the operator: the runtime, and kopf for its probes and liveness endpoint.

Every object the core observes (pods, nodes, Applications, PodGroups, Queues) comes
through the runtime's own reflectors (see :mod:`gangsched.shell.watch` for why: a kopf
relist reports no deletions, and one source per object keeps the core consistent). kopf
keeps what it is good at here: the liveness endpoint and its probes. The scheduling
loop runs only while this replica holds the leader Lease.

Start-up: nothing waits for kopf. Its import (about half a second of CPU) happens in a
thread once the first cycle has dispatched its decisions (or after
:data:`KOPF_START_DELAY` seconds, for a replica that does not lead), so that the first
lists and the first binds are not behind it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gangsched.shell import logs
from gangsched.shell.client import KubeClient, load_connection
from gangsched.shell.metrics import MetricsServer
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings

if TYPE_CHECKING:
    import kopf

log = logging.getLogger(__name__)

KOPF_START_DELAY = 2.0
"""Seconds after which kopf starts even if no cycle ran yet (a replica that waits for
the Lease still serves its liveness endpoint)."""


def build_registry(runtime: Runtime) -> kopf.OperatorRegistry:
    """The kopf handlers, bound to one runtime: settings, login and the probe. No resource
    handlers: the runtime's reflectors watch every kind it needs."""
    import kopf

    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.level = logging.WARNING
        settings.watching.server_timeout = 300
        settings.watching.client_timeout = 330

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        c = runtime.client.connection
        return kopf.ConnectionInfo(
            server=c.host, token=c.token, ca_path=c.ca_file, certificate_path=c.cert_file,
            private_key_path=c.key_file, insecure=not c.verify,
            scheme="Bearer" if c.token else None,
        )

    @kopf.on.probe(id="scheduler", registry=registry)
    def probe(**_: Any) -> dict[str, Any]:
        return {"leading": runtime.leading.is_set(), "cycles": runtime.cycles,
                "ready": runtime.ready.is_set()}

    return registry


async def operate(settings: OperatorSettings, stop: asyncio.Event, *,
                  kubeconfig: str | None = None, liveness: str | None = None,
                  clock: Callable[[], float] = time.time,
                  started: Callable[[Runtime], None] | None = None) -> None:
    """Run kopf and the runtime until ``stop`` is set (or leadership is lost)."""
    connection = await load_connection(kubeconfig)
    async with KubeClient(connection, max_connections=settings.max_connections,
                          timeout=settings.request_timeout) as client:
        runtime = Runtime(client, settings, clock=clock)
        if started is not None:
            started(runtime)
        metrics = await _serve_metrics(runtime, settings.metrics_port)
        kopf_task = asyncio.create_task(_kopf_after_start(runtime, stop, liveness),
                                        name="kopf")
        try:
            await runtime.run(stop)
        finally:
            stop.set()
            if metrics is not None:
                await metrics.stop()
            done, _ = await asyncio.wait({kopf_task}, timeout=settings.shutdown_timeout)
            if not done:
                kopf_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await kopf_task


async def _serve_metrics(runtime: Runtime, port: int) -> MetricsServer | None:
    """Serve ``/metrics`` on ``port`` (none for 0). A port that cannot be bound is logged:
    scheduling matters more than its metrics."""
    if not port:
        return None
    server = MetricsServer(runtime.metrics, port=port)
    try:
        await server.start()
    except OSError as error:
        log.error("cannot serve metrics on port %d: %s; running without them", port, error)
        return None
    return server


async def _kopf_after_start(runtime: Runtime, stop: asyncio.Event,
                            liveness: str | None) -> None:
    """Import kopf in a thread and run it, once the first cycle is out (see the module
    docstring); nothing if ``stop`` is set first."""
    waiters = [asyncio.create_task(e.wait()) for e in (runtime.cycled, stop)]
    try:
        await asyncio.wait(waiters, timeout=KOPF_START_DELAY,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
    if stop.is_set():
        return
    await asyncio.to_thread(importlib.import_module, "kopf")
    if stop.is_set():
        return
    await _kopf(build_registry(runtime), stop, liveness)


async def _kopf(registry: kopf.OperatorRegistry, stop: asyncio.Event,
                liveness: str | None) -> None:
    """Run kopf's root tasks until one ends; then the whole operator stops.

    Not ``kopf.operator()``: when it exits it cancels every task created after its
    start-up, whoever made them (here the runtime's workers and Lease renewal, which
    would leave a loop that believes it leads). Its root tasks clean up their own
    workers. kopf ending for any reason (SIGTERM, which kopf takes over, or a crash)
    sets ``stop`` first, so that kopf does not treat it as a hung exit.
    """
    import kopf

    tasks = await kopf.spawn_tasks(registry=registry, clusterwide=True, standalone=True,
                                   liveness_endpoint=liveness, stop_flag=stop)
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
    )
    metrics_port = getattr(args, "metrics_port", None)
    if metrics_port is not None:
        settings = dataclasses.replace(settings, metrics_port=metrics_port)
    core: dict[str, object] = {}
    for flag, field_name in (("actions", "actions"), ("overcommit_factor", "overcommit_factor"),
                             ("starvation_threshold", "starvation_threshold"),
                             ("reservation_timeout", "reservation_timeout"),
                             ("deadlock_backoff", "deadlock_backoff"),
                             ("nomination_timeout", "nomination_timeout"),
                             ("eviction_backoff", "eviction_backoff")):
        value = getattr(args, flag, None)
        if value is not None:
            core[field_name] = value
    if core:
        settings = dataclasses.replace(
            settings, core=dataclasses.replace(settings.core, **core))  # type: ignore[arg-type]

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await operate(settings, stop, kubeconfig=getattr(args, "kubeconfig", None),
                      liveness=getattr(args, "liveness", None))

    asyncio.run(main())
    return 0
