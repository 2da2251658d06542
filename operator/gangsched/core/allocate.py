"""The ``allocate`` action: every queue's units in order, gang-aware.

Units are the applications with work (:mod:`~gangsched.core.allocation`), the PodGroups
(:mod:`~gangsched.core.podgroups`) and the ordinary pods (:mod:`~gangsched.core.ordinary`).
Queues are served furthest below their deserved share first, then by name: freed
capacity then goes to the queue that deserves it before a queue already above its share
takes it back (which reclaim would only have to undo). Within a queue, units go in the
queue's sort order: placeholders, real pods (which take a placeholder of their task group
when there is one), PodGroup members (bound only when the whole GangGroup is assumed),
and ordinary pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import gangsched.core.allocation as alloc_logic
import gangsched.core.ordinary as ordinary_logic
import gangsched.core.podgroups as group_logic
from gangsched.core import shares
from gangsched.core.model import GroupKey
from gangsched.core.resources import Resources
from gangsched.core.runtime import PodState

if TYPE_CHECKING:
    from gangsched.core.session import Session


def allocate(s: Session, now: float) -> None:
    """Place what can be placed this cycle (see the module docstring)."""
    units = alloc_logic.units(s, now) + group_logic.units(s) + ordinary_logic.units(s)
    by_queue: dict[str, list[tuple[tuple[object, ...], object]]] = {}
    for queue, key, unit in units:
        by_queue.setdefault(queue, []).append((key, unit))
    done: set[GroupKey] = set()
    for queue in queue_order(s, by_queue, now):
        ordered = sorted(by_queue[queue], key=lambda item: item[0])
        with_work = {u.rt.spec.key for _, u in ordered if isinstance(u, alloc_logic.AppUnit)}
        gate = alloc_logic.StateAwareGate(s, queue, now, with_work)
        for _, unit in ordered:
            if isinstance(unit, alloc_logic.AppUnit):
                alloc_logic.schedule_app(s, unit, gate, now)
            elif isinstance(unit, group_logic.GroupUnit):
                group_logic.schedule_group(s, unit, done, now)
            elif isinstance(unit, PodState):
                s.schedule_ordinary(unit, now)


def queue_order(s: Session, queues: Iterable[str], now: float) -> list[str]:
    """Queues furthest below their deserved share first, then by name."""
    order = sorted(queues)
    if len(order) < 2:
        return order
    deserved = shares.deserved(s, now)
    return sorted(order, key=lambda q: (shares.ratio(s.queues.usage(q),
                                                     deserved.get(q, Resources.ZERO)), q))
