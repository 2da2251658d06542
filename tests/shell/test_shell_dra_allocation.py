"""Devices allocated by the scheduler, end to end: the operator against the fake API
server's resource.k8s.io/v1, its resourceclaim controller and its kubelet, with real
(small) delays (see ``test_shell_dra.py``).

The scenarios are the issue's: a gang of four one-GPU pods on two nodes of two GPUs is
bound whole with four distinct devices; a second gang binds nothing until the first is
gone; a claim whose two devices must share an attribute goes to the node whose devices
share it; a conflict on the claim write releases and tries again; a restart rebuilds
the allocations from the claims; a high-priority gang preempts exactly as many holders
of devices as it needs; a gang whose claim write fails binds no member and holds no
device.
"""

from __future__ import annotations

import pytest
from fakeapi.builders import make_priority_class
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    assert_bound_at_most_once,
    bind_answers,
    condition,
    wait_for,
)
from test_shell_dra import (
    cluster,
    devices_of,
    gpus,
    member,
    node_of,
    podgroup,
    reserved_for,
    running,
    template,
)

pytestmark = pytest.mark.asyncio
__all__ = ["cluster"]  # the fixture, shared with test_shell_dra.py


async def test_a_gang_gets_four_distinct_devices_and_a_second_waits_for_them(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a", "a")
    gpus(api, "node-1", "b", "b")
    template(api)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        podgroup(api, "first", 4)
        for i in range(4):
            api.create(member(f"first-{i}", "first"))
        await wait_for(lambda: all(running(api, f"first-{i}") for i in range(4)),
                       what="the first gang running", timeout=30)
        names = [f"first-{i}" for i in range(4)]
        assert {node_of(api, n) for n in names} == {"node-0", "node-1"}
        taken = [d for n in names for d in devices_of(api, n)]
        assert len(taken) == 4 and len(set(taken)) == 4
        for n in names:  # the device is on the pod's node, the claim reserved for the pod
            assert devices_of(api, n)[0][0] == node_of(api, n)
            assert reserved_for(api, n) == [n]
        podgroup(api, "second", 2)
        for i in range(2):
            api.create(member(f"second-{i}", "second"))
        await op.settle(cycles=6)
        assert node_of(api, "second-0") is None and node_of(api, "second-1") is None
        scheduled = condition(api.get("pods", "default", "second-0"), "PodScheduled")
        assert scheduled.get("status") == "False", scheduled
        for n in names:
            api.delete("pods", "default", n)
        await wait_for(lambda: running(api, "second-0") and running(api, "second-1"),
                       what="the second gang running once the first is gone", timeout=30)
        second = devices_of(api, "second-0") + devices_of(api, "second-1")
        assert len(set(second)) == 2
        assert_bound_at_most_once(api)
    finally:
        await op.kill()


async def test_a_claim_of_two_devices_sharing_a_domain_goes_where_they_do(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a", "b")  # two GPUs, two domains: no pair here
    gpus(api, "node-1", "c", "c")  # one pair
    template(api, "pair", count=2, same_domain=True)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(member("pair-0", claim_template="pair"))
        await wait_for(lambda: running(api, "pair-0"), what="pair-0 running", timeout=30)
        assert node_of(api, "pair-0") == "node-1"
        assert sorted(devices_of(api, "pair-0")) == [("node-1", "gpu-0"), ("node-1", "gpu-1")]
        api.create(member("pair-1", claim_template="pair"))
        await wait_for(lambda: condition(api.get("pods", "default", "pair-1"),
                                         "PodScheduled").get("status") == "False",
                       what="pair-1 unschedulable", timeout=30)
        await op.settle(cycles=4)
        assert node_of(api, "pair-1") is None
        assert devices_of(api, "pair-1") == []
    finally:
        await op.kill()


async def test_a_conflict_on_the_claim_write_releases_and_tries_again(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a")
    template(api)
    api.faults.add(method="PUT", path_regex=r"/resourceclaims/[^/]+/status$", status=409,
                   times=1, message="Operation cannot be fulfilled on "
                                    "resourceclaims.resource.k8s.io: the object has been "
                                    "modified; please apply your changes to the latest "
                                    "version and try again")
    api.log_requests = True
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(member("job-0"))
        await wait_for(lambda: "VolumeBindFailed" in condition(
            api.try_get("pods", "default", "job-0"), "PodScheduled").get("message", "")
            or node_of(api, "job-0"), what="the write refused", timeout=30)
        # Past the pod's backoff, as often as it takes: a retry chosen before the watch
        # brought the claim's newer version is refused before any write, and backs off again.
        for _ in range(10):
            if running(api, "job-0"):
                break
            await op.advance(30, cycles=4)
        await wait_for(lambda: running(api, "job-0"), what="job-0 running after a retry",
                       timeout=30)
        assert devices_of(api, "job-0") == [("node-0", "gpu-0")]
        writes = [r.status for r in api.request_log
                  if r.method == "PUT" and r.path_qs.endswith("/status")
                  and "/resourceclaims/" in r.path_qs]
        assert writes == [409, 200]  # refused, released, written again
        assert_bound_at_most_once(api)
    finally:
        await op.kill()


async def test_a_restart_rebuilds_the_allocations_from_the_claims(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a", "a")
    template(api)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(member("first"))
        await wait_for(lambda: running(api, "first"), what="first running", timeout=30)
    finally:
        await op.kill()
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(member("second"))
        api.create(member("third"))
        await wait_for(lambda: running(api, "second") or running(api, "third"),
                       what="one more running", timeout=30)
        await op.settle(cycles=6)
        assert sum(1 for n in ("second", "third") if node_of(api, n)) == 1
        taken = [d for n in ("first", "second", "third") for d in devices_of(api, n)]
        assert sorted(taken) == [("node-0", "gpu-0"), ("node-0", "gpu-1")]
    finally:
        await op.kill()


async def test_a_high_priority_gang_preempts_exactly_the_holders_it_needs(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a", "a")
    gpus(api, "node-1", "b", "b")
    template(api)
    api.create(make_priority_class("low", 10))
    api.create(make_priority_class("high", 1000))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        for i in range(4):
            body = member(f"low-{i}")
            body["spec"]["priorityClassName"] = "low"
            api.create(body)
        await wait_for(lambda: all(running(api, f"low-{i}") for i in range(4)),
                       what="four low-priority holders running", timeout=30)
        podgroup(api, "urgent", 2)
        for i in range(2):
            body = member(f"urgent-{i}", "urgent")
            body["spec"]["priorityClassName"] = "high"
            api.create(body)
        # Preemption is tried again after the pods' backoff: let the clock pass as it would
        # (the claims are made, and the pods updated, by the controller, in any order).
        for _ in range(20):
            if running(api, "urgent-0") and running(api, "urgent-1"):
                break
            await op.advance(2)
        await wait_for(lambda: running(api, "urgent-0") and running(api, "urgent-1"),
                       what="the urgent gang running", timeout=30)
        left = [i for i in range(4) if api.try_get("pods", "default", f"low-{i}")]
        assert len(left) == 2, left
        urgent = devices_of(api, "urgent-0") + devices_of(api, "urgent-1")
        holders = [d for i in left for d in devices_of(api, f"low-{i}")]
        assert len(set(urgent + holders)) == 4
    finally:
        await op.kill()


async def test_a_gang_whose_claim_write_fails_binds_nothing_and_holds_no_device(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a", "a")
    template(api)
    api.faults.add(method="PUT", path_regex=r"/resourceclaims/pair-1-gpu-[^/]+/status$",
                   status=500, times=1, message="etcdserver: request timed out")
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        podgroup(api, "pair", 2)
        api.create(member("pair-0", "pair"))
        api.create(member("pair-1", "pair"))
        await wait_for(lambda: "VolumeBindFailed" in condition(
            api.try_get("pods", "default", "pair-0"), "PodScheduled").get("reason", "")
            + condition(api.try_get("pods", "default", "pair-0"), "PodScheduled").get(
                "message", ""), what="the gang's writes refused", timeout=30)
        assert bind_answers(api) == []
        assert devices_of(api, "pair-0") == [] and reserved_for(api, "pair-0") == []
        await op.advance(30, cycles=4)  # past the backoff: the gang is bound whole
        await wait_for(lambda: running(api, "pair-0") and running(api, "pair-1"),
                       what="the pair running after a retry", timeout=30)
        assert len(set(devices_of(api, "pair-0") + devices_of(api, "pair-1"))) == 2
    finally:
        await op.kill()
