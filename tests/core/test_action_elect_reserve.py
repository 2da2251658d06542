"""The elect and reserve actions: nodes held for a starving gang, for a while."""

from __future__ import annotations

import dataclasses

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.actions import factory
from gangsched.core.actions.elect import ANNOTATION
from gangsched.core.values.decisions import RecordEvent
from gangsched.core.values.model import AppKey, GroupKey, SchedulerConfig
from simworld import SimWorld

ACTIONS = ("enqueue", "elect", "allocate", "backfill", "reserve")
CONFIG = SchedulerConfig(actions=ACTIONS, starvation_threshold=60, reservation_timeout=300)
BIG = AppKey("default/big")


def world(config: SchedulerConfig = CONFIG, free: tuple[int, ...] = (0, 0, 2, 2)) -> SimWorld:
    """Four 4-cpu nodes, each with a long-running pod leaving ``free`` cpu."""
    w = SimWorld(config=config)
    for i, left in enumerate(free):
        w.add_node(make_node(f"n{i}", cpu=4))
        if left < 4:
            w.add_pod(make_pod(f"hog-{i}", cpu=4 - left, memory="0", node=f"n{i}"))
    return w


def events(w: SimWorld, reason: str) -> list[RecordEvent]:
    return [e for e in w.events if e.reason == reason]


def test_a_starving_gang_gets_nodes_held_until_it_fits() -> None:
    w = world()
    w.add_app(make_app("big", make_group("g", 6)))
    w.step(0)
    assert w.app_status[BIG].task_groups[0].blocking.reason == "Capacity"  # not enqueued
    w.step(59)
    assert w.node_annotations == {}  # has not waited long enough yet
    w.step(60)
    # The nodes with the most room now, n2 and n3, are held; others pass them by.
    assert w.node_annotations == {"n2": {ANNOTATION: "default/big"},
                                  "n3": {ANNOTATION: "default/big"}}
    [event] = events(w, "NodesReserved")
    assert event.message.startswith("waited 60s for capacity: nodes n2, n3 are reserved")
    status = w.app_status[BIG]
    assert (status.reserved_nodes, status.reservation_expiry) == (("n2", "n3"), 360)
    w.add_pod(make_pod("late", cpu=1, memory="0"))
    w.step(61)
    assert w.node_of("late") is None and w.pending_reason("late") == "Reservation"
    assert "reserved for starving gang default/big" in w.pending_reasons[w.uid_of("late")].message
    # Elected, it skips enqueue's capacity check; its placeholders fill the held nodes.
    w.settle(62)
    assert w.app_status[BIG].reserved == "4/6"
    w.finish("hog-2")  # n2 drains: the gang fits, and the nodes are given back
    w.settle(70)
    assert w.app_status[BIG].reserved == "6/6"
    assert w.node_annotations == {}
    [released] = events(w, "ReservationReleased")
    assert released.message.startswith("GangFits: nodes n2, n3 given back")
    assert w.app_status[BIG].reserved_nodes == ()


@pytest.mark.parametrize(
    ("gangs", "elected"),
    [
        pytest.param([("a", 0, 0.0), ("b", 0, 10.0)], "a", id="longest-waiting"),
        pytest.param([("a", 0, 0.0), ("b", 5, 10.0)], "b", id="highest-priority-first"),
        pytest.param([("a", 0, 0.0), ("b", 0, 0.0)], "a", id="then-by-key"),
    ],
)
def test_elect_picks_the_highest_priority_then_the_longest_waiting(
    gangs: list[tuple[str, int, float]], elected: str
) -> None:
    w = world()
    for name, priority, at in gangs:  # accepted at ``at``
        w.add_app(make_app(name, make_group("g", 6), priority=priority, creation=at))
        w.step(at)
    w.step(100)
    assert {v[ANNOTATION] for v in w.node_annotations.values()} == {f"default/{elected}"}


def test_the_reservation_expires_and_the_next_starving_gang_gets_its_turn() -> None:
    w = world(SchedulerConfig(actions=ACTIONS, starvation_threshold=60, reservation_timeout=100),
              free=(0, 0, 0, 1))
    w.add_app(make_app("first", make_group("g", 6), creation=0))
    w.add_app(make_app("second", make_group("g", 6), creation=1))
    w.step(0)
    w.step(60)
    assert w.app_status[AppKey("default/first")].reservation_expiry == 160
    w.step(160)  # nothing drained in time: the nodes go back, and the next one is elected
    [released] = events(w, "ReservationReleased")
    assert released.target.name == "first" and "ReservationExpired" in released.message
    assert {v[ANNOTATION] for v in w.node_annotations.values()} == {"default/second"}
    # first's wait counts again from the expiry: its turn comes after second's.
    w.step(260)
    assert {v[ANNOTATION] for v in w.node_annotations.values()} == {"default/first"}


def test_a_gang_held_back_by_its_queue_quota_is_not_elected() -> None:
    w = world()
    w.add_queue(make_queue("q", max=res(4)))
    w.add_app(make_app("big", make_group("g", 6), queue="q"))  # over max: rejected
    w.add_pod(make_pod("q-user", cpu=3, memory="0", queue="q", node="n2"))
    w.add_app(make_app("quota", make_group("g", 2), queue="q"))  # held for QueueQuota
    w.step(100)
    assert w.node_annotations == {}


def test_a_starving_podgroup_is_elected_too() -> None:
    w = world()
    w.add_group(make_podgroup("pg", 6, creation=0))
    for i in range(6):
        w.add_pod(make_pod(f"pg-{i}", cpu=1, memory="0", pod_group="pg"))
    w.step(0)
    w.step(60)
    assert {v[ANNOTATION] for v in w.node_annotations.values()} == {"default/pg"}
    assert w.group_status[GroupKey("default/pg")].reserved_nodes == ("n2", "n3")
    w.add_pod(make_pod("late", cpu=1, memory="0"))
    w.step(61)
    assert w.pending_reason("late") == "Reservation"
    w.finish("hog-2")
    w.settle(62)
    assert w.group_status[GroupKey("default/pg")].phase == "Running"
    w.step(63)
    assert w.node_annotations == {}


def test_no_nodes_are_held_for_a_gang_that_no_set_of_nodes_can_take() -> None:
    w = world()
    w.add_app(make_app("huge", make_group("g", 1, cpu=64)))
    w.step(0)
    w.step(60)
    assert w.node_annotations == {}
    assert w.scheduler.node_reservation is None


def test_a_restart_keeps_the_reservation_and_its_expiry() -> None:
    w = world()
    w.add_app(make_app("big", make_group("g", 6)))
    w.step(0)
    w.step(60)
    w.restart()
    w.step(100)
    held = w.scheduler.node_reservation
    assert held is not None and (held.key, held.nodes, held.expiry) == (BIG, ("n2", "n3"), 360)
    w.finish("hog-2")
    w.finish("hog-3")
    w.settle(101)
    assert w.app_status[BIG].reserved == "6/6" and w.node_annotations == {}


def test_a_restart_after_the_gang_fit_removes_stale_annotations() -> None:
    w = world()
    w.add_app(make_app("big", make_group("g", 6)))
    w.step(0)
    w.step(60)
    w.finish("hog-2")
    w.finish("hog-3")
    w.settle(61)
    status = w.app_status[BIG]
    # The operator died before it could give the nodes back: the status still names them.
    w.app_status[BIG] = dataclasses.replace(status, reserved_nodes=("n2", "n3"),
                                            reservation_expiry=360.0)
    w.node_annotations.update({"n2": {ANNOTATION: "default/big"},
                               "n3": {ANNOTATION: "default/big"}})
    w.restart()
    w.settle(62)
    assert w.node_annotations == {}
    assert w.scheduler.node_reservation is None


def test_elect_and_reserve_go_together() -> None:
    with pytest.raises(ValueError, match="elect and reserve go together"):
        factory.validate(("enqueue", "elect", "allocate"))
    assert factory.validate(ACTIONS) == ACTIONS
