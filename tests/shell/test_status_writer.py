"""The status writer patches changed statuses concurrently, within its bound."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gangsched.shell.client import ApiError, Connection, KubeClient
from gangsched.shell.executors import StatusTarget, StatusWriter

pytestmark = pytest.mark.asyncio


class SlowPatches(KubeClient):
    """Each patch waits until ``release``; records how many were under way at once."""

    def __init__(self, fail: frozenset[str] = frozenset()) -> None:
        super().__init__(Connection("http://127.0.0.1:1"))
        self.active = 0
        self.most = 0
        self.fail = fail
        self.release = asyncio.Event()

    async def patch(self, group: str, version: str, plural: str, namespace: str | None,
                    name: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.active += 1
        self.most = max(self.most, self.active)
        try:
            await self.release.wait()
        finally:
            self.active -= 1
        if name in self.fail:
            raise ApiError(500, "InternalError", "try again")
        return {}


def target(i: int) -> StatusTarget:
    return StatusTarget("gangsched.io", "v1alpha1", "applications", "default", f"a-{i}")


@pytest.mark.parametrize(("objects", "concurrency", "most"), [
    pytest.param(20, 8, 8, id="bounded"),
    pytest.param(3, 8, 3, id="fewer-than-the-bound"),
    pytest.param(5, 1, 1, id="one-at-a-time"),
])
async def test_flush_patches_concurrently_up_to_the_bound(objects: int, concurrency: int,
                                                          most: int) -> None:
    client = SlowPatches(fail=frozenset({"a-0"}))
    writer = StatusWriter(client, 0.1, concurrency=concurrency)
    for i in range(objects):
        writer.want(target(i), {"state": "Running", "i": i})
    flush = asyncio.create_task(writer.flush())
    for _ in range(100):  # let every patch that may start, start
        await asyncio.sleep(0)
    assert client.most == most
    client.release.set()
    await flush
    assert writer.patches == objects - 1
    assert list(writer.wanted) == [target(0)]  # the failed one is kept for the next flush


class Recording(KubeClient):
    """Records every patch and answers at once."""

    def __init__(self) -> None:
        super().__init__(Connection("http://127.0.0.1:1"))
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def patch(self, group: str, version: str, plural: str, namespace: str | None,
                    name: str, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        self.sent.append((name, body))
        return {}


async def test_a_status_that_changes_several_times_before_a_flush_is_written_once() -> None:
    """Wanted Accepted, then Starting, then Running (one cycle's decisions, or several
    cycles' between two flushes): one patch, with the latest status; wanting it again
    as written writes nothing."""
    client = Recording()
    writer = StatusWriter(client, 0.1)
    for state in ("Accepted", "Starting", "Running"):
        writer.want(target(0), {"state": state})
    writer.want(target(1), {"state": "Accepted"})
    await writer.flush()
    assert sorted(client.sent, key=lambda s: s[0]) == [
        ("a-0", {"status": {"state": "Running"}}), ("a-1", {"status": {"state": "Accepted"}})]
    writer.want(target(0), {"state": "Starting"})
    writer.want(target(0), {"state": "Running"})  # back to what was written
    await writer.flush()
    assert len(client.sent) == 2
