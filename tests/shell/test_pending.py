"""When a pending pod's condition and Event are written (``shell/pending.py``)."""

from __future__ import annotations

import pytest
from gangsched.core.values.decisions import PodPending
from gangsched.core.values.model import PodUID
from gangsched.shell.pending import PendingReports

UID = PodUID("u-1")
G = "WaitingForGang"


def pending(reason: str, message: str = "m", uid: PodUID = UID) -> PodPending:
    return PodPending(uid, "default", "p", reason, message)


def reports() -> PendingReports:
    return PendingReports(initial=1.0, cap=10.0, refresh=300.0)


@pytest.mark.parametrize(("steps", "written"), [
    pytest.param([(0, "A", "m")], [(0, "A", True)], id="first-word-with-event"),
    pytest.param([(0, "A", "m"), (0.5, "A", "m")], [(0, "A", True)], id="same-nothing"),
    pytest.param([(0, "A", "m"), (0, "B", "m"), (0, "C", "m")],
                 [(0, "A", True), (0, "B", True), (0, "C", True)], id="new-reasons-at-once"),
    pytest.param([(0, "A", "m"), (1, "A", "m2"), (299, "A", "m3"), (300, "A", "m4")],
                 [(0, "A", True), (300, "A", False)], id="message-only-after-refresh"),
    pytest.param([(0, "A", "m"), (0, "B", "m"), (0.5, "A", "m"), (2, "B", "m")],
                 [(0, "A", True), (0, "B", True), (1, "A", True), (3, "B", True)],
                 id="flapping-backs-off"),
    pytest.param([(0, G, "1 of 3"), (0.5, G, "2 of 3")], [(0, G, True), (1.5, G, False)],
                 id="gang-message-once-it-stands"),
    pytest.param([(0, G, "1"), (0.5, G, "2"), (1, G, "3"), (1.5, G, "4"), (5, G, "5"),
                  (5.5, G, "6")],
                 [(0, G, True), (2.5, G, False), (6.5, G, False)],
                 id="gang-message-not-while-it-changes"),
    pytest.param([(0, G, "1"), (0.5, G, "2"), (2, G, "3"), (3.5, G, "4")],
                 [(0, G, True), (1.5, G, False), (3, G, False), (5.5, G, False)],
                 id="gang-message-after-the-backoff-since-the-last-write"),
    pytest.param([(0, "A", "1"), (0.5, "A", "2")], [(0, "A", True)],
                 id="fit-message-not-before-the-refresh"),
])
def test_writes(steps: list[tuple[float, str, str]],
                written: list[tuple[float, str, bool]]) -> None:
    """``steps``: (now, reason, message) the core says; ``due`` is asked every 0.5 s."""
    r = reports()
    found = []
    now = 0.0
    for at, reason, message in steps:
        while now < at:
            found += [(now, x.pending.reason, x.event) for x in r.due(now)]
            now += 0.5
        report = r.offer(pending(reason, message), at)
        if report is not None:
            found.append((at, report.pending.reason, report.event))
    for _ in range(20):
        found += [(now, x.pending.reason, x.event) for x in r.due(now)]
        now += 0.5
    assert found == written


def test_forget_starts_afresh() -> None:
    r = reports()
    r.offer(pending("A"), 0)
    r.offer(pending("B"), 0)
    assert r.offer(pending("A"), 0) is None  # back to A: held by the backoff
    r.forget(UID)
    assert r.due(0.5) == []
    again = r.offer(pending("A"), 0.5)
    assert again is not None and again.event


def test_writes_per_pending_pod_per_minute_under_churn() -> None:
    """100 pending pods for 10 minutes; every second the counts in their messages change
    (other pods come and go) and every 20 s their reason flips between two. Before:
    one condition write per change (60 per pod per minute) and as many Events."""
    r = reports()
    pods = [PodUID(f"u-{i}") for i in range(100)]
    minutes = 10
    writes = events = 0
    for second in range(minutes * 60):  # a cycle a second: its words, then what is due
        reason = "Unschedulable" if (second // 20) % 2 == 0 else "WaitingForGang"
        found = [report for uid in pods
                 if (report := r.offer(pending(reason, f"0/{second} nodes", uid),
                                       float(second))) is not None]
        for x in found + r.due(float(second)):
            writes += 1
            events += x.event
    per_pod_minute = writes / len(pods) / minutes
    print(f"condition writes per pending pod per minute: {per_pod_minute:.2f}; "
          f"events: {events / len(pods) / minutes:.2f} (before: 60 and 60)")
    assert per_pod_minute <= 3.5
