"""Leader election under a slow API server: no two replicas ever bind at the same time.

The split-brain case needs real time: the fake API server holds op-1's Lease requests
back (fault injection with a delay, matched on op-1's ``User-Agent``), while op-2's go
through. Durations are short (a 1.5 s lease, a 1 s renew deadline), so the test takes
about three seconds; nothing is asserted about how long anything took, only about the
order of the binds each replica sent.
"""

from __future__ import annotations

import asyncio
import pathlib
import time
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    BindRecord,
    FakeClock,
    OperatorUnderTest,
    assert_bound_at_most_once,
    new_cluster,
    pod,
    record_binds,
    wait_for,
)

pytestmark = pytest.mark.asyncio

LEASE = ("leases", "gangsched-system", "gangsched-leader")
FAST = {"lease_duration": 1.5, "renew_deadline": 1.0, "renew_interval": 0.1}


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="64", memory="256Gi")


def lease(api: FakeApiServer) -> dict[str, Any]:
    return dict(api.get(*LEASE, api_version="coordination.k8s.io/v1")["spec"])


async def test_a_delayed_renewal_never_lets_two_replicas_bind_at_once(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    ops = [OperatorUnderTest(api, kubeconfig, time.time, monotonic=time.monotonic,
                             identity=f"op-{i}", **FAST) for i in (1, 2)]
    binds: list[BindRecord] = []
    await ops[0].start()
    await ops[1].start(wait_ready=False)
    for op in ops:
        record_binds(op, binds)
    made = 0
    producing = True

    async def produce() -> None:
        nonlocal made
        while producing:
            api.create(pod(f"p-{made}", cpu="100m", memory="64Mi"))
            made += 1
            await asyncio.sleep(0.02)

    producer = asyncio.create_task(produce())
    try:
        await wait_for(lambda: sum(b[0] == "op-1" for b in binds) >= 5, what="op-1 binds")
        held = api.faults.add(path_regex="/leases", delay=5.0, agent="op-1")
        await wait_for(lambda: ops[1].leading, what="op-2 takes over", timeout=15)
        await wait_for(lambda: sum(b[0] == "op-2" for b in binds) >= 5, what="op-2 binds")
        producing = False
        await producer
        assert held.hits >= 1
        last_of_one = max(end for who, _, end, _ in binds if who == "op-1")
        first_of_two = min(sent for who, sent, _, _ in binds if who == "op-2")
        overlap = max(0.0, last_of_one - first_of_two)
        print(f"bind overlap {overlap * 1000:.0f} ms; gap between op-1's last bind answer "
              f"and op-2's first bind {(first_of_two - last_of_one) * 1000:.0f} ms")
        assert overlap == 0.0
        assert not ops[0].leading
        assert lease(api)["holderIdentity"] == "op-2"
        assert_bound_at_most_once(api)
    finally:
        producing = False
        await asyncio.gather(producer, return_exceptions=True)
        api.faults.clear()
        for op in ops:
            await op.crash()


async def test_a_graceful_stop_releases_the_lease_for_an_immediate_takeover(cluster) -> None:  # type: ignore[no-untyped-def]
    """SIGTERM: op-1 stops binding, then empties the Lease's holder; op-2 takes it over
    at once, with no clock moving (a crash would make it wait the lease duration)."""
    api, kubeconfig = cluster
    clock = FakeClock()
    one = await OperatorUnderTest(api, kubeconfig, clock, identity="op-1").start()
    two = await OperatorUnderTest(api, kubeconfig, clock, identity="op-2").start(
        wait_ready=False)
    try:
        api.create(pod("before"))
        await wait_for(lambda: (api.get("pods", "default", "before")["spec"]
                                .get("nodeName")), what="op-1 binds")
        assert not two.leading
        await one.kill()
        assert one.failed == ""
        await wait_for(lambda: two.leading, what="op-2 takes over without expiry")
        spec = lease(api)
        assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("op-2", 1)
        api.create(pod("after"))
        await wait_for(lambda: (api.get("pods", "default", "after")["spec"]
                                .get("nodeName")), what="op-2 binds")
        assert_bound_at_most_once(api)
    finally:
        await one.crash()
        await two.crash()
