"""A gang's state moves told in its reservation's Event of the same cycle
(``gangsched.shell.eventmerge``)."""

from __future__ import annotations

import pytest
from gangsched.core.values.decisions import (
    Decision,
    EventType,
    ObjectRef,
    RecordEvent,
    SetQueueStatus,
)
from gangsched.core.values.resources import Resources
from gangsched.shell.eventmerge import one_per_object

APP = ObjectRef("Application", "default", "gang", "u-1")
OTHER = ObjectRef("Application", "default", "other", "u-2")
NORMAL, WARNING = EventType.NORMAL, EventType.WARNING
QUEUE = SetQueueStatus("default", Resources.ZERO, Resources.ZERO, Resources.ZERO, None,
                       Resources.ZERO, {})


def ev(target: ObjectRef, reason: str, message: str, kind: EventType = NORMAL) -> RecordEvent:
    return RecordEvent(target, kind, reason, message)


MOVES = ev(APP, "Running", "New -> Accepted -> Starting -> Running")


@pytest.mark.parametrize("decisions, expected", [
    pytest.param([MOVES], [MOVES], id="moves-alone-as-they-are"),
    pytest.param(
        [MOVES, ev(APP, "GangReserved", "every task group has its minMember")],
        [ev(APP, "GangReserved", "every task group has its minMember; "
            "Running: New -> Accepted -> Starting -> Running")],
        id="gang-of-8-one-event"),
    pytest.param(
        [MOVES, QUEUE, ev(OTHER, "Accepted", "b"), ev(APP, "GangReserved", "c")],
        [QUEUE, ev(OTHER, "Accepted", "b"),
         ev(APP, "GangReserved", "c; Running: New -> Accepted -> Starting -> Running")],
        id="other-objects-and-decisions-untouched"),
    pytest.param(
        [ev(APP, "Accepted", "New -> Accepted"), ev(APP, "WaitingForGang", "w"),
         ev(APP, "Preempting", "p")],
        [ev(APP, "Accepted", "New -> Accepted"), ev(APP, "WaitingForGang", "w"),
         ev(APP, "Preempting", "p")],
        id="only-into-a-reservation"),
    pytest.param(
        [ev(OTHER, "Running", "m"), ev(APP, "GangReserved", "r")],
        [ev(OTHER, "Running", "m"), ev(APP, "GangReserved", "r")],
        id="only-the-same-object"),
    pytest.param(
        [ev(APP, "PlaceholderTimeout", "t", WARNING), ev(APP, "Resuming", "")],
        [ev(APP, "PlaceholderTimeout", "t", WARNING), ev(APP, "Resuming", "")],
        id="not-a-routine-move-kept"),
    pytest.param(
        [ev(APP, "GangReserved", ""), ev(APP, "Starting", "")],
        [ev(APP, "GangReserved", "Starting")], id="without-notes"),
])
def test_moves_told_in_the_reservation_of_the_same_cycle(decisions: list[Decision],
                                                   expected: list[Decision]) -> None:
    assert one_per_object(decisions) == expected
