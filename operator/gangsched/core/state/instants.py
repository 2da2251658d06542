"""Distinct instants, earliest first: the times at which something may change.

The scheduler keeps the instants its cycles' decisions depended on (see
``Scheduler.reached``); the simulator keeps the deadlines the core publishes. Both ask
for the earliest one and forget those that have come.
"""

from __future__ import annotations

import heapq


class Instants:
    """A min-heap of distinct instants."""

    __slots__ = ("_heap", "_set")

    def __init__(self) -> None:
        self._heap: list[float] = []
        self._set: set[float] = set()

    def add(self, at: float) -> None:
        """Remember ``at`` (once, however often it is added)."""
        if at not in self._set:
            self._set.add(at)
            heapq.heappush(self._heap, at)

    def first(self) -> float | None:
        """The earliest instant remembered, if any."""
        return self._heap[0] if self._heap else None

    def pop_until(self, now: float) -> bool:
        """Forget the instants up to ``now``; True if there were any."""
        due = False
        heap = self._heap
        while heap and heap[0] <= now:
            self._set.discard(heapq.heappop(heap))
            due = True
        return due
