"""Helpers for HTTP-level operator tests: a running operator against the fake API server.

``OperatorUnderTest`` runs the real operator (kopf handlers and the runtime) as a task
against a :class:`fakeapi.FakeApiServer`, with a controllable clock so that timeouts
are driven explicitly instead of waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
from collections.abc import Callable
from typing import Any

from fakeapi import FakeApiServer
from gangsched.shell.main import operate
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings

ROOT = pathlib.Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class OperatorUnderTest:
    def __init__(self, api: FakeApiServer, kubeconfig: pathlib.Path, clock: FakeClock,
                 **settings: Any) -> None:
        self.api = api
        self.kubeconfig = kubeconfig
        self.clock = clock
        options: dict[str, Any] = {"tick": 0.05, "batch_window": 0.0, "status_interval": 0.02,
                                   "renew_interval": 0.2, "namespace": "gangsched-system",
                                   "identity": "op-1", "shutdown_timeout": 0.2}
        options.update(settings)
        self.settings = OperatorSettings(**options)
        self.stop = asyncio.Event()
        self.runtime: Runtime | None = None
        self.task: asyncio.Task[None] | None = None

    async def start(self) -> OperatorUnderTest:
        def started(runtime: Runtime) -> None:
            self.runtime = runtime

        self.task = asyncio.create_task(operate(self.settings, self.stop,
                                                kubeconfig=str(self.kubeconfig),
                                                clock=self.clock, started=started))
        await wait_for(lambda: self.runtime is not None and self.runtime.ready.is_set(),
                       what="operator ready")
        return self

    async def kill(self) -> None:
        """Stop the operator abruptly (as a crash would, minus the process exit)."""
        self.stop.set()
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, timeout=15)

    def wake(self) -> None:
        if self.runtime is not None:
            self.runtime.wake.set()


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


def node(name: str, cpu: str = "4", memory: str = "16Gi", pods: str = "110",
         labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         ) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels or {}},
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
