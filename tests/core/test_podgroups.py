"""PodGroups: minMember, Strict and NonStrict, GangGroups, timeouts, after the gang."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from builders import make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.placement.cluster import Cluster
from gangsched.core.values.decisions import BindPod, RecordEvent
from gangsched.core.values.model import GangMode, GroupKey, PodGroupSpec, TimeoutAction
from simworld import SimWorld

STRICT, NON_STRICT = GangMode.STRICT, GangMode.NON_STRICT


def world(*cpus: int) -> SimWorld:
    w = SimWorld()
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    return w


def members(w: SimWorld, group: str, count: int, cpu: int = 1, first: int = 0,
            **kw: object) -> None:
    for i in range(first, first + count):
        w.add_pod(make_pod(f"{group}-{i}", cpu=cpu, pod_group=group, creation=float(i),
                           **kw))  # type: ignore[arg-type]


def bound(w: SimWorld, group: str) -> int:
    return sum(1 for p in w.pods.values()
               if p.pod_group == GroupKey(f"default/{group}") and p.node_name)


@pytest.mark.parametrize(
    ("mode", "cpu", "count", "bound_count"),
    [
        pytest.param(STRICT, 8, 3, 3, id="strict-enough"),
        pytest.param(NON_STRICT, 8, 3, 3, id="nonstrict-enough"),
        pytest.param(STRICT, 8, 2, 0, id="strict-too-few-members"),
        pytest.param(STRICT, 2, 3, 0, id="strict-too-little-capacity"),
        pytest.param(NON_STRICT, 2, 3, 0, id="nonstrict-too-little-capacity"),
        pytest.param(STRICT, 8, 5, 5, id="more-than-min-all-bound"),
    ],
)
def test_members_bind_only_all_together(
    mode: GangMode, cpu: int, count: int, bound_count: int
) -> None:
    w = world(cpu)
    w.add_group(make_podgroup("pg", 3, mode=mode))
    members(w, "pg", count)
    w.settle(0)
    assert bound(w, "pg") == bound_count
    if not bound_count:
        assert w.pending_reason("pg-0") == "WaitingForGang"
        assert w.group_status[GroupKey("default/pg")].phase in ("Pending", "Inqueue", "Scheduling")


def test_strict_rolls_back_nonstrict_keeps_what_it_assumed() -> None:
    for mode, kept in ((STRICT, 0), (NON_STRICT, 2)):
        w = world(2)
        w.add_group(make_podgroup("pg", 3, mode=mode))
        members(w, "pg", 3)
        w.step(0)
        s = w.scheduler
        assert len(s.groups[GroupKey("default/pg")].assumed) == kept
        assert s.cluster.nodes["n0"].used.get("cpu") == kept * 1000
        assert bound(w, "pg") == 0
        w.add_node(make_node("n1", cpu=1))
        w.settle(1)
        assert bound(w, "pg") == 3


def test_a_member_arriving_after_a_failed_attempt_completes_the_gang() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 3))
    members(w, "pg", 2)
    w.settle(0)
    members(w, "pg", 1, first=2)  # no capacity changed: used to wait for some release
    w.settle(1)
    assert bound(w, "pg") == 3


def test_gang_group_binds_only_when_every_group_has_its_minimum() -> None:
    w = world(8)
    pair = ("default/a", "default/b")
    w.add_group(make_podgroup("a", 2, gang_group=pair))
    w.add_group(make_podgroup("b", 1, gang_group=pair))
    members(w, "a", 2)
    w.settle(0)
    assert bound(w, "a") == 0
    assert "default/b 0/1" in w.pending_reasons[w.uid_of("a-0")].message
    members(w, "b", 1)
    out = w.step(1)
    binds = sorted(d.name for d in out if isinstance(d, BindPod))
    assert binds == ["a-0", "a-1", "b-0"]  # in the same cycle
    assert {d.reason for d in out if isinstance(d, BindPod)} == {"GangSatisfied"}


def test_gang_group_waits_for_a_missing_partner() -> None:
    w = world(8)
    w.add_group(make_podgroup("a", 1, gang_group=("default/a", "default/b")))
    members(w, "a", 1)
    w.settle(0)
    assert w.pending_reason("a-0") == "WaitingForGangGroup"
    w.add_group(make_podgroup("b", 1, gang_group=("default/a", "default/b")))
    members(w, "b", 1)
    w.settle(1)
    assert bound(w, "a") == bound(w, "b") == 1


def count_placements(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every placement attempt from now on."""
    calls: list[object] = []
    real_place = Cluster.place

    def place(self: Cluster, *args: Any, **kwargs: Any) -> str | None:
        calls.append(args)
        return real_place(self, *args, **kwargs)

    monkeypatch.setattr(Cluster, "place", place)
    return calls


def test_a_failed_gang_group_attempt_is_not_retried_every_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world(2)
    pair = ("default/a", "default/b")
    w.add_group(make_podgroup("a", 2, gang_group=pair))
    w.add_group(make_podgroup("b", 2, gang_group=pair))
    members(w, "a", 2)
    members(w, "b", 2)
    w.step(0)
    calls = count_placements(monkeypatch)
    w.step(1)
    w.step(2)
    assert calls == []
    w.add_node(make_node("n1", cpu=2))
    w.step(3)
    assert bound(w, "a") == bound(w, "b") == 2


@pytest.mark.parametrize("mode", [STRICT, NON_STRICT])
def test_timeout_counts_from_the_first_assumption(mode: GangMode) -> None:
    w = world(1)
    w.add_group(make_podgroup("pg", 2, mode=mode, timeout=60))
    members(w, "pg", 2)
    w.step(100)  # the first assumption: the timer starts here, not at creation
    status = w.group_status[GroupKey("default/pg")]
    assert status.schedule_start == 100
    w.step(159)
    assert w.scheduler.groups[GroupKey("default/pg")].timed_out is False
    w.step(160)
    rt = w.scheduler.groups[GroupKey("default/pg")]
    assert rt.timed_out and rt.assumed == set()
    assert w.scheduler.cluster.nodes["n0"].used.get("cpu") == 0
    assert w.group_status[GroupKey("default/pg")].phase == "TimedOut"
    assert w.pending_reason("pg-0") == "GangTimedOut"
    assert "1/2 members placed" in rt.message or "0/2 members placed" in rt.message
    w.add_node(make_node("n1", cpu=8))
    w.settle(161)
    assert bound(w, "pg") == 0  # no longer scheduled


def coscheduling_group(name: str, min_member: int, **kw: Any) -> PodGroupSpec:
    """A PodGroup with coscheduling's timer: nothing placed before the quorum exists, and
    a timeout requeues."""
    return dataclasses.replace(make_podgroup(name, min_member, **kw),
                               on_timeout=TimeoutAction.REQUEUE, wait_for_min_member=True)


def test_the_wait_starts_at_the_quorum_and_a_late_member_binds_with_the_others() -> None:
    """coscheduling's PreFilter: two of three pods at once, the third 25 s later, with a
    10 s timeout. No member is placed (no timer) before the third exists; then all three
    are bound together."""
    w = world(8)
    w.add_group(coscheduling_group("pg", 3, timeout=10))
    members(w, "pg", 2)
    for t in (0, 5, 11, 20, 24):
        w.step(t)
    rt = w.scheduler.groups[GroupKey("default/pg")]
    assert (rt.schedule_start, rt.timed_out, rt.assumed) == (None, False, set())
    assert w.pending_reason("pg-0") == "WaitingForGang"
    assert "has 2 of its minMember 3 pods" in w.pending_reasons[w.uid_of("pg-0")].message
    members(w, "pg", 1, first=2)
    w.settle(25)
    assert bound(w, "pg") == 3
    assert w.group_status[GroupKey("default/pg")].phase in ("Scheduled", "Running")


def test_a_requeuing_timeout_sends_the_members_back_with_a_growing_backoff() -> None:
    """coscheduling's Permit timeout: what was assumed is released, the members back off
    (1 s, then 2 s...), and the group is tried again with a fresh timer; once room comes
    it is bound. It is never TimedOut."""
    w = world(1)
    w.add_group(coscheduling_group("pg", 2, mode=NON_STRICT, timeout=60))
    members(w, "pg", 2)
    w.step(100)
    key = GroupKey("default/pg")
    assert w.scheduler.groups[key].schedule_start == 100
    out = w.step(160)
    rt = w.scheduler.groups[key]
    assert (rt.timed_out, rt.assumed, rt.schedule_start) == (False, set(), None)
    assert w.scheduler.cluster.nodes["n0"].used.get("cpu") == 0
    assert [e.reason for e in out if isinstance(e, RecordEvent)] == ["ScheduleTimeout"]
    assert "tried again in 1s" in rt.message
    w.step(160.5)
    assert w.pending_reason("pg-0") == "GangTimedOut"
    assert w.group_status[key].phase != "TimedOut"
    w.step(161)  # the backoff is over: assumed again, a fresh timer
    assert w.scheduler.groups[key].schedule_start == 161
    w.step(221)
    assert "tried again in 2s" in w.scheduler.groups[key].message
    w.add_node(make_node("n1", cpu=8))
    w.settle(223)
    assert bound(w, "pg") == 2
    assert w.scheduler.groups[key].requeues == 0


def test_a_requeuing_group_persisted_as_timed_out_is_scheduled_again() -> None:
    """A TimedOut phase written before (or by a Fail group later switched) does not stop
    a group that requeues."""
    w = world(8)
    w.add_group(dataclasses.replace(coscheduling_group("pg", 2), persisted_phase="TimedOut"))
    members(w, "pg", 2)
    w.settle(0)
    assert bound(w, "pg") == 2


def test_once_satisfied_later_members_are_ordinary_pods() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 2))
    members(w, "pg", 2)
    w.settle(0)
    members(w, "pg", 1, first=2)
    out = w.step(1)
    assert [(d.name, d.reason) for d in out if isinstance(d, BindPod)] == [("pg-2", "Scheduled")]
    assert w.group_status[GroupKey("default/pg")].phase == "Running"


@pytest.mark.parametrize(
    ("specs", "winner"),
    [
        pytest.param((("a", 0, 2.0), ("b", 5, 3.0)), "b", id="priority-first"),
        pytest.param((("a", 0, 2.0), ("b", 0, 1.0)), "b", id="then-creation"),
        pytest.param((("b", 0, 1.0), ("a", 0, 1.0)), "a", id="then-name"),
    ],
)
def test_queue_order_priority_creation_name(
    specs: tuple[tuple[str, int, float], ...], winner: str
) -> None:
    w = world(2)
    for name, priority, creation in specs:
        w.add_group(make_podgroup(name, 2, priority=priority, creation=creation))
        members(w, name, 2)
    w.settle(0)
    assert {name: bound(w, name) for name, _, _ in specs}[winner] == 2
    assert sum(bound(w, name) for name, _, _ in specs) == 2


def test_members_are_charged_to_the_queue_and_respect_its_quota() -> None:
    w = world(16)
    w.add_queue(make_queue("q", max=res(3)))
    w.add_group(make_podgroup("a", 2, queue="q"))
    w.add_group(make_podgroup("b", 2, queue="q", creation=1))
    members(w, "a", 2)
    members(w, "b", 2)
    w.settle(0)
    assert (bound(w, "a"), bound(w, "b")) == (2, 0)
    assert w.scheduler.queues.usage("q") == res(2, "2Gi", pods=2)


def test_min_resources_over_the_queue_max_is_reported() -> None:
    w = world(16)
    w.add_queue(make_queue("q", max=res(3)))
    w.add_group(make_podgroup("pg", 2, queue="q", min_resources=res(4)))
    members(w, "pg", 2)
    w.settle(0)
    assert w.pending_reason("pg-0") == "QueueQuotaExceeded"
    assert "exceed queue q's max cpu=3" in w.pending_reasons[w.uid_of("pg-0")].message


def test_pods_of_a_missing_group_wait_for_it() -> None:
    w = world(8)
    members(w, "late", 1)
    w.step(0)
    assert w.pending_reason("late-0") == "PodGroupNotFound"
    w.add_group(make_podgroup("late", 1))
    w.step(1)
    assert bound(w, "late") == 1


def test_an_invalid_member_says_so() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 2))
    members(w, "pg", 1)
    w.add_pod(make_pod("pg-bad", pod_group="pg", invalid="spec.containers: required"))
    w.settle(0)
    assert w.pending_reason("pg-bad") == "InvalidPod"
    assert bound(w, "pg") == 0


def test_an_invalid_group_says_so() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 1, invalid="minMember: must be >= 1"))
    members(w, "pg", 1)
    w.settle(0)
    assert w.pending_reason("pg-0") == "InvalidPodGroup"
    assert w.group_status[GroupKey("default/pg")].phase == "Failed"


def test_a_member_bound_by_someone_else_while_assumed_is_not_bound_again() -> None:
    w = world(2)
    w.add_group(make_podgroup("pg", 3, mode=NON_STRICT))
    members(w, "pg", 3)
    w.step(0)
    assumed = sorted(w.scheduler.groups[GroupKey("default/pg")].assumed)
    assert len(assumed) == 2
    pod = w.pods[assumed[0]]
    w.add_pod(pod.__class__(**{**{f: getattr(pod, f) for f in pod.__dataclass_fields__},
                               "node_name": "n0"}))
    w.add_node(make_node("n1", cpu=1))
    w.settle(1)
    assert bound(w, "pg") == 3
    assert max(w.bind_count.values()) == 1


def test_group_deleted_releases_its_assumptions() -> None:
    w = world(2)
    w.add_group(make_podgroup("pg", 3, mode=NON_STRICT))
    members(w, "pg", 3)
    w.step(0)
    w.remove_group(GroupKey("default/pg"))
    w.step(1)
    assert w.scheduler.cluster.nodes["n0"].used.get("cpu") == 0
    assert w.pending_reason("pg-0") == "PodGroupNotFound"


def test_a_spec_change_lets_the_gang_try_again() -> None:
    w = world(8)
    spec: PodGroupSpec = make_podgroup("pg", 3)
    w.add_group(spec)
    members(w, "pg", 2)
    w.settle(0)
    w.add_group(make_podgroup("pg", 2))
    w.settle(1)
    assert bound(w, "pg") == 2


def test_two_strict_gangs_that_cannot_fit_do_not_retry_each_other_every_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    w = world(3)
    for group in ("a", "b"):
        w.add_group(make_podgroup(group, 3))
        members(w, group, 3, cpu=2)
    w.step(0)
    calls = count_placements(monkeypatch)
    w.step(1)  # each one's rollback used to look like freed capacity to the other
    assert calls == []
    assert w.scheduler.cluster.nodes["n0"].used.get("cpu") == 0


def test_a_pod_placed_after_a_rollback_sees_the_capacity_it_freed() -> None:
    w = world(2, 2)
    w.add_group(make_podgroup("pg", 3, priority=10))
    members(w, "pg", 3, cpu=2)  # two fit, the third does not: rolled back
    w.add_pod(make_pod("after", cpu=2, creation=5.0))
    w.add_pod(make_pod("after2", cpu=2, creation=6.0))
    w.step(0)
    assert {w.node_of("after"), w.node_of("after2")} == {"n0", "n1"}


def test_a_group_in_a_missing_queue_says_so_and_runs_when_it_appears() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 1, queue="late"))
    members(w, "pg", 1)
    w.settle(0)
    assert w.pending_reason("pg-0") == "QueueNotFound"
    assert w.pending_reasons[w.uid_of("pg-0")].message == 'queue "late" does not exist'
    w.add_queue(make_queue("late"))
    w.settle(1)
    assert bound(w, "pg") == 1
    assert w.group_status[GroupKey("default/pg")].reason == ""


def test_an_invalid_group_gets_one_event() -> None:
    w = world(8)
    w.add_group(make_podgroup("pg", 3, invalid="spec.totalNumber: must be at least 3, got 2"))
    w.settle(0)
    w.add_group(make_podgroup("pg", 3, invalid="spec.totalNumber: must be at least 3, got 2"))
    w.settle(1)
    events = [e for e in w.events if e.target.kind == "PodGroup"]
    assert [(e.reason, e.message) for e in events] == [
        ("InvalidSpec", "spec.totalNumber: must be at least 3, got 2")]


def test_gang_groups_join_transitively_even_when_listed_one_way() -> None:
    w = world(8)
    w.add_group(make_podgroup("a", 1, gang_group=("default/a", "default/b")))
    w.add_group(make_podgroup("b", 1, gang_group=("default/a", "default/b", "default/c")))
    w.add_group(make_podgroup("c", 1, gang_group=("default/b", "default/c")))
    members(w, "b", 1)
    members(w, "c", 1)  # c's own list is complete, but b also needs a
    w.settle(0)
    assert bound(w, "b") == bound(w, "c") == 0
    assert "default/a 0/1" in w.pending_reasons[w.uid_of("c-0")].message
    members(w, "a", 1)
    w.settle(1)
    assert bound(w, "a") == bound(w, "b") == bound(w, "c") == 1
