"""What a set of preemption victims gives back, kept as victims join and leave it.

The victim searches (:mod:`~gangsched.core.preemption.victims`,
:mod:`~gangsched.core.preemption.onnode`) ask the same questions many times of sets that
differ by one unit: :class:`Freed` answers each at the cost of the change, not the size
of the set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from gangsched.core.values.resources import Resources


class Unit(Protocol):
    """What :class:`Freed` reads of a victim unit
    (:class:`gangsched.core.preemption.victims.Unit`)."""

    @property
    def freed(self) -> Mapping[str, Resources]: ...

    @property
    def queue(self) -> str: ...

    @property
    def asked(self) -> Resources: ...

    @property
    def budget(self) -> tuple[str, str] | None: ...

    @property
    def uids(self) -> list[str]: ...


class Freed:
    """What a set of victims gives back, kept as victims join and leave it: the room
    per node, the queue quota, what leaves each queue (the victims' requests) and how
    many victims draw on each group's surplus (so that each question costs what the
    change does, not the size of the set)."""

    __slots__ = ("_relief_of", "budgets", "extra", "leaving", "pods", "relief")

    def __init__(self, relief_of: Callable[[Any], Resources] | None = None) -> None:
        """``relief_of`` reads a victims' :class:`Unit` of the caller's own type (typed
        loosely so that this module stays below the victim search)."""
        self._relief_of = relief_of
        self.extra: dict[str, Resources] = {}
        self.relief = Resources.ZERO
        self.leaving: dict[str, Resources] = {}
        self.budgets: dict[tuple[str, str], int] = {}
        self.pods: dict[str, int] = {}
        """The uids of the victims' pods (whose claims' devices are freed with them)."""

    def add(self, unit: Unit) -> None:
        extra = self.extra
        for node, amount in unit.freed.items():
            extra[node] = extra.get(node, Resources.ZERO) + amount
        if self._relief_of is not None:
            self.relief = self.relief + self._relief_of(unit)
        self.leaving[unit.queue] = self.leaving.get(unit.queue, Resources.ZERO) + unit.asked
        if unit.budget is not None:
            self.budgets[unit.budget] = self.budgets.get(unit.budget, 0) + 1
        for uid in unit.uids:
            self.pods[uid] = self.pods.get(uid, 0) + 1

    def remove(self, unit: Unit) -> None:
        extra = self.extra
        for node, amount in unit.freed.items():
            left = extra[node] - amount
            if left:
                extra[node] = left
            else:
                del extra[node]
        if self._relief_of is not None:
            self.relief = self.relief - self._relief_of(unit)
        left = self.leaving[unit.queue] - unit.asked
        if left:
            self.leaving[unit.queue] = left
        else:
            del self.leaving[unit.queue]
        if unit.budget is not None:
            count = self.budgets[unit.budget] - 1
            if count:
                self.budgets[unit.budget] = count
            else:
                del self.budgets[unit.budget]
        for uid in unit.uids:
            count = self.pods[uid] - 1
            if count:
                self.pods[uid] = count
            else:
                del self.pods[uid]
