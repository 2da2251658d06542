"""The Scheduled Event writer on its own: what it writes, and that it waits for the
Bindings (``gangsched.shell.scheduled``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gangsched.shell import scheduled
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.executors import WorkPool

pytestmark = pytest.mark.asyncio


class Recording(KubeClient):
    def __init__(self) -> None:
        super().__init__(Connection("http://127.0.0.1:1"))
        self.created: list[tuple[float, dict[str, Any]]] = []

    async def create(self, group: str, version: str, plural: str, namespace: str | None,
                     body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.created.append((asyncio.get_running_loop().time(), body))
        return body


async def test_events_wait_until_the_bindings_are_done_for_now() -> None:
    client = Recording()
    binds = WorkPool("bind", 1)
    writer = scheduled.ScheduledEvents(client, identity="op-1", default_scheduler="gangsched",
                                       binds=binds, patience=5.0)
    binds.start()
    writer.start()
    release = asyncio.Event()
    done_at: list[float] = []

    async def bind() -> None:
        await release.wait()
        done_at.append(asyncio.get_running_loop().time())

    try:
        binds.submit(bind)
        writer.bound("default", "p", "u-1", "node-0", 1_800_000_000.0)
        await asyncio.sleep(0.3)
        assert client.created == []  # the Binding under way goes first
        release.set()
        assert await writer.drain(5)
        ((sent, body),) = client.created
        assert sent - done_at[0] >= scheduled.SETTLE * 0.9
        assert body["note"] == "Successfully assigned default/p to node-0"
        assert (body["reason"], body["action"], body["type"]) == ("Scheduled", "Binding",
                                                                  "Normal")
        assert (body["reportingController"], body["reportingInstance"]) == (
            "gangsched", "gangsched-op-1")
        assert body["eventTime"] == "2027-01-15T08:00:00.000000Z"
    finally:
        await writer.stop()
        await binds.stop()


async def test_a_pod_of_another_scheduler_name_is_reported_under_it() -> None:
    client = Recording()
    writer = scheduled.ScheduledEvents(client, identity="op-1", default_scheduler="gangsched")
    writer.start()
    try:
        writer.note_scheduler("u-1", "volcano")
        writer.bound("default", "p", "u-1", "node-0", 0.0)
        writer.bound("default", "q", "u-2", "node-0", 0.0)
        assert await writer.drain(5)
        assert sorted(b["reportingController"] for _, b in client.created) == [
            "gangsched", "volcano"]
        assert writer.schedulers == {}
    finally:
        await writer.stop()


async def test_the_oldest_is_dropped_beyond_the_limit_and_none_with_the_flag_off() -> None:
    client = Recording()
    writer = scheduled.ScheduledEvents(client, identity="op-1", default_scheduler="gangsched",
                                       limit=2)
    for i in range(3):
        writer.bound("default", f"p-{i}", f"u-{i}", "node-0", 0.0)
    assert [b.name for b in writer.queue] == ["p-1", "p-2"]
    assert writer.dropped == {"queue": 1}
    off = scheduled.ScheduledEvents(client, identity="op-1", default_scheduler="gangsched",
                                    enabled=False)
    off.bound("default", "p", "u", "node-0", 0.0)
    assert not off.queue


async def test_the_event_names_the_pods_scheduler_when_the_server_accepts_it() -> None:
    assert scheduled.controller_name("volcano") == "volcano"
    assert scheduled.controller_name("my.scheduler") == "my.scheduler"
    assert scheduled.controller_name("x" * 64) == "gangsched.io/scheduler"


@pytest.mark.parametrize("bound", [
    scheduled.Bound("default", "p", "u-1", "node-0", "gangsched", 1_800_000_000.0),
    scheduled.Bound("team-a", "web-7d9f.x", "u-2", "n", "volcano", 1_800_000_000.9999996),
    scheduled.Bound("ns", "P_Upper", "", "node-1", "not a name!", 0.25),
    scheduled.Bound("ns", "q", "u-3", "node-1", "gangsched", 1_800_000_001.000001),
])
async def test_the_event_body_is_what_gangsched_makes_of_any_event(
        bound: scheduled.Bound) -> None:
    # Bodies made one after another (the date and time of day worked out once a second)
    # are each the body made as any other Event of gangsched's is.
    bodies = scheduled._Bodies("op-1")
    for each in (bound, scheduled.Bound(bound.namespace, bound.name, bound.uid, bound.node,
                                        bound.scheduler, bound.time + 1.5), bound):
        assert bodies.body(each) == scheduled._reference_body(each, identity="op-1")
