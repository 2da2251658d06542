"""Records by what the cycle asks of them, kept as they change: walks the size of the work.

A cycle asks its Applications (and PodGroups) a few fixed questions: which are new, whose
timer runs, which changed since their status was written, which gangs wait in
``Accepted``, how many are in each queue and state. Asked of every record, each cycle
costs the whole backlog (thousands of applications in a busy day) however little changed.

An :class:`Index` keeps, per named predicate, the keys of the records for which it holds,
and per named tally, how many records give each value. A record tells its index when one
of the fields the predicates read is set (see ``records``), and the index judges the
records so touched again before it next answers. A walk over the index meets exactly the
records a walk over all of them would act on, in the same order:

* :meth:`Index.members`: in the order the records were added (a dict's order), as a list
  taken at once;
* :meth:`Index.walk`: in key order, while the walk itself changes records: a record that
  comes to hold the predicate during the walk is met if its key is still ahead, as a
  sorted walk over every record would meet it.

The predicates must read only the record's own fields that it reports (a field changed
in place, a list appended to, is reported by whoever changes it: :meth:`Index.touch`).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=str)
R = TypeVar("R")


class Index(Generic[K, R]):
    """Keys of records per predicate, and counts of records per tally value."""

    __slots__ = ("_counted", "_deadlines", "_heaps", "_order", "_predicates", "_records",
                 "_seq", "_tallies", "_touched", "_when", "counts", "sets")

    def __init__(self, predicates: Mapping[str, Callable[[R], bool]],
                 tallies: Mapping[str, Callable[[R], Hashable]] | None = None,
                 deadlines: Mapping[str, Callable[[R], float | None]] | None = None) -> None:
        self._predicates = dict(predicates)
        self._tallies = dict(tallies or {})
        self._deadlines = dict(deadlines or {})
        self._when: dict[str, dict[K, float]] = {name: {} for name in self._deadlines}
        """Per deadline, each record's instant (records without one left out)."""
        self._heaps: dict[str, list[tuple[float, K]]] = {name: [] for name in self._deadlines}
        """The same, earliest first (entries no longer in :attr:`_when` are dropped as met)."""
        self.sets: dict[str, set[K]] = {name: set() for name in self._predicates}
        """Per predicate, the keys of the records it holds for (read after :meth:`refresh`)."""
        self.counts: dict[str, dict[Hashable, int]] = {name: {} for name in self._tallies}
        """Per tally, records by value (read after :meth:`refresh`)."""
        self._counted: dict[K, tuple[Hashable, ...]] = {}
        self._records: dict[K, R] = {}
        self._order: dict[K, int] = {}
        self._seq = itertools.count()
        self._touched: dict[K, R] = {}

    def add(self, key: K, record: R) -> None:
        """A record enters; one that replaces another under ``key`` keeps its place in
        the order (as a dict's value replaced does)."""
        self._records[key] = record
        if key not in self._order:
            self._order[key] = next(self._seq)
        self._touched[key] = record

    def remove(self, key: K) -> None:
        """The record under ``key`` is gone."""
        if self._records.pop(key, None) is None:
            return
        del self._order[key]
        self._touched.pop(key, None)
        for keys in self.sets.values():
            keys.discard(key)
        for when in self._when.values():
            when.pop(key, None)
        counted = self._counted.pop(key, None)
        if counted is not None:
            for (name, _), value in zip(self._tallies.items(), counted, strict=True):
                _count(self.counts[name], value, -1)

    def touch(self, key: K, record: R) -> None:
        """A field the predicates or tallies read changed on this record."""
        if self._records.get(key) is record:
            self._touched[key] = record

    def refresh(self) -> list[K]:
        """Judge the touched records again; their keys."""
        touched = self._touched
        if not touched:
            return []
        self._touched = {}
        for key, record in touched.items():
            for name, holds in self._predicates.items():
                if holds(record):
                    self.sets[name].add(key)
                else:
                    self.sets[name].discard(key)
            for name, deadline in self._deadlines.items():
                at = deadline(record)
                when = self._when[name]
                if at is None:
                    when.pop(key, None)
                elif when.get(key) != at:
                    when[key] = at
                    heapq.heappush(self._heaps[name], (at, key))
            if self._tallies:
                values = tuple(tally(record) for tally in self._tallies.values())
                old = self._counted.get(key)
                if old != values:
                    for (name, _), value, before in zip(
                            self._tallies.items(), values, old or (None,) * len(values),
                            strict=True):
                        if old is not None:
                            _count(self.counts[name], before, -1)
                        _count(self.counts[name], value, 1)
                    self._counted[key] = values
        return list(touched)

    def members(self, name: str) -> list[R]:
        """The records ``name`` holds for, in the order they were added."""
        self.refresh()
        order = self._order
        return [self._records[key] for key in sorted(self.sets[name], key=order.__getitem__)]

    def tally(self, name: str) -> dict[Hashable, int]:
        """Records by the value of tally ``name`` (zero counts left out)."""
        self.refresh()
        return self.counts[name]

    def due(self, name: str, reached: Callable[[float], bool]) -> tuple[list[K], float | None]:
        """The keys of the records whose deadline ``name`` has come, as ``reached`` (the
        scheduler's clock) says, and the earliest deadline still ahead (None when there
        is none): the one instant ahead that ``reached`` is asked about."""
        self.refresh()
        heap, when = self._heaps[name], self._when[name]
        if len(heap) > 2 * len(when) + 64:  # mostly entries of changed deadlines: rebuild
            heap[:] = [(at, key) for key, at in when.items()]
            heapq.heapify(heap)
        came: dict[K, float] = {}
        ahead = None
        while heap:
            at, key = heap[0]
            if when.get(key) != at or key in came:  # changed since, or met already
                heapq.heappop(heap)
                continue
            if not reached(at):
                ahead = at
                break
            heapq.heappop(heap)
            came[key] = at
        for key, at in came.items():  # theirs until the records say otherwise
            heapq.heappush(heap, (at, key))
        return list(came), ahead

    def walk(self, name: str, also: Iterable[K] = ()) -> Iterator[R]:
        """The records ``name`` holds for (and those of ``also``), in key order, as a
        sorted walk over every record that acts on those alone meets them (see the
        module docstring). A record met may have ceased to hold since (a superset is
        met, never fewer)."""
        self.refresh()
        keys = self.sets[name]
        todo = sorted(keys.union(also))
        queued = set(todo)
        i = 0
        while i < len(todo):
            key = todo[i]
            i += 1
            record = self._records.get(key)
            if record is None:
                continue
            yield record
            if self._touched:
                for other in self.refresh():
                    if other > key and other not in queued and other in keys:
                        bisect.insort(todo, other, lo=i)
                        queued.add(other)


def _count(counts: dict[Hashable, int], value: Hashable, step: int) -> None:
    found = counts.get(value, 0) + step
    if found:
        counts[value] = found
    else:
        del counts[value]
