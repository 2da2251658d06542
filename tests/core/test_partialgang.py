"""The partial-gang measure: spans, the longest, violations counted once per span."""

from __future__ import annotations

import pytest
from gangsched.core.gangs import partialgang
from gangsched.core.gangs.partialgang import PartialSpan, is_partial, step
from hypothesis import given
from hypothesis import strategies as st


@pytest.mark.parametrize("bound, minimum, expected", [
    pytest.param(0, 5, False, id="none-bound"),
    pytest.param(3, 5, True, id="some-bound"),
    pytest.param(5, 5, False, id="all-bound"),
    pytest.param(6, 5, False, id="more-than-minimum"),
    pytest.param(1, 0, False, id="unknown-minimum"),
    pytest.param(1, -1, False, id="invalid-minimum"),
])
def test_is_partial(bound: int, minimum: int, expected: bool) -> None:
    assert is_partial(bound, minimum) is expected


def walk(states: list[tuple[float, bool]], threshold: float = 3.0,
         ) -> tuple[PartialSpan, list[float], int]:
    span, ended, violations = PartialSpan(), [], 0
    for now, partial in states:
        result = step(span, partial=partial, now=now, threshold=threshold)
        span = result.span
        violations += result.violation
        if result.ended is not None:
            ended.append(result.ended)
    return span, ended, violations


@pytest.mark.parametrize("states, longest, spans, violations", [
    pytest.param([(0, True), (1, False)], 1.0, [1.0], 0, id="a-swap"),
    pytest.param([(0, True), (2, True), (5, True), (6, False)], 6.0, [6.0], 1,
                 id="crossed-while-watched-counted-once"),
    pytest.param([(0, True), (9, False)], 9.0, [9.0], 1, id="crossed-between-steps"),
    pytest.param([(0, True), (4, True), (5, False), (10, True), (14, False)], 5.0,
                 [5.0, 4.0], 2, id="two-violations"),
    pytest.param([(0, False), (1, False)], 0.0, [], 0, id="never-partial"),
    pytest.param([(5, True), (3, False)], 0.0, [0.0], 0, id="clock-back-is-no-time"),
])
def test_spans(states: list[tuple[float, bool]], longest: float, spans: list[float],
               violations: int) -> None:
    span, ended, counted = walk(states)
    assert (span.longest, ended, counted, span.violations) == (longest, spans, violations,
                                                               violations)
    assert span.total == sum(spans)


def test_the_current_span_counts_in_the_worst() -> None:
    span = step(PartialSpan(), partial=True, now=10.0).span
    assert (span.current(12.5), span.worst(12.5), span.longest) == (2.5, 2.5, 0.0)
    assert partialgang.DEFAULT_THRESHOLD == 3.0


@given(st.lists(st.tuples(st.floats(0, 1000), st.booleans()), max_size=30))
def test_violations_never_exceed_spans_and_total_is_the_sum(
        raw: list[tuple[float, bool]]) -> None:
    states = sorted(raw)
    span, ended, counted = walk(states)
    assert counted == span.violations <= len(ended) + (span.since is not None)
    assert span.total == pytest.approx(sum(ended))
    assert span.longest == (max(ended) if ended else 0.0)
