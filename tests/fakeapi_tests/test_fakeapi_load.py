"""Load: 500 nodes and 2,000 pods created and bound over HTTP, with a live watcher.

Not a timing assertion: it keeps the suite honest about per-request cost (a quadratic
slowdown would make this test crawl) and checks that nothing is lost under load.
The big figures come from ``python3 -m fakeapi.loadtest 5000 10000`` (see there).
"""

from __future__ import annotations

import asyncio

from fakeapi import FakeApiServer, loadtest
from fakeapi.client import RawClient


async def test_bulk_create_and_bind_loses_no_watch_events(fake_api: FakeApiServer) -> None:
    nodes, pods = 500, 2_000
    async with RawClient(fake_api.url) as api:
        _, page = await api.get("/api/v1/pods")
        unbound_rv = page["metadata"]["resourceVersion"]
        watcher = asyncio.create_task(api.watch(
            "/api/v1/pods", 2 * pods, timeout=120, resourceVersion=unbound_rv))
        phases = await loadtest.run(fake_api, nodes=nodes, pods=pods, concurrency=32)
        events = await watcher
        assert [e["type"] for e in events].count("ADDED") == pods
        assert [e["type"] for e in events].count("MODIFIED") == pods
        _, unbound = await api.get("/api/v1/pods", fieldSelector="spec.nodeName=")
        assert unbound["items"] == []
        _, page = await api.get("/api/v1/pods", limit="500")
        assert page["metadata"]["remainingItemCount"] == pods - 500
    assert [p.requests for p in phases] == [nodes, pods, pods]
    assert len(fake_api.list("nodes")) == nodes
    assert fake_api.internal_errors == []
    for phase in phases:
        print(f"{phase.name}: {phase.rate:.0f} req/s")
