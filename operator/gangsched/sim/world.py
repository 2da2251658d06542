"""A simulated cluster that carries out the core's decisions, as the operator would.

``World`` plays the API server and the kubelets: it creates placeholder pods, binds,
deletes, and feeds every change back to the core as an observation. Binds and deletions
take effect at once, unless ``latency`` (:class:`~gangsched.sim.latency.Latency`) makes
the cluster slow: a deleted pod terminates gracefully (it keeps its node, flagged
terminating, for a while), a bound pod turns Running later, and observations reach the
core late. What is due later waits in a :class:`~gangsched.sim.latency.Later` queue:
:meth:`World.advance` (called by :meth:`World.step`) carries it out, and
:meth:`World.next_due` says when. With latency, a bind the core asks for a pod that is
gone (or bound) meanwhile is answered as the API server would (``BindFailed`` 404 or
409) and counted in ``bind_refused``; without, it is a bug and raises.
It never decides anything: all scheduling comes from the one real core.

Dynamic Resource Allocation: :meth:`World.add_devices` publishes DeviceClasses and
ResourceSlices (and says the resource.k8s.io API is served); the claims of pods are kept
by a :class:`~gangsched.sim.claims.ClaimBook` (the resourceclaim controller, and the
claim writes a bind carries: a refused one binds nothing and comes back as
``VolumeBindFailed``; for a ``BindGang`` every member's writes succeed before any member
is bound).

Evictions (``EvictPod``) go through a simple model of PodDisruptionBudgets:
``disruption_budgets`` maps an Application or PodGroup (``namespace/name``) to the number
of its running pods that must stay; an eviction that would break it is refused with a 429
(``EvictionFailed``), as the Eviction API does. Any other eviction deletes the pod.

Two optional hooks serve the simulator and the benchmark without changing what the world
does: ``listener`` is told of every pod change (created, bound, phase changed, deleted), and
``keep_decisions=False`` stops the world from keeping every decision it applied (a long
simulation would otherwise hold millions of them). Pods are indexed by namespace and name,
so a placeholder creation or a lookup by name does not scan every pod.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable
from typing import Protocol, assert_never

from gangsched.core.scheduler import Scheduler
from gangsched.core.values import devices as dv
from gangsched.core.values.decisions import (
    AnnotateNode,
    BindGang,
    BindPod,
    CreatePlaceholder,
    Decision,
    DeletePod,
    EvictPod,
    NominatePod,
    PodPending,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
)
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GroupKey,
    Node,
    Pod,
    PodGroupSpec,
    PodPhase,
    PodUID,
    QueueSpec,
)
from gangsched.core.values.observations import (
    AppGone,
    AppObserved,
    BindFailed,
    DeviceObserved,
    EvictionFailed,
    NodeGone,
    NodeObserved,
    Observation,
    PodGone,
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    QueueObserved,
    ResourceClaimsServed,
    VolumeBindFailed,
)
from gangsched.core.values.volume_specs import placeholder_volumes
from gangsched.sim.claims import ClaimBook, ClaimError
from gangsched.sim.latency import NO_LATENCY, Latency, Later

WATCH = "watch"
"""The kind of a late observation in the queue (see :meth:`World.reconnect`)."""


class PodListener(Protocol):
    """Told of every pod change in a :class:`World`, after the core has observed it."""

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        """``old`` is None for a new pod, ``new`` is None for a deleted one."""


class World:
    """Pods, nodes and applications, with the core's decisions applied to them."""

    def __init__(
        self,
        scheduler: Scheduler,
        *,
        auto_run: bool = True,
        listener: PodListener | None = None,
        keep_decisions: bool = True,
        latency: Latency = NO_LATENCY,
    ) -> None:
        self.scheduler = scheduler
        self.latency = latency
        self.later = Later()
        """What the slow cluster does later: deletions completed, pods Running, late
        observations."""
        self.bind_refused: dict[int, int] = {}
        """Binds refused because the core's view lagged, by HTTP code (with latency)."""
        self.auto_run = auto_run
        self.listener = listener
        self.keep_decisions = keep_decisions
        self.pods: dict[PodUID, Pod] = {}
        self._by_name: dict[tuple[str, str], PodUID] = {}
        self.nodes: dict[str, Node] = {}
        self.apps: dict[AppKey, AppSpec] = {}
        self.groups: dict[GroupKey, PodGroupSpec] = {}
        self.app_status: dict[AppKey, SetAppStatus] = {}
        self.group_status: dict[str, SetPodGroupStatus] = {}
        self.queue_status: dict[str, SetQueueStatus] = {}
        self.events: list[RecordEvent] = []
        self.pending_reasons: dict[PodUID, PodPending] = {}
        self.decisions: list[Decision] = []
        self.bind_count: dict[PodUID, int] = {}
        self.disruption_budgets: dict[str, int] = {}
        """``namespace/name`` of an Application or PodGroup -> its running pods that must
        stay (a PodDisruptionBudget's ``minAvailable``)."""
        self.evicted: list[PodUID] = []
        """Pods deleted through an eviction, in order."""
        self.node_annotations: dict[str, dict[str, str]] = {}
        """Annotations the core set on nodes (``AnnotateNode``), by node name."""
        self._uids = itertools.count()
        self.now = 0.0
        self.claims = ClaimBook(self.observe)
        """The pods' ResourceClaims (see the module docstring)."""

    # --- inputs --------------------------------------------------------------------------

    def observe(self, observation: Observation) -> None:
        """Tell the core, at once or ``watch_delay`` later."""
        delay = self.latency.watch_delay
        if delay > 0:
            self.later.add(self.now + delay, WATCH,
                           lambda: self.scheduler.observe(observation))
        else:
            self.scheduler.observe(observation)

    def advance(self, now: float) -> bool:
        """Move the clock to ``now``, carrying out what was due until then; True if
        anything was."""
        self.now = max(self.now, now)
        return self.later.run_until(now)

    def next_due(self) -> float | None:
        """When something is due next (a deletion, a pod starting, a late observation)."""
        return self.later.first()

    def reconnect(self) -> None:
        """The core starts again (a restart): observations still on their way to the old
        one are dropped; the new one lists the world afresh."""
        self.later.drop(WATCH)

    def add_node(self, node: Node) -> None:
        self.nodes[node.name] = node
        self.observe(NodeObserved(node))

    def remove_node(self, name: str) -> None:
        self.nodes.pop(name, None)
        self.observe(NodeGone(name))
        for pod in list(self.pods.values()):
            if pod.node_name == name:
                self.delete_pod(pod.uid, force=True)

    def add_app(self, spec: AppSpec) -> None:
        self.apps[spec.key] = spec
        self.observe(AppObserved(spec))

    def remove_app(self, key: AppKey) -> None:
        """The Application object is deleted (its pods are not: delete them yourself)."""
        if self.apps.pop(key, None) is not None:
            self.observe(AppGone(key))

    def add_group(self, spec: PodGroupSpec) -> None:
        self.groups[spec.key] = spec
        self.observe(PodGroupObserved(spec))

    def remove_group(self, key: GroupKey) -> None:
        if self.groups.pop(key, None) is not None:
            self.observe(PodGroupGone(key))

    def add_queue(self, spec: QueueSpec) -> None:
        self.observe(QueueObserved(spec))

    def add_devices(self, classes: tuple[dv.DeviceClass, ...],
                    slices: tuple[dv.ResourceSlice, ...]) -> None:
        """The cluster serves resource.k8s.io, with these classes and drivers' slices."""
        self.observe(ResourceClaimsServed(True))
        for device_class in classes:
            self.observe(DeviceObserved(device_class))
        for published in slices:
            self.observe(DeviceObserved(published))

    def add_claims(self, claims: tuple[dv.ResourceClaim, ...]) -> None:
        """The resourceclaim controller made a pod's claims (before the pod is added)."""
        self.claims.add(claims)

    def add_pod(self, pod: Pod) -> None:
        self._put(self.pods.get(pod.uid), pod)

    def set_phase(self, uid: PodUID, phase: PodPhase) -> None:
        old = self.pods[uid]
        self._put(old, dataclasses.replace(old, phase=phase))
        if not self.pods[uid].active:
            self.claims.pod_finished(uid)

    def _put(self, old: Pod | None, pod: Pod) -> None:
        """Store ``pod``, tell the core, then the listener."""
        self.pods[pod.uid] = pod
        self._by_name[(pod.namespace, pod.name)] = pod.uid
        self.observe(PodObserved(pod))
        if self.listener is not None:
            self.listener.pod_changed(old, pod)

    def finish(self, name: str, phase: PodPhase = PodPhase.SUCCEEDED) -> None:
        self.set_phase(self.uid_of(name), phase)

    def delete_pod(self, uid: PodUID, *, force: bool = False) -> None:
        """Delete a pod: at once when it is not bound, finished, ``force`` is given or
        the cluster deletes gracefully in no time; else it terminates first (see
        ``Latency.grace``). Deleting a pod already terminating or gone does nothing."""
        pod = self.pods.get(uid)
        if pod is None:
            return
        grace = 0.0
        if not force and pod.node_name is not None and pod.active:
            grace = self.latency.grace(uid)
        if grace <= 0:
            self._remove(uid)
        elif not pod.terminating:
            self._put(pod, dataclasses.replace(pod, terminating=True))
            self.later.add(self.now + grace, "delete", lambda: self._stopped(uid))

    def _stopped(self, uid: PodUID) -> None:
        """A terminating pod's graceful deletion ended: gone, or first reported stopped
        (phase Failed) when the cluster says so ``stopped_before_gone`` earlier."""
        pod = self.pods.get(uid)
        stopped = self.latency.stopped_before_gone
        if pod is None or stopped <= 0 or not pod.active:
            self._remove(uid)
            return
        self._put(pod, dataclasses.replace(pod, phase=PodPhase.FAILED))
        self.later.add(self.now + stopped, "delete", lambda: self._remove(uid))

    def _remove(self, uid: PodUID) -> None:
        old = self.pods.pop(uid, None)
        if old is not None:
            if self._by_name.get((old.namespace, old.name)) == uid:
                del self._by_name[(old.namespace, old.name)]
            self.observe(PodGone(uid))
            self.claims.pod_finished(uid)
            if self.listener is not None:
                self.listener.pod_changed(old, None)

    def find(self, name: str, namespace: str = "default") -> Pod | None:
        """The pod called ``namespace/name``, or None."""
        uid = self._by_name.get((namespace, name))
        pod = self.pods.get(uid) if uid is not None else None
        if pod is not None and pod.name == name and pod.namespace == namespace:
            return pod
        for pod in self.pods.values():  # pods put into ``self.pods`` directly
            if pod.name == name and pod.namespace == namespace:
                return pod
        return None

    def uid_of(self, name: str, namespace: str = "default") -> PodUID:
        pod = self.find(name, namespace)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        return pod.uid

    def pod(self, name: str, namespace: str = "default") -> Pod:
        return self.pods[self.uid_of(name, namespace)]

    # --- the loop ------------------------------------------------------------------------

    def step(self, now: float) -> list[Decision]:
        """One core cycle at ``now`` (what was due until then carried out first), with
        its decisions carried out."""
        self.advance(now)
        self.now = now
        decisions = self.scheduler.cycle(now)
        if self.keep_decisions:
            self.decisions.extend(decisions)
        self.apply(decisions)
        return decisions

    def run(self, until: float, dt: float = 1.0, start: float | None = None) -> None:
        t = self.now if start is None else start
        while t <= until:
            self.step(t)
            t += dt

    def settle(self, now: float, cycles: int = 5) -> list[Decision]:
        """Several cycles at the same instant: lets decisions and observations converge."""
        out: list[Decision] = []
        for _ in range(cycles):
            out.extend(self.step(now))
        return out

    def apply(self, decisions: Iterable[Decision]) -> None:
        for d in decisions:
            if isinstance(d, BindPod):
                self._bind(d)
            elif isinstance(d, BindGang):
                self._bind_gang(d)
            elif isinstance(d, CreatePlaceholder):
                self._create_placeholder(d)
            elif isinstance(d, DeletePod):
                self.delete_pod(d.uid)
            elif isinstance(d, EvictPod):
                self._evict(d)
            elif isinstance(d, AnnotateNode):
                self._annotate(d)
            elif isinstance(d, PodPending):
                self.pending_reasons[d.uid] = d
            elif isinstance(d, SetAppStatus):
                self.app_status[d.key] = d
            elif isinstance(d, SetPodGroupStatus):
                self.group_status[d.key] = d
            elif isinstance(d, SetQueueStatus):
                self.queue_status[d.name] = d
            elif isinstance(d, RecordEvent):
                self.events.append(d)
            elif isinstance(d, NominatePod):
                pass  # no other scheduler in a simulation reads nominations
            else:
                assert_never(d)

    def _bind_gang(self, d: BindGang) -> None:
        """Every member's claim writes, then the Bindings; a refused write binds no
        member (each comes back as ``VolumeBindFailed``) and undoes the others."""
        done = []
        for member in d.binds:
            try:
                done.extend(self.claims.write(member.volumes))
            except ClaimError as error:
                self.claims.release(done)
                text = f"{member.namespace}/{member.name}: {error.message}"
                for each in d.binds:
                    self.observe(VolumeBindFailed(each.uid, each.node, error.code, text))
                return
        for member in d.binds:
            self._bind(dataclasses.replace(member, volumes=()))

    def _bind(self, d: BindPod) -> None:
        pod = self.pods.get(d.uid)
        if pod is None or pod.node_name is not None:
            if not self.latency.any:
                raise AssertionError(f"bind of {d.namespace}/{d.name}: pod missing or bound")
            code = 404 if pod is None else 409
            self.bind_refused[code] = self.bind_refused.get(code, 0) + 1
            self.observe(BindFailed(d.uid, d.node, code, "not found" if pod is None
                                    else f"pod is already assigned to node {pod.node_name}"))
            return
        if d.volumes:
            try:
                self.claims.write(d.volumes)
            except ClaimError as error:
                self.observe(VolumeBindFailed(d.uid, d.node, error.code, error.message))
                return
        self.bind_count[d.uid] = self.bind_count.get(d.uid, 0) + 1
        later = self.auto_run and self.latency.running_after > 0
        phase = PodPhase.RUNNING if self.auto_run and not later else pod.phase
        self._put(pod, dataclasses.replace(pod, node_name=d.node, phase=phase))
        if later:
            self.later.add(self.now + self.latency.running_after, "run",
                           lambda: self._start(d.uid))

    def _start(self, uid: PodUID) -> None:
        """The kubelet has started a bound pod (unless it went or finished meanwhile)."""
        pod = self.pods.get(uid)
        if (pod is not None and pod.node_name is not None and not pod.terminating
                and pod.phase is PodPhase.PENDING):
            self.set_phase(uid, PodPhase.RUNNING)

    def _evict(self, d: EvictPod) -> None:
        """The Eviction API: delete the pod, unless its disruption budget would break (a
        429, observed as ``EvictionFailed``). A pod already gone is fine (404)."""
        pod = self.pods.get(d.uid)
        if pod is None:
            return
        owner = pod.app or pod.pod_group
        needed = self.disruption_budgets.get(owner) if owner is not None else None
        if needed is not None and pod.phase is PodPhase.RUNNING and not pod.terminating:
            healthy = sum(1 for p in self.pods.values()
                          if (p.app or p.pod_group) == owner and p.phase is PodPhase.RUNNING
                          and not p.terminating)
            if healthy - 1 < needed:
                self.observe(EvictionFailed(d.uid, 429, f"the disruption budget of {owner} "
                                            f"needs {needed} healthy pods and has {healthy}"))
                return
        self.evicted.append(d.uid)
        self.delete_pod(d.uid)

    def _annotate(self, d: AnnotateNode) -> None:
        """Set or remove a node annotation, as a merge patch would: a node that does not
        exist (any more) is left alone, removing a missing key does nothing."""
        if d.node not in self.nodes:
            return
        found = self.node_annotations.setdefault(d.node, {})
        if d.value is None:
            found.pop(d.key, None)
            if not found:
                del self.node_annotations[d.node]
        else:
            found[d.key] = d.value

    def _create_placeholder(self, d: CreatePlaceholder) -> None:
        if self._exists(d.name, d.namespace):
            return  # AlreadyExists: creation is idempotent by name
        spec = self.apps[d.app]
        group = spec.group(d.task_group)
        assert group is not None
        pod = Pod(
            uid=PodUID(f"ph-{next(self._uids)}-{d.name}"),
            namespace=d.namespace,
            name=d.name,
            requests=d.requests,
            priority=spec.priority,
            creation=self.now,
            node_selector=group.node_selector,
            tolerations=group.tolerations,
            affinity=group.affinity,
            placement=group.placement,
            app=d.app,
            task_group=d.task_group,
            placeholder=True,
            member_index=d.index,
            volumes=placeholder_volumes(d.name, d.claims),
        )
        self.add_pod(pod)

    def _exists(self, name: str, namespace: str) -> bool:
        uid = self._by_name.get((namespace, name))
        if uid is not None and uid in self.pods:
            return True
        if len(self._by_name) >= len(self.pods):
            return False  # every pod is indexed: the index is the whole truth
        return self.find(name, namespace) is not None

    # --- views ---------------------------------------------------------------------------

    def placeholders(self, app: AppKey | None = None) -> list[Pod]:
        return [p for p in self.pods.values() if p.placeholder and (app is None or p.app == app)]

    def bound(self) -> list[Pod]:
        return [p for p in self.pods.values() if p.node_name is not None]

    def reasons(self, reason: str) -> list[RecordEvent]:
        return [e for e in self.events if e.reason == reason]
