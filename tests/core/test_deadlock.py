"""Deadlock breaking: partial gangs that can never all complete lose one victim at once."""

from __future__ import annotations

import pytest
from builders import (
    make_app,
    make_group,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    placeholder_of,
    res,
)
from gangsched.core.preemption import deadlock
from gangsched.core.values.decisions import DeletePod, DeleteReason, EventType, RecordEvent
from gangsched.core.values.model import AppKey, GangMode, GroupKey, SchedulerConfig
from gangsched.core.values.resources import Resources
from simworld import SimWorld

NON_STRICT = GangMode.NON_STRICT
NO_ENQUEUE = SchedulerConfig(actions=("allocate", "backfill"))
"""As before admission control: every PodGroup is Inqueue at once."""
TEN = res(10)


def group_world(queue_max: Resources | None = TEN, cpu: int = 32,
                config: SchedulerConfig = NO_ENQUEUE) -> SimWorld:
    w = SimWorld(config=config)
    w.add_node(make_node("n0", cpu=cpu))
    w.add_queue(make_queue("q", max=queue_max))
    return w


def gang(w: SimWorld, name: str, held: int, *, min_member: int = 5, priority: int = 0,
         creation: float = 0.0, queue: str = "q") -> None:
    """A NonStrict PodGroup with ``held`` of its members created (they accumulate)."""
    w.add_group(make_podgroup(name, min_member, mode=NON_STRICT, queue=queue,
                              priority=priority, creation=creation))
    more(w, name, held)


def more(w: SimWorld, name: str, count: int, first: int | None = None) -> None:
    start = first if first is not None else sum(
        1 for p in w.pods.values() if p.pod_group == GroupKey(f"default/{name}"))
    for i in range(start, start + count):
        w.add_pod(make_pod(f"{name}-{i}", cpu=1, pod_group=name, creation=float(i)))


def bound(w: SimWorld, name: str) -> int:
    return sum(1 for p in w.pods.values()
               if p.pod_group == GroupKey(f"default/{name}") and p.node_name)


def broken(events: list[RecordEvent]) -> list[RecordEvent]:
    return [e for e in events if e.reason == "DeadlockBroken" and e.type is EventType.WARNING]


def test_the_classic_case_three_gangs_of_five_in_ten_slots() -> None:
    """Koordinator's open case: gangs of 5 holding 3, 3 and 4 of a queue of 10."""
    w = group_world()
    gang(w, "a", 3, creation=1)
    gang(w, "b", 3, creation=2)
    gang(w, "c", 4, creation=3)
    w.step(0)
    # Detected in the cycle where it happened; b (least progress, younger than a) goes.
    [event] = broken(w.events)
    assert event.target.name == "b"
    assert event.message.startswith("released to break a deadlock with default/a (3/5), "
                                    "default/c (4/5): each holds part of its minimum and, "
                                    "with what is free (queue q), no order lets them all "
                                    "complete; gave back 3 assumed members")
    notes = {e.target.name for e in w.events if e.reason == "DeadlockResolved"}
    assert notes == {"a", "c"}
    status = w.group_status[GroupKey("default/b")]
    assert (status.phase, status.reason, status.assumed) == ("Pending", "DeadlockVictim", 0)
    assert status.blocking.reason == "Deadlock"
    assert status.blocking.details["gangs"] == "default/a, default/c"
    assert status.retry_after == 60.0
    assert w.pending_reason("b-0") == "DeadlockBackoff"
    # What b held goes to the others at once: their last members bind them whole.
    more(w, "a", 2)
    more(w, "c", 1)
    w.step(1)
    assert (bound(w, "a"), bound(w, "b"), bound(w, "c")) == (5, 0, 5)
    # b stays out for its backoff, even with room, and then completes.
    for name in ("a", "c"):
        for i in range(5):
            w.finish(f"{name}-{i}")
    more(w, "b", 2)
    w.step(30)
    assert bound(w, "b") == 0
    w.step(60)
    assert bound(w, "b") == 5
    assert w.group_status[GroupKey("default/b")].reason == ""


@pytest.mark.parametrize(
    ("gangs", "victim"),
    [
        pytest.param([("a", 3, 0, 1), ("b", 3, 0, 2), ("c", 4, 0, 3)], "b",
                     id="least-progress-then-youngest"),
        pytest.param([("a", 3, 0, 3), ("b", 3, 0, 2), ("c", 4, 0, 1)], "a",
                     id="youngest-of-least-progress"),
        pytest.param([("a", 3, 5, 1), ("b", 3, 0, 2), ("c", 4, 0, 3)], "b",
                     id="lower-priority-first"),
        pytest.param([("a", 3, 5, 1), ("b", 3, 5, 2), ("c", 4, 0, 3)], "c",
                     id="priority-before-progress"),
        pytest.param([("a", 4, 0, 1), ("b", 2, 0, 2), ("c", 4, 0, 3)], "b",
                     id="least-progress"),
    ],
)
def test_the_victim_is_chosen_deterministically(
    gangs: list[tuple[str, int, int, float]], victim: str
) -> None:
    w = group_world()
    for name, held, priority, creation in gangs:
        gang(w, name, held, priority=priority, creation=creation)
    w.step(0)
    assert [e.target.name for e in broken(w.events)] == [victim]


def test_no_victim_while_some_order_lets_every_gang_complete() -> None:
    w = group_world()
    gang(w, "a", 3, creation=1)
    gang(w, "b", 3, creation=2)  # 4 free: a completes, then b with what a gives back
    w.step(0)
    assert broken(w.events) == []
    assert deadlock.find(w.scheduler) is None


def test_gangs_starved_by_other_pods_are_not_released() -> None:
    """Releasing either would not let the other complete: a running pod holds the room."""
    w = group_world()
    w.add_pod(make_pod("other", cpu=6, queue="q"))
    w.step(0)
    gang(w, "a", 2, creation=1)
    gang(w, "b", 2, creation=2)
    w.step(1)
    assert deadlock.find(w.scheduler) is not None  # unsafe...
    assert broken(w.events) == []  # ...but no release would help
    assert (w.group_status[GroupKey("default/a")].assumed,
            w.group_status[GroupKey("default/b")].assumed) == (2, 2)


def test_a_deadlock_on_the_clusters_capacity() -> None:
    """No quota at all: two gangs each hold half a 4-cpu node and need more."""
    w = group_world(queue_max=None, cpu=4)
    gang(w, "a", 2, min_member=3, creation=1)
    gang(w, "b", 2, min_member=3, creation=2)
    w.step(0)
    [event] = broken(w.events)
    assert event.target.name == "b" and "(the cluster's free capacity)" in event.message
    more(w, "a", 1)
    w.step(1)
    assert bound(w, "a") == 3


def test_a_ganggroup_is_released_whole() -> None:
    w = group_world()
    w.add_group(make_podgroup("ps", 1, mode=NON_STRICT, queue="q", creation=5,
                              gang_group=("default/ps", "default/workers")))
    w.add_group(make_podgroup("workers", 4, mode=NON_STRICT, queue="q", creation=5,
                              gang_group=("default/ps", "default/workers")))
    more(w, "ps", 1)
    more(w, "workers", 3)
    gang(w, "a", 3, creation=1, priority=1)
    gang(w, "c", 3, creation=2, priority=1)
    w.step(0)
    assert [e.target.name for e in broken(w.events)] == ["ps", "workers"]
    assert "default/ps (4/5) was released" in next(
        e.message for e in w.events if e.reason == "DeadlockResolved" and e.target.name == "a")
    for name in ("ps", "workers"):
        assert w.group_status[GroupKey(f"default/{name}")].phase == "Pending"
    more(w, "a", 2)
    w.step(1)
    assert bound(w, "a") == 5


def test_strict_gangs_never_deadlock() -> None:
    """Strict attempts are rolled back within the cycle: nothing is held across cycles."""
    w = group_world()
    for name, creation in (("a", 1), ("b", 2), ("c", 3)):
        w.add_group(make_podgroup(name, 5, queue="q", creation=creation))
        more(w, name, 4)
    w.step(0)
    assert broken(w.events) == [] and deadlock.partial_gangs(w.scheduler) == []


# --- Applications --------------------------------------------------------------------------


def app_world() -> tuple[SimWorld, list[AppKey]]:
    """Three gangs of 5 admitted under a quota of 15, reserved 3/3/4 (the other binds
    failed), and then the quota lowered to 10: none of them can complete."""
    w = SimWorld()
    w.add_node(make_node("n0", cpu=32))
    w.add_queue(make_queue("q", max=res(15)))
    apps = [make_app(name, make_group("g", 5), queue="q", creation=i)
            for i, name in enumerate("abc")]
    for app in apps:
        w.add_app(app)
    w.step(0)
    for app, held in zip(apps, (3, 3, 4), strict=True):
        for i in range(held, 5):
            w.fail_binds[placeholder_of(app, "g", i)] = 500
    w.step(0.1)
    w.add_queue(make_queue("q", max=res(10)))
    return w, [app.key for app in apps]


def test_partially_reserved_applications_after_a_quota_decrease() -> None:
    w, (a, b, c) = app_world()
    decisions = w.step(0.2)
    [event] = broken(w.events)
    assert event.target.name == "b"
    deleted = [d for d in decisions if isinstance(d, DeletePod)]
    assert len(deleted) == 5 and {d.reason for d in deleted} == {DeleteReason.DEADLOCK_VICTIM}
    status = w.app_status[b]
    assert (status.state, status.reason, status.reserved) == ("Accepted", "DeadlockVictim",
                                                              "0/5")
    assert status.task_groups[0].blocking.reason == "Deadlock"
    assert status.task_groups[0].placeholders.released == 5
    assert w.scheduler.apps[b].admitted is False
    w.step(2)  # past the bind backoff: a and c take what b held
    assert (w.app_status[a].reserved, w.app_status[c].reserved) == ("5/5", "5/5")
    assert len(broken(w.events)) == 1


def test_a_victim_application_is_admitted_again_after_its_backoff() -> None:
    w, (_, b, _) = app_world()
    w.step(0.2)
    w.step(2)
    w.add_queue(make_queue("q", max=res(15)))  # room again, but b backs off
    w.step(30)
    assert w.placeholders(b) == []
    w.step(61)
    w.step(62)
    assert w.app_status[b].reserved == "5/5"
    assert w.app_status[b].reason == "Accepted"


def test_applications_found_half_reserved_after_a_restart() -> None:
    """Placeholders found bound 3/3/4 when the operator starts: the gangs are admitted at
    once, as found, and the deadlock is broken in the first cycle."""
    w, keys = app_world()
    w.restart()
    w.step(0.2)
    assert [e.target.name for e in broken(w.events)] == ["b"]
    assert all(w.scheduler.apps[k].admitted for k in keys if k.endswith(("a", "c")))


def test_find_is_safe_after_the_cycle_that_broke_it() -> None:
    w = group_world()
    gang(w, "a", 3, creation=1)
    gang(w, "b", 3, creation=2)
    gang(w, "c", 4, creation=3)
    w.step(0)
    assert deadlock.find(w.scheduler) is None
