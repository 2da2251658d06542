"""The core's mutable bookkeeping for pods, applications and pod groups.

These records live inside one :class:`~gangsched.core.scheduler.Scheduler` and are changed
only by it, in response to observations and during a cycle. Everything in them can be
rebuilt from the cluster: the pods (with their node and placeholder labels), the objects'
specs, and the timestamps persisted in the objects' status.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from gangsched.core.placement.cluster import ONE_POD, Constraints, PodInfo
from gangsched.core.values.decisions import (
    BlockingReason,
    ObjectRef,
    SetAppStatus,
    SetPodGroupStatus,
)
from gangsched.core.values.model import AppKey, AppSpec, GroupKey, Pod, PodGroupSpec, PodUID
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.index import Index

S = TypeVar("S")


class PodState:
    """One pod as the core tracks it."""

    __slots__ = (
        "assumed",
        "backoff_until",
        "blocked_epoch",
        "budget_refused_until",
        "charged_queue",
        "constraints",
        "delete_asked",
        "displaced",
        "evict_refused_until",
        "evicting",
        "failures",
        "info",
        "node",
        "order",
        "parked_name",
        "parked_node",
        "parked_on",
        "pending_reason",
        "pod",
        "preemptor",
        "release_reason",
        "request",
        "swapped",
    )

    def __init__(self, pod: Pod) -> None:
        self.pod = pod
        self.request = _request(pod)
        self.constraints = _constraints(pod)
        self.info = _info(pod, self.request, self.constraints)
        """The pod as the placement plugins see it."""
        self.node: str | None = None
        """Where the pod holds capacity: its bound node, or where the core assumed it."""
        self.assumed = False
        """A bind was asked for and is not yet seen on the pod."""
        self.charged_queue: str | None = None
        self.backoff_until = 0.0
        self.failures = 0
        self.blocked_epoch = -1
        """The cluster free_epoch at which the pod last failed to fit anywhere."""
        self.pending_reason: tuple[str, str] | None = None
        self.parked_on: PodUID | None = None
        """For a real gang member: the placeholder whose deletion it waits for."""
        self.parked_name = ""
        self.parked_node: str | None = None
        """The node of that placeholder, where the real pod goes once it is deleted."""
        self.swapped = False
        self.preemptor: tuple[Pod, object] | None = None
        """A pod on its own: the preemptor made of it, and the version of the pod it was
        made of (see ``preemptors.for_pod``)."""
        """For a real gang member: it has taken a placeholder once, and takes no other."""
        self.release_reason: str | None = None
        """For a placeholder: why the core asked for its deletion."""
        self.delete_asked = 0.0
        self.evicting: str | None = None
        """For a preemption victim: the key of the plan that evicts it (see ``evictions``)."""
        self.evict_refused_until = 0.0
        """Its eviction failed (not a PodDisruptionBudget's 429): no victim again until
        then."""
        self.displaced: str | None = None
        """For another scheduler's pending pod: the nominated node whose room a pod of
        higher priority took (it holds no room there while nominated to it)."""
        self.budget_refused_until = 0.0
        """A PodDisruptionBudget refused its eviction (429): until then, taking it breaks
        a budget, which preemption does only as a last resort (see ``victims``)."""
        self.order: tuple[str, bool, tuple[object, ...]] | None = None
        """For a pod on its own: its queue, whether that queue sorts by priority, and its
        sort key there (see ``ordinary.units``), until the pod changes."""

    def update(self, pod: Pod) -> None:
        """Take a newer version of the pod; a changed request or constraint retries it."""
        if pod.requests != self.pod.requests:
            self.request = _request(pod)
            self.blocked_epoch = -1
        if (
            pod.node_selector != self.pod.node_selector
            or pod.tolerations != self.pod.tolerations
            or pod.affinity != self.pod.affinity
        ):
            self.constraints = _constraints(pod)
            self.blocked_epoch = -1
        if pod.placement != self.pod.placement or pod.volumes != self.pod.volumes:
            self.blocked_epoch = -1
        old = self.pod
        self.pod = pod
        if pod is not old:
            self.order = None
        if ((pod is not old and (pod.requests, pod.placement, pod.app, pod.pod_group,
                                 pod.volumes)
                != (old.requests, old.placement, old.app, old.pod_group, old.volumes))
                or self.info.constraints is not self.constraints):
            self.info = _info(pod, self.request, self.constraints)

    @property
    def gated(self) -> bool:
        """The pod has scheduling gates: it enters no cycle until they are removed."""
        return bool(self.pod.placement.gates)

    @property
    def uid(self) -> PodUID:
        return self.pod.uid

    @property
    def pending(self) -> bool:
        """Waiting for a node: not bound, not assumed, not finished, not being deleted."""
        pod = self.pod
        return self.node is None and pod.node_name is None and pod.active and not pod.terminating


_REQUESTS: dict[Resources, Resources] = {}
_CONSTRAINTS: dict[Constraints, Constraints] = {}
_KEPT = 4096
"""Past this many shapes a table starts again (a bound, not a size ever seen)."""


def _request(pod: Pod) -> Resources:
    """The pod's request with its pod slot: one object per shape, shared by every pod that
    asks the same. Pods of a backlog share a few shapes, and every cache of the core is
    keyed by them: a lookup then finds its key by identity instead of comparing it."""
    return _shared(_REQUESTS, pod.requests + ONE_POD)


def _constraints(pod: Pod) -> Constraints:
    """The pod's constraints, one object per distinct set (see :func:`_request`)."""
    return _shared(_CONSTRAINTS, Constraints.of_pod(pod))


def _shared(table: dict[S, S], value: S) -> S:
    found = table.get(value)
    if found is None:
        if len(table) >= _KEPT:
            table.clear()
        found = table[value] = value
    return found


def _info(pod: Pod, request: Resources, constraints: Constraints) -> PodInfo:
    owner = pod.app or pod.pod_group
    return PodInfo(request, constraints, pod.placement, pod.namespace, pod.name, pod.uid,
                   owner, pod.placement.label_map, pod.volumes, pod.nonzero)


@dataclass(slots=True)
class GroupCounters:
    replaced: int = 0
    released: int = 0


@dataclass(slots=True)
class AppRuntime:
    """An application's lifecycle state and its timers."""

    spec: AppSpec
    state: AppState = AppState.NEW
    reason: str = "New"
    message: str = ""
    state_since: float = 0.0
    timer_start: float | None = None
    """First placeholder allocation: the placeholder timeout counts from here."""
    gather_seen: float | None = None
    """When a reservation first saw the gang (the gathering of its members counts from
    here; see :func:`~gangsched.core.gangs.reservation.gathered_at`)."""
    waiting_since: float | None = None
    starting_since: float | None = None
    admitted: bool = False
    """Passed quota and the state-aware gate: its placeholders may be created."""
    reserved: bool = False
    """Every placeholder has been allocated at least once (the gang is reserved)."""
    earmark: Resources = Resources.ZERO
    placeholders: dict[str, PodUID] = field(default_factory=dict)
    """Observed placeholder pods by name."""
    assumed: set[PodUID] = field(default_factory=set)
    """Pending real members placed in the core only (no bind yet), each holding its room
    as a placeholder would, until the gang is reserved and they are bound together."""
    create_asked: dict[str, float] = field(default_factory=dict)
    """Placeholder names asked for, and when."""
    counters: dict[str, GroupCounters] = field(default_factory=dict)
    bound_ever: int = 0
    """Real pods bound since the app (re)started: Starting -> Running counts these."""
    blocking: dict[str, BlockingReason] = field(default_factory=dict)
    """Why each task group waits, for status."""
    last_status: SetAppStatus | None = None
    warned: set[str] = field(default_factory=set)
    """Warnings already recorded as events (pod larger than its group...), not repeated."""
    placeholders_expired: bool = False
    """The placeholder timeout released the placeholders: any still seen go too."""
    unchecked: list[PodUID] = field(default_factory=list)
    """Placeholders observed since the last cycle, to check they are still wanted."""
    names: dict[str, tuple[AppSpec, list[str]]] = field(default_factory=dict)
    """Placeholder names by task group, with the spec they were computed for."""
    dirty: bool = True
    retry_after: float = 0.0
    """A deadlock victim (see :mod:`~gangsched.core.preemption.deadlock`) is not admitted
    before this."""
    starving_since: float | None = None
    """Where ``elect`` counts the wait from, when not from acceptance: the end of an
    expired node reservation, so that one gang does not hold nodes for ever."""
    restored_reservation: tuple[float, tuple[str, ...]] | None = None
    """(expiry, nodes) of a node reservation found in the status at start-up, for
    ``elect`` to take back or clean up once."""
    last_move: tuple[int, int, list[str], list[str], bool] | None = None
    """The state move event of this app in cycle N: (N, its place in the cycle's
    decisions, the states, the messages, a warning), merged with a further move in N."""
    members_version: int = 0
    """Bumped whenever a member pod joins, leaves, is observed, charged or released (see
    :attr:`members`)."""
    members: tuple[int, tuple[PodState, ...], tuple[PodState, ...]] | None = None
    """(:attr:`members_version`, placeholders, real pods) in their order, as
    ``reservation.members`` last sorted them."""
    device_verdict: tuple[tuple[object, ...], tuple[str, BlockingReason] | None] | None = None
    """(what it was judged on, the verdict) of ``group_devices.verdict``: whether a task
    group's claims can be had on no node."""
    held: tuple[object, ...] | None = None
    """What ``allocation.still_held`` read at its last visit as a held gang."""
    pending_order: tuple[int, tuple[PodState, ...], tuple[PodState, ...]] | None = None
    """See :func:`in_order`."""
    need: tuple[AppSpec, int, Resources] | None = None
    """(spec, :attr:`members_version`, what the gang still needs) as ``enqueue`` last
    counted it with no placeholder observed."""
    ask: tuple[AppSpec, int, Resources] | None = None
    """(spec, :attr:`members_version`, what the gang still asks) as ``preemptors.app_ask``
    last counted it, for a gang with no placeholder then."""
    index: Index[AppKey, AppRuntime] | None = None
    """The scheduler's index of its applications (:data:`APP_PREDICATES`), told when a
    field they read is set."""

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name in _APP_FIELDS:
            index = getattr(self, "index", None)
            if index is not None:
                index.touch(self.spec.key, self)

    def reset_run(self) -> None:
        """Forget a finished run, for a Completed or Rejected app submitted again."""
        self.admitted = self.reserved = self.placeholders_expired = False
        self.timer_start = self.waiting_since = self.starting_since = None
        self.bound_ever = 0
        self.counters.clear()
        self.create_asked.clear()
        self.blocking.clear()
        self.dirty = True

    def counter(self, group: str) -> GroupCounters:
        found = self.counters.get(group)
        if found is None:
            found = self.counters[group] = GroupCounters()
        return found

    @property
    def ref(self) -> ObjectRef:
        """The Application, for events about it."""
        return ObjectRef("Application", self.spec.namespace, self.spec.name, self.spec.uid)


@dataclass(slots=True)
class GroupRuntime:
    """A PodGroup's gang state."""

    spec: PodGroupSpec
    phase: str = "Pending"
    reason: str = ""
    message: str = ""
    schedule_start: float | None = None
    satisfied: bool = False
    timed_out: bool = False
    assumed: set[PodUID] = field(default_factory=set)
    """Members placed in the core and waiting for the whole gang before binding."""
    failed_epoch: int = -1
    blocking: BlockingReason = field(default_factory=BlockingReason)
    last_status: SetPodGroupStatus | None = None
    warned: set[str] = field(default_factory=set)
    dirty: bool = True
    inqueue: bool = False
    """Passed ``enqueue``: its members may be assumed (phase ``Inqueue`` and on)."""
    earmark: Resources = Resources.ZERO
    """The part of its minimum not yet held, earmarked in its queue while Inqueue."""
    retry_after: float = 0.0
    """A deadlock victim is not enqueued again before this."""
    requeue_until: float = 0.0
    """A group whose schedule timeout requeued it has no member placed before this."""
    requeues: int = 0
    """Schedule timeouts in a row that requeued the group (its backoff doubles)."""
    starving_since: float | None = None
    """See :attr:`AppRuntime.starving_since`; otherwise the wait counts from creation."""
    restored_reservation: tuple[float, tuple[str, ...]] | None = None
    pending_order: tuple[int, tuple[PodState, ...], tuple[PodState, ...]] | None = None
    """See :func:`in_order`."""
    """See :attr:`AppRuntime.restored_reservation`."""
    members_version: int = 0
    """Bumped whenever a member pod joins, leaves, is observed, charged or released."""
    preemptor: object = None
    """What ``preemptors.for_groups`` last found of the gang this PodGroup leads."""
    index: Index[GroupKey, GroupRuntime] | None = None
    """The scheduler's index of its PodGroups (:data:`GROUP_PREDICATES`)."""

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name in _GROUP_FIELDS:
            index = getattr(self, "index", None)
            if index is not None:
                index.touch(self.spec.key, self)

    @property
    def ref(self) -> ObjectRef:
        """The PodGroup, for events about it."""
        return ObjectRef("PodGroup", self.spec.namespace, self.spec.name, self.spec.uid)


_APP_FIELDS = frozenset({"spec", "state", "dirty", "unchecked", "timer_start",
                         "waiting_since", "starting_since"})
"""The fields of an application that :data:`APP_PREDICATES` and :data:`APP_TALLIES` read."""


def _lifecycle(rt: AppRuntime) -> bool:
    """Has ``apps.lifecycle`` anything to do for it but its placeholder timer (a state
    to leave, placeholders to check, the waiting timeout)?"""
    state = rt.state
    return (state is AppState.NEW or (state is AppState.COMPLETED and rt.dirty)
            or bool(rt.unchecked)
            or (state is AppState.WAITING and rt.waiting_since is not None))


def _placeholder_deadline(rt: AppRuntime) -> float | None:
    """When its placeholder timeout expires, while that timer runs."""
    if rt.timer_start is None or rt.state.terminal:
        return None
    return rt.timer_start + rt.spec.policy.placeholder_timeout


APP_PREDICATES: dict[str, Callable[[AppRuntime], bool]] = {
    "lifecycle": _lifecycle,
    "progress": lambda rt: rt.dirty or (rt.state is AppState.STARTING
                                        and rt.starting_since is not None),
    "dirty": lambda rt: rt.dirty,
    "accepted_gang": lambda rt: rt.spec.gang and rt.state is AppState.ACCEPTED,
}
"""What a cycle asks of every application (see :mod:`~gangsched.core.state.index`):
``lifecycle`` and ``progress``, those the cycle's passes of those names act on (the
starting timer included; the placeholder timer is in :data:`APP_DEADLINES`);
``dirty``, those whose status is due; ``accepted_gang``, the gangs waiting in
``Accepted`` (admitted or not)."""

APP_TALLIES: dict[str, Callable[[AppRuntime], Hashable]] = {
    "priority": lambda rt: rt.spec.priority,
    "queue_state": lambda rt: (rt.spec.queue, rt.state),
}
"""Applications counted by priority and by (leaf queue, state)."""

APP_DEADLINES: dict[str, Callable[[AppRuntime], float | None]] = {
    "placeholder_timer": _placeholder_deadline,
}
"""Applications by the instant their placeholder timeout expires."""


_GROUP_FIELDS = frozenset({"spec", "satisfied", "timed_out", "dirty"})

GROUP_PREDICATES: dict[str, Callable[[GroupRuntime], bool]] = {
    "unfinished": lambda rt: not (rt.satisfied or rt.timed_out),
    "dirty": lambda rt: rt.dirty,
}
"""What a cycle asks of every PodGroup: ``unfinished``, neither satisfied nor timed out
(those waiting, timed, judged); ``dirty``, those whose phase and status are due."""

GROUP_TALLIES: dict[str, Callable[[GroupRuntime], Hashable]] = {
    "priority": lambda rt: rt.spec.priority,
}


def placement_order(ps: PodState) -> tuple[int, float, str]:
    """The order in which a gang's pending pods are placed: priority, highest first,
    then creation, then name."""
    pod = ps.pod
    return (-pod.priority, pod.creation, pod.name)


def in_order(rt: AppRuntime | GroupRuntime, pending: list[PodState]) -> list[PodState]:
    """A gang's pending pods in the order they are placed (priority, highest first, then
    creation, then name), sorted again only when other pods come, or in another order,
    or a member changed (every waiting gang is ordered each cycle)."""
    seen = tuple(pending)
    kept = rt.pending_order
    if kept is not None and kept[0] == rt.members_version and kept[1] == seen:
        return list(kept[2])
    ordered = sorted(pending, key=placement_order)
    rt.pending_order = (rt.members_version, seen, tuple(ordered))
    return ordered
