"""DRA in the scheduling cycle: claims allocated at bind time, gangs all or nothing,
assumptions released on failure, devices rebuilt from claims on restart."""

from __future__ import annotations

import dataclasses

from gangsched.core.devices.allocator import CANNOT_ALLOCATE
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import (
    AllocateClaim,
    BindGang,
    BindPod,
    DeletePod,
    EvictPod,
    PodPending,
)
from gangsched.core.values.devices import (
    AllocationResult,
    ConsumerRef,
    DeviceID,
    DeviceResult,
    ResourceClaim,
)
from gangsched.core.values.model import Node, PodPhase
from gangsched.core.values.observations import (
    DeviceObserved,
    NodeObserved,
    PodGone,
    PodGroupObserved,
    PodObserved,
    ResourceClaimsServed,
    VolumeBindFailed,
    VolumeObserved,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.builders import make_node, make_pod, make_podgroup
from tests.core.device_builders import claim, device, make_class, make_slice, match, request
from tests.core.volume_builders import with_volumes


def gpu_node(name: str) -> Node:
    return make_node(name, 8, labels={"kubernetes.io/hostname": name})


def gpu_cluster(nodes: int = 2, per_node: int = 2, *, attributes: bool = False) -> Scheduler:
    """``nodes`` nodes with ``per_node`` devices each (pool = node name)."""
    s = Scheduler()
    s.observe(ResourceClaimsServed(True))
    s.observe(DeviceObserved(make_class()))
    for n in range(nodes):
        name = f"n{n}"
        s.observe(NodeObserved(gpu_node(name)))
        devices = tuple(device(f"gpu-{i}", attributes={"nvlink": i % 2} if attributes else None)
                        for i in range(per_node))
        s.observe(DeviceObserved(make_slice(f"{name}-gpus", *devices, node=name, pool=name)))
    return s


def pod_with_claim(s: Scheduler, name: str, group: str | None = None, *,
                   claim_obj: ResourceClaim | None = None, priority: int = 0) -> None:
    made = claim_obj or claim(f"{name}-gpu")
    s.observe(VolumeObserved(made))
    pod = make_pod(name, pod_group=group, priority=priority)
    s.observe(PodObserved(with_volumes(pod, resource_claims=(made.name,))))


def binds(out: list[object]) -> dict[str, BindPod]:
    found: dict[str, BindPod] = {}
    for d in out:
        for b in d.binds if isinstance(d, BindGang) else (d,):
            if isinstance(b, BindPod):
                found[b.name] = b
    return found


def allocations(bind: BindPod) -> list[AllocateClaim]:
    return [w for w in bind.volumes if isinstance(w, AllocateClaim)]


def devices_of(bound: dict[str, BindPod]) -> list[DeviceID]:
    return [r.device_id for b in bound.values() for w in allocations(b)
            for r in w.allocation.devices]


def write_back(s: Scheduler, bound: dict[str, BindPod]) -> None:
    """The shell wrote each claim's allocation and bound each pod."""
    for b in bound.values():
        for w in allocations(b):
            old = s.volumes.resource_claims[f"{w.namespace}/{w.claim}"]  # type: ignore[index]
            s.observe(VolumeObserved(dataclasses.replace(
                old, resource_version="2", allocation=w.allocation,
                reserved_for=(w.reserved_for,))))


def test_a_gang_of_four_gets_four_distinct_devices_on_two_nodes_and_binds_whole() -> None:
    s = gpu_cluster(nodes=2)
    s.observe(NodeObserved(gpu_node("n2")))  # a node without devices
    s.observe(PodGroupObserved(make_podgroup("job", 4)))
    for i in range(4):
        pod_with_claim(s, f"w{i}", "job")
    out = s.cycle(now=10.0)
    (gang,) = [d for d in out if isinstance(d, BindGang)]
    bound = binds(out)
    assert set(bound) == {"w0", "w1", "w2", "w3"}
    assert {b.node for b in bound.values()} == {"n0", "n1"}
    taken = devices_of(bound)
    assert len(taken) == 4 and len(set(taken)) == 4
    for b in bound.values():
        (write,) = allocations(b)
        assert write.reserved_for == ConsumerRef(b.name, b.uid)
        assert write.resource_version == "1" and write.claim_uid == f"uid-{b.name}-gpu"
        (result,) = write.allocation.devices
        assert result.pool == b.node  # the device is on the node the pod goes to
    assert len(gang.binds) == 4


def test_a_second_gang_binds_nothing_while_no_device_is_free_and_holds_nothing() -> None:
    s = gpu_cluster()
    s.observe(PodGroupObserved(make_podgroup("first", 4)))
    for i in range(4):
        pod_with_claim(s, f"a{i}", "first")
    first = binds(s.cycle(now=10.0))
    write_back(s, first)
    s.observe(PodGroupObserved(make_podgroup("second", 2)))
    for i in range(2):
        pod_with_claim(s, f"b{i}", "second")
    out = s.cycle(now=20.0)
    assert binds(out) == {}
    assert not [k for k in s.volumes.devices.assumed if "/b" in k]
    # The first gang goes: the resourceclaim controller deallocates its claims.
    for name, b in first.items():
        s.observe(PodGone(b.uid))
        old = s.volumes.resource_claims[f"default/{name}-gpu"]  # type: ignore[index]
        s.observe(VolumeObserved(dataclasses.replace(old, resource_version="3",
                                                     allocation=None, reserved_for=())))
    again = binds(s.cycle(now=30.0))
    assert set(again) == {"b0", "b1"}


def test_match_attribute_pod_goes_where_two_devices_share_the_value() -> None:
    s = Scheduler()
    s.observe(ResourceClaimsServed(True))
    s.observe(DeviceObserved(make_class()))
    for name, values in (("n0", (0, 1)), ("n1", (1, 1))):
        s.observe(NodeObserved(gpu_node(name)))
        s.observe(DeviceObserved(make_slice(f"{name}-gpus", *(
            device(f"gpu-{i}", attributes={"nvlink": v}) for i, v in enumerate(values)),
            node=name, pool=name)))
    pair = claim("pair-a", request("req-0", "class-a", 2),
                 constraints=(match("driver-a/nvlink"),))
    pod_with_claim(s, "a", claim_obj=pair)
    bound = binds(s.cycle(now=10.0))
    assert bound["a"].node == "n1"
    pod_with_claim(s, "b", claim_obj=dataclasses.replace(pair, name="pair-b", uid="uid-b"))
    out = s.cycle(now=11.0)
    assert "b" not in binds(out)
    waiting = [d for d in out if isinstance(d, PodPending) and d.name == "b"]
    assert waiting and CANNOT_ALLOCATE in waiting[0].message


def test_a_failed_claim_write_gives_the_devices_back() -> None:
    s = gpu_cluster(nodes=1, per_node=1)
    pod_with_claim(s, "p")
    first = binds(s.cycle(now=10.0))["p"]
    assert s.volumes.devices.taken == {DeviceID("driver-a", "n0", "gpu-0"): "default/p-gpu"}
    s.observe(VolumeBindFailed(first.uid, first.node, 409, "the claim changed"))
    s.cycle(now=10.5)
    assert s.volumes.devices.taken == {}
    again = binds(s.cycle(now=60.0))
    assert again["p"].volumes == first.volumes


def test_an_allocated_shared_claim_is_only_reserved() -> None:
    s = gpu_cluster(nodes=2, per_node=1)
    shared = claim("shared")
    pod_with_claim(s, "a", claim_obj=shared)
    a = binds(s.cycle(now=10.0))["a"]
    write_back(s, {"a": a})
    pod = make_pod("b")
    s.observe(PodObserved(with_volumes(pod, resource_claims=("shared",))))
    b = binds(s.cycle(now=11.0))["b"]
    assert b.node == a.node  # where the shared claim's device is
    (write,) = b.volumes
    assert type(write).__name__ == "ReserveClaim"
    assert write.reserved_for == ConsumerRef("b", b.uid)  # type: ignore[union-attr]


def test_a_claim_reserved_for_its_limit_of_consumers_is_in_use() -> None:
    s = gpu_cluster(nodes=1, per_node=1)
    full = dataclasses.replace(
        claim("full"), allocation=AllocationResult(),
        reserved_for=tuple(ConsumerRef(f"p{i}", f"u{i}") for i in range(256)))
    s.observe(VolumeObserved(full))
    s.observe(PodObserved(with_volumes(make_pod("late"), resource_claims=("full",))))
    out = s.cycle(now=10.0)
    (waiting,) = [d for d in out if isinstance(d, PodPending)]
    assert "resourceclaim in use" in waiting.message


def test_restart_rebuilds_taken_devices_from_claims() -> None:
    s = gpu_cluster(nodes=1, per_node=2)
    allocated = dataclasses.replace(
        claim("old"), allocation=AllocationResult((DeviceResult("req-0", "driver-a", "n0",
                                                                "gpu-0"),)))
    s.observe(VolumeObserved(allocated))
    pod_with_claim(s, "new")
    (w,) = allocations(binds(s.cycle(now=10.0))["new"])
    assert [r.device for r in w.allocation.devices] == ["gpu-1"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=8),
       st.integers(min_value=1, max_value=3))
def test_no_device_is_ever_allocated_twice(counts: list[int], nodes: int) -> None:
    s = gpu_cluster(nodes=nodes, per_node=3)
    for i, count in enumerate(counts):
        pod_with_claim(s, f"p{i}", claim_obj=claim(f"c{i}", request("req-0", "class-a", count)))
    seen: list[DeviceID] = []
    for t in range(3):
        bound = binds(s.cycle(now=10.0 + t))
        seen += devices_of(bound)
        write_back(s, bound)
    assert len(seen) == len(set(seen))
    assert len(seen) <= nodes * 3


def test_a_high_priority_gang_preempts_only_the_holders_of_the_devices_it_needs() -> None:
    s = gpu_cluster()
    s.config = dataclasses.replace(s.config, actions=("allocate", "preempt"))
    for n in range(2):
        for i in range(2):
            name = f"low-{n}-{i}"
            pod = make_pod(name, node=f"n{n}", phase=PodPhase.RUNNING, priority=0)
            result = DeviceResult("req-0", "driver-a", f"n{n}", f"gpu-{i}")
            s.observe(VolumeObserved(dataclasses.replace(
                claim(f"{name}-gpu"), allocation=AllocationResult((result,)),
                reserved_for=(ConsumerRef(name, pod.uid),))))
            s.observe(PodObserved(with_volumes(pod, resource_claims=(f"{name}-gpu",))))
    s.observe(PodGroupObserved(make_podgroup("urgent", 2, priority=100)))
    for i in range(2):
        made = claim(f"u{i}-gpu")
        s.observe(VolumeObserved(made))
        s.observe(PodObserved(with_volumes(make_pod(f"u{i}", pod_group="urgent", priority=100),
                                           resource_claims=(made.name,))))
    out = s.cycle(now=10.0)
    assert binds(out) == {}
    victims = sorted(d.name for d in out if isinstance(d, EvictPod | DeletePod))
    assert len(victims) == 2 and all(v.startswith("low-") for v in victims)
    for name in victims:
        s.observe(PodGone(make_pod(name).uid))
        old = s.volumes.resource_claims[f"default/{name}-gpu"]  # type: ignore[index]
        s.observe(VolumeObserved(dataclasses.replace(old, resource_version="3",
                                                     allocation=None, reserved_for=())))
    bound = {}
    for t in range(1, 6):
        bound.update(binds(s.cycle(now=10.0 + t)))
    assert set(bound) == {"u0", "u1"}
    assert len(set(devices_of(bound))) == 2


def test_a_gang_whose_devices_can_never_be_found_says_so_and_holds_nothing() -> None:
    s = gpu_cluster(nodes=2, per_node=2)
    s.observe(PodGroupObserved(make_podgroup("big", 2)))
    for i in range(2):
        pod_with_claim(s, f"w{i}", "big",
                       claim_obj=claim(f"w{i}-gpu", request("req-0", "class-a", 3)))
    out = s.cycle(now=10.0)
    assert binds(out) == {}
    assert s.volumes.devices.assumed == {} and s.volumes.devices.taken == {}
    statuses = [d for d in out if type(d).__name__ == "SetPodGroupStatus"]
    assert statuses and "cannot allocate all claims" in statuses[-1].blocking.message
