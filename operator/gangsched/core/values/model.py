"""The core's value types: nodes, pods, applications, pod groups, queues and settings.

Everything here is a frozen value built once at the edge (the ``translate`` layer or the
simulator) from raw input. Identifiers are ``NewType`` strings:

* ``PodUID``: the pod's ``metadata.uid``.
* ``AppKey`` and ``GroupKey``: ``"namespace/name"`` of an Application or a PodGroup.

Resources are :class:`~gangsched.core.values.resources.Resources` integer vectors; a pod's
``requests`` is its effective request *without* the ``pods: 1`` slot, which the core adds.

An object that failed validation at the edge is still observed, with ``invalid`` set to a
precise message: the core moves it into a well-defined state (``Rejected``, ``Failed``, a
pending reason) instead of dropping it, so users see why.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NewType

from gangsched.core.values.constraints import (
    ANY_NODE,
    ConstraintError,
    NodeAffinity,
    Taint,
    Toleration,
)
from gangsched.core.values.devices import ConsumerRef
from gangsched.core.values.placement_terms import NO_PLACEMENT, Placement
from gangsched.core.values.profile import DEFAULT_PROFILE, ProfileConfig
from gangsched.core.values.resources import Resources
from gangsched.core.values.volume_specs import NO_VOLUMES, GroupClaim, PodVolumes

PodUID = NewType("PodUID", str)
AppKey = NewType("AppKey", str)
GroupKey = NewType("GroupKey", str)

DEFAULT_QUEUE = "default"


class _ParsedEnum(enum.StrEnum):
    """A string enum whose ``from_string`` names the accepted values on error."""

    @classmethod
    def from_string(cls, text: str) -> _ParsedEnum:
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f"unknown {cls.__name__} {text!r} (accepted: {accepted})")


class PodPhase(_ParsedEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"

    @property
    def terminal(self) -> bool:
        return self._value_ in _TERMINAL_PHASES  # a plain attribute: asked of every pod


_TERMINAL_PHASES = frozenset({PodPhase.SUCCEEDED.value, PodPhase.FAILED.value})


class Style(_ParsedEnum):
    """Gang scheduling style: what happens when the placeholder timeout expires."""

    HARD = "Hard"
    SOFT = "Soft"


class GangMode(_ParsedEnum):
    """PodGroup mode: Strict rolls back a partial attempt; NonStrict keeps accumulating."""

    STRICT = "Strict"
    NON_STRICT = "NonStrict"


NO_TIMEOUT = 100 * 365 * 86400.0
"""A schedule timeout that never expires: a century (the gangs of schedulers that have
none, such as Volcano's and kube-scheduler's)."""


class TimeoutAction(_ParsedEnum):
    """What a PodGroup's expired ``scheduleTimeoutSeconds`` does. ``Fail``: the group is
    ``TimedOut`` for good (gangsched's own PodGroups). ``Requeue``: its assumed members
    are released and its pending members go back to the queue with a backoff, and the
    group is tried again with a fresh timer (coscheduling's and Koordinator's Permit
    timeout)."""

    FAIL = "Fail"
    REQUEUE = "Requeue"


class SortPolicy(_ParsedEnum):
    FIFO = "fifo"
    STATE_AWARE = "stateaware"
    PRIORITY = "priority"
    FAIR = "fair"


class Scoring(_ParsedEnum):
    """Node scoring: binpack fills the fullest feasible node, spread the emptiest."""

    BINPACK = "binpack"
    SPREAD = "spread"


class PlaceholderPolicy(_ParsedEnum):
    """When a gang Application gets placeholder pods.

    ``missing``: only for the members of a task group that do not exist yet (up to its
    ``minMember``); members already pending are reserved in the scheduler's memory and
    bound directly once the whole gang is reserved. ``always``: one placeholder per
    member up to ``minMember``, as YuniKorn does, and real pods swap into their places.
    """

    MISSING = "missing"
    ALWAYS = "always"


@dataclass(frozen=True, slots=True)
class Node:
    """A node as the scheduler sees it. ``allocatable`` includes the ``pods`` slot count."""

    name: str
    allocatable: Resources
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    ready: bool = True
    unreachable: bool = False
    """Not ready because its ``Ready`` condition is ``Unknown`` (the kubelet stopped
    reporting): the node lifecycle controller taints such a node
    ``node.kubernetes.io/unreachable``, not ``node.kubernetes.io/not-ready``."""
    images: Mapping[str, int] = field(default_factory=dict)
    """The images the node has (``status.images``): size in bytes by each name."""


@dataclass(frozen=True, slots=True)
class Pod:
    """A pod: either an ask of ours (pending or bound) or a pod of another scheduler.

    ``ours`` is False for pods with another ``schedulerName``: they only use capacity.
    ``node_name`` is the bound node (``spec.nodeName``), None while pending.
    Membership: ``app``/``task_group`` for Applications, ``pod_group`` for PodGroups,
    ``placeholder`` (with ``member_index``) for the placeholders the operator creates.
    """

    uid: PodUID
    namespace: str
    name: str
    requests: Resources = Resources.ZERO
    priority: int = 0
    creation: float = 0.0
    node_name: str | None = None
    phase: PodPhase = PodPhase.PENDING
    terminating: bool = False
    ours: bool = True
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: NodeAffinity = ANY_NODE
    app: AppKey | None = None
    task_group: str | None = None
    pod_group: GroupKey | None = None
    placeholder: bool = False
    member_index: int = -1
    queue: str | None = None
    preemptible: bool = True
    preempts: bool = True
    """``spec.preemptionPolicy`` is not ``Never``: the pod may preempt lower-priority
    pods (kube-scheduler's ``PodEligibleToPreemptOthers``)."""
    invalid: str | None = None
    volumes: PodVolumes = NO_VOLUMES
    """Its claims, inline CSI volumes and resource claims (see :mod:`gangsched.core.volumes`)."""
    nonzero: tuple[int, int] | None = None
    """(cpu millicores, memory bytes) as kube-scheduler's scoring counts the pod: each
    container that requests no cpu (memory) counts 100m (200Mi). None: counted from
    ``requests`` as a whole, as one such container."""
    nominated_node: str | None = None
    """``status.nominatedNodeName``: for another scheduler's pending pod, the node where
    room was made for it by preemption; that room is counted as taken."""
    placement: Placement = NO_PLACEMENT
    """Labels, pod (anti-)affinity, spread, preferred node affinity, host ports, gates."""

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def active(self) -> bool:
        """Does this pod hold node capacity? Terminal pods do not (as in kube-scheduler)."""
        return not self.phase.terminal


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    style: Style = Style.SOFT
    placeholder_timeout: float = 900.0
    waiting_timeout: float = 30.0


@dataclass(frozen=True, slots=True)
class TopologyRequest:
    """Where a gang's members must, or should, land together: domains of node-label keys.

    A *domain* of a key is the set of nodes that carry the same value of that label
    (``rack=r1``). A node without the label belongs to no domain of that key.

    - ``required``: every member in one domain of this key, or none placed.
    - ``preferred``: keys from the smallest domain to the largest; the gang takes the
      smallest level at which one domain fits it whole, else the next level, else
      anywhere. With ``required`` too, the escalation stops at ``required``.
    - ``slice_key`` with ``slice_size``: the members, in their order, form slices of
      ``slice_size`` that each share one domain of ``slice_key`` (a smaller level),
      inside the gang's domain.

    The empty request (:data:`NO_TOPOLOGY`) asks for nothing.
    """

    required: str | None = None
    preferred: tuple[str, ...] = ()
    slice_key: str | None = None
    slice_size: int = 0

    @property
    def empty(self) -> bool:
        return self.required is None and not self.preferred and self.slice_key is None


NO_TOPOLOGY = TopologyRequest()
"""A gang that asks nothing of topology."""


@dataclass(frozen=True, slots=True)
class TaskGroup:
    """One role of a gang: ``min_member`` members of ``min_resource`` each."""

    name: str
    min_member: int
    min_resource: Resources
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: NodeAffinity = ANY_NODE
    placement: Placement = NO_PLACEMENT
    """The members' labels, pod (anti-)affinity, spread and the like: a placeholder is
    placed with them, as the real member would be."""
    topology: TopologyRequest = NO_TOPOLOGY
    """Where the task group's members must or should land together."""
    claims: tuple[GroupClaim, ...] = ()
    """The resource claims its members will have: each placeholder holds devices for
    them (see :class:`~gangsched.core.values.volume_specs.PodVolumes`)."""

    @property
    def total(self) -> Resources:
        return self.min_resource.scale(self.min_member)


@dataclass(frozen=True, slots=True)
class PersistedAppStatus:
    """What an Application's status carries across an operator restart."""

    state: str = ""
    reason: str = ""
    message: str = ""
    state_since: float | None = None
    placeholder_timer_start: float | None = None
    waiting_since: float | None = None
    starting_since: float | None = None
    reservation_expiry: float | None = None
    """When the nodes reserved for this starving gang are given back (``reservationExpiry``)."""
    reserved_nodes: tuple[str, ...] = ()
    """The nodes reserved for it (``reservedNodes``): annotated, so released by name."""


@dataclass(frozen=True, slots=True)
class AppSpec:
    """An Application: a queue, task groups (a gang when non-empty) and a policy."""

    key: AppKey
    uid: str = ""
    queue: str = DEFAULT_QUEUE
    task_groups: tuple[TaskGroup, ...] = ()
    policy: SchedulingPolicy = SchedulingPolicy()
    priority: int = 0
    creation: float = 0.0
    invalid: str | None = None
    persisted: PersistedAppStatus | None = None

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    @property
    def gang(self) -> bool:
        return bool(self.task_groups)

    @property
    def placeholder_ask(self) -> Resources:
        """The total placeholder ask: sum of min_member x min_resource over all groups."""
        total = Resources.ZERO
        for group in self.task_groups:
            total = total + group.total
        return total

    def group(self, name: str | None) -> TaskGroup | None:
        for group in self.task_groups:
            if group.name == name:
                return group
        return None


@dataclass(frozen=True, slots=True)
class PodGroupSpec:
    """A PodGroup (Koordinator / coscheduling design): members bind only all together."""

    key: GroupKey
    uid: str = ""
    min_member: int = 1
    min_resources: Resources = Resources.ZERO
    schedule_timeout: float = 600.0
    mode: GangMode = GangMode.STRICT
    on_timeout: TimeoutAction = TimeoutAction.FAIL
    """See :class:`TimeoutAction`."""
    wait_for_min_member: bool = False
    """No member is placed before ``min_member`` of its pods exist (coscheduling's and
    Koordinator's PreFilter, Volcano's gang validity, Kueue's whole group): the schedule
    timeout can only start once they do."""
    gang_group: tuple[GroupKey, ...] = ()
    total_number: int | None = None
    queue: str = DEFAULT_QUEUE
    priority: int = 0
    creation: float = 0.0
    invalid: str | None = None
    persisted_start: float | None = None
    persisted_phase: str = ""
    persisted_reservation_expiry: float | None = None
    """``status.reservationExpiry``: see :class:`PersistedAppStatus`."""
    persisted_reserved_nodes: tuple[str, ...] = ()
    """``status.reservedNodes``."""
    topology: TopologyRequest = NO_TOPOLOGY
    """Where the group's members must or should land together."""
    claims: tuple[str, ...] = ()
    """The ResourceClaims of the group (the Workload API's PodGroup ``resourceClaims``,
    by object name: a claim named in the spec, or the one the resourceclaim controller
    made from a template and listed in the status). A member's claim among them is
    allocated once for the group and reserved for ``consumer``, not for the pod."""
    consumer: ConsumerRef | None = None
    """The PodGroup as a claim's consumer (``status.reservedFor``)."""

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    @property
    def members_of_gang_group(self) -> tuple[GroupKey, ...]:
        """The PodGroups that must be satisfied together, always including this one."""
        keys = set(self.gang_group)
        keys.add(self.key)
        return tuple(sorted(keys))


@dataclass(frozen=True, slots=True)
class QueueSpec:
    """A queue. ``max`` is None for no quota; a resource missing from ``max`` is unlimited.

    :class:`Resources` drops zero amounts, so ``max={"nvidia.com/gpu": 0}`` alone would read
    as "GPUs unlimited". ``limited`` names every resource that ``max`` sets, zeros
    included: a name in ``limited`` but absent from ``max`` has a limit of 0 (none allowed).
    Names with a non-zero amount in ``max`` are limited whether or not they are listed.
    """

    name: str
    parent: str | None = None
    max: Resources | None = None
    guaranteed: Resources = Resources.ZERO
    max_applications: int = 0
    sort_policy: SortPolicy = SortPolicy.FIFO
    state_aware_timeout: float = 300.0
    weight: int = 1
    reclaimable: bool = True
    invalid: str | None = None
    limited: frozenset[str] = frozenset()

    def limit(self, name: str) -> int | None:
        """The most of resource ``name`` the queue may use; None when it is unlimited."""
        if self.max is None:
            return 0 if name in self.limited else None
        amount = self.max.get(name)
        if amount or name in self.limited:
            return amount
        return None

    def within_max(self, usage: Resources) -> bool:
        """Does ``usage`` stay within ``max`` (zero limits included)? True without a max."""
        for name, amount in usage.items():
            if amount > 0:
                cap = self.limit(name)
                if cap is not None and amount > cap:
                    return False
        return True


GATHER_WINDOW = 1.0
"""The operator's ``gather_window`` (``--gather-window``): Spark's executor allocator
creates a batch of executors within half a second of the first, the Job and JobSet
controllers a gang's pods in one burst of creates; twice that leaves room for a loaded
API server."""


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Cluster-wide settings of the core."""

    gang_scoring: Scoring = Scoring.BINPACK
    """How placeholders and PodGroup members pick among feasible nodes."""

    pod_scoring: Scoring = Scoring.BINPACK
    """How ordinary pods and real gang members placed outside a placeholder pick nodes."""

    percentage_of_nodes_to_score: int = 0
    """kube-scheduler's ``percentageOfNodesToScore``: the share of the nodes a placement
    looks for feasible ones among before scoring them, in a cluster of 100 nodes or more
    (a smaller one is searched whole). 0: kube-scheduler's adaptive default, 50% less 1%
    per 125 nodes, at least 5% and at least 100 nodes."""

    default_queue_policy: SortPolicy = SortPolicy.PRIORITY
    """Sort policy of the implicit ``default`` queue when no Queue object defines it."""

    bind_backoff_initial: float = 1.0
    """Seconds before a pod whose bind failed is tried again; doubles per failure."""

    bind_backoff_max: float = 60.0
    """The cap on that backoff."""

    placeholder_retry: float = 10.0
    """Seconds before a placeholder creation or pod deletion is asked for again."""

    gather_window: float = 0.0
    """Seconds, from when a gang Application's reservation first sees it (no later than
    its first real member's creation, else its own), during which no placeholder is made
    for its missing members: the members a controller creates together (Spark's
    executors within half a second) are held and bound together instead of each swapping
    into a placeholder. 0 (the core's default) turns it off; the operator runs with
    :data:`GATHER_WINDOW`; with ``placeholders: always`` it does nothing."""

    placeholders: PlaceholderPolicy = PlaceholderPolicy.MISSING
    """Which gang members get a placeholder pod (see :class:`PlaceholderPolicy`)."""

    actions: tuple[str, ...] = ("enqueue", "allocate", "backfill", "preempt", "reclaim")
    """The scheduling session's actions, in order (see :mod:`gangsched.core.actions`, and
    :mod:`gangsched.core.actions.factory` for the names). Known: enqueue, allocate, backfill,
    preempt, reclaim, elect, reserve. ``allocate`` is
    the gang-aware placement; leaving an action out turns it off."""

    overcommit_factor: float = 1.0
    """Enqueue admits gangs whose minimum fits the cluster's free capacity times this."""

    starvation_threshold: float = 300.0
    """Elect picks a gang that has waited at least this long (seconds) for resources."""

    reservation_timeout: float = 600.0
    """How long Reserve may hold nodes for the elected gang before giving them back."""

    deadlock_backoff: float = 60.0
    """Seconds a gang released to break a deadlock waits before it may reserve again."""

    nomination_timeout: float = 300.0
    """How long the capacity freed by a preemption or reclaim stays nominated for the gang
    that asked for it. Victims not gone by then (a stuck finalizer, a lost eviction) end
    the plan: the nominated capacity is given back and the gang may try again."""

    profile: ProfileConfig = DEFAULT_PROFILE
    """The scheduling profile: which placement plugins run, with what weights and
    arguments (see :mod:`gangsched.core.values.profile`). A profile that sets
    NodeResourcesFit's ``scoringStrategy`` overrides ``gang_scoring`` and ``pod_scoring``."""

    demand_placeholders: bool = False
    """Show a gang that ``enqueue`` holds for the cluster's capacity to cluster
    autoscalers: its placeholders are created at once and stay pending (``PodScheduled``
    False, reason ``Unschedulable``, which cluster-autoscaler and Karpenter scale up
    for), holding nothing, until the gang is admitted and they are placed. Off: a held
    gang has no placeholders, and only its real pending pods are seen."""

    eviction_backoff: float = 30.0
    """Seconds a gang waits before preempting again after an eviction was refused (a
    PodDisruptionBudget: HTTP 429); doubles per refusal up to ten times this. The pod
    that refused is not chosen as a victim again for that long."""
