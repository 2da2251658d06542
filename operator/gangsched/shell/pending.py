"""When to write a pending pod's PodScheduled=False condition and its Event.

The core says why a pod waits whenever the reason *or the message* changes, and
messages carry counts ("0/40 nodes are available: 12 Insufficient cpu...") that change
with every pod that comes and goes. Writing each one is a write storm under churn: two
requests per pending pod per cycle. kube-scheduler does not do that either: a pod that
failed is tried again only after a per-pod backoff (1 s doubling to 10 s), and an
unschedulable pod that nothing helps waits up to five minutes; its condition is
rewritten only on those attempts. So here, per pod:

* a **reason** the pod has not shown before in this pending spell is written (condition
  and Event) at once: a pod's first steps (``ApplicationNotFound``, ``WaitingForGang``,
  ``WaitingForPlaceholder``) are news, and there are only so many reasons;
* a reason it *returns* to (flapping) waits for the pod's backoff since its last write,
  and is written when it passes (the latest reason wins). Each write sets the backoff
  to ``initial`` at first, then doubles it up to ``cap``;
* the same reason with a new **message** rewrites only the condition, and not before
  ``refresh`` seconds after the last write: no Event, since the reason is what a reader
  of Events needs. Messages of the fit reasons carry the cluster's counts (``0/40 nodes
  are available: ...``), which any pod anywhere changes;
* but a message of the gang reasons (:data:`GANG_REASONS`: the pod waits for its own
  gang, whose members the message counts, e.g. ``PodGroup team/train has 1 of its
  minMember 3 pods``) changes only as that gang's members come, go or are placed. Such a
  message is written once the pod's backoff since its last write passed and the message
  has stood that long too (at least ``initial`` seconds), at the latest after
  ``refresh`` (kube-scheduler writes the condition again on each attempt, tried again
  1 s to 10 s after the last): a pod does not show ``1 of 3`` for minutes once all three
  exist, and a gang whose members keep coming faster than that writes nothing until
  they stop (then its members are bound, or say where the gang stands). At most one
  write per pod per backoff, as for a reason that flaps;
* the same reason and message writes nothing.

:meth:`PendingReports.offer` answers a decision with what to write now;
:meth:`PendingReports.due` gives what was held back and may be written at ``now``.
:meth:`PendingReports.forget` drops a pod that was bound or is gone. Pure: ``now`` is
passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.values.decisions import PodPending
from gangsched.core.values.model import PodUID

GANG_REASONS = frozenset({"WaitingForGang", "WaitingForPlaceholder", "StateAwareGate",
                          "WaitingForGangGroup", "ApplicationNotFound", "PodGroupNotFound"})
"""Reasons a pod waits for its own gang: their messages change only with that gang
(see the module docstring), and are kept fresh."""


@dataclass(frozen=True, slots=True)
class Report:
    """Write ``pending``'s condition; and its Event when ``event``."""

    pending: PodPending
    event: bool


@dataclass(slots=True)
class _Written:
    reason: str
    message: str
    at: float
    backoff: float
    held: PodPending | None = None
    changed: float = 0.0
    """When ``held`` last changed."""
    shown: set[str] = field(default_factory=set)


class PendingReports:
    """Per-pod write decisions (see the module doc). Seconds must be >= 0."""

    def __init__(self, *, initial: float, cap: float, refresh: float,
                 fresh: frozenset[str] = GANG_REASONS) -> None:
        self.initial = initial
        self.cap = cap
        self.refresh = refresh
        self.fresh = fresh
        """Reasons whose new messages are written once they stand (see the module doc)."""
        self.pods: dict[PodUID, _Written] = {}
        self.held: set[PodUID] = set()
        self.writes = 0
        """Conditions written so far (Events included in ``events``)."""
        self.events = 0

    def _earliest(self, w: _Written, d: PodPending) -> float:
        """When ``d`` may be written, given the pod's last write ``w``."""
        if d.reason not in w.shown:
            return w.at
        if d.reason != w.reason:
            return w.at + w.backoff
        late = w.at + max(w.backoff, self.refresh)
        if d.reason in self.fresh:
            return min(late, max(w.at + w.backoff,
                                 w.changed + max(w.backoff, self.initial)))
        return late

    def offer(self, d: PodPending, now: float) -> Report | None:
        """What to write for the core's latest word on a pending pod: a report, or None
        (nothing new, or held back until :meth:`due` gives it)."""
        w = self.pods.get(d.uid)
        if w is None:
            self.pods[d.uid] = _Written(d.reason, d.message, now, 0.0, shown={d.reason})
            return self._count(Report(d, event=True))
        if d.reason == w.reason and d.message == w.message:
            w.held = None
            self.held.discard(d.uid)
            return None
        if w.held != d:
            w.changed = now
        if now >= self._earliest(w, d):
            return self._write(w, d, now)
        w.held = d
        self.held.add(d.uid)
        return None

    def due(self, now: float) -> list[Report]:
        """The held-back writes whose time has come, in pod-uid order."""
        found = []
        for uid in sorted(self.held):
            w = self.pods.get(uid)
            if w is None or w.held is None:
                self.held.discard(uid)
                continue
            if now >= self._earliest(w, w.held):
                found.append(self._write(w, w.held, now))
        return found

    def forget(self, uid: PodUID) -> None:
        """The pod was bound or is gone: a later pending spell starts afresh."""
        self.pods.pop(uid, None)
        self.held.discard(uid)

    def _write(self, w: _Written, d: PodPending, now: float) -> Report:
        event = d.reason != w.reason
        w.reason, w.message, w.at = d.reason, d.message, now
        w.shown.add(d.reason)
        w.backoff = min(w.backoff * 2, self.cap) if w.backoff else self.initial
        w.held = None
        self.held.discard(d.uid)
        return self._count(Report(d, event=event))

    def _count(self, report: Report) -> Report:
        self.writes += 1
        self.events += report.event
        return report
