"""Status decisions: what Applications, PodGroups and Queues report, and only on change."""

from __future__ import annotations

import dataclasses

import pytest
from builders import (
    PARTIAL_GANGS_ALWAYS,
    make_app,
    make_group,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    res,
)
from gangsched.core.gangs import status
from gangsched.core.values.decisions import (
    BindPod,
    BlockingReason,
    Decision,
    PlaceholderCounts,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
    TaskGroupStatus,
)
from gangsched.core.values.model import AppKey, GroupKey, PodPhase
from gangsched.core.values.naming import label_value, placeholder_name
from simworld import SimWorld, actions_run


def test_app_status_counts_through_a_gang_life() -> None:
    w = SimWorld(config=PARTIAL_GANGS_ALWAYS)
    w.add_node(make_node("n", cpu=3))
    app = make_app("a", make_group("g", 4, cpu=1), placeholder_timeout=50)
    w.add_app(app)
    w.add_pod(make_pod("r0", app="a", task_group="g"))
    w.settle(0)
    status = w.app_status[app.key]
    assert (status.state, status.reserved, status.running) == ("Accepted", "3/4", 0)
    group = status.task_groups[0]
    assert group.placeholders == PlaceholderCounts(created=4, allocated=3, pending=1)
    assert (group.real_bound, group.real_pending) == (0, 1)
    assert group.blocking.reason == "Unsatisfiable"  # 4 cpu asked of a 3-cpu cluster
    w.add_node(make_node("m", cpu=1))
    w.settle(1)
    status = w.app_status[app.key]
    assert (status.state, status.reserved, status.running) == ("Running", "4/4", 1)
    assert status.task_groups[0] == TaskGroupStatus(
        name="g", min_member=4,
        placeholders=PlaceholderCounts(created=4, allocated=3, replaced=1),
        real_bound=1, real_pending=0, blocking=BlockingReason(),
    )
    w.step(60)
    counts = w.app_status[app.key].task_groups[0].placeholders
    assert counts == PlaceholderCounts(created=4, replaced=1, released=3)
    assert w.app_status[app.key].placeholder_timer_start is None


def test_statuses_are_sent_only_when_they_change() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_app(make_app("a", make_group("g", 1)))
    w.add_group(make_podgroup("pg", 1))
    w.settle(0)
    quiet = w.settle(1)
    assert [d for d in quiet
            if isinstance(d, SetAppStatus | SetPodGroupStatus | SetQueueStatus)] == []


def test_podgroup_status() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=2))
    w.add_group(make_podgroup("pg", 2))
    for i in range(3):
        w.add_pod(make_pod(f"m{i}", pod_group="pg"))
    w.settle(5)
    status = w.group_status[GroupKey("default/pg")]
    assert (status.phase, status.members, status.scheduled, status.running) == (
        "Running", 3, 2, 2)
    assert status.schedule_start == 5
    w.finish("m0")
    w.finish("m1")
    w.delete("m2")
    w.step(6)
    assert w.group_status[GroupKey("default/pg")].phase == "Finished"


def test_queue_status() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=4))
    w.add_queue(make_queue("root", max=res(8)))
    w.add_queue(make_queue("q", parent="root"))
    w.add_app(make_app("a", make_group("g", 1, cpu=1), queue="q"))
    w.add_pod(make_pod("p", cpu=2, queue="q"))
    w.add_pod(make_pod("big", cpu=5, queue="q"))
    w.add_queue(make_queue("orphan", parent="gone"))
    w.settle(0)
    root = w.queue_status["root"]
    assert root.allocated == res(3, "2Gi", pods=2)
    assert root.reserved_by_placeholders == res(1, "1Gi", pods=1)
    assert root.pending == res(5, "1Gi", pods=1)
    assert root.max == res(8)
    assert root.applications == {"Accepted": 1}
    assert w.queue_status["q"].allocated == root.allocated
    assert w.queue_status["orphan"].message == (
        'queue "orphan" names parent "gone", which does not exist')
    assert "default" in w.queue_status


def test_placeholder_names_are_deterministic_valid_and_short() -> None:
    name = placeholder_name("spark-pi", "uid-1", "executor", 3)
    assert name == placeholder_name("spark-pi", "uid-1", "executor", 3)
    assert name.startswith("spark-pi-executor-") and name.endswith("-3")
    assert name != placeholder_name("spark-pi", "uid-2", "executor", 3)
    long = placeholder_name("a" * 80, "u", "Group" * 10, 12345)
    assert len(long) <= 63 and long == long.lower() and long.endswith("-12345")


def test_label_values_are_valid_and_unique() -> None:
    assert label_value("plain") == "plain"
    odd = label_value("default/my app!")
    assert odd != label_value("default/my app?")
    assert len(label_value("x" * 100)) <= 63


def test_new_numbers_settle_the_cycle_that_writes_them() -> None:
    """The cycle that observes a wave of binds counts them in their gangs' statuses (a
    satisfied PodGroup's members running) and that is all it does; the cycles after it
    are skipped (they would find the same), until something is observed. A held gang's
    status says nothing that the binds move: it is not written again."""
    w = SimWorld()
    for name in ("n0", "n1"):
        w.add_node(make_node(name, cpu=8))
    w.add_pod(make_pod("busy", cpu=1, node="n0", phase=PodPhase.RUNNING))
    w.add_app(make_app("spark", make_group("exec", 2, cpu=8)))  # 16 cpu of the 15 left
    w.add_group(make_podgroup("pg", 2))
    for index in range(2):
        w.add_pod(make_pod(f"pg-{index}", cpu=1, pod_group="pg"))
    with actions_run(w) as ran:
        first = w.step(0.0)
        second = w.step(1.0)  # observes the binds
        later = [w.step(now) for now in (2.0, 3.0)]
    assert sum(isinstance(d, BindPod) for d in first) == 2
    held = first_message(first)
    assert "short of cpu; the gang needs cpu=16," in held
    assert second and all(isinstance(d, SetPodGroupStatus) for d in second)
    assert [d.running for d in second if isinstance(d, SetPodGroupStatus)] == [2]
    assert later == [[], []]
    assert {now for _, now in ran} == {0.0, 1.0}


def first_message(decisions: list[Decision]) -> str:
    return next(d for d in decisions if isinstance(d, SetAppStatus)).task_groups[0].blocking.message


@pytest.mark.parametrize(("change", "renumbers"), [
    pytest.param({}, True, id="same"),
    pytest.param({"message": "the cluster has cpu=1 left"}, True, id="new-numbers"),
    pytest.param({"reason": "QueueQuota"}, False, id="new-reason"),
])
def test_an_app_status_renumbered_only_when_its_blocking_reasons_stay(
        change: dict[str, str], renumbers: bool) -> None:
    old = _held_status()
    group = dataclasses.replace(old.task_groups[0], blocking=dataclasses.replace(
        old.task_groups[0].blocking, **change))
    assert status.renumbered(old, dataclasses.replace(old, task_groups=(group,))) is renumbers
    assert not status.renumbered(old, dataclasses.replace(old, state="Running"))
    assert not status.renumbered(old, dataclasses.replace(old, placeholder_timer_start=5.0))


@pytest.mark.parametrize(("before", "after", "renumbers"), [
    ("Scheduled", "Running", True),
    ("Running", "Finished", True),
    ("Pending", "Inqueue", False),
    ("Scheduling", "Scheduled", False),
    ("Running", "TimedOut", False),
])
def test_a_podgroup_status_renumbered_only_among_its_satisfied_phases(
        before: str, after: str, renumbers: bool) -> None:
    old = SetPodGroupStatus(GroupKey("default/pg"), before, "", "", 4, 0, 4, 0, 0, 0, 1.0)
    new = dataclasses.replace(old, phase=after, running=4)
    assert status.renumbered(old, new) is renumbers


def _held_status() -> SetAppStatus:
    blocking = BlockingReason("Capacity", "the cluster has cpu=4 left", {"free": "cpu=4"})
    group = TaskGroupStatus("exec", 2, PlaceholderCounts(0, 0, 0, 0, 0), 0, 0, blocking)
    return SetAppStatus(AppKey("default/spark"), "Accepted", "Accepted", "queue root",
                        "root", "0/2", 0, (group,), 0.0, None, None, 0.0)
