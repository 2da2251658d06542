"""The Workload API's PodGroup-level ResourceClaims (Kubernetes 1.36,
``DRAWorkloadResourceClaims``): a claim of the group is allocated once, by the first
member placed, and reserved for the PodGroup, not for each pod; the other members share
it and write nothing."""

from __future__ import annotations

import dataclasses

import pytest
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import AllocateClaim, BindGang, BindPod, ReserveClaim
from gangsched.core.values.devices import ConsumerRef
from gangsched.core.values.observations import (
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    VolumeObserved,
)

from tests.core.builders import make_pod, make_podgroup
from tests.core.device_builders import claim
from tests.core.test_devices_scheduling import binds, gpu_cluster
from tests.core.volume_builders import with_volumes

GROUP = ConsumerRef("train", "pg-uid-train", "podgroups", "scheduling.k8s.io")


def members(s: Scheduler, count: int, claim_name: str = "train-gpu", *,
            group: str = "train", start: int = 0) -> None:
    for i in range(start, start + count):
        pod = make_pod(f"m{i}", pod_group=group)
        s.observe(PodObserved(with_volumes(pod, resource_claims=(claim_name,))))


def writes(out: list[object]) -> list[AllocateClaim | ReserveClaim]:
    return [w for b in binds(out).values() for w in b.volumes
            if isinstance(w, AllocateClaim | ReserveClaim)]


@pytest.mark.parametrize(("of_group", "allocations", "reservations", "consumers"), [
    pytest.param(True, 1, 0, {"podgroups"}, id="group-claim-reserved-for-the-group"),
    pytest.param(False, 1, 2, {"pods"}, id="claim-shared-by-name-reserved-for-each-pod"),
])
def test_a_group_claim_is_allocated_once_and_reserved_for_the_podgroup(
        of_group: bool, allocations: int, reservations: int, consumers: set[str]) -> None:
    s = gpu_cluster(nodes=2, per_node=1)
    s.observe(VolumeObserved(claim("train-gpu")))
    group = make_podgroup("train", 3)
    if of_group:
        group = dataclasses.replace(group, claims=("train-gpu",), consumer=GROUP)
    s.observe(PodGroupObserved(group))
    members(s, 3)
    out = s.cycle(now=10.0)
    bound = binds(out)
    assert set(bound) == {"m0", "m1", "m2"}
    assert [d for d in out if isinstance(d, BindGang)]
    found = writes(out)
    assert len([w for w in found if isinstance(w, AllocateClaim)]) == allocations
    assert len([w for w in found if isinstance(w, ReserveClaim)]) == reservations
    assert {w.reserved_for.resource for w in found} == consumers
    (write,) = [w for w in found if isinstance(w, AllocateClaim)]
    if of_group:
        assert write.reserved_for == GROUP
    (result,) = write.allocation.devices
    assert {b.node for b in bound.values()} == {result.pool}  # where the device is


def test_members_after_the_group_claim_is_written_write_nothing_and_go_where_it_is() -> None:
    s = gpu_cluster(nodes=2, per_node=2)
    s.observe(VolumeObserved(claim("train-gpu")))
    s.observe(PodGroupObserved(dataclasses.replace(make_podgroup("train", 2),
                                                   claims=("train-gpu",), consumer=GROUP)))
    members(s, 2)
    first = s.cycle(now=10.0)
    (write,) = writes(first)
    assert isinstance(write, AllocateClaim)
    old = s.volumes.resource_claims["default/train-gpu"]  # type: ignore[index]
    s.observe(VolumeObserved(dataclasses.replace(
        old, resource_version="2", allocation=write.allocation, reserved_for=(GROUP,))))
    for b in binds(first).values():
        pod = s.pods[b.uid].pod
        s.observe(PodObserved(dataclasses.replace(pod, node_name=b.node)))
    # A late member of the group, with a claim of its own too (a second device).
    s.observe(VolumeObserved(claim("m2-own")))
    s.observe(PodObserved(with_volumes(make_pod("m2", pod_group="train"),
                                       resource_claims=("train-gpu", "m2-own"))))
    later = s.cycle(now=20.0)
    (bind,) = [d for d in later if isinstance(d, BindPod) and d.name == "m2"]
    # The group's claim is the group's already: only its own claim is written.
    assert [(type(w).__name__, w.claim) for w in bind.volumes] == [("AllocateClaim", "m2-own")]
    assert bind.node == write.allocation.devices[0].pool


def test_without_its_podgroup_a_pod_reserves_the_claim_for_itself() -> None:
    s = gpu_cluster(nodes=2, per_node=1)
    s.observe(VolumeObserved(claim("train-gpu")))
    s.observe(PodGroupObserved(dataclasses.replace(make_podgroup("train", 1),
                                                   claims=("train-gpu",), consumer=GROUP)))
    s.observe(PodGroupGone(make_podgroup("train", 1).key))
    assert s.volumes.devices.group_claims == {}
    s.observe(PodObserved(with_volumes(make_pod("alone"), resource_claims=("train-gpu",))))
    (write,) = writes(s.cycle(now=10.0))
    assert write.reserved_for == ConsumerRef("alone", "uid-default-alone")
