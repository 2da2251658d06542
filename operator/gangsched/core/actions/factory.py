"""The actions by name: the one module that knows them all (Volcano's ``factory.go``).

The scheduler is given :data:`ACTIONS` (``Scheduler(config, actions=...)``) and runs the
ones ``SchedulerConfig.actions`` names; front ends check the names a user gives with
:func:`validate`. Adding an action means writing its module
against :class:`~gangsched.core.state.session.Session` and naming it here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from gangsched.core.actions import (
    Action,
    allocate,
    backfill,
    elect,
    enqueue,
    reclaim,
)
from gangsched.core.actions import (
    preempt as preemption,
)

if TYPE_CHECKING:
    pass

ACTIONS: Mapping[str, Action] = MappingProxyType({
    enqueue.NAME: enqueue.enqueue,
    "allocate": allocate.allocate,
    "backfill": backfill.backfill,
    "preempt": preemption.preempt,
    "reclaim": reclaim.reclaim,
    "elect": elect.elect,
    "reserve": elect.reserve,
})
"""Action name -> function."""


def validate(names: Iterable[str]) -> tuple[str, ...]:
    """The actions as given, or ValueError naming the unknown one and the accepted ones."""
    result = tuple(names)
    for name in result:
        if name not in ACTIONS:
            accepted = ", ".join(sorted(ACTIONS))
            raise ValueError(f"unknown scheduler action {name!r} (accepted: {accepted})")
    if len(set(result)) != len(result):
        raise ValueError(f"scheduler actions repeat: {', '.join(result)}")
    if ("elect" in result) != ("reserve" in result):
        raise ValueError("scheduler actions elect and reserve go together: elect picks the "
                         "starving gang, reserve holds nodes for it")
    return result
