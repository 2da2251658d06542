"""Whether preemption can matter: priorities of running and waiting work, kept as they change.

``preempt`` takes room only from work of *lower* priority than the preemptor (between
gangs in a queue, and within a started gang). Every victim unit
(:mod:`~gangsched.core.preemption.victims`) is made of pods that hold a node (ours, or another
scheduler's bound or nominated pod), and its
priority is at least the lowest of theirs; every preemptor
(:mod:`~gangsched.core.preemption.preemptors`) has the priority of an Application's or PodGroup's
spec, or of one of our pods that waits for a node or belongs to a gang. So when the
highest such waiting priority is not above the lowest running one, no preemptor has a
single candidate victim and the action can find nothing: it is skipped whole.

The counts are multisets of priorities, updated by the scheduler whenever a pod of ours
is charged on a node, released, observed or gone: O(1) per change, and O(distinct
priorities) per question (a handful in any cluster). Spec priorities are read from the
objects when the pods alone do not already open the gate.
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.core.state.records import PodState
from gangsched.core.values.model import PodUID


class PriorityCounts:
    """A multiset of priorities: how many tracked pods have each."""

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}

    def add(self, priority: int) -> None:
        self._counts[priority] = self._counts.get(priority, 0) + 1

    def remove(self, priority: int) -> None:
        """Forget one pod of ``priority``; a priority never added is ignored."""
        left = self._counts.get(priority, 0) - 1
        if left > 0:
            self._counts[priority] = left
        else:
            self._counts.pop(priority, None)

    def lowest(self) -> int | None:
        return min(self._counts) if self._counts else None

    def highest(self) -> int | None:
        return max(self._counts) if self._counts else None


class Pressure:
    """Priorities of running pods of ours, and of pods that may stand for waiting work."""

    def __init__(self) -> None:
        self.running = PriorityCounts()
        """Pods holding a node (ours assumed or bound, other schedulers' bound or
        nominated): every possible victim."""
        self.waiting = PriorityCounts()
        """Pods of ours without a node, and pods of ours in a gang (whose priority a
        waiting gang takes): every pod whose priority a preemptor may have."""
        self._tracked: dict[PodUID, tuple[int | None, int | None]] = {}

    def track(self, ps: PodState) -> None:
        """Count ``ps`` as it is now (call after any change of its node or its pod)."""
        pod = ps.pod
        running = pod.priority if ps.node is not None else None  # any scheduler's
        gang = pod.app is not None or pod.pod_group is not None
        waiting = pod.priority if pod.ours and (ps.node is None or gang) else None
        self._set(ps.uid, (running, waiting))

    def forget(self, uid: PodUID) -> None:
        """The pod is gone; an unknown uid is ignored."""
        self._set(uid, (None, None))

    def _set(self, uid: PodUID, after: tuple[int | None, int | None]) -> None:
        before = self._tracked.get(uid, (None, None))
        if before == after:
            return
        if before[0] is not None:
            self.running.remove(before[0])
        if before[1] is not None:
            self.waiting.remove(before[1])
        if after[0] is not None:
            self.running.add(after[0])
        if after[1] is not None:
            self.waiting.add(after[1])
        if after == (None, None):
            self._tracked.pop(uid, None)
        else:
            self._tracked[uid] = after

    def outranked(self, spec_priorities: Iterable[int]) -> bool:
        """May some waiting work outrank some running work? False only when it cannot:
        no pod of ours runs, or nothing waiting (pods, and the given spec priorities of
        Applications and PodGroups) is above the lowest running priority."""
        lowest = self.running.lowest()
        if lowest is None:
            return False
        highest = self.waiting.highest()
        if highest is not None and highest > lowest:
            return True
        return any(priority > lowest for priority in spec_priorities)
