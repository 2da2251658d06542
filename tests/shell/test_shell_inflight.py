"""Placeholder creates and pod deletes are never queued twice.

The core asks again for a placeholder creation or a deletion it has not seen within
``placeholder_retry``; under load the first request may still be queued. Queuing it a
second time would only add load (and a 409 or 404), which under a backlog of thousands
of gang members snowballed (bench/cluster.py: 30% more creates and deletes than pods).
"""

from __future__ import annotations

import asyncio

import pytest
from gangsched.core.values.decisions import DeletePod, DeleteReason
from gangsched.core.values.model import PodUID
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings

pytestmark = pytest.mark.asyncio


class SlowClient(KubeClient):
    def __init__(self) -> None:
        super().__init__(Connection("http://127.0.0.1:1"))
        self.deletes: list[str] = []
        self.release = asyncio.Event()

    async def delete_pod(self, namespace: str, name: str, uid: str, *,
                         grace_seconds: int | None = None) -> None:
        self.deletes.append(uid)
        await self.release.wait()


async def test_a_delete_asked_again_while_in_flight_is_sent_once() -> None:
    client = SlowClient()
    runtime = Runtime(client, OperatorSettings(leader_election=False))
    runtime.api.start()
    runtime.reports.start()
    try:
        delete = DeletePod(PodUID("u1"), "default", "ph-0", DeleteReason.PLACEHOLDER_REPLACED,
                           "replaced")
        runtime._dispatch(delete, 0.0)
        await asyncio.sleep(0.01)
        runtime._dispatch(delete, 10.0)  # the core's retry, the first still under way
        await asyncio.sleep(0.01)
        assert client.deletes == ["u1"]
        client.release.set()
        await asyncio.wait_for(runtime.api.drain(), timeout=5)
        assert not runtime.in_flight
        runtime._dispatch(delete, 20.0)  # finished: a later retry is sent again
        await asyncio.wait_for(runtime.api.drain(), timeout=5)
        assert client.deletes == ["u1", "u1"]
    finally:
        await runtime.api.stop()
        await runtime.reports.stop()
        await client.close()
