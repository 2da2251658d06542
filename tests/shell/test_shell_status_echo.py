"""What an Application's or PodGroup's watch event costs, and what waits for the binds.

The core reads an Application's or PodGroup's status only when it first observes the
object (that is what a restart restores), so a change of status only (most often the
operator's own status write coming back) is neither translated nor observed again;
anything else the translation reads is. Events, PodScheduled conditions and status
flushes wait for the binds queued or under way, a bounded time.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import pytest
from gangsched.core.values.observations import AppObserved, PodGroupObserved
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.executors import StatusTarget, StatusWriter, WorkPool
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings
from shellkit import application, group

pytestmark = pytest.mark.asyncio

Obj = dict[str, Any]


def app_obj() -> Obj:
    obj = application("train", [group("w", 2)])
    obj["metadata"].update(uid="u-1", creationTimestamp="2026-01-01T00:00:00Z",
                           resourceVersion="1", generation=1)
    obj["status"] = {"state": "New"}
    return obj


def podgroup_obj() -> Obj:
    return {"apiVersion": "scheduling.gangsched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": "default", "uid": "g-1",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "resourceVersion": "1",
                         "generation": 1},
            "spec": {"minMember": 2}, "status": {"phase": "Pending"}}


def _set(path: str, value: object) -> Callable[[Obj], None]:
    def change(obj: Obj) -> None:
        *parents, last = path.split(".")
        node = obj
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return change


# (what changes, whether the core observes the object again)
CHANGES = [
    pytest.param(_set("status.state", "Running"), False, id="status-only"),
    pytest.param(_set("metadata.resourceVersion", "7"), False, id="resource-version"),
    pytest.param(_set("metadata.managedFields", [{"manager": "x"}]), False,
                 id="managed-fields"),
    pytest.param(_set("spec.queue", "other"), True, id="spec"),
    pytest.param(_set("metadata.labels", {"team": "a"}), True, id="labels"),
    pytest.param(_set("metadata.annotations", {"note": "a"}), True, id="annotations"),
    pytest.param(_set("metadata.deletionTimestamp", "2026-01-01T00:01:00Z"), True,
                 id="deletion"),
]


def runtime() -> Runtime:
    rt = Runtime(KubeClient(Connection("http://127.0.0.1:1")),
                 OperatorSettings(leader_election=False))
    rt.leading.set()
    return rt


@pytest.mark.parametrize(("change", "observed"), CHANGES)
async def test_an_application_changed_in_its_status_only_is_not_observed_again(
        change: Callable[[Obj], None], observed: bool) -> None:
    rt = runtime()
    first = app_obj()
    rt.on_app("ADDED", first)
    assert [type(o) for o in rt.inbox] == [AppObserved]
    rt.inbox.clear()
    later = copy.deepcopy(first)
    change(later)
    rt.on_app("MODIFIED", later)
    assert [type(o) for o in rt.inbox] == ([AppObserved] if observed else [])
    assert rt.apps["default/train"] is later  # statuses are rendered against the latest
    await rt.client.close()


@pytest.mark.parametrize(("change", "observed"), CHANGES)
async def test_a_podgroup_changed_in_its_status_only_is_not_observed_again(
        change: Callable[[Obj], None], observed: bool) -> None:
    rt = runtime()
    first = podgroup_obj()
    rt.on_podgroup("ADDED", first)
    rt.inbox.clear()
    later = copy.deepcopy(first)
    change(later)
    rt.on_podgroup("MODIFIED", later)
    assert [type(o) for o in rt.inbox] == ([PodGroupObserved] if observed else [])
    await rt.client.close()


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED"])
async def test_while_syncing_every_object_is_observed(kind: str) -> None:
    """The first lists (and a take-over's) observe everything, whatever was seen."""
    rt = runtime()
    obj = app_obj()
    rt.on_app("ADDED", obj)
    rt.inbox.clear()
    rt.syncing = True
    observed: list[object] = []
    rt.scheduler.observe = observed.append  # type: ignore[method-assign]
    rt.on_app(kind, copy.deepcopy(obj))
    assert [type(o) for o in observed] == [AppObserved]
    await rt.client.close()


async def test_a_recreated_application_is_observed() -> None:
    rt = runtime()
    rt.on_app("ADDED", app_obj())
    rt.inbox.clear()
    again = app_obj()
    again["metadata"]["uid"] = "u-2"
    rt.on_app("MODIFIED", again)
    assert [type(o) for o in rt.inbox] == [AppObserved]
    await rt.client.close()


# --- reports after binds -------------------------------------------------------------------


async def test_reports_wait_for_the_binds_under_way() -> None:
    order: list[str] = []
    release = asyncio.Event()
    binds = WorkPool("bind", 2)
    reports = WorkPool("reports", 2, after=binds, patience=60.0)
    binds.start()
    reports.start()

    async def bind(i: int) -> None:
        await release.wait()
        order.append(f"bind-{i}")

    async def report() -> None:
        order.append("report")

    try:
        for i in range(4):
            binds.submit(lambda i=i: bind(i))
        reports.submit(report)
        for _ in range(50):
            await asyncio.sleep(0)
        assert order == []  # the report waits while binds are queued or under way
        release.set()
        await asyncio.wait_for(reports.drain(), timeout=5)
        assert sorted(order[:4]) == [f"bind-{i}" for i in range(4)]
        assert order[4:] == ["report"]
        assert reports.deferred == 1
    finally:
        await binds.stop()
        await reports.stop()


async def test_reports_are_delayed_never_starved() -> None:
    """Binds that never end hold a report back ``patience`` seconds, no longer."""
    done: list[str] = []
    binds = WorkPool("bind", 1)
    reports = WorkPool("reports", 1, after=binds, patience=0.05)
    binds.start()
    reports.start()
    forever = asyncio.Event()

    async def report() -> None:
        done.append("report")

    try:
        binds.submit(forever.wait)
        reports.submit(report)
        await asyncio.wait_for(reports.drain(), timeout=5)
        assert done == ["report"]
        assert binds.busy
    finally:
        await binds.stop()
        await reports.stop()


async def test_reports_do_not_wait_when_no_bind_is_under_way() -> None:
    binds = WorkPool("bind", 1)
    reports = WorkPool("reports", 1, after=binds, patience=60.0)
    reports.start()
    done: list[str] = []

    async def report() -> None:
        done.append("report")

    try:
        reports.submit(report)
        await asyncio.wait_for(reports.drain(), timeout=5)
        assert done == ["report"] and reports.deferred == 0
    finally:
        await reports.stop()


class Patches(KubeClient):
    def __init__(self, order: list[str]) -> None:
        super().__init__(Connection("http://127.0.0.1:1"))
        self.order = order

    async def patch(self, group: str, version: str, plural: str, namespace: str | None,
                    name: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.order.append(f"patch-{name}")
        return {}


async def test_a_status_flush_waits_for_the_binds() -> None:
    order: list[str] = []
    release = asyncio.Event()
    binds = WorkPool("bind", 1)
    binds.start()
    client = Patches(order)
    writer = StatusWriter(client, 0.1, after=binds, patience=60.0)

    async def bind() -> None:
        await release.wait()
        order.append("bind")

    try:
        binds.submit(bind)
        writer.want(StatusTarget("gangsched.io", "v1alpha1", "applications", "default", "a"),
                    {"state": "Running"})
        flush = asyncio.create_task(writer.flush())
        for _ in range(50):
            await asyncio.sleep(0)
        assert order == []
        release.set()
        await asyncio.wait_for(flush, timeout=5)
        assert order == ["bind", "patch-a"]
    finally:
        await binds.stop()
        await client.close()
