"""The swap is atomic: a placeholder's room stays its gang's until the real pod is bound.

On a real cluster a deleted placeholder keeps its node for 0.5 s up to its grace period
(``deletionTimestamp`` set, its phase turning terminal once its container is killed),
and the watch reports it gone later still. Meanwhile no other pod, of any gang or none,
may be placed into its room. Each case drives the placeholder through those states over
several cycles while another pod waits for exactly that room.
"""

from __future__ import annotations

import dataclasses

import pytest
from builders import make_app, make_group, make_node, make_pod, placeholder_of
from gangsched.core.state import invariants
from gangsched.core.values.decisions import BindPod
from gangsched.core.values.model import AppSpec, PodPhase
from simworld import SimWorld

APP = make_app("a", make_group("g", 2, cpu=2))
STATES = [
    pytest.param(PodPhase.RUNNING, id="terminating"),
    pytest.param(PodPhase.FAILED, id="terminating-and-terminal"),
]


def reserved(app: AppSpec, *cpus: int) -> SimWorld:
    w = SimWorld()
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    w.add_app(app)
    w.settle(0)
    assert all(p.node_name for p in w.placeholders(app.key))
    return w


def terminate(w: SimWorld, name: str, phase: PodPhase) -> None:
    """The kubelet has seen the deletion: ``deletionTimestamp`` set, container killed."""
    pod = w.pod(name)
    w.add_pod(dataclasses.replace(pod, terminating=True, phase=phase))


def assert_room_kept(w: SimWorld, start: float, cycles: int = 4) -> None:
    for t in range(cycles):
        w.settle(start + t, cycles=2)
        assert w.node_of("y") is None, "another pod took the room of a swapping placeholder"
        assert invariants.over_committed(w.scheduler) == []


def swap_started(w: SimWorld, real: str = "x", cpu: int = 2) -> str:
    """A real member arrives and takes the first placeholder, whose deletion hangs."""
    first = placeholder_of(APP, "g", 0)
    w.hold_deletes.add(first)
    w.add_pod(make_pod(real, cpu=cpu, app="a", task_group="g"))
    w.step(1)
    assert w.pending_reason(real) == "WaitingForPlaceholder"
    return first


@pytest.mark.parametrize("phase", STATES)
def test_a_terminating_placeholders_room_is_kept_for_its_real_pod(phase: PodPhase) -> None:
    w = reserved(APP, 4)
    first = swap_started(w)
    terminate(w, first, phase)
    w.add_pod(make_pod("y", cpu=2))  # of no gang, waiting for any room
    assert_room_kept(w, 2)
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(10)
    assert w.node_of("x") == "n0"
    assert w.node_of("y") is None


@pytest.mark.parametrize("phase", STATES)
def test_the_room_is_kept_across_a_restart(phase: PodPhase) -> None:
    w = reserved(APP, 4)
    first = swap_started(w)
    terminate(w, first, phase)
    w.add_pod(make_pod("y", cpu=2))
    w.restart()  # the new core sees a terminating placeholder and a pending real pod
    assert_room_kept(w, 2)
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(10)
    assert w.node_of("x") == "n0"
    assert w.node_of("y") is None


def test_a_larger_real_pod_holds_the_difference_at_once() -> None:
    w = reserved(APP, 6)  # 2 cpu free besides the two placeholders
    first = swap_started(w, cpu=4)
    w.add_pod(make_pod("y", cpu=2))
    assert_room_kept(w, 2)
    terminate(w, first, PodPhase.FAILED)
    assert_room_kept(w, 6)
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(10)
    assert w.node_of("x") == "n0"


def test_a_real_pod_deleted_mid_swap_leaves_the_room_to_the_next_member() -> None:
    w = reserved(APP, 4)
    first = swap_started(w)
    terminate(w, first, PodPhase.FAILED)
    w.delete("x")
    w.add_pod(make_pod("y", cpu=2))
    w.add_pod(make_pod("x2", cpu=2, app="a", task_group="g", creation=5.0))
    assert_room_kept(w, 2)
    assert w.pending_reason("x2") == "WaitingForPlaceholder"
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(10)
    assert w.node_of("x2") == "n0"
    assert w.node_of("y") is None


def test_a_pod_that_fits_elsewhere_only_keeps_its_placeholders_room_until_placed() -> None:
    app = make_app("a", make_group("g", 2, cpu=1))
    w = reserved(app, 2, 4)
    assert {p.node_name for p in w.placeholders(app.key)} == {"n0"}
    w.add_pod(make_pod("filler", cpu=4))
    w.settle(1)
    first = placeholder_of(app, "g", 0)
    w.hold_deletes.add(first)
    w.add_pod(make_pod("x", cpu=3, app="a", task_group="g"))
    w.step(2)  # too large for n0 even with its placeholder gone: it will go elsewhere
    terminate(w, first, PodPhase.FAILED)
    w.add_pod(make_pod("y", cpu=1))  # fits only the room of the leaving placeholder
    assert_room_kept(w, 3)
    w.add_node(make_node("n2", cpu=4))
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(10)
    assert w.node_of("x") == "n2"
    binds = [d for d in w.decisions if isinstance(d, BindPod) and d.name == "x"]
    assert [d.reason for d in binds] == ["PlaceholderReplacedElsewhere"]
    assert w.node_of("y") == "n0"  # released once its gang's pod was placed


def test_a_terminating_pod_keeps_its_room_until_its_deletion_is_observed() -> None:
    w = SimWorld()
    w.add_node(make_node("n0", cpu=2))
    w.add_pod(make_pod("z", cpu=2, node="n0", phase=PodPhase.RUNNING))
    w.settle(0)
    w.add_pod(dataclasses.replace(w.pod("z"), terminating=True))
    w.add_pod(make_pod("y", cpu=2))
    assert_room_kept(w, 1)
    w.delete("z")
    w.settle(10)
    assert w.node_of("y") == "n0"


def test_the_room_kept_for_the_next_member_is_what_was_held() -> None:
    w = reserved(APP, 4)
    first = swap_started(w, cpu=1)  # smaller than its placeholder
    terminate(w, first, PodPhase.FAILED)  # 1 cpu held for x, 1 cpu free
    w.add_pod(make_pod("y", cpu=1))
    w.settle(2)
    assert w.node_of("y") == "n0"  # the room x does not need is anyone's
    w.delete("x")
    w.settle(3)
    assert invariants.over_committed(w.scheduler) == []


@pytest.mark.parametrize("code", [500, 429, 0])
def test_the_room_is_kept_when_the_real_pods_bind_fails(code: int) -> None:
    """The placeholder is gone and the real pod's bind to its node fails (500, 429, the
    connection cut): the room stays its gang's while the pod backs off, and the pod is
    bound there on its next try; the pod of no gang waiting for room gets none of it."""
    w = reserved(APP, 4)
    first = swap_started(w)
    w.add_pod(make_pod("y", cpu=2))  # of no gang, waiting for any room
    w.fail_binds["x"] = code
    w.delete(first)
    for t in range(2, 6):
        w.settle(t, cycles=2)
        assert w.node_of("y") is None, "another pod took the room of a failed swap bind"
        assert invariants.over_committed(w.scheduler) == []
    w.settle(20)
    assert w.node_of("x") == "n0"
    assert w.node_of("y") is None


def test_a_failed_swap_binds_room_is_given_up_when_nobody_takes_it() -> None:
    """The real pod whose bind failed is deleted meanwhile: after its backoff the room
    held for it goes back, and the waiting pod of no gang gets it."""
    w = reserved(APP, 4)
    first = swap_started(w)
    w.add_pod(make_pod("y", cpu=2))
    w.fail_binds["x"] = 500
    w.delete(first)
    w.settle(2, cycles=2)
    assert w.node_of("x") is None and w.node_of("y") is None
    w.delete("x")
    w.settle(30)
    assert w.node_of("y") == "n0"
