"""``format_explanation`` on statuses exactly as the operator writes them.

Each case builds the core's status decision (with a blocking reason made the way the core
makes it: the real ``Diagnosis`` and ``QuotaCheck`` messages where they exist), renders it
with ``translate.statuses`` and checks what ``gangsched explain`` prints.
"""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.placement import domain_search as topology
from gangsched.core.placement.cluster import Diagnosis
from gangsched.core.state.queues import QuotaCheck
from gangsched.core.values.decisions import (
    BlockingReason,
    PlaceholderCounts,
    SetAppStatus,
    SetPodGroupStatus,
    TaskGroupStatus,
)
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.shell.explain import PREEMPTION_SCOPE, format_explanation, history
from gangsched.translate import statuses, times

NOW = 1_800_000_000.0
CPU2 = Resources({"cpu": 2000, "memory": 2 << 30, "pods": 1})


def quota_at_admission() -> BlockingReason:
    check = QuotaCheck(False, "root.team-a", headroom=Resources({"cpu": 3000}),
                       max=Resources({"cpu": 8000}), max_text="cpu=8")
    needed = CPU2.scale(4)
    return BlockingReason("QueueQuota", check.describe(needed, "the gang"), {
        "queue": check.queue, "needed": needed.format_short(),
        "headroom": check.headroom.format_short(), "max": check.max_text})


TAINT = "node(s) had untolerated taint {dedicated: db}"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def capacity() -> BlockingReason:
    diagnosis = Diagnosis(4, {"NodeResourcesFit": 3, "TaintToleration": 1},
                          Resources({"cpu": 500}), "", {"Insufficient cpu": 3, TAINT: 1})
    return BlockingReason("Capacity", diagnosis.message(), diagnosis.details())


def constraints() -> BlockingReason:
    diagnosis = Diagnosis(5, {"NodeAffinity": 3, "TaintToleration": 2}, Resources.ZERO, "",
                          {SELECTOR: 3, TAINT: 2})
    return BlockingReason("Constraints", diagnosis.message(), diagnosis.details())


def old_constraints() -> BlockingReason:
    """A status written by an earlier version, with filter names as details."""
    return BlockingReason("Constraints", "0/5 nodes fit cpu=2: 3 NodeSelector, 2 Taints",
                          {"NodeSelector": "3", "Taints": "2"})


def topology_refusal() -> BlockingReason:
    """A gang that fits no rack, as the core words it (the order is the core's)."""
    refusal = topology.Refusal("the gang's 4 members fit in no single domain of rack", (
        ("rack=r2", "member 3 of 4: 0/2 nodes are available: 2 Insufficient cpu"),
        ("rack=r1", "free room short of the gang's cpu=8, pods=4 by cpu=3")))
    return BlockingReason(refusal.reason, refusal.message(), refusal.details())


CASES = [
    pytest.param(quota_at_admission(), [
        "blocked by QueueQuota at queue root.team-a (the queue has no room for it):",
        "queue root.team-a has cpu=3 free of max cpu=8; the gang needs cpu=8, memory=8Gi, "
        "pods=4",
        "needed: cpu=8, memory=8Gi, pods=4", "queue headroom: cpu=3", "queue max: cpu=8",
    ], id="QueueQuota"),
    pytest.param(capacity(), [
        "blocked by Capacity (no node has room for it):",
        "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: db}, "
        "3 Insufficient cpu. The closest node is short of cpu=500m.",
        f"nodes: 3 Insufficient cpu, 1 {TAINT}",
        "closest node is short of: cpu=500m",
        f"preemption: {PREEMPTION_SCOPE}",
    ], id="Capacity"),
    pytest.param(constraints(), [
        "blocked by Constraints (its constraints exclude every node that has room):",
        f"0/5 nodes are available: 2 {TAINT}, 3 {SELECTOR}.",
        f"nodes: 3 {SELECTOR}, 2 {TAINT}",
    ], id="Constraints"),
    pytest.param(old_constraints(), [
        "nodes: 3 nodeSelector does not match (NodeSelector), 2 an untolerated taint "
        "(Taints)",
    ], id="Constraints-of-an-earlier-version"),
    pytest.param(BlockingReason("OlderGangAhead", "default/older is ahead in queue default",
                                {"gang": "default/older", "position": "2", "queue": "default"}),
                 ["blocked by OlderGangAhead (an older gang of its queue goes first):",
                  "gang ahead: default/older", "position in queue: 2", "queue: default"],
                 id="OlderGangAhead"),
    pytest.param(BlockingReason("StateAwareGate",
                                "queue default starts one application at a time; waiting "
                                "for default/first", {"startingApplication": "default/first"}),
                 ["blocked by StateAwareGate (its queue starts one application at a time):",
                  "starting application: default/first"], id="StateAwareGate"),
    pytest.param(BlockingReason("Reservation", "reserving node-1 for the gang",
                                {"node": "node-1", "reserved": "2/4"}),
                 ["blocked by Reservation (nodes that would fit are reserved, or its "
                  "reservation is in progress):",
                  "reserving node-1 for the gang", "node: node-1", "reserved: 2/4"],
                 id="Reservation"),
    pytest.param(BlockingReason("Preempting", "preempting 2 pods of default/low",
                                {"victims": "2", "victimGang": "default/low"}),
                 ["blocked by Preempting (victims are being preempted to make room for it):",
                  "victims: 2", "victimGang: default/low", f"preemption: {PREEMPTION_SCOPE}"],
                 id="Preempting"),
    pytest.param(BlockingReason("WaitingForGang", "GangGroup member PodGroup default/b does "
                                "not exist yet", {"missing": "default/b"}),
                 ["blocked by WaitingForGang (a member of its gang is missing):",
                  "missing: default/b"], id="WaitingForGang"),
    pytest.param(topology_refusal(), [
        "blocked by Topology (no single domain of the topology it requires holds the whole "
        "gang):",
        "domains tried:",
        "rack=r2: member 3 of 4: 0/2 nodes are available: 2 Insufficient cpu",
        "rack=r1: free room short of the gang's cpu=8, pods=4 by cpu=3",
    ], id="Topology"),
    pytest.param(BlockingReason("PlaceholderCreateFailed", "forbidden: exceeded quota",
                                {"code": "403"}),
                 ["blocked by PlaceholderCreateFailed:", "forbidden: exceeded quota",
                  "code: 403"], id="reason-outside-the-enum"),
]


def app_status(blocking: BlockingReason, *, state: str = "Accepted") -> dict[str, Any]:
    decision = SetAppStatus(
        key=AppKey("default/train"), state=state, reason="Accepted", message="queue default",
        queue="root.team-a", reserved="1/5", running=0,
        task_groups=(
            TaskGroupStatus("ps", 1, PlaceholderCounts(created=1, allocated=1), 0, 1),
            TaskGroupStatus("worker", 4, PlaceholderCounts(created=4, pending=4), 0, 4,
                            blocking),
        ),
        state_since=NOW - 60, placeholder_timer_start=NOW - 30, waiting_since=None,
        starting_since=NOW - 60)
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "Application",
            "metadata": {"namespace": "default", "name": "train"},
            "spec": {"queue": "root.team-a",
                     "schedulingPolicy": {"style": "Hard", "placeholderTimeoutSeconds": 120}},
            "status": statuses.app_status_body(decision, now=NOW, generation=1,
                                               old_status=None)}


def group_status(blocking: BlockingReason) -> dict[str, Any]:
    decision = SetPodGroupStatus(
        key=GroupKey("default/mpi"), phase="Pending", reason="", message="", members=3,
        assumed=0, scheduled=0, running=0, succeeded=0, failed=0, schedule_start=NOW - 10,
        blocking=blocking)
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"namespace": "default", "name": "mpi"},
            "spec": {"minMember": 3, "scheduleTimeoutSeconds": 60, "gangGroup": ["default/b"]},
            "status": statuses.podgroup_status_body(decision, now=NOW, generation=1,
                                                    old_status=None)}


@pytest.mark.parametrize(("blocking", "expected"), CASES)
def test_each_blocking_reason_of_a_task_group(blocking: BlockingReason,
                                              expected: list[str]) -> None:
    text = format_explanation(app_status(blocking))
    lines = [line.strip() for line in text.splitlines()]
    for line in expected:
        assert line in lines, text
    # The reason belongs to the worker group, after its counts; ps is not blocked.
    assert text.index("task group worker") < text.index("blocked by") \
        and text.index("task group ps") < text.index("task group worker")
    assert text.count("blocked by") == 1


@pytest.mark.parametrize(("blocking", "expected"), CASES)
def test_each_blocking_reason_of_a_podgroup(blocking: BlockingReason,
                                            expected: list[str]) -> None:
    text = format_explanation(group_status(blocking))
    lines = [line.strip() for line in text.splitlines()]
    for line in expected:
        assert line in lines, text
    assert "gang group: default/b" in text


def test_the_gang_its_counts_and_timer() -> None:
    text = format_explanation(app_status(BlockingReason()))
    assert text.splitlines()[:4] == [
        "Application default/train",
        f"  state:   Accepted since {times.format_time(NOW - 60)}  queue root.team-a  "
        "style Hard",
        "  gang:    1/5 placeholders allocated, 0 real pods running",
        "  reason:  Accepted: queue default",
    ]
    assert (f"placeholder timer: started {times.format_time(NOW - 30)}, 120s timeout expires "
            f"{times.format_time(NOW + 90)}") in text
    assert "placeholders: 0 allocated, 4 pending, 0 replaced, 0 released (created 4)" in text
    assert "real pods:    0 bound, 4 pending" in text


def test_not_blocked_says_nothing_of_blocking() -> None:
    text = format_explanation(app_status(BlockingReason()))
    assert "blocked by" not in text
    assert "blocked by" not in format_explanation(group_status(BlockingReason()))


def test_a_podgroup_phase_members_and_timer() -> None:
    text = format_explanation(group_status(BlockingReason()))
    assert "phase:   Pending  (min 3, mode Strict, queue default)" in text
    assert "members: 3, assumed 0, scheduled 0, running 0" in text
    assert f"schedule timer: started {times.format_time(NOW - 10)}, 60s timeout" in text


def test_a_missing_status_prints_defaults() -> None:
    text = format_explanation({"kind": "Application", "metadata": {"name": "x"}})
    assert "state:   New  queue default" in text
    assert format_explanation({"kind": "PodGroup"}).startswith("PodGroup /\n  phase:   Pending")


def event(reason: str, at: float, note: str, *, count: int = 1,
          last: float | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"reason": reason, "type": "Normal", "note": note,
                             "eventTime": times.format_micro_time(at)}
    if count > 1:
        found["series"] = {"count": count,
                           "lastObservedTime": times.format_micro_time(last or at)}
    return found


def test_event_history_oldest_first_with_repeats() -> None:
    events = [
        event("GangReserved", NOW + 2.5, "all 5 placeholders allocated"),
        event("Accepted", NOW, "New -> Accepted: queue default"),
        event("QueueQuota", NOW + 0.25, "held", count=3, last=NOW + 2),
        event("PlaceholderReplaced", NOW + 10, "took the place of placeholder p"),
    ]
    text = format_explanation(app_status(BlockingReason()), events)
    history_lines = text.split("events (oldest first):\n", 1)[1].splitlines()
    assert [line.split()[2].rstrip(":") for line in history_lines] == [
        "Accepted", "QueueQuota", "GangReserved", "PlaceholderReplaced"]
    assert (f"QueueQuota (x3, last {times.format_micro_time(NOW + 2)}): held"
            in history_lines[1])
    # Whole seconds and fractions sort by time, not as text.
    mixed = [{"reason": "b", "eventTime": "2027-01-15T08:00:00.500000Z"},
             {"reason": "a", "deprecatedFirstTimestamp": "2027-01-15T08:00:00Z"}]
    assert [e["reason"] for e in history(mixed)] == ["a", "b"]


def test_only_the_last_events_are_shown() -> None:
    events = [event(f"E{i}", NOW + i, f"n{i}") for i in range(25)]
    text = format_explanation(app_status(BlockingReason()), events)
    assert "... 5 older events not shown" in text
    assert "E4:" not in text and "E5:" in text and "E24:" in text


def test_pods_waiting_are_counted_by_reason() -> None:
    def pod(name: str, *, node: str | None = None, message: str | None = None,
            placeholder: bool = False) -> dict[str, Any]:
        conditions = [] if message is None else [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": message}]
        return {"metadata": {"name": name, "labels": {"gangsched.io/placeholder": "true"}
                             if placeholder else {}},
                "spec": {"nodeName": node} if node else {},
                "status": {"conditions": conditions}}

    waiting = "WaitingForGang: 1/5 placeholders of the gang allocated"
    text = format_explanation(app_status(BlockingReason()), pods=[
        pod("ps-0", node="node-1"), pod("w-0", message=waiting), pod("w-1", message=waiting),
        pod("ph", message="Capacity: 0/3 nodes fit", placeholder=True), pod("w-2")])
    assert "pods:    5, 1 bound, 4 waiting" in text
    lines = [line.strip() for line in text.splitlines()]
    assert lines.index(f"2 pods: {waiting}") < lines.index(
        "1 placeholder: Capacity: 0/3 nodes fit")
    assert "1 pod: no reason recorded yet" in lines


def _gang_pod(name: str, *, node: str | None = None, placeholder: bool = False,
              leaving_since: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"gangsched.io/app": "spark"}}
    if placeholder:
        meta["labels"]["gangsched.io/placeholder"] = "true"
    if leaving_since is not None:
        meta["deletionTimestamp"] = times.format_time(leaving_since + 5)
        meta["deletionGracePeriodSeconds"] = 5
    return {"metadata": meta, "spec": {"nodeName": node} if node else {}}


SPARK = {"kind": "Application", "metadata": {"namespace": "default", "name": "spark"},
         "spec": {"taskGroups": [{"name": "driver", "minMember": 1},
                                 {"name": "executor", "minMember": 2}]}}


@pytest.mark.parametrize(("pods", "expected"), [
    pytest.param([_gang_pod("ph-1", node="n", placeholder=True)],
                 "  partial: no: 1 of 3 minimum members hold their room (0 real pods bound, "
                 "1 placeholders; 0 placeholders being deleted, 0 real pods waiting)",
                 id="reserving-is-not-partial"),
    pytest.param([_gang_pod("driver", node="n"), _gang_pod("ph-1", node="n", placeholder=True),
                  _gang_pod("ph-2", node="n", placeholder=True)],
                 "  partial: no: 3 of 3 minimum members hold their room (1 real pods bound, "
                 "2 placeholders; 0 placeholders being deleted, 0 real pods waiting)",
                 id="whole"),
    pytest.param([_gang_pod("driver", node="n"), _gang_pod("exec-1", node="n"),
                  _gang_pod("exec-2"),
                  _gang_pod("ph-2", node="n", placeholder=True, leaving_since=NOW - 4)],
                 "  partial: YES for 4.0 s (over the 3 s a swap may take): 2 of 3 minimum "
                 "members hold their room (2 real pods bound, 0 placeholders; 1 placeholders "
                 "being deleted, 1 real pods waiting); the gang runs without all its members "
                 "(see gangsched_gang_partial_seconds)", id="a-swap-too-long"),
    pytest.param([_gang_pod("driver", node="n"), _gang_pod("exec-1")],
                 "  partial: YES: 1 of 3 minimum members hold their room (1 real pods bound, "
                 "0 placeholders; 0 placeholders being deleted, 1 real pods waiting); the gang "
                 "runs without all its members (see gangsched_gang_partial_seconds)",
                 id="room-lost-how-long-unknown"),
])
def test_the_partial_gang_figure(pods: list[dict[str, Any]], expected: str) -> None:
    text = format_explanation(SPARK, pods=pods, now=NOW)
    assert [line for line in text.splitlines() if line.startswith("  partial:")] == [expected]


def test_no_partial_line_without_pods_or_minimum() -> None:
    assert "partial:" not in format_explanation(SPARK, now=NOW)
    assert "partial:" not in format_explanation({"kind": "PodGroup", "spec": {
        "minMember": "x"}}, pods=[_gang_pod("a", node="n")], now=NOW)
