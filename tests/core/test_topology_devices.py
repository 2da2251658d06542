"""Topology gangs whose members claim DRA devices: the domain search simulates the
devices too, so that the gang lands in the domain that has them.

The cluster: rack ``a`` (two nodes, the tighter on cpu, bin-packing's first pick) and
rack ``b`` (two nodes); GPUs published as ResourceSlices, one pool per node.
"""

from __future__ import annotations

import dataclasses

import pytest
from gangsched.core.placement import domain_search as topology
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindGang, BindPod, SetPodGroupStatus
from gangsched.core.values.devices import ClaimSpec, ResourceClaimTemplate
from gangsched.core.values.model import AppSpec, Node, PodPhase, TopologyRequest
from gangsched.core.values.observations import (
    DeviceObserved,
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    ResourceClaimsServed,
    VolumeObserved,
)
from gangsched.core.values.volume_specs import GroupClaim

from tests.core.builders import ALWAYS, make_app, make_group, make_node, make_pod, make_podgroup
from tests.core.device_builders import claim, device, make_class, make_slice, request
from tests.core.simworld import SimWorld
from tests.core.volume_builders import with_volumes

RACK = "rack"
RACK_ONE = TopologyRequest(required=RACK)


def rack_node(name: str, rack: str) -> Node:
    return make_node(name, 8, labels={"kubernetes.io/hostname": name, RACK: rack})


def cluster(gpus: dict[str, int]) -> Scheduler:
    """Racks a (a0, a1) and b (b0, b1), ``gpus`` devices on the nodes named; rack a is
    made the tighter by a pod of another scheduler using 6 cpu on a0."""
    s = Scheduler()
    s.observe(ResourceClaimsServed(True))
    s.observe(DeviceObserved(make_class()))
    for name in ("a0", "a1", "b0", "b1"):
        s.observe(NodeObserved(rack_node(name, name[0])))
        count = gpus.get(name, 0)
        if count:
            devices = tuple(device(f"gpu-{i}") for i in range(count))
            s.observe(DeviceObserved(make_slice(f"{name}-gpus", *devices, node=name,
                                                pool=name)))
    s.observe(PodObserved(make_pod("filler", cpu=6, node="a0", ours=False,
                                   phase=PodPhase.RUNNING)))
    return s


def gang(s: Scheduler, count: int, *, devices: bool = True) -> None:
    spec = dataclasses.replace(make_podgroup("job", count), topology=RACK_ONE)
    s.observe(PodGroupObserved(spec))
    for i in range(count):
        pod = make_pod(f"w{i}", pod_group="job", cpu=1)
        if devices:
            made = claim(f"w{i}-gpu")
            s.observe(VolumeObserved(made))
            pod = with_volumes(pod, resource_claims=(made.name,))
        s.observe(PodObserved(pod))


def bound_nodes(out: list[object]) -> dict[str, str]:
    found: dict[str, str] = {}
    for d in out:
        for b in d.binds if isinstance(d, BindGang) else (d,):
            if isinstance(b, BindPod):
                found[b.name] = b.node
    return found


@pytest.mark.parametrize(("gpus", "members"), [
    ({"b0": 2, "b1": 2}, 4),           # rack a has cpu but no devices
    ({"a1": 2, "b0": 2, "b1": 2}, 4),  # rack a has devices, too few for the gang
    ({"a0": 1, "a1": 1, "b1": 3}, 3),  # too few in a, enough in b on one node
])
def test_a_gang_claiming_devices_lands_in_the_rack_that_has_them(
        gpus: dict[str, int], members: int) -> None:
    s = cluster(gpus)
    gang(s, members)
    bound = bound_nodes(s.cycle(now=10.0))
    assert len(bound) == members
    assert {node[0] for node in bound.values()} == {"b"}


def test_without_devices_the_gang_takes_the_tighter_rack() -> None:
    """The control: the same gang without claims goes to rack a, bin-packing's pick."""
    s = cluster({"b0": 2, "b1": 2})
    gang(s, 3, devices=False)
    bound = bound_nodes(s.cycle(now=10.0))
    assert len(bound) == 3 and {node[0] for node in bound.values()} == {"a"}


def test_a_gang_whose_devices_no_rack_holds_is_refused_and_binds_nothing() -> None:
    """Rack a has 2 devices, rack b 3: the gang of 4 fits no rack. It is refused
    naming each rack and why (no member is placed: none holds a device)."""
    s = cluster({"a0": 2, "b0": 1, "b1": 2})
    gang(s, 4)
    out = s.cycle(now=10.0)
    assert not bound_nodes(out)
    (status,) = [d for d in out if isinstance(d, SetPodGroupStatus)][-1:]
    assert status.blocking.reason == topology.REASON
    message = status.blocking.message
    assert "no single domain of rack" in message
    assert "rack=a: member 3 of 4" in message and "rack=b: member 4 of 4" in message
    assert "cannot allocate all claims" in message


def test_a_refused_gang_is_planned_again_once_devices_appear() -> None:
    """A refusal is kept until what it depended on changes: for members with claims,
    devices published (or freed) too, not only cpu and memory."""
    s = cluster({"a0": 2, "b0": 1, "b1": 2})
    gang(s, 4)
    assert not bound_nodes(s.cycle(now=10.0))
    more = (device("gpu-0"), device("gpu-1"))
    s.observe(DeviceObserved(make_slice("b0-gpus", *more, node="b0", pool="b0",
                                        generation=1)))
    bound = bound_nodes(s.cycle(now=11.0))
    assert len(bound) == 4 and {node[0] for node in bound.values()} == {"b"}


def gpu_app_world(gpus: dict[str, int]) -> tuple[SimWorld, AppSpec]:
    """The racks as a simulated world with ``gpus`` devices; an Application of one task
    group of 4 members, each claiming one GPU from a template, asking for one rack."""
    w = SimWorld(config=ALWAYS)
    for name in ("a0", "a1", "b0", "b1"):
        w.add_node(rack_node(name, name[0]))
    w.add_devices((make_class(),), tuple(
        make_slice(f"{n}-gpus", *(device(f"gpu-{i}") for i in range(c)), node=n, pool=n)
        for n, c in gpus.items()))
    w.observe(DeviceObserved(ResourceClaimTemplate(
        "default", "one-gpu", ClaimSpec((request("gpu", "class-a", 1),)))))
    w.add_pod(make_pod("filler", cpu=6, node="a0", ours=False, phase=PodPhase.RUNNING))
    group = dataclasses.replace(
        make_group("w", 4, cpu=1, claims=(GroupClaim("gpu", template="one-gpu"),)),
        topology=RACK_ONE)
    app = make_app("job", group)
    w.add_app(app)
    return w, app


def test_an_application_whose_task_group_claims_gpus_holds_them_in_the_rack_that_has_them(
        ) -> None:
    """Placeholders hold devices in rack b: rack a, bin-packing's pick, has too few."""
    w, app = gpu_app_world({"a1": 2, "b0": 2, "b1": 2})
    w.settle(0)
    placed = {p.name: p.node_name for p in w.placeholders(app.key)}
    assert len(placed) == 4 and all(str(n).startswith("b") for n in placed.values())


def test_placeholders_yet_to_come_count_their_task_groups_devices() -> None:
    """Before any placeholder exists, the gang is planned with the devices its task
    group's claims ask for: 5 GPUs in the cluster, but no rack has 4, so it is refused
    at once."""
    w, _ = gpu_app_world({"a1": 2, "b0": 1, "b1": 2})
    w.step(0)
    (status,) = list(w.app_status.values())
    (group,) = status.task_groups
    assert group.blocking.reason == topology.REASON
    assert "cannot allocate all claims" in group.blocking.message


def test_members_sharing_one_claim_allocate_it_once() -> None:
    """Both members name one claim of 2 GPUs: the first allocates it, the second only
    has to reach that allocation (the same node), as kube-scheduler shares an assumed
    claim. Counting it twice would ask for 4 GPUs, which no rack has."""
    s = cluster({"a1": 2, "b0": 2})
    spec = dataclasses.replace(make_podgroup("job", 2), topology=RACK_ONE)
    s.observe(PodGroupObserved(spec))
    shared = claim("shared", request("req-0", "class-a", 2))
    s.observe(VolumeObserved(shared))
    for i in range(2):
        s.observe(PodObserved(with_volumes(make_pod(f"w{i}", pod_group="job", cpu=1),
                                           resource_claims=(shared.name,))))
    bound = bound_nodes(s.cycle(now=10.0))
    assert bound == {"w0": "a1", "w1": "a1"}
