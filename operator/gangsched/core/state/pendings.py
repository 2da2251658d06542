"""The pending pods counted by shape, kept as pods come and go.

The queue shares (:func:`gangsched.core.preemption.shares.demand`) and the queue statuses
(:func:`gangsched.core.gangs.status.queue_statuses`) add up the requests of every pending pod
by queue, every cycle. A pod's queue is its Application's, else its PodGroup's, else its
own (:meth:`~gangsched.core.scheduler.Scheduler.queue_of`): it can move when those
objects come, go or change queue, so the pods are counted by what decides it (their
Application, PodGroup and own queue), their request and whether they are invalid. Most
pending pods share a few such shapes; a cycle resolves each shape's queue once, at the
cost of the shapes rather than the pods.

The same pods are also kept by kind, each kind in arrival order: members of an
Application, members of a PodGroup only, and pods of neither. Each of ``allocate``'s
kinds of unit is made from its own pods, so the cost of making the ordinary pods' units
does not grow with the gangs waiting, nor the reverse. Those that ask for nothing but
their pod slot, in no PodGroup, are kept apart too: only they may be best-effort pods
(the ``backfill`` action's).
"""

from __future__ import annotations

from typing import NamedTuple

from gangsched.core.values.model import AppKey, GroupKey, PodUID
from gangsched.core.values.resources import PODS, Resources

FOR_ROOM = frozenset({"Capacity", "QueueQuota", "Constraints", "Topology"})
"""Pending reasons that other work's room could cure: such pods are preemptors (see
:mod:`gangsched.core.preemption.preemptors`), and the scheduler keeps them apart
(``Scheduler.waiting_for_room``) so that finding them costs what they are, not the
whole backlog. ``Constraints`` cures so only for a pod whose fit depends on other pods
(host ports, pod anti-affinity, spread): the preemptors ask. ``Topology``: a gang that
fits no domain of the key it requires (:mod:`gangsched.core.placement.domain_search`);
victims are then chosen inside one domain."""

_SLOT = Resources({PODS: 1})
"""What a pod that requests nothing asks for (its pod slot)."""


class Shape(NamedTuple):
    app: AppKey | None
    group: GroupKey | None
    queue: str
    """The pod's own queue (``default`` when it names none)."""
    request: Resources
    invalid: bool


class PendingShapes:
    """How many pending pods there are of each :class:`Shape`."""

    __slots__ = ("_of", "counts", "of_apps", "of_groups", "plain", "requestless")

    def __init__(self) -> None:
        self.counts: dict[Shape, int] = {}
        self._of: dict[PodUID, Shape] = {}
        self.of_apps: dict[PodUID, None] = {}
        """Pending members of an Application (of a PodGroup too or not), in arrival order."""
        self.of_groups: dict[PodUID, None] = {}
        """Pending members of a PodGroup and of no Application, in arrival order."""
        self.plain: dict[PodUID, None] = {}
        """Pending pods of neither, in arrival order."""
        self.requestless: dict[PodUID, None] = {}
        """Pending pods in no PodGroup that ask for their pod slot only."""

    def put(self, uid: PodUID, shape: Shape) -> None:
        """``uid`` is pending, as ``shape`` (moved if it was counted as another)."""
        old = self._of.get(uid)
        if old == shape:
            return
        if old is not None:
            self._drop(old)
            if self._kind(old) is not self._kind(shape):
                del self._kind(old)[uid]
                self._kind(shape)[uid] = None
            if _requestless(old) and not _requestless(shape):
                del self.requestless[uid]
        else:
            self._kind(shape)[uid] = None
        if _requestless(shape):
            self.requestless[uid] = None
        self._of[uid] = shape
        self.counts[shape] = self.counts.get(shape, 0) + 1

    def remove(self, uid: PodUID) -> None:
        """``uid`` is pending no more."""
        old = self._of.pop(uid, None)
        if old is not None:
            self._drop(old)
            del self._kind(old)[uid]
            self.requestless.pop(uid, None)

    def _kind(self, shape: Shape) -> dict[PodUID, None]:
        if shape.app is not None:
            return self.of_apps
        return self.of_groups if shape.group is not None else self.plain

    def _drop(self, shape: Shape) -> None:
        left = self.counts[shape] - 1
        if left:
            self.counts[shape] = left
        else:
            del self.counts[shape]


def _requestless(shape: Shape) -> bool:
    return shape.group is None and shape.request == _SLOT
