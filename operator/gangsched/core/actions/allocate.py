"""The ``allocate`` action: every queue's units in order, gang-aware.

Units are the applications with work (:mod:`~gangsched.core.gangs.app_allocation`), the PodGroups
(:mod:`~gangsched.core.gangs.podgroups`) and the ordinary pods
(:mod:`~gangsched.core.gangs.ordinary`).
Queues are served unit by unit, each time the one furthest below its deserved share at
that moment (then by name): room that several queues wait for is shared as their
deserved shares say within the cycle, instead of the first queue taking all it can and
reclaim taking it back in the next (a queue is served again at once while its units take
nothing). Within a queue, units go in the queue's sort order: placeholders, real pods
(which take a placeholder of their task group when there is one), PodGroup members
(bound only when the whole GangGroup is assumed), and ordinary pods.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import TYPE_CHECKING

import gangsched.core.gangs.app_allocation as alloc_logic
import gangsched.core.gangs.ordinary as ordinary_logic
import gangsched.core.gangs.podgroups as group_logic
from gangsched.core.preemption import deadlock, shares
from gangsched.core.state.records import PodState
from gangsched.core.values.model import GroupKey
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def allocate(s: Session, now: float) -> None:
    """Place what can be placed this cycle (see the module docstring)."""
    units = alloc_logic.units(s, now) + group_logic.units(s) + ordinary_logic.units(s)
    by_queue: dict[str, list[tuple[tuple[object, ...], object]]] = {}
    for queue, key, unit in units:
        by_queue.setdefault(queue, []).append((key, unit))
    done: set[GroupKey] = set()
    served: dict[str, Iterator[tuple[tuple[object, ...], object]]] = {}
    gates: dict[str, alloc_logic.StateAwareGate] = {}
    for queue, items in by_queue.items():
        ordered = sorted(items, key=lambda item: item[0])
        with_work = {u.rt.spec.key for _, u in ordered if isinstance(u, alloc_logic.AppUnit)}
        gates[queue] = alloc_logic.StateAwareGate(s, queue, now, with_work)
        served[queue] = iter(ordered)
    deserved = shares.deserved(s, now) if len(by_queue) > 1 else {}

    def ratio(queue: str) -> float:
        """How much of its deserved share the queue uses now (0 with one queue)."""
        if not deserved:
            return 0.0
        return shares.ratio(s.queues.usage(queue), deserved.get(queue, Resources.ZERO))

    heap = [(ratio(queue), queue) for queue in by_queue]
    heapq.heapify(heap)
    while heap:
        _, queue = heapq.heappop(heap)
        gate, used = gates[queue], s.queues.usage(queue)
        for _, unit in served[queue]:
            if isinstance(unit, alloc_logic.AppUnit):
                alloc_logic.schedule_app(s, unit, gate, now)
            elif isinstance(unit, group_logic.GroupUnit):
                group_logic.schedule_group(s, unit, done, now)
            elif isinstance(unit, PodState):
                ordinary_logic.place(s, unit, now, "Scheduled")
            if s.queues.usage(queue) is not used:  # it took something: still the lowest?
                heapq.heappush(heap, (ratio(queue), queue))
                break


ROUNDS = 3
"""Break, re-allocate, and test again at most this often in one cycle."""


def after_actions(s: Session, now: float) -> None:
    """Once the configured actions have run (when ``allocate`` is one of them): break any
    deadlock (:mod:`~gangsched.core.preemption.deadlock`), and let the others take at once
    what PodGroup victims held in the core."""
    if "allocate" not in s.config.actions:
        return
    for _ in range(ROUNDS):
        if not deadlock.break_deadlocks(s, now):
            return
        allocate(s, now)
