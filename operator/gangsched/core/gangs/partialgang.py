"""The partial-gang measure: how long a gang had some but not all of its members bound.

The gang guarantee says no gang runs partially. A real cluster cannot make a swap
instant: a placeholder's deletion takes from half a second to its grace period, and its
real pod is bound only once the room is free. So the measure is a span, not a state: a
gang is *partial* while ``0 < bound < minimum``, where ``bound`` counts the members that
hold their room (real pods bound and placeholders bound that are not being deleted), and
``minimum`` is what the gang needs (the sum of its task groups' ``minMember``, or a
PodGroup's ``minMember``). A span longer than the time a swap takes is a violation: the
room of a member was lost, or never there.

:func:`step` is the whole logic, pure: the operator's metrics and the simulator's summary
both feed it what they see, with their ``now``. A :class:`PartialSpan` is a value; each
step returns the next one, the length of a span that just ended (for a histogram), and
whether the current span just crossed the threshold (counted once per span).

It is a measure, not a decision: no scheduling decision reads it, so a cycle the
scheduler skips (see ``Session.reached``) changes nothing here; the spans are only as
fine as the steps their caller takes.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_THRESHOLD = 3.0
"""Seconds a gang may be partial (a swap under way) before it counts as a violation."""


def is_partial(bound: int, minimum: int) -> bool:
    """Some but not all of ``minimum`` members bound. A gang of no known minimum
    (``minimum`` <= 0) is never partial; more than the minimum bound is not partial."""
    return minimum > 0 and 0 < bound < minimum


@dataclass(frozen=True, slots=True)
class PartialSpan:
    """A gang's partial spans so far."""

    since: float | None = None
    """Start of the current partial span; None while the gang is not partial."""
    longest: float = 0.0
    """The longest span that ended."""
    total: float = 0.0
    """Seconds partial, over every span that ended."""
    violations: int = 0
    """Spans that lasted longer than the threshold (the current one included once it did)."""
    violated: bool = False
    """The current span has crossed the threshold already."""

    def current(self, now: float) -> float:
        """Seconds of the current span at ``now`` (0 when not partial; never negative)."""
        return 0.0 if self.since is None else max(0.0, now - self.since)

    def worst(self, now: float) -> float:
        """The longest span, the current one included."""
        return max(self.longest, self.current(now))


@dataclass(frozen=True, slots=True)
class Step:
    span: PartialSpan
    ended: float | None
    """Length of the span that ended at this step, if one did."""
    violation: bool
    """The current span crossed the threshold at this step."""


def step(span: PartialSpan, *, partial: bool, now: float,
         threshold: float = DEFAULT_THRESHOLD) -> Step:
    """The gang is (or is not) partial at ``now``: the next span record.

    A clock that goes back counts as no time passed. A negative ``threshold`` is taken
    as 0 (every partial moment is a violation)."""
    threshold = max(0.0, threshold)
    if span.since is not None and not partial:
        ended = span.current(now)
        late = not span.violated and ended > threshold  # crossed between two steps
        return Step(PartialSpan(None, max(span.longest, ended), span.total + ended,
                                span.violations + late, False), ended, late)
    if span.since is None and partial:
        span = PartialSpan(now, span.longest, span.total, span.violations, False)
    elapsed = span.current(now)
    if span.since is not None and not span.violated and elapsed > threshold:
        return Step(PartialSpan(span.since, span.longest, span.total, span.violations + 1,
                                True), None, True)
    return Step(span, None, False)
