"""The actions by name: the one module that knows them all (Volcano's ``factory.go``).

The scheduler runs ``SchedulerConfig.actions`` through :func:`run`; front ends check
the names a user gives with :func:`validate`. Adding an action means writing its module
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
    from gangsched.core.state.session import Session

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


def run(s: Session, names: Iterable[str], now: float) -> None:
    """Run the named actions in order; unknown names (refused at start-up) are skipped."""
    for name in names:
        fn = ACTIONS.get(name)
        if fn is not None:
            fn(s, now)
