"""Decisions: what the core asks the shell (or the simulator) to do.

Every decision is a frozen value and names the reason that users will see. The shell
carries them out in order; none of them needs an answer to be safe: a failed bind comes
back as a ``BindFailed`` observation, a failed deletion is simply asked for again.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.values.devices import AllocationResult, ConsumerRef
from gangsched.core.values.model import AppKey, GroupKey, PodUID
from gangsched.core.values.resources import Resources
from gangsched.core.values.volume_specs import GroupClaim


class DeleteReason(enum.StrEnum):
    PLACEHOLDER_REPLACED = "PlaceholderReplaced"
    PLACEHOLDER_TIMEOUT = "PlaceholderTimeout"
    APP_COMPLETED = "ApplicationCompleted"
    APP_KILLED = "ApplicationKilled"
    APP_GONE = "ApplicationDeleted"
    ORPHANED = "PlaceholderOrphaned"
    PREEMPTED = "Preempted"
    PREEMPTED_PAST_BUDGET = "PreemptedPastDisruptionBudget"
    """A preemption victim deleted though a PodDisruptionBudget refused its eviction
    (nothing else made room): deleted with the pod's own grace period."""
    RECLAIMED = "Reclaimed"
    DEADLOCK_VICTIM = "DeadlockVictim"


class EventType(enum.StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """What an event is about. ``kind`` is Pod, Node, Application, PodGroup or Queue."""

    kind: str
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class BindVolume:
    """Bind a static PersistentVolume to a claim: set the PV's ``spec.claimRef``, on the
    version the core saw (``resource_version``: a conflict means someone else took it).
    The PV controller completes the binding (the claim's ``spec.volumeName``)."""

    volume: str
    resource_version: str
    namespace: str
    claim: str
    claim_uid: str


@dataclass(frozen=True, slots=True)
class AnnotateClaim:
    """Ask for a volume to be provisioned for the pod's node: set the claim's
    ``volume.kubernetes.io/selected-node`` annotation to ``node``."""

    namespace: str
    claim: str
    node: str


@dataclass(frozen=True, slots=True)
class AllocateClaim:
    """Write a ResourceClaim's allocation and reserve it for the pod (kube-scheduler's
    DynamicResources PreBind), before the pod's Binding.

    The claim is named by ``namespace``/``claim`` and must still be the object the core
    computed on: ``claim_uid`` (a claim deleted and made again is another claim) and
    ``resource_version`` (optimistic concurrency: the write carries it, a 409 means the
    claim changed and the core will compute again on its new version). The shell:

    1. adds the finalizer :data:`~gangsched.core.values.devices.DELETE_PROTECTION` to
       ``metadata.finalizers`` if it is missing (an update carrying ``resource_version``;
       the version it answers is used for the next step);
    2. writes the status (``PUT .../resourceclaims/<claim>/status``) with
       ``status.allocation`` = ``allocation`` and ``status.reservedFor`` = the served list
       plus ``reserved_for``, on that version.

    A failure of either step (409, 404, 422, 5xx, timeout) comes back as
    ``VolumeBindFailed`` for the pod; the pod is not bound and the core releases the
    devices it assumed for the claim.
    """

    namespace: str
    claim: str
    claim_uid: str
    resource_version: str
    allocation: AllocationResult
    reserved_for: ConsumerRef


@dataclass(frozen=True, slots=True)
class ReserveClaim:
    """Reserve an already allocated ResourceClaim for the pod: add ``reserved_for`` to
    ``status.reservedFor`` (a status update on ``resource_version``, the claim's uid
    checked), leaving the allocation as it is. Nothing to do when the pod is already in
    the list. Failure: ``VolumeBindFailed``, as for :class:`AllocateClaim`."""

    namespace: str
    claim: str
    claim_uid: str
    resource_version: str
    reserved_for: ConsumerRef


VolumeWrite = BindVolume | AnnotateClaim | AllocateClaim | ReserveClaim
"""The PreBind writes of a pod: volume bindings, then claim allocations and reservations.
Claim writes are always after the volume writes, and in the order of the pod's
``spec.resourceClaims``."""


@dataclass(frozen=True, slots=True)
class BindPod:
    """Bind a pod to a node. ``volumes`` are written first (kube-scheduler's PreBind), in
    order; when one of them fails the pod is not bound (``VolumeBindFailed`` comes back)."""

    uid: PodUID
    namespace: str
    name: str
    node: str
    reason: str
    volumes: tuple[VolumeWrite, ...] = ()


@dataclass(frozen=True, slots=True)
class BindGang:
    """Bind the members of a gang some of which have volume writes: every member's
    writes first, and only when all of them succeeded, the Bindings. A failed write binds
    no member (each comes back as ``VolumeBindFailed``): no gang is half-started because
    of its volumes."""

    binds: tuple[BindPod, ...]


@dataclass(frozen=True, slots=True)
class CreatePlaceholder:
    """Create placeholder pod ``name`` for member ``index`` of ``task_group`` of ``app``."""

    app: AppKey
    task_group: str
    index: int
    name: str
    namespace: str
    requests: Resources
    claims: tuple[GroupClaim, ...] = ()
    """Its task group's resource claims, which the placeholder holds devices for."""


@dataclass(frozen=True, slots=True)
class DeletePod:
    uid: PodUID
    namespace: str
    name: str
    reason: DeleteReason
    message: str


SCHEDULING_GATED = "SchedulingGated"
"""The reason of a pod with scheduling gates: the condition is written, no Event."""
SCHEDULING_GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"
"""The API server's words for that condition (``applySchedulingGatedCondition``)."""


@dataclass(frozen=True, slots=True)
class PodPending:
    """Tell users why a pod is not bound (PodScheduled=False, and an event on the pod
    unless ``event`` is False: a gang member waiting for its gang, which one event on
    its Application or PodGroup says for all of them).

    Reason :data:`SCHEDULING_GATED` is the exception: the condition alone, exactly as
    kube-scheduler leaves a gated pod (reason ``SchedulingGated``), and no Event.
    """

    uid: PodUID
    namespace: str
    name: str
    reason: str
    message: str
    event: bool = True


@dataclass(frozen=True, slots=True)
class PlaceholderCounts:
    created: int = 0
    allocated: int = 0
    replaced: int = 0
    released: int = 0
    pending: int = 0


@dataclass(frozen=True, slots=True)
class BlockingReason:
    """Why a task group or PodGroup waits, with the numbers behind it."""

    reason: str = "None"
    message: str = ""
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TaskGroupStatus:
    name: str
    min_member: int
    placeholders: PlaceholderCounts
    real_bound: int
    real_pending: int
    blocking: BlockingReason = BlockingReason()


@dataclass(frozen=True, slots=True)
class SetAppStatus:
    key: AppKey
    state: str
    reason: str
    message: str
    queue: str
    reserved: str
    running: int
    task_groups: tuple[TaskGroupStatus, ...]
    state_since: float | None
    placeholder_timer_start: float | None
    waiting_since: float | None
    starting_since: float | None
    reserved_nodes: tuple[str, ...] = ()
    """Nodes the ``reserve`` action holds for this starving gang (none when not elected)."""
    reservation_expiry: float | None = None
    """When those nodes are given back if the gang still does not fit."""
    retry_after: float | None = None
    """A deadlock victim, or a gang whose reservation expired: not admitted before this."""


@dataclass(frozen=True, slots=True)
class SetPodGroupStatus:
    key: GroupKey
    phase: str
    reason: str
    message: str
    members: int
    assumed: int
    scheduled: int
    running: int
    succeeded: int
    failed: int
    schedule_start: float | None
    blocking: BlockingReason = BlockingReason()
    reserved_nodes: tuple[str, ...] = ()
    """Nodes the ``reserve`` action holds for this starving gang (none when not elected)."""
    reservation_expiry: float | None = None
    """When those nodes are given back if the gang still does not fit."""
    retry_after: float | None = None
    """A deadlock victim: not enqueued again before this."""


@dataclass(frozen=True, slots=True)
class SetQueueStatus:
    name: str
    allocated: Resources
    pending: Resources
    reserved_by_placeholders: Resources
    max: Resources | None
    guaranteed: Resources
    applications: Mapping[str, int]
    message: str = ""


@dataclass(frozen=True, slots=True)
class RecordEvent:
    target: ObjectRef
    type: EventType
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class EvictPod:
    """Evict a pod through the Eviction API (PodDisruptionBudgets are respected)."""

    uid: PodUID
    namespace: str
    name: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class NominatePod:
    """Set the pod's ``status.nominatedNodeName`` to ``node`` (None: clear it): room is
    being made for it there by preemption. Other schedulers and autoscalers count that
    room as taken, as they do for kube-scheduler's nominations."""

    uid: PodUID
    namespace: str
    name: str
    node: str | None


@dataclass(frozen=True, slots=True)
class AnnotateNode:
    """Set (or, with ``value`` None, remove) an annotation on a node, for people to see."""

    node: str
    key: str
    value: str | None


Decision = (
    BindPod
    | BindGang
    | EvictPod
    | AnnotateNode
    | NominatePod
    | CreatePlaceholder
    | DeletePod
    | PodPending
    | SetAppStatus
    | SetPodGroupStatus
    | SetQueueStatus
    | RecordEvent
)
