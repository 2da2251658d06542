"""A gang's state moves told in its reservation's Event: one write, not two.

On a real control plane every write costs about what a Binding costs, so what a gang
costs beyond its binds is what it writes. A gang of 8 whose members all exist is
accepted, reserved, bound and running within one cycle, and the core says so in two
Events on its Application: the routine state moves (``New -> Accepted -> Starting ->
Running``, already one Event per cycle: see ``gangsched.core.gangs.apps.move``) and
``GangReserved``. Written as they are, that is 2 writes for 8 binds.

:func:`one_per_object` folds a cycle's routine-move Event (reasons
:data:`~gangsched.core.gangs.apps.ROUTINE_MOVES`) into the ``GangReserved`` Event of the
same Application in the same cycle: that Event keeps its type, its reason and its note,
and the moves follow in its note after their reason (``every task group has its
minMember: 8 pending members bound; the gang's capacity is held; Running: New ->
Accepted -> Starting -> Running``), the whole cut as any note is (1,024 bytes). The
reservation and the moves it brings are one state change of the gang, told once. In any
other cycle the moves are an Event of their own, as before, and no other Events are
merged: each says something of its own, and users and tools look them up by reason.
(A PodGroup's gang says ``GangScheduled`` once, with no moves of its own.)

So a gang whose members all exist writes one Event beyond its binds; the state itself is
in its status (``kubectl get gsapp``, the ``Accepted``/``GangReserved``/``Running``
conditions), unchanged. The metrics read the core's Events before they are folded.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.core.gangs.apps import ROUTINE_MOVES
from gangsched.core.values.decisions import Decision, ObjectRef, RecordEvent

FOLD_INTO = frozenset({"GangReserved"})
"""The Events a cycle's state moves are told in, when the same cycle has one."""


def one_per_object(decisions: Iterable[Decision]) -> list[Decision]:
    """``decisions`` with each Application's routine-move Event folded into its
    ``GangReserved`` Event of the same cycle (see the module docstring); every other
    decision as it was, in order."""
    out = list(decisions)
    moves: dict[ObjectRef, tuple[int, RecordEvent]] = {}
    others: dict[ObjectRef, tuple[int, RecordEvent]] = {}
    for at, d in enumerate(out):
        if isinstance(d, RecordEvent):
            if d.reason in ROUTINE_MOVES:
                moves.setdefault(d.target, (at, d))
            elif d.reason in FOLD_INTO:
                others.setdefault(d.target, (at, d))
    folded: set[int] = set()
    for target, (at, move) in moves.items():
        other = others.get(target)
        if other is not None:
            out[other[0]] = with_moves(other[1], move)
            folded.add(at)
    return [d for at, d in enumerate(out) if at not in folded]


def with_moves(event: RecordEvent, moves: RecordEvent) -> RecordEvent:
    """``event`` with the state ``moves`` told after its own note."""
    told = f"{moves.reason}: {moves.message}" if moves.message else moves.reason
    note = f"{event.message}; {told}" if event.message else told
    return RecordEvent(event.target, event.type, event.reason, note)
