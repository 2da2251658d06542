"""Placeholders hold devices for their task group's claims: in memory, taken for every
other pod, handed to the real member atomically, rebuilt after a restart; a gang whose
claims can be had nowhere holds nothing and says why."""

from __future__ import annotations

import pytest
from builders import ALWAYS, make_app, make_group, make_node, make_pod, placeholder_of
from device_builders import claim, device, make_class, make_slice, request
from gangsched.core.devices.allocator import CANNOT_ALLOCATE
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import AllocateClaim, BindPod, CreatePlaceholder, EventType
from gangsched.core.values.devices import ClaimSpec, ResourceClaimTemplate
from gangsched.core.values.model import AppSpec, Node
from gangsched.core.values.observations import DeviceObserved, ResourceClaimsServed
from gangsched.core.values.volume_specs import GroupClaim, is_held_claim
from simworld import SimWorld
from volume_builders import with_volumes

TEMPLATE = "one-gpu"


def gpu_node(name: str) -> Node:
    return make_node(name, 8, labels={"kubernetes.io/hostname": name})


def template(name: str = TEMPLATE, count: int = 1,
             device_class: str = "class-a") -> ResourceClaimTemplate:
    return ResourceClaimTemplate("default", name,
                                 ClaimSpec((request("gpu", device_class, count),)))


def gpu_app(members: int = 2, *claims: GroupClaim, name: str = "job") -> AppSpec:
    group_claims = claims or (GroupClaim("gpu", template=TEMPLATE),)
    return make_app(name, make_group("w", members, cpu=1, claims=group_claims))


def world(nodes: int = 2, per_node: int = 1, *, plain_nodes: int = 1,
          templates: tuple[ResourceClaimTemplate, ...] = (template(),)) -> SimWorld:
    """``nodes`` nodes with ``per_node`` devices of class-a each, ``plain_nodes`` more
    with none."""
    w = SimWorld(config=ALWAYS)
    for n in range(nodes + plain_nodes):
        w.add_node(gpu_node(f"n{n}"))
    slices = tuple(make_slice(f"n{n}-gpus", *(device(f"gpu-{i}") for i in range(per_node)),
                              node=f"n{n}", pool=f"n{n}") for n in range(nodes))
    w.add_devices((make_class(),), slices)
    for made in templates:
        w.observe(DeviceObserved(made))
    return w


def held(w: SimWorld) -> dict[str, str]:
    """Devices held by placeholders in memory: device -> ``namespace/<placeholder>:<claim>``."""
    return {str(d): k for d, k in w.scheduler.volumes.devices.taken.items() if is_held_claim(k)}


def add_member(w: SimWorld, name: str, *, device_class: str = "class-a",
               task_group: str = "w", app: str = "job") -> None:
    """A real member with its own claim, made by the resourceclaim controller."""
    made = claim(f"{name}-gpu", request("gpu", device_class))
    w.add_claims((made,))
    w.add_pod(with_volumes(make_pod(name, cpu=1, app=app, task_group=task_group),
                           resource_claims=(made.name,)))


def add_competitor(w: SimWorld, name: str = "other") -> None:
    made = claim(f"{name}-gpu")
    w.add_claims((made,))
    w.add_pod(with_volumes(make_pod(name, cpu=1), resource_claims=(made.name,)))


def test_placeholders_hold_devices_on_the_nodes_that_have_them_and_a_competitor_waits() -> None:
    w = world()
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    creates = [d for d in w.decisions if isinstance(d, CreatePlaceholder)]
    assert {d.claims for d in creates} == {(GroupClaim("gpu", template=TEMPLATE),)}
    placed = {p.name: p.node_name for p in w.placeholders(app.key)}
    assert sorted(placed.values()) == ["n0", "n1"]  # n2 has no device
    assert sorted(held(w)) == ["driver-a/n0/gpu-0", "driver-a/n1/gpu-0"]
    assert all(key.split("/", 1)[1].split(":")[0] in placed for key in held(w).values())
    assert not [d for d in w.decisions if isinstance(d, BindPod) and d.volumes]  # nothing written
    add_competitor(w)
    w.settle(1)
    assert w.node_of("other") is None
    assert CANNOT_ALLOCATE in w.pending_reasons[w.uid_of("other")].message


@pytest.mark.parametrize("hold_first", [True, False], ids=["deletion-slow", "deletion-at-once"])
def test_the_swap_hands_the_placeholders_device_to_the_member_atomically(
        hold_first: bool) -> None:
    w = world()
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    add_competitor(w)
    w.settle(1)
    first = placeholder_of(app, "w", 0)
    node = w.node_of(first)
    device_held = next(d for d, k in held(w).items() if first in k)
    if hold_first:
        w.hold_deletes.add(first)
    add_member(w, "x")
    w.step(2)
    if hold_first:  # the placeholder is being deleted: its device stays held
        w.settle(3)
        assert device_held in held(w) and w.node_of("other") is None
        w.hold_deletes.clear()
        w.delete(first)
    # The placeholder is gone, the member not yet bound: the device is still held.
    assert device_held in held(w)
    w.settle(4)
    assert w.node_of("x") == node
    (bind,) = [d for d in w.decisions if isinstance(d, BindPod) and d.name == "x"]
    (write,) = [v for v in bind.volumes if isinstance(v, AllocateClaim)]
    assert [str(r.device_id) for r in write.allocation.devices] == [device_held]
    assert device_held not in held(w)
    assert w.node_of("other") is None  # it never got the device in between
    assert w.claims.double_allocations == 0


def test_a_member_whose_claims_cannot_be_had_on_the_placeholders_node_says_why() -> None:
    w = world()
    w.add_devices((make_class("class-b", "driver-b"),),
                  (make_slice("n2-b", device("b-0"), node="n2", pool="n2", driver="driver-b"),))
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    add_member(w, "x", device_class="class-b")
    w.settle(1)
    warnings = [e for e in w.reasons("PlaceholderReplaced") if e.type is EventType.WARNING]
    assert len(warnings) == 1
    assert "its resource claims cannot be allocated on node" in warnings[0].message
    assert CANNOT_ALLOCATE in warnings[0].message
    assert w.node_of("x") == "n2"  # placed like an ordinary pod, on the node with class-b
    assert len(held(w)) == 1  # the replaced placeholder's device is free again


@pytest.mark.parametrize("devices_first", [True, False], ids=["devices-first", "pods-first"])
def test_a_restart_rebuilds_the_devices_placeholders_hold(devices_first: bool) -> None:
    w = world()
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    before = held(w)
    assert len(before) == 2
    slices = tuple(make_slice(f"n{n}-gpus", device("gpu-0"), node=f"n{n}", pool=f"n{n}")
                   for n in range(2))
    fresh = Scheduler(w.scheduler.config)
    if devices_first:
        for obj in (make_class(), *slices, template()):
            fresh.observe(DeviceObserved(obj))
        fresh.observe(ResourceClaimsServed(True))
    w.restart(fresh)
    if not devices_first:
        assert held(w) == {}  # nothing known of devices yet: tried again in the cycle
        w.add_devices((make_class(),), slices)
        w.observe(DeviceObserved(template()))
    add_competitor(w)
    w.settle(10)
    assert sorted(held(w)) == sorted(before)
    assert w.node_of("other") is None
    assert not w.reasons("DevicesNotHeld")


@pytest.mark.parametrize(("claims", "templates", "said"), [
    pytest.param((GroupClaim("gpu", template="missing"),), (template(),),
                 'claim "gpu": resourceclaimtemplate "missing" not found', id="no-template"),
    pytest.param((GroupClaim("gpu", template="three"),), (template("three", 3),),
                 "can be allocated on none of the 3 nodes", id="no-node-has-enough"),
    pytest.param((GroupClaim("gpu", template="odd"),), (template("odd", 1, "class-x"),),
                 "device class class-x does not exist", id="no-class"),
    pytest.param((GroupClaim("shared", claim="nope"),), (template(),),
                 'resourceclaim "nope" not found', id="no-shared-claim"),
])
def test_a_gang_whose_claims_can_be_had_nowhere_holds_nothing_and_says_why(
        claims: tuple[GroupClaim, ...], templates: tuple[ResourceClaimTemplate, ...],
        said: str) -> None:
    w = world(per_node=2, templates=templates)
    app = make_app("job", make_group("w", 2, cpu=1, claims=claims), make_group("d", 1, cpu=1))
    w.add_app(app)
    w.settle(0)
    assert w.placeholders(app.key) == []  # no group holds anything
    assert held(w) == {}
    blocking = {g.name: g.blocking for g in w.app_status[app.key].task_groups}
    assert blocking["w"].reason == "Unschedulable" and said in blocking["w"].message
    (event,) = [e for e in w.reasons("Unschedulable") if said in e.message]
    assert event.type is EventType.WARNING
    w.settle(5)
    assert len([e for e in w.reasons("Unschedulable") if said in e.message]) == 1  # once


def test_the_gang_starts_once_its_missing_template_is_created() -> None:
    w = world(templates=())
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    assert w.placeholders(app.key) == []
    w.observe(DeviceObserved(template()))
    w.settle(1)
    assert sorted(p.node_name or "" for p in w.placeholders(app.key)) == ["n0", "n1"]
    assert len(held(w)) == 2


def test_preempting_a_placeholder_frees_the_devices_it_holds() -> None:
    from gangsched.core.volumes import claims as resource_claims

    w = world()
    app = gpu_app()
    w.add_app(app)
    w.settle(0)
    victims = [(p.namespace, (), p.uid) for p in w.placeholders(app.key)]
    freed = resource_claims.freed_by(w.scheduler.volumes, victims)
    assert sorted(str(d) for d in freed) == sorted(held(w))
