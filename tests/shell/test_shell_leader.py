"""Only one active scheduler: leader election on the ``gangsched-leader`` Lease.

Two replicas (``op-1``, ``op-2``) run against one API server with one fake clock, as
both their wall clock and their monotonic clock: expiry and the renew deadline are
driven by advancing that clock, never by waiting.
"""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched.translate import times
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
    assert_bound_at_most_once,
    bind_answers,
    group,
    new_cluster,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio

LEASE = ("leases", "gangsched-system", "gangsched-leader")


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4")


def replica(api: FakeApiServer, kubeconfig: pathlib.Path, clock: FakeClock,
            identity: str) -> OperatorUnderTest:
    """An operator whose wall and monotonic clocks are both ``clock``."""
    return OperatorUnderTest(api, kubeconfig, clock, monotonic=clock, identity=identity)


def lease(api: FakeApiServer) -> dict[str, Any]:
    return dict(api.get(*LEASE, api_version="coordination.k8s.io/v1")["spec"])


def bound(api: FakeApiServer, name: str) -> bool:
    found = api.try_get("pods", "default", name)
    return bool(found and found["spec"].get("nodeName"))


async def lease_attempts(api: FakeApiServer, count: int) -> None:
    """Wait until the replicas have read the Lease ``count`` more times."""
    target = api.request_count("get", "leases") + count
    await wait_for(lambda: api.request_count("get", "leases") >= target, what="lease reads")


async def test_only_the_leader_schedules_and_the_other_takes_over(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    one = await replica(api, kubeconfig, clock, "op-1").start()
    two = await replica(api, kubeconfig, clock, "op-2").start(wait_ready=False)
    try:
        assert lease(api)["holderIdentity"] == "op-1"
        assert times.parse_time(lease(api)["renewTime"]) == clock.now

        api.create(application("train", [group("ps", 1), group("worker", 2, cpu="2")]))
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("reserved") == "3/3", what="op-1 reserves the gang")
        api.create(pod("ps-0", labels={"gangsched.io/app": "train"},
                       annotations={"gangsched.io/task-group": "ps"}))
        await wait_for(lambda: bound(api, "ps-0"), what="op-1 swaps the first real pod")
        await lease_attempts(api, 4)
        assert not two.leading
        assert two.runtime is not None
        assert (two.runtime.cycles, two.runtime.binds.done, two.runtime.api.done) == (0, 0, 0)

        await one.crash()
        for i in range(2):
            api.create(pod(f"worker-{i}", cpu="2", labels={"gangsched.io/app": "train"},
                           annotations={"gangsched.io/task-group": "worker"}))
        await lease_attempts(api, 4)
        assert not two.leading  # the Lease has not expired on the operators' clock
        assert not bound(api, "worker-0")

        clock.advance(15.5)
        await wait_for(lambda: two.leading, what="op-2 takes the Lease over")
        await wait_for(lambda: two.runtime is not None and two.runtime.ready.is_set(),
                       what="op-2 synced")
        spec = lease(api)
        assert spec["holderIdentity"] == "op-2"
        assert spec["leaseTransitions"] == 1
        await wait_for(lambda: bound(api, "worker-0") and bound(api, "worker-1"),
                       what="op-2 finishes the gang")
        await wait_for(lambda: not placeholders(api), what="no placeholder left")
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Running", what="Running")
        assert_bound_at_most_once(api)
        assert len(bind_answers(api)) == 3 + 3  # 3 placeholders, 3 real pods, once each
    finally:
        await one.kill()
        await two.kill()


async def test_two_replicas_started_together_elect_one(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    ops = [replica(api, kubeconfig, clock, f"op-{i}") for i in (1, 2)]
    for op in ops:
        await op.start(wait_ready=False)
    try:
        await wait_for(lambda: any(op.leading for op in ops), what="a leader")
        for i in range(6):
            api.create(pod(f"p-{i}"))
        await wait_for(lambda: all(bound(api, f"p-{i}") for i in range(6)), what="bound")
        await lease_attempts(api, 6)
        assert [op.leading for op in ops].count(True) == 1
        leader = next(op for op in ops if op.leading)
        assert lease(api)["holderIdentity"] == leader.settings.identity
        follower = next(op for op in ops if not op.leading)
        assert follower.runtime is not None and follower.runtime.binds.done == 0
        assert_bound_at_most_once(api)
    finally:
        for op in ops:
            await op.kill()


async def test_leader_that_cannot_renew_stops_before_the_lease_expires(cluster) -> None:  # type: ignore[no-untyped-def]
    """The Lease cannot be renewed (API errors): the leader stops scheduling when the
    renew deadline (10 s) passes, and exits non-zero. Another replica judges expiry on
    its own clock, from when it saw the Lease change: never by comparing the holder's
    ``renewTime`` with its clock, however old that looks."""
    api, kubeconfig = cluster
    clock = FakeClock()
    one = await replica(api, kubeconfig, clock, "op-1").start()
    two: OperatorUnderTest | None = None
    try:
        api.create(pod("early"))
        await wait_for(lambda: bound(api, "early"), what="op-1 schedules")
        refused = api.faults.add(path_regex="/leases", status=503)
        await wait_for(lambda: refused.hits >= 2, what="renewals refused")
        clock.advance(9)
        hits = refused.hits
        await wait_for(lambda: refused.hits >= hits + 2, what="more renewals refused")
        assert one.leading  # 9 s without renewal: within the 10 s renew deadline
        clock.advance(1.5)
        await wait_for(lambda: one.task is not None and one.task.done(),
                       what="op-1 stops itself")
        assert not one.leading
        assert one.failed is not None and one.failed.startswith("leadership lost")
        api.faults.clear()
        api.create(pod("late"))
        clock.advance(100)  # the renewTime in the Lease is now 110 s old
        two = await replica(api, kubeconfig, clock, "op-2").start(
            wait_ready=False)
        await lease_attempts(api, 3)
        assert not two.leading  # op-2 saw this record only now
        clock.advance(14)
        await lease_attempts(api, 3)
        assert not two.leading  # 14 s on op-2's clock since it saw the record
        clock.advance(1.5)
        await wait_for(lambda: bound(api, "late"), what="op-2 schedules")
        assert [p["metadata"]["name"] for p in pods_in(api) if p["spec"].get("nodeName")] \
            == ["early", "late"]
        assert_bound_at_most_once(api)
    finally:
        await one.kill()
        if two is not None:
            await two.kill()


async def test_leader_stops_at_once_when_another_replica_holds_the_lease(cluster) -> None:  # type: ignore[no-untyped-def]
    """Another replica wrote itself into the Lease (its clock ran ahead of ours): the
    leader stops scheduling at its next renewal, without waiting for any timeout."""
    api, kubeconfig = cluster
    clock = FakeClock()
    one = await replica(api, kubeconfig, clock, "op-1").start()
    try:
        found = api.get(*LEASE, api_version="coordination.k8s.io/v1")
        found["spec"].update(holderIdentity="intruder",
                             renewTime=times.format_micro_time(clock.now))
        api.patch(*LEASE, {"spec": found["spec"]}, api_version="coordination.k8s.io/v1")
        await wait_for(lambda: one.task is not None and one.task.done(), what="op-1 stops")
        api.create(pod("unscheduled"))
        assert not bound(api, "unscheduled")
        assert lease(api)["holderIdentity"] == "intruder"
    finally:
        await one.kill()


async def test_binds_in_flight_are_cancelled_the_moment_the_renew_deadline_passes(cluster) -> None:  # type: ignore[no-untyped-def]
    """A bind the API server holds back is still waiting for its answer when the renew
    deadline passes (the renewal hangs too): the bind is abandoned right then, before the
    operator even begins to stop, not when the stop gets round to its workers."""
    api, kubeconfig = cluster
    clock = FakeClock()
    one = await replica(api, kubeconfig, clock, "op-1").start()
    runtime = one.runtime
    assert runtime is not None
    ended: list[str] = []
    binding: list[asyncio.Task[object]] = []
    original = runtime.client.bind

    async def bind(namespace: str, name: str, uid: str, node: str) -> None:
        task = asyncio.current_task()
        assert task is not None
        binding.append(task)
        try:
            await original(namespace, name, uid, node)
        except asyncio.CancelledError:
            ended.append(name)
            raise

    # Whether the bind had been cancelled when the stop began (the moment the cancelled
    # error reaches the bind's code may come after, as the request's own tasks unwind).
    cancelled_before_stop: list[bool] = []
    set_stop = one.stop.set

    def stopping() -> None:
        cancelled_before_stop.append(
            bool(binding) and all(t.cancelling() > 0 or t.done() for t in binding))
        set_stop()

    one.stop.set = stopping  # type: ignore[method-assign]
    runtime.client.bind = bind  # type: ignore[method-assign]
    try:
        held = api.faults.add(path_regex="/binding", delay=60.0)
        api.faults.add(path_regex="/leases", delay=60.0)
        api.create(pod("held"))
        await wait_for(lambda: held.hits == 1, what="the bind in flight")
        clock.advance(10.5)  # past the 10 s renew deadline
        await wait_for(lambda: ended, what="the bind abandoned")
        assert ended == ["held"]
        await wait_for(lambda: cancelled_before_stop, what="the stop")
        assert cancelled_before_stop[0]  # abandoned before the operator began to stop
        assert not one.leading
        await wait_for(lambda: one.task is not None and one.task.done(), what="op-1 stops")
        assert one.failed is not None and one.failed.startswith("leadership lost")
    finally:
        api.faults.clear()
        await one.crash()
