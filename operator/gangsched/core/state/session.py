"""The session: what an action (and the logic it calls) sees of the scheduler.

As Volcano's ``framework.Session``, a cycle's work is done through one narrow interface
rather than through the object that owns the state: the cluster view and the queues, the
pods and objects being scheduled, the plans of preemption and the nodes reserved for a
starving gang, the clock of the cycle, and the few operations that change placements or
say something (bind, charge and release a pod's room, events, pending reasons).

:class:`~gangsched.core.scheduler.Scheduler` implements it; the actions
(:mod:`~gangsched.core.actions.factory` lists them) and the logic below them are written
against it only. Running the cycle is not part of it: nothing here starts a cycle. The
scheduler records a pod observation through it too (:mod:`~gangsched.core.gangs.membership`).

This module, and every state type it names, imports no logic: that is what keeps the
folders above it (gangs, preemption, actions) free of import cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from gangsched.core.placement.cluster import Cluster
    from gangsched.core.state.eviction_plans import Evictions
    from gangsched.core.state.index import Index
    from gangsched.core.state.node_reservation import NodeReservation
    from gangsched.core.state.outbox import Outbox
    from gangsched.core.state.pendings import PendingShapes
    from gangsched.core.state.pressure import Pressure
    from gangsched.core.state.queues import QueueTree
    from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState
    from gangsched.core.state.swaps import Swap
    from gangsched.core.state.verdicts import Verdicts
    from gangsched.core.values.decisions import Decision, EventType, ObjectRef
    from gangsched.core.values.model import AppKey, GroupKey, PodUID, SchedulerConfig
    from gangsched.core.volumes.catalog import VolumeCatalog

T = TypeVar("T")


class Session(Protocol):
    """The scheduler as the actions see it (see the module docstring)."""

    # --- the cluster and the queues ----------------------------------------------------
    config: SchedulerConfig
    cluster: Cluster
    queues: QueueTree
    queues_dirty: bool
    """Set when usage, earmarks or members changed: queue statuses are due."""
    queue_status: dict[str, Decision]
    now: float
    """The time of the cycle under way."""
    cycles: int
    """How many cycles have run (to tell moves of one cycle from another's)."""

    # --- what is scheduled ------------------------------------------------------------
    pods: dict[PodUID, PodState]
    pod_by_name: dict[str, PodUID]
    """Pod ``namespace/name`` -> uid."""
    apps: dict[AppKey, AppRuntime]
    app_index: Index[AppKey, AppRuntime]
    """The applications by what each cycle asks of them (see ``state.index``)."""
    groups: dict[GroupKey, GroupRuntime]
    group_index: Index[GroupKey, GroupRuntime]
    app_members: dict[AppKey, set[PodUID]]
    group_members: dict[GroupKey, set[PodUID]]
    pending: dict[PodUID, None]
    waiting_for_room: dict[PodUID, None]
    pending_shapes: PendingShapes
    parked: dict[PodUID, None]
    swaps: dict[PodUID, Swap]
    """Swaps under way, by placeholder uid, with the room each holds (see ``swap``)."""
    unheld: dict[PodUID, int]
    """Bound placeholders whose task group's devices are not held yet, with the device
    epoch last tried (see ``group_devices``)."""
    deleting: dict[PodUID, None]

    # --- preemption and reservation ---------------------------------------------------
    evictions: Evictions
    node_reservation: NodeReservation | None
    pressure: Pressure
    volumes: VolumeCatalog
    """Volumes, claims and the bindings assumed for placed pods."""
    unsatisfiable: Verdicts
    """Gangs that cannot fit the nodes as they are."""

    # --- decisions --------------------------------------------------------------------
    out: Outbox
    """The cycle's decisions, in order (see :mod:`~gangsched.core.state.outbox`)."""

    def reached(self, at: float) -> bool:
        """Is ``at`` no later than ``now``? The one way to ask the clock: an instant still
        ahead is remembered as one at which a cycle may decide differently."""
        ...

    def stir(self) -> None:
        """The cycle changed state that a later cycle acts on, without a decision."""
        ...

    @property
    def changes(self) -> int:
        """How many changes the core has seen or made so far (observations, charges,
        releases, pending pods, stirs, and decisions other than statuses): the same
        count means the same state."""
        ...

    def kept(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, reused within a cycle while nothing has changed since."""
        ...

    def queue_of(self, ps: PodState) -> str | None: ...

    def queue_for(self, app: AppKey | None, group: GroupKey | None, queue: str) -> str: ...

    def charge(self, ps: PodState, node: str) -> None: ...

    def uncharge(self, ps: PodState, *, retry: bool = True) -> None: ...

    def recharge(self, uids: Iterable[PodUID]) -> None: ...

    def refresh_pending(self, ps: PodState) -> None: ...

    def touch_owner(self, ps: PodState) -> None:
        """The pod's Application or PodGroup has something to show in its status."""
        ...

    def bind(self, ps: PodState, node: str, reason: str) -> None: ...

    def binding_together(self) -> AbstractContextManager[None]:
        """Binds asked for inside are one gang's (volume writes all before any Binding)."""
        ...

    def event(self, target: ObjectRef, kind: EventType, reason: str, message: str) -> None: ...

    def mark_pending(
        self, ps: PodState, reason: str, message: str, *, event: bool = True
    ) -> bool: ...
