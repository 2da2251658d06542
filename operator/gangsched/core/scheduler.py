"""The scheduler: observations in, a cycle at an explicit ``now``, decisions out.

Usage::

    scheduler = Scheduler(SchedulerConfig())
    scheduler.observe(NodeObserved(node))
    scheduler.observe(PodObserved(pod))
    decisions = scheduler.cycle(now=1234.5)

``observe`` only records facts. ``cycle`` runs, in this order:

1. application lifecycle: admission (New -> Accepted/Rejected), placeholder and waiting
   timeouts, PodGroup schedule timeouts;
2. swaps whose placeholder deletion has been observed: the parked real pod is bound to
   the placeholder's node (or any node that fits), the room held for it meanwhile
   released (:mod:`~gangsched.core.gangs.swap`); the room freed by preemption victims
   is held for their preemptor, which is placed first once they are all gone
   (:mod:`~gangsched.core.preemption.evictions`);
3. the configured actions, in order, looked up by name in the table the scheduler was
   given (:mod:`~gangsched.core.actions.factory`'s by default: enqueue, allocate, backfill,
   preempt, reclaim; see :mod:`~gangsched.core.actions`). Actions see the scheduler only
   through the narrow :class:`~gangsched.core.state.session.Session` interface, which it
   implements;
4. deadlock breaking between partial gangs (``allocate.after_actions``, with
   :mod:`~gangsched.core.preemption.deadlock`);
5. state progress (Starting -> Running -> Waiting) and status for what changed.

The same sequence of observations and ``now`` values always gives the same decisions:
every collection is iterated in a defined order and ties are broken by
(priority desc, creation time, namespace/name).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, TypeVar, assert_never

import gangsched.core.actions.allocate as allocate_action
import gangsched.core.gangs.apps as app_logic
import gangsched.core.gangs.group_devices as group_devices
import gangsched.core.gangs.membership as membership
import gangsched.core.gangs.podgroups as group_logic
import gangsched.core.gangs.status as status_logic
import gangsched.core.gangs.swap as swap_logic
import gangsched.core.gangs.unsatisfiable as unsatisfiable_logic
import gangsched.core.preemption.evictions as eviction_logic
from gangsched.core.actions import Action, factory
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.runner import Factory
from gangsched.core.placement import volume_assumptions as volume_placing
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins.registry import DEFAULT_PLUGINS, REGISTRY
from gangsched.core.state import pressure, queue_usage
from gangsched.core.state.eviction_plans import Evictions
from gangsched.core.state.index import Index
from gangsched.core.state.instants import Instants
from gangsched.core.state.outbox import Outbox
from gangsched.core.state.pendings import FOR_ROOM, PendingShapes, Shape
from gangsched.core.state.queues import QueueTree
from gangsched.core.state.records import (
    APP_DEADLINES,
    APP_PREDICATES,
    APP_TALLIES,
    GROUP_PREDICATES,
    GROUP_TALLIES,
    AppRuntime,
    GroupRuntime,
    PodState,
)
from gangsched.core.state.swaps import Swap
from gangsched.core.state.verdicts import Verdicts
from gangsched.core.values.decisions import (
    SCHEDULING_GATED,
    SCHEDULING_GATED_MESSAGE,
    BindGang,
    BindPod,
    Decision,
    EventType,
    ObjectRef,
    PodPending,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
)
from gangsched.core.values.model import (
    DEFAULT_QUEUE,
    AppKey,
    GroupKey,
    PodUID,
    SchedulerConfig,
)
from gangsched.core.values.observations import (
    OBSERVATIONS,
    AppGone,
    AppObserved,
    BindFailed,
    DeviceGone,
    DeviceObserved,
    EvictionFailed,
    NamespaceGone,
    NamespaceObserved,
    NodeGone,
    NodeObserved,
    Observation,
    PlaceholderCreateFailed,
    PodGone,
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    QueueGone,
    QueueObserved,
    ResourceClaimsServed,
    VolumeBindFailed,
    VolumeGone,
    VolumeObserved,
)
from gangsched.core.volumes.catalog import VolumeCatalog

if TYPE_CHECKING:
    from gangsched.core.state.node_reservation import NodeReservation

T = TypeVar("T")


class Scheduler:
    """All of the core's state, and the one place that changes it (the actions' session)."""

    skip_quiet = True
    """Skip a cycle that cannot decide anything (see :meth:`cycle`); off, every cycle does
    the full work (the tests compare both)."""

    def __init__(self, config: SchedulerConfig | None = None, *,
                 actions: Mapping[str, Action] = factory.ACTIONS,
                 plugins: Mapping[str, Factory] = REGISTRY,
                 default_plugins: tuple[tuple[str, int], ...] = DEFAULT_PLUGINS) -> None:
        """``actions`` (name -> action) are the ones ``config.actions`` names, looked up
        there (a name not in it is skipped; front ends refuse unknown names at start-up);
        ``plugins`` and ``default_plugins`` are the placement's (see
        :class:`~gangsched.core.placement.cluster.Cluster`). Each defaults to the standard
        set; a test passes its own instead of changing those."""
        self.config = config or SchedulerConfig()
        self.actions = actions
        """The actions by name."""
        self.cluster = Cluster(self.config.percentage_of_nodes_to_score, self.config.profile,
                               registry=plugins, default_plugins=default_plugins)
        self.queues = QueueTree(self.config.default_queue_policy)
        self.pods: dict[PodUID, PodState] = {}
        self.pod_by_name: dict[str, PodUID] = {}
        self.apps: dict[AppKey, AppRuntime] = {}
        self.app_index: Index[AppKey, AppRuntime] = Index(APP_PREDICATES, APP_TALLIES,
                                                           APP_DEADLINES)
        """The applications by what each cycle asks of them (kept as they change)."""
        self.groups: dict[GroupKey, GroupRuntime] = {}
        self.group_index: Index[GroupKey, GroupRuntime] = Index(GROUP_PREDICATES, GROUP_TALLIES)
        self.app_members: dict[AppKey, set[PodUID]] = {}
        self.group_members: dict[GroupKey, set[PodUID]] = {}
        self.pending: dict[PodUID, None] = {}
        """Pods of ours waiting for a node, in arrival order."""
        self.waiting_for_room: dict[PodUID, None] = {}
        """Pods last said to wait for a reason in ``FOR_ROOM`` (some may have moved on
        since: bound, or said to wait for another reason by other means)."""
        self.pending_shapes = PendingShapes()
        """The same pods counted by shape (what decides their queue, their request)."""
        self.parked: dict[PodUID, None] = {}
        """Real pods waiting for the deletion of the placeholder they take."""
        self.swaps: dict[PodUID, Swap] = {}
        """Swaps under way, by placeholder uid, with the room each holds."""
        self.unheld: dict[PodUID, int] = {}
        """Bound placeholders whose task group's devices are not held yet."""
        self.deleting: dict[PodUID, None] = {}
        """Placeholders whose deletion was asked for and is not yet seen."""
        self.now = 0.0
        self.cycles = 0
        """Cycles run so far."""
        self.out = Outbox()
        """The cycle's decisions, appended as they are made; :meth:`cycle` takes them and
        returns them. The shell reads its committed prefix while the cycle runs (on
        another thread, ``gangsched.shell.early``); see :mod:`~gangsched.core.state.outbox`
        for what may still change."""
        self.queues_dirty = True
        self.queue_status: dict[str, Decision] = {}
        self.node_reservation: NodeReservation | None = None
        """The nodes held for a starving gang (the elect and reserve actions)."""
        self.evictions = Evictions()
        """Preemption and reclaim plans under way, and the room held for them."""
        self.volumes: VolumeCatalog = self.cluster.volumes
        """Volumes, claims and the bindings assumed for placed pods (:mod:`.volumes`)."""
        self._together: list[BindPod] | None = None
        """Binds of one gang being gathered (see :meth:`binding_together`)."""
        self.pressure = pressure.Pressure()
        """Priorities of running and waiting pods: can preemption matter at all?"""
        self.unsatisfiable = Verdicts()
        """Gangs that cannot fit the nodes as they are (see ``unsatisfiable``)."""
        self._wakes = Instants()
        """Instants ahead at which some condition of a cycle flips."""
        self._observed = True
        """Something was observed since the last cycle that ran."""
        self._stirred = False
        """The cycle under way changed state (see :meth:`stir`)."""
        self._settled = False
        """The last cycle that ran decided nothing and changed nothing."""
        self._changes = 0
        """Counts observations, charges, releases, pending changes and stirs."""
        self._kept: dict[str, tuple[tuple[int, int, int], object]] = {}
        self._decided = 0
        """Decisions other than statuses, counted up to :attr:`_scanned` of this cycle's."""
        self._scanned = 0
        self._last_scanned: Decision | None = None
        self._action: str | None = None
        """The action running, if any (the instants it asks about are its own)."""
        self._next_for: dict[str, float] = {}
        """Per action, the earliest instant ahead that its last run asked about."""
        self._next_outside = float("inf")
        """The earliest instant ahead asked about outside the actions in this cycle."""
        self._ran: set[str] = set()
        """The actions that have run since the scheduler started."""

    # --- observations --------------------------------------------------------------------

    def observe_all(self, observations: Iterable[Observation]) -> None:
        for observation in observations:
            self.observe(observation)

    def observe(self, obs: Observation) -> None:
        """Record one observation. Never raises on well-typed input; never decides. An
        object of no observation type is ignored (mypy reports a type of
        :data:`~gangsched.core.values.observations.Observation` that no branch handles)."""
        self._observed = True
        self._changes += 1
        if not isinstance(obs, OBSERVATIONS):
            return
        if isinstance(obs, PodObserved):
            membership.pod_observed(self, obs)
        elif isinstance(obs, PodGone):
            membership.pod_gone(self, obs.uid)
        elif isinstance(obs, NodeObserved):
            self.cluster.upsert_node(obs.node)
        elif isinstance(obs, NodeGone):
            self.cluster.remove_node(obs.name)
        elif isinstance(obs, NamespaceObserved):
            self.cluster.upsert_namespace(obs.name, obs.labels)
        elif isinstance(obs, NamespaceGone):
            self.cluster.remove_namespace(obs.name)
        elif isinstance(obs, AppObserved):
            app_logic.app_observed(self, obs.spec)
        elif isinstance(obs, AppGone):
            app_logic.app_gone(self, obs.key)
        elif isinstance(obs, PodGroupObserved):
            group_logic.group_observed(self, obs.spec)
            if obs.spec.claims or obs.spec.key in self.volumes.devices.group_keys:
                self.volumes.devices.group_seen(obs.spec.key, obs.spec.namespace,
                                                obs.spec.claims,
                                                obs.spec.consumer)
        elif isinstance(obs, PodGroupGone):
            group_logic.group_gone(self, obs.key)
            self.volumes.devices.group_gone(obs.key)
        elif isinstance(obs, QueueObserved):
            self.queues.upsert(obs.spec)
            self._queues_changed()
        elif isinstance(obs, QueueGone):
            self.queues.remove(obs.name)
            self._queues_changed()
        elif isinstance(obs, BindFailed):
            membership.bind_failed(self, obs)
        elif isinstance(obs, PlaceholderCreateFailed):
            app_logic.placeholder_create_failed(self, obs)
        elif isinstance(obs, EvictionFailed):
            eviction_logic.eviction_failed(self, obs)
        elif isinstance(obs, VolumeObserved):
            self.volumes.upsert(obs.obj)
            self.cluster.retry()
        elif isinstance(obs, VolumeGone):
            self.volumes.remove(obs.kind, obs.key)
            self.cluster.retry()
        elif isinstance(obs, ResourceClaimsServed):
            self.volumes.resource_claims_served = obs.served
            self.cluster.retry()
        elif isinstance(obs, VolumeBindFailed):
            membership.bind_failed(self, BindFailed(obs.uid, obs.node, obs.code, obs.message),
                                 volumes=True)
        elif isinstance(obs, DeviceObserved):
            self.volumes.devices.upsert(obs.obj)
            self.volumes.epoch += 1
            self.cluster.retry()
        elif isinstance(obs, DeviceGone):
            self.volumes.devices.remove(obs.kind, obs.key)
            self.volumes.epoch += 1
            self.cluster.retry()
        else:
            assert_never(obs)

    def _queues_changed(self) -> None:
        self.rebuild_queue_usage()
        for group in self.groups.values():
            group.failed_epoch = -1  # a quota may have grown: try the gangs again

    # --- accounting ----------------------------------------------------------------------

    def queue_of(self, ps: PodState) -> str | None:
        """The leaf queue a pod of ours is charged to; None for other schedulers' pods."""
        pod = ps.pod
        if not pod.ours:
            return None
        return self.queue_for(pod.app, pod.pod_group, pod.queue or DEFAULT_QUEUE)

    def queue_for(self, app: AppKey | None, group: GroupKey | None, queue: str) -> str:
        """The leaf queue of a pod of ours of ``app`` and ``group`` naming ``queue``: its
        Application's, else its PodGroup's, else its own."""
        if app is not None:
            rt = self.apps.get(app)
            if rt is not None:
                return rt.spec.queue
        if group is not None:
            grt = self.groups.get(group)
            if grt is not None:
                return grt.spec.queue
        return queue

    def charge(self, ps: PodState, node: str) -> None:
        self._stirred = True
        self._changes += 1
        ps.node = node
        membership.member_moved(self, ps)
        self.pressure.track(ps)
        pod = ps.pod
        self.cluster.charge(node, ps.uid, ps.request,
                            PlacedPod(pod.uid, pod.namespace, ps.info.labels, pod.placement, node,
                                      pod.terminating, pod.nonzero))
        if ps.pod.volumes.any:
            self.volumes.pod_placed(ps.uid, ps.pod.namespace, ps.pod.volumes, node)
            if pod.node_name is None:  # placed here: its resource claims are held here
                volume_placing.hold_claims(self.cluster, self.volumes, ps.uid, pod, node)
            elif pod.volumes.held_claims:  # a placeholder found bound (a restart)
                group_devices.hold_bound(self, ps, node)
        queue = self.queue_of(ps)
        if queue is not None:
            self.queues.charge(queue, ps.request, placeholder=ps.pod.placeholder)
            ps.charged_queue = queue
        self.queues_dirty = True

    def uncharge(self, ps: PodState, *, retry: bool = True) -> None:
        """Release what ``ps`` holds on its node and queue (see ``Cluster.release``)."""
        if ps.node is None:
            return
        self._stirred = True
        self._changes += 1
        membership.member_moved(self, ps)
        self.cluster.release(ps.node, ps.uid, ps.request, retry=retry)
        if ps.pod.volumes.any:
            self.volumes.pod_left(ps.uid)
            if ps.pod.node_name is None:
                self.volumes.forget_pod(ps.uid)  # a placement undone: its volumes are free
        if ps.charged_queue is not None:
            self.queues.release(ps.charged_queue, ps.request, placeholder=ps.pod.placeholder)
            ps.charged_queue = None
        ps.node = None
        self.pressure.track(ps)
        self.queues_dirty = True

    def recharge(self, uids: Iterable[PodUID]) -> None:
        """Move the queue charge of these pods to the queue they belong to now (their
        application or pod group appeared, went, or changed queue): O(those pods)."""
        queue_usage.recharge(self, uids)

    def rebuild_queue_usage(self) -> None:
        """Recount every queue's usage from the pods (queue specs or membership changed)."""
        queue_usage.rebuild(self)

    def refresh_pending(self, ps: PodState) -> None:
        """Keep ``pending`` current. A gated pod enters no cycle: it only gets the
        ``SchedulingGated`` condition, once."""
        self._changes += 1
        pod = ps.pod
        if ps.pending and pod.ours and ps.gated:
            self.pending.pop(ps.uid, None)
            self.pending_shapes.remove(ps.uid)
            self.mark_pending(ps, SCHEDULING_GATED, SCHEDULING_GATED_MESSAGE)
        elif ps.pending and pod.ours:
            self.pending[ps.uid] = None
            self.pending_shapes.put(ps.uid, Shape(pod.app, pod.pod_group,
                                                  pod.queue or DEFAULT_QUEUE, ps.request,
                                                  bool(pod.invalid)))
        else:
            self.pending.pop(ps.uid, None)
            self.pending_shapes.remove(ps.uid)

    def touch_owner(self, ps: PodState) -> None:
        pod = ps.pod
        if pod.app is not None:
            app = self.apps.get(pod.app)
            if app is not None:
                app.dirty = True
        if pod.pod_group is not None:
            group = self.groups.get(pod.pod_group)
            if group is not None:
                group.dirty = True
        membership.member_moved(self, ps)
        self.queues_dirty = True

    # --- decisions -----------------------------------------------------------------------

    def bind(self, ps: PodState, node: str, reason: str) -> None:
        """Assume ``ps`` on ``node`` at once (no overcommit this cycle) and ask for a bind."""
        why = volume_placing.hold_claims(self.cluster, self.volumes, ps.uid, ps.pod, node)
        if why is not None:  # its claims cannot be had there: never bound without them
            self.uncharge(ps)
            self.mark_pending(ps, "DynamicResources", why)
            return
        if ps.node is None:
            self.charge(ps, node)
        ps.assumed = True
        ps.pending_reason = None
        self.refresh_pending(ps)
        self.touch_owner(ps)
        pod = ps.pod
        for decision in self.cluster.pre_bound.pop(pod.uid, ()):
            self.out.append(decision)  # type: ignore[arg-type]  # PreBind's own decisions
        volumes = (volume_placing.writes(self.volumes, ps.uid, pod)
                   if pod.volumes.claims or pod.volumes.resource_claims else ())
        decision = BindPod(pod.uid, pod.namespace, pod.name, node, reason, volumes)
        if self._together is not None:
            self._together.append(decision)
        else:
            self.out.append(decision)

    @contextlib.contextmanager
    def binding_together(self) -> Iterator[None]:
        """Binds asked for inside are one gang's: when any of them writes volumes they
        become one :class:`BindGang` (all writes before any Binding), else plain binds."""
        self._together = []
        try:
            yield
        finally:
            binds, self._together = self._together, None
            if any(b.volumes for b in binds):
                self.out.append(BindGang(tuple(binds)))
            else:
                self.out.extend(binds)

    def event(self, target: ObjectRef, kind: EventType, reason: str, message: str) -> None:
        self.out.append(RecordEvent(target, kind, reason, message))

    def mark_pending(self, ps: PodState, reason: str, message: str, *,
                     event: bool = True) -> bool:
        """Say why a pod waits; only a change of reason or message becomes a decision
        (True then). ``event=False``: no event on the pod (its gang's event says it)."""
        if ps.pending_reason == (reason, message):
            return False
        ps.pending_reason = (reason, message)
        if reason in FOR_ROOM:
            self.waiting_for_room[ps.uid] = None
        else:
            self.waiting_for_room.pop(ps.uid, None)
        pod = ps.pod
        self.out.append(PodPending(pod.uid, pod.namespace, pod.name, reason, message, event))
        return True

    # --- the clock -----------------------------------------------------------------------

    def reached(self, at: float) -> bool:
        """Is ``at`` no later than the cycle's ``now``? Every decision that depends on
        the clock asks this way, so that an instant still ahead is remembered as one at
        which a cycle may decide differently (:meth:`next_wake`)."""
        if at <= self.now:
            return True
        self._wakes.add(at)
        action = self._action
        if action is None:
            self._next_outside = min(self._next_outside, at)
        else:
            self._next_for[action] = min(self._next_for.get(action, at), at)
        return False

    def next_wake(self) -> float | None:
        """The earliest instant ahead at which some condition of a cycle flips, if any."""
        return self._wakes.first()

    def stir(self) -> None:
        """Say that the cycle under way changed state that a later cycle acts on, though
        it decided nothing yet (charges and releases say so themselves)."""
        self._stirred = True
        self._changes += 1

    @property
    def changes(self) -> int:
        """Observations, charges, releases, pending changes, stirs and decisions other
        than statuses, counted since the start (a status that tells of a change of state
        stirs): while the count stands, the core's state is as it was."""
        self._count_decided()
        return self._changes + self._decided

    def _count_decided(self) -> None:
        out = self.out
        start = self._scanned
        if start and (start > len(out) or out[start - 1] is not self._last_scanned):
            start = 0  # decisions were taken back: count them all again (more is safer)
        for index in range(start, len(out)):
            if not isinstance(out[index], _REPORTS):
                self._decided += 1
        self._scanned = len(out)
        self._last_scanned = out[-1] if out else None

    def kept(self, name: str, compute: Callable[[], T]) -> T:
        """``compute()``, or what it gave last in this cycle when nothing was observed,
        charged, released, stirred, made pending or decided since. (The instants the
        computation asked about are the first reader's: those after it in the cycle run
        whenever it does, see :meth:`cycle`.)"""
        version = (self.cycles, self._changes, len(self.out))
        found = self._kept.get(name)
        if found is not None and found[0] == version:
            return found[1]  # type: ignore[return-value]  # what compute() gave
        value = compute()
        self._kept[name] = (version, value)
        return value

    # --- the cycle -----------------------------------------------------------------------

    def cycle(self, now: float) -> list[Decision]:
        """Run one scheduling cycle at time ``now`` and return the decisions, in order.

        A cycle that cannot decide anything is skipped: nothing was observed since the
        last cycle that ran, that cycle changed nothing and decided nothing but statuses
        that report new numbers (``status.renumbered``: a status telling of a change of
        state stirs it), and no instant it depended on (:meth:`reached`) has come. Its
        work would give the same state and no decisions again: the cost of a quiet
        cluster does not grow with its backlog. (Such statuses follow a wave of binds:
        the cycle that observes the binds counts them anew in their gangs' statuses.)"""
        self.now = now
        self.cycles += 1
        due = self._wakes.pop_until(now)
        if self.skip_quiet and self._settled and not self._observed and not due:
            return self.out.take()  # (empty: only a cycle decides)
        # Woken only by instants the actions asked about, after a settled cycle: the
        # actions before the first whose instant came would do nothing again (that
        # cycle's state is theirs), so they are passed over.
        quiet = (self.skip_quiet and self._settled and not self._observed
                 and not self._came(self._next_outside))
        self._observed = self._stirred = False
        self._next_outside = float("inf")
        before = (self._changes, len(self.out))
        earmarked = dict(self.queues.earmarked)
        app_logic.lifecycle(self, now)
        group_logic.timeouts(self, now)
        eviction_logic.hold(self, now)
        group_devices.rehold(self)
        swap_logic.complete_swaps(self, now)
        eviction_logic.first_go(self, now)
        quiet = quiet and (self._changes, len(self.out)) == before
        for name in self.config.actions:
            if quiet and name in self._ran and not self._came(
                    self._next_for.get(name, float("inf"))):
                continue
            quiet = False  # what an action changes, those after it may read
            self._act(name, now)
        allocate_action.after_actions(self, now)
        app_logic.progress(self, now)
        group_logic.progress(self, now)
        unsatisfiable_logic.check(self)
        status_logic.emit(self, now)
        self._count_decided()  # before the cycle's decisions go
        out = self.out.take()
        self._scanned = 0
        self._settled = (not self._stirred and self.queues.earmarked == earmarked
                         and all(isinstance(d, _REPORTS) for d in out))
        return out

    def _came(self, at: float) -> bool:
        """Has the instant ``at``, asked about before, come? (The bookkeeping of
        :meth:`reached`: no decision asks this.)"""
        return at <= self.now

    def _act(self, action: str, now: float) -> None:
        """Run ``action``, noting the instants it asks about."""
        self._action = action
        self._next_for.pop(action, None)
        self._ran.add(action)
        try:
            run = self.actions.get(action)
            if run is not None:
                run(self, now)
        finally:
            self._action = None


_REPORTS = (SetAppStatus, SetPodGroupStatus, SetQueueStatus)
"""Decisions that report state (a status that tells of a change of state stirs the
cycle, see ``status.emit``): a cycle that decides no others, and changes nothing, is
settled."""

