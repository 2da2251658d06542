"""Helpers for HTTP-level operator tests: a running operator against the fake API server.

``OperatorUnderTest`` runs the real operator (kopf handlers and the runtime) as a task
against a :class:`fakeapi.FakeApiServer`, with a controllable clock so that timeouts
are driven explicitly instead of waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import time
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.builders import untaint_ready
from fakeapi.kubelet import QUICK, REALISTIC
from gangsched.shell.main import operate
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings

ROOT = pathlib.Path(__file__).resolve().parents[2]


KUBELETS = [pytest.param(QUICK, id="quick-kubelet"),
            pytest.param(REALISTIC, id="slow-kubelet")]
"""Timings the important scenarios run under: a little slow, and as slow as a real node
(graceful deletion 0.5-2 s, start-up 0.2-0.8 s, watch lag 50 ms)."""


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class OperatorUnderTest:
    def __init__(self, api: FakeApiServer, kubeconfig: pathlib.Path,
                 clock: Callable[[], float], *, monotonic: Callable[[], float] | None = None,
                 prepare: Callable[[Runtime], None] | None = None, **settings: Any) -> None:
        """``clock`` is the wall clock (the core's ``now``); ``monotonic`` the clock of
        Lease expiry, deadlines and liveness: the real one unless given (a test that
        moves ``clock`` by minutes must not make the Lease look unrenewed). ``prepare``
        is called with the runtime once it exists, before it runs (to give its scheduler
        the test's own actions, say)."""
        self.prepare = prepare
        self.api = api
        self.kubeconfig = kubeconfig
        self.clock = clock
        self.monotonic = monotonic or time.monotonic
        self.failed: str | None = None
        options: dict[str, Any] = {"tick": 0.05, "batch_window": 0.0, "status_interval": 0.02,
                                   "renew_interval": 0.2, "namespace": "gangsched-system",
                                   "identity": "op-1", "shutdown_timeout": 0.2,
                                   "metrics_port": 0}
        options.update(settings)
        self.settings = OperatorSettings(**options)
        self.stop = asyncio.Event()
        self.runtime: Runtime | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self, *, wait_ready: bool = True) -> OperatorUnderTest:
        """Start the operator; wait until it has synced (``wait_ready``), else only until
        its runtime exists (a replica that does not hold the Lease never gets ready)."""
        def started(runtime: Runtime) -> None:
            if self.prepare is not None:
                self.prepare(runtime)
            self.runtime = runtime

        async def run() -> None:
            self.failed = await operate(self.settings, self.stop,
                                        kubeconfig=str(self.kubeconfig), clock=self.clock,
                                        monotonic=self.monotonic, started=started)

        self.task = asyncio.create_task(run())
        if wait_ready:
            await wait_for(lambda: self.runtime is not None and self.runtime.ready.is_set(),
                           what="operator ready")
        else:
            await wait_for(lambda: self.runtime is not None, what="operator started")
        return self

    async def kill(self) -> None:
        """Stop the operator gracefully (as SIGTERM does): it releases the Lease."""
        self.stop.set()
        if self.task is not None and not self.task.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, timeout=15)

    async def crash(self) -> None:
        """Stop the operator abruptly, as a crash would (minus the process exit): its
        tasks are cancelled, nothing is released."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            self.stop.set()  # a cancelled task may not release: it is no graceful stop
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self.task, timeout=15)

    def wake(self) -> None:
        if self.runtime is not None:
            self.runtime.wake.set()

    @property
    def leading(self) -> bool:
        return self.runtime is not None and self.runtime.leading.is_set()

    async def settle(self, cycles: int = 3) -> None:
        """Let ``cycles`` more scheduling cycles run and the work they gave finish."""
        runtime = self.runtime
        assert runtime is not None
        target = runtime.cycles + cycles
        self.wake()
        await wait_for(lambda: runtime.cycles >= target, what=f"{cycles} cycles")
        await asyncio.wait_for(runtime.binds.drain(), timeout=10)
        await asyncio.wait_for(runtime.api.drain(), timeout=10)
        await asyncio.wait_for(runtime.reports.drain(), timeout=10)
        assert await runtime.scheduled.drain(10), "Scheduled Events still queued"

    async def advance(self, seconds: float, cycles: int = 2) -> None:
        """Move the fake clock and let the operator run a few cycles at the new time."""
        self.clock.advance(seconds)
        await self.settle(cycles)


async def wait_for(predicate: Callable[[], Any], *, timeout: float = 10.0,
                   what: str = "condition") -> Any:
    """Yield to the event loop until ``predicate()`` is truthy, or fail after ``timeout``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def new_cluster(factory: Callable[..., Any], tmp_path: pathlib.Path, *, nodes: int = 3,
                      cpu: str = "4", memory: str = "16Gi",
                      **options: Any) -> tuple[FakeApiServer, pathlib.Path]:
    """A started fake API server with the CRDs, the operator's namespace and ``nodes``
    nodes, logging requests; and a kubeconfig for it. The kubelet is slow as a real one
    is, a little (:data:`fakeapi.kubelet.QUICK`: graceful deletion, start-up and watch
    lag of tens of milliseconds) unless ``timing`` says otherwise."""
    options.setdefault("auto_run", True)
    options.setdefault("timing", QUICK)
    api: FakeApiServer = await factory(**options)
    api.log_requests = True
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    for i in range(nodes):
        add_node(api, node(f"node-{i}", cpu=cpu, memory=memory))
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


BindRecord = tuple[str, float, float, bool]
"""(operator identity, sent, answered or abandoned, cancelled) of one bind."""


def record_binds(op: OperatorUnderTest, into: list[BindRecord]) -> None:
    """Record every bind ``op`` sends into ``into``, as it ends (see :data:`BindRecord`)."""
    assert op.runtime is not None
    client = op.runtime.client
    original = client.bind
    identity = op.settings.identity

    async def bind(namespace: str, name: str, uid: str, node: str) -> None:
        sent = time.monotonic()
        cancelled = False
        try:
            await original(namespace, name, uid, node)
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            into.append((identity, sent, time.monotonic(), cancelled))

    client.bind = bind  # type: ignore[method-assign]


def bind_answers(api: FakeApiServer, name: str | None = None) -> list[tuple[str, int]]:
    """(pod name, HTTP status) of every ``pods/<name>/binding`` request, in order
    (``api.log_requests`` must be on)."""
    found = []
    for entry in api.request_log:
        if entry.method != "POST" or not entry.path_qs.split("?")[0].endswith("/binding"):
            continue
        pod_name = entry.path_qs.split("?")[0].split("/")[-2]
        if name is None or pod_name == name:
            found.append((pod_name, entry.status))
    return found


def assert_bound_at_most_once(api: FakeApiServer) -> None:
    """No pod was bound twice: no binding was answered 409, none succeeded twice."""
    answers = bind_answers(api)
    assert not [a for a in answers if a[1] == 409], answers
    ok = [name for name, status in answers if status < 300]
    assert len(ok) == len(set(ok)), sorted(ok)


def events(api: FakeApiServer, namespace: str = "default", *, reason: str | None = None,
           regarding: str | None = None) -> list[dict[str, Any]]:
    """The ``events.k8s.io/v1`` Events of a namespace, optionally by reason and object name."""
    found = api.list("events", namespace, api_version="events.k8s.io/v1")
    return [e for e in found
            if (reason is None or e.get("reason") == reason)
            and (regarding is None or (e.get("regarding") or {}).get("name") == regarding)]


def condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    """The status condition ``kind`` of ``obj`` ({} when absent)."""
    for found in ((obj or {}).get("status") or {}).get("conditions") or []:
        if found.get("type") == kind:
            return dict(found)
    return {}


def add_node(api: FakeApiServer, body: dict[str, Any]) -> dict[str, Any]:
    """Create a Node as a kubelet registers it, then, if it is Ready, remove the
    ``not-ready`` taint the API server's admission added, as the node lifecycle
    controller does. Returns the node as it is then."""
    created = api.create(body)
    patch = untaint_ready(created)
    if patch is None:
        return created
    return api.patch("nodes", None, created["metadata"]["name"], patch)


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         ) -> dict[str, Any]:
    """A Ready node, labelled ``kubernetes.io/hostname`` as the kubelet labels it."""
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(name: str, *, namespace: str = "default", cpu: str = "1", memory: str = "1Gi",
        labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
        scheduler: str = "gangsched", priority: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "image": "busybox",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
    }
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {},
                     "annotations": annotations or {}},
        "spec": spec,
    }


def application(name: str, groups: list[dict[str, Any]], *, namespace: str = "default",
                queue: str = "default", style: str = "Soft", timeout: int = 900,
                waiting: int = 30) -> dict[str, Any]:
    return {
        "apiVersion": "gangsched.io/v1alpha1", "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"queue": queue, "taskGroups": groups,
                 "schedulingPolicy": {"style": style, "placeholderTimeoutSeconds": timeout,
                                      "waitingTimeoutSeconds": waiting}},
    }


def group(name: str, min_member: int, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    return {"name": name, "minMember": min_member, "minResource": {"cpu": cpu, "memory": memory}}


def pods_in(api: FakeApiServer, namespace: str = "default") -> list[dict[str, Any]]:
    return list(api.list("pods", namespace))


def placeholders(api: FakeApiServer, namespace: str = "default") -> list[dict[str, Any]]:
    return [p for p in pods_in(api, namespace)
            if (p["metadata"].get("labels") or {}).get("gangsched.io/placeholder") == "true"]


def status_of(api: FakeApiServer, plural: str, namespace: str | None, name: str) -> dict[str, Any]:
    obj = api.try_get(plural, namespace, name)
    return dict((obj or {}).get("status") or {})
