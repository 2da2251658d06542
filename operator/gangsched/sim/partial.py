"""The partial-gang measure: how long each gang had some, but not all, of its minimum bound.

The gang guarantee says no gang runs partially. What can be measured is the time a gang
(a task group of an Application, or a PodGroup, per job attempt) spends with at least one
but fewer than its minimum of real members bound (placeholders are not members), from
its first member bound until it first has them all. After that, members finishing or
failing do not count: that is the work's doing, not the scheduler's. An attempt that
ends (the job completes, gives up, is retried, or the run stops) closes its open spans.

A *violation* is a span longer than the slowest swap can take on the simulated cluster
(``Latency.swap_seconds``: a placeholder's graceful deletion, seen late, and the bind
seen late; 0 on an instant cluster). Pod by pod, such spans last until the rest of the
gang finds room, if ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Gang = tuple[str, int, str | None]
"""(job key, attempt, gang key: a task group, or None for a whole job)."""


@dataclass(slots=True)
class PartialGangs:
    """Members bound per gang, and the spans each spent partial."""

    bound: dict[Gang, int] = field(default_factory=dict)
    since: dict[Gang, float] = field(default_factory=dict)
    """Gangs partial now, since when."""
    full: set[Gang] = field(default_factory=set)
    """Gangs that have had their minimum bound (in this attempt)."""
    spans: dict[str, list[float]] = field(default_factory=dict)
    """Closed partial spans, in seconds, by job key."""

    def changed(self, gang: Gang, need: int, delta: int, now: float) -> None:
        """A real member of ``gang`` (minimum ``need``) was bound (+1) or unbound (-1)."""
        count = self.bound.get(gang, 0) + delta
        self.bound[gang] = count
        if gang in self.full:
            return
        if count >= need:
            self.full.add(gang)
            self._close(gang, now)
        elif count > 0:
            self.since.setdefault(gang, now)
        else:
            self._close(gang, now)

    def end_attempt(self, job: str, now: float) -> None:
        """The job's current attempt is over: close its open spans."""
        for gang in [g for g in self.since if g[0] == job]:
            self._close(gang, now)

    def _close(self, gang: Gang, now: float) -> None:
        start = self.since.pop(gang, None)
        if start is not None:
            self.spans.setdefault(gang[0], []).append(now - start)

    def summary(self, limit: float) -> PartialSummary:
        """Max and total partial seconds over every gang, and the spans above ``limit``."""
        every = [span for spans in self.spans.values() for span in spans]
        return PartialSummary(max(every, default=0.0), sum(every, 0.0),
                              sum(1 for span in every if span > limit + 1e-9), limit)


@dataclass(frozen=True, slots=True)
class PartialSummary:
    max_seconds: float
    total_seconds: float
    violations: int
    """Spans longer than ``limit``."""
    limit: float

    def to_json(self) -> dict[str, object]:
        return {"maxSeconds": round(self.max_seconds, 3),
                "totalSeconds": round(self.total_seconds, 3),
                "violations": self.violations, "limitSeconds": round(self.limit, 3)}


NOTHING_PARTIAL = PartialSummary(0.0, 0.0, 0, 0.0)
