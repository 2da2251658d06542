"""How slow the simulated cluster is: graceful deletion, kubelet start-up, watch lag.

A real cluster is slow where a test double is instant, and the gang guarantee lives in
those gaps. :class:`Latency` says how slow the simulated one is
(``settings.latency`` in a workload file; all zero by default, which is the instant
cluster the simulator always had):

* ``gracefulDeletionSeconds``: a deleted pod that is bound and not finished keeps its
  node and its capacity, flagged terminating (``deletionTimestamp``), for this long
  before it is gone: a number, or ``[min, max]`` for a spread. Each pod's period is a
  fixed function of its uid within the range (the same run gives the same result).
  Pods that are not bound, or whose node goes away, are gone at once, as on a real
  cluster;
* ``stoppedBeforeGoneSeconds``: at the end of its graceful deletion, the kubelet reports
  the pod's containers stopped (phase ``Failed``: it holds no capacity for any scheduler
  any more) this long before the pod object is gone (the kubelet writes the final status
  and then deletes it; the watch says so in two events);
* ``runningAfterSeconds``: a bound pod turns ``Running`` this long after its bind (the
  kubelet pulls and starts it); until then it holds its node but does no work;
* ``watchDelaySeconds``: every change reaches the scheduler this long after it happened
  (its watches lag), in the order it happened. The scheduler acts on what it has seen;
  a bind of a pod deleted meanwhile fails with 404, as the API server answers.

:class:`Later` is the queue of what is due at a later instant; the simulated cluster
(:class:`~gangsched.sim.world.World`) keeps one and the engine wakes up for it.
"""

from __future__ import annotations

import heapq
import itertools
import zlib
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Latency:
    """Delays of the simulated cluster, in seconds (see the module docstring)."""

    grace_min: float = 0.0
    """The shortest graceful deletion."""
    grace_max: float = 0.0
    """The longest graceful deletion (``grace_min`` when they are equal)."""
    running_after: float = 0.0
    """From a bind to ``Running``."""
    stopped_before_gone: float = 0.0
    """From a terminating pod's phase turning ``Failed`` to its object gone."""
    watch_delay: float = 0.0
    """From a change to the scheduler seeing it."""

    def __post_init__(self) -> None:
        if min(self.grace_min, self.grace_max, self.running_after, self.watch_delay,
               self.stopped_before_gone) < 0:
            raise ValueError("latencies cannot be negative")
        if self.grace_max < self.grace_min:
            raise ValueError(f"gracefulDeletionSeconds: the longest ({self.grace_max:g}) is "
                             f"shorter than the shortest ({self.grace_min:g})")

    @property
    def any(self) -> bool:
        """Is the cluster slow at all?"""
        return bool(self.grace_max or self.running_after or self.watch_delay
                    or self.stopped_before_gone)

    def grace(self, uid: str) -> float:
        """The graceful deletion period of pod ``uid``: within [min, max], fixed by uid."""
        if self.grace_max <= self.grace_min:
            return self.grace_min
        fraction = zlib.crc32(uid.encode()) / 0xFFFFFFFF
        return self.grace_min + fraction * (self.grace_max - self.grace_min)

    @property
    def swap_seconds(self) -> float:
        """The longest a swap can take: its placeholder's graceful deletion and removal,
        seen late, and the bind seen late."""
        return self.grace_max + self.stopped_before_gone + 2 * self.watch_delay

    def to_json(self) -> dict[str, object]:
        return {"gracefulDeletionSeconds": [self.grace_min, self.grace_max],
                "stoppedBeforeGoneSeconds": self.stopped_before_gone,
                "runningAfterSeconds": self.running_after,
                "watchDelaySeconds": self.watch_delay}


NO_LATENCY = Latency()


class Later:
    """Things due at later instants, run in time order (ties in the order they came)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str, Callable[[], None]]] = []
        self._seq = itertools.count()

    def add(self, at: float, kind: str, action: Callable[[], None]) -> None:
        """Run ``action`` at ``at``; ``kind`` names what it is (see :meth:`drop`)."""
        heapq.heappush(self._heap, (at, next(self._seq), kind, action))

    def first(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def run_until(self, now: float) -> bool:
        """Run everything due at or before ``now``, also what that adds for ``now``;
        True if anything ran."""
        ran = False
        while self._heap and self._heap[0][0] <= now:
            heapq.heappop(self._heap)[3]()
            ran = True
        return ran

    def drop(self, kind: str) -> None:
        """Forget everything of ``kind`` still due."""
        self._heap = [item for item in self._heap if item[2] != kind]
        heapq.heapify(self._heap)
