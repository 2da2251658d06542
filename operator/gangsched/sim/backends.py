"""Schedulers the simulation can drive, behind one small interface.

:class:`Backend` is what :mod:`gangsched.sim.engine` needs from a scheduler and the cluster
it binds into: objects come and go, pods change phase, and ``cycle(now)`` lets the
scheduler act. Pod changes are reported to a :class:`~gangsched.sim.world.PodListener`.

:class:`GangschedBackend` is the real core, driven through :class:`~gangsched.sim.world.World`
exactly as the operator drives it: the core's decisions are carried out and fed back as
observations. It never decides anything itself. The core's timers (placeholder, waiting,
state-aware and PodGroup schedule timeouts) are read from the status the core publishes
(``SetAppStatus``/``SetPodGroupStatus``, as the operator persists them), so the clock can
jump straight to the next instant at which a timer is due.

After every cycle the core's books are checked: no node may hold more than its
allocatable (:mod:`gangsched.core.state.invariants`, incrementally: only the nodes whose usage
changed). A node over-committed is counted (``overCommittedNodes``, which must stay 0) and
shown loudly in the timeline; so is a device allocated to two claims at once
(``doubleAllocatedDevices``, in a workload with devices).
"""

from __future__ import annotations

import itertools
import re
from typing import Protocol

from gangsched.core.scheduler import Scheduler
from gangsched.core.state import invariants
from gangsched.core.state.instants import Instants
from gangsched.core.values import devices as dv
from gangsched.core.values.decisions import EvictPod, RecordEvent, SetAppStatus, SetPodGroupStatus
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
    SchedulerConfig,
    SortPolicy,
)
from gangsched.sim.jobs import Outcome
from gangsched.sim.latency import NO_LATENCY, Latency
from gangsched.sim.timeline import Timeline
from gangsched.sim.world import PodListener, World
from gangsched.view.board import Board, Contents
from gangsched.view.model import NodeUse, copy_nodes, node_uses

SOURCE = "gangsched"
PREEMPTION_EVENTS = frozenset({"Preempting", "Preempted", "Reclaimed", "PreemptionFailed",
                               "PreemptionTimedOut"})
"""Events of the preempt and reclaim actions, shown in the timeline."""
MAX_EVENTS = 50
NOTED_EVENTS = frozenset({"Unsatisfiable", "QueueQuotaExceeded", "QueueNotFound"})
"""Warnings on a gang shown in the timeline as they are."""
_TRANSITION = re.compile(r"^([A-Z][A-Za-z]*(?: -> [A-Z][A-Za-z]*)+)(?:: (.*))?$", re.DOTALL)
"""The message of the Event the core records for Application state changes: ``Old -> New``,
or a chain (``New -> Accepted -> Starting -> Running``) for the routine moves of one cycle,
which one Event says together."""


class Backend(Protocol):
    """A scheduler plus the cluster it schedules into."""

    name: str
    cycles: int
    verdicts: list[tuple[str, Outcome, str]]
    """``(namespace/name, outcome, reason)`` when the scheduler ends a job; drained by the
    engine."""
    counters: dict[str, int]
    """Scheduler-specific counts for the summary (timeouts, rejections...)."""
    latency: Latency
    """How slow its cluster is."""

    def state_of(self, key: str) -> str:
        """The scheduler's last word on a job's object (its state or phase), or ``""``."""

    def add_node(self, node: Node) -> None: ...
    def remove_node(self, name: str) -> None:
        """The node is gone; pods bound to it are deleted (and reported)."""
    def add_queue(self, spec: QueueSpec) -> None: ...
    def add_app(self, spec: AppSpec) -> None: ...
    def remove_app(self, key: AppKey) -> None: ...
    def add_group(self, spec: PodGroupSpec) -> None: ...
    def remove_group(self, key: GroupKey) -> None: ...
    def add_devices(self, classes: tuple[dv.DeviceClass, ...],
                    slices: tuple[dv.ResourceSlice, ...]) -> None:
        """The cluster serves resource.k8s.io with these DeviceClasses and ResourceSlices."""
    def add_claims(self, claims: tuple[dv.ResourceClaim, ...]) -> None:
        """The resourceclaim controller made these claims for a pod about to be added."""
    def add_pod(self, pod: Pod) -> None: ...
    def set_phase(self, uid: PodUID, phase: PodPhase) -> None: ...
    def delete_pod(self, uid: PodUID) -> None: ...
    def has_pod(self, uid: PodUID) -> bool: ...
    def cycle(self, now: float) -> None:
        """Let the scheduler act at ``now``; its binds and deletions are carried out."""
    def advance(self, now: float) -> bool:
        """The clock moved to ``now``: carry out what the cluster had due until then
        (graceful deletions ending, pods starting, late observations); True if any."""
    def next_deadline(self) -> float | None:
        """The earliest instant at which the scheduler has a timer due, if any."""
    def pop_deadlines(self, now: float) -> bool:
        """Forget deadlines up to ``now``; True if there were any."""
    def removal_cause(self, uid: PodUID) -> str | None:
        """Why the scheduler removed the running pod ``uid``, when it did (a preemption);
        None when it did not (the pod's node went away)."""


class GangschedBackend:
    """The real scheduling core, behind a :class:`World`."""

    name = SOURCE

    def __init__(self, config: SchedulerConfig, listener: PodListener,
                 timeline: Timeline, latency: Latency = NO_LATENCY, *,
                 view_at: float | None = None) -> None:
        self.scheduler = Scheduler(config)
        self.latency = latency
        self.world = World(self.scheduler, listener=listener, keep_decisions=False,
                           latency=latency)
        self.watch = invariants.Watch()
        """Checks after every cycle that no node holds more than its allocatable."""
        self.timeline = timeline
        self.cycles = 0
        self.decisions = 0
        self.verdicts: list[tuple[str, Outcome, str]] = []
        self.counters = {"placeholderTimeouts": 0, "killed": 0, "rejected": 0,
                         "podGroupTimeouts": 0, "deadlockVictims": 0, "nodeReservations": 0,
                         "preemptions": 0, "reclaims": 0, "evictions": 0,
                         "overCommittedNodes": 0}
        self.expired: dict[str, float] = {}
        """When the nodes reserved for a gang were given back: its wait counts from there."""
        self.queues: dict[str, QueueSpec] = {}
        self.app_state: dict[str, str] = {}
        self.group_phase: dict[str, str] = {}
        self.reason: dict[str, str] = {}
        self.reserved: dict[str, tuple[str, ...]] = {}
        self.config = config
        self._deadlines = Instants()
        self.evicted: dict[PodUID, str] = {}
        """Pods the core evicted, with why, until the engine asks."""
        self.events: dict[str, list[tuple[float, RecordEvent]]] = {}
        """The last MAX_EVENTS Events on each Application and PodGroup (for explain)."""
        self.board = Board()
        """What the dashboard shows of the decisions, as the operator keeps it
        (``simulate --html``)."""
        self.view_at = view_at
        self.kept_view: tuple[Contents, list[NodeUse], float] | None = None
        """The board and the nodes as they were after the first cycle at or after
        ``view_at``, and when (``simulate --html-at``)."""

    # --- objects -------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        self.world.add_node(node)

    def remove_node(self, name: str) -> None:
        self.world.remove_node(name)

    def add_queue(self, spec: QueueSpec) -> None:
        self.queues[spec.name] = spec
        self.world.add_queue(spec)

    def add_app(self, spec: AppSpec) -> None:
        self.app_state.pop(spec.key, None)
        self.world.add_app(spec)

    def remove_app(self, key: AppKey) -> None:
        self.world.remove_app(key)

    def add_group(self, spec: PodGroupSpec) -> None:
        self.group_phase.pop(spec.key, None)
        self.world.add_group(spec)

    def remove_group(self, key: GroupKey) -> None:
        self.world.remove_group(key)

    def add_devices(self, classes: tuple[dv.DeviceClass, ...],
                    slices: tuple[dv.ResourceSlice, ...]) -> None:
        self.counters.setdefault("doubleAllocatedDevices", 0)
        self.world.add_devices(classes, slices)

    def add_claims(self, claims: tuple[dv.ResourceClaim, ...]) -> None:
        self.world.add_claims(claims)

    def add_pod(self, pod: Pod) -> None:
        self.world.add_pod(pod)

    def set_phase(self, uid: PodUID, phase: PodPhase) -> None:
        self.world.set_phase(uid, phase)

    def delete_pod(self, uid: PodUID) -> None:
        self.world.delete_pod(uid)

    def has_pod(self, uid: PodUID) -> bool:
        return uid in self.world.pods

    def node_uses(self) -> list[NodeUse]:
        """The nodes as the dashboard shows them, now."""
        pods = self.scheduler.pods

        def placeholder(uid: str) -> bool:
            ps = pods.get(PodUID(uid))
            return ps is not None and ps.pod.placeholder

        return node_uses(copy_nodes(self.scheduler.cluster.nodes.values()), placeholder)

    def state_of(self, key: str) -> str:
        return self.app_state.get(key) or self.group_phase.get(key, "")

    # --- the loop ------------------------------------------------------------------------

    def cycle(self, now: float) -> None:
        self.cycles += 1
        decisions = self.world.step(now)
        self.decisions += len(decisions)
        self.board.take(decisions, now)
        if self.view_at is not None and self.kept_view is None and now >= self.view_at:
            self.kept_view = (self.board.contents(), self.node_uses(), now)
        for found in self.watch.check(self.scheduler):
            self.counters["overCommittedNodes"] += 1
            self.timeline.add(now, f"node {found.node}", SOURCE,
                              f"INVARIANT BROKEN: over-committed: {found.describe()}")
        doubled = self.world.claims.double_allocations
        if doubled > self.counters.get("doubleAllocatedDevices", 0):
            self.counters["doubleAllocatedDevices"] = doubled
            self.timeline.add(now, "devices", SOURCE, "INVARIANT BROKEN: a device allocated "
                              f"to two claims at once ({doubled} so far)")
        for d in decisions:
            if isinstance(d, SetAppStatus):
                self._app_status(d, now)
            elif isinstance(d, SetPodGroupStatus):
                self._group_status(d, now)
            elif isinstance(d, EvictPod):
                self.counters["evictions"] += 1
                self.evicted[d.uid] = f"{d.reason.lower()}: {d.message}"
            elif isinstance(d, RecordEvent):
                if d.target.kind in ("Application", "PodGroup"):
                    kept = self.events.setdefault(f"{d.target.namespace}/{d.target.name}", [])
                    kept.append((now, d))
                    del kept[:-MAX_EVENTS]
                if d.target.kind == "Application" and _TRANSITION.match(d.message):
                    self._transition(d, now)
                elif d.reason in PREEMPTION_EVENTS:
                    self._preemption(d, now)
                elif d.reason in NOTED_EVENTS and d.target.kind in ("Application", "PodGroup"):
                    self._noted(d, now)

    def _transition(self, d: RecordEvent, now: float) -> None:
        """Every state change of an Application as the core made it, also those passed
        through within one cycle (Accepted -> Resuming -> Running): the core records each
        one as an Event whose message starts ``Old -> New``."""
        match = _TRANSITION.match(d.message)
        assert match is not None
        states, detail = match.group(1).split(" -> "), match.group(2) or ""
        name = _short(f"{d.target.namespace}/{d.target.name}")
        for old, new in itertools.pairwise(states):
            text = new if old == "New" else f"{old} -> {new}"
            # The detail is the chain's (the first move's reason, as the core words it).
            shown = f"{text}: {detail}" if detail and old == states[0] else text
            self.timeline.add(now, f"app {name}", SOURCE, shown)
            if d.reason == "PlaceholderTimeout" and new in ("Killed", "Resuming"):
                self.counters["placeholderTimeouts"] += 1

    def _noted(self, d: RecordEvent, now: float) -> None:
        kind = "app" if d.target.kind == "Application" else "podgroup"
        name = _short(f"{d.target.namespace}/{d.target.name}")
        self.timeline.add(now, f"{kind} {name}", SOURCE, f"{d.reason}: {d.message}")

    def removal_cause(self, uid: PodUID) -> str | None:
        """Why the scheduler removed a running pod (an eviction), if it did."""
        return self.evicted.pop(uid, None)

    def _preemption(self, d: RecordEvent, now: float) -> None:
        """Count plans by action and show them, their victims' owners and their failures
        in the timeline (victim pods of a gang are told about on its object)."""
        target = d.target
        if d.reason == "Preempting":
            self.counters["reclaims" if d.message.startswith("reclaim") else "preemptions"] += 1
        elif d.reason in ("Preempted", "Reclaimed") and target.kind == "Pod":
            return
        kind = {"Application": "app", "PodGroup": "podgroup"}.get(target.kind, "pod")
        name = _short(f"{target.namespace}/{target.name}")
        self.timeline.add(now, f"{kind} {name}", SOURCE, f"{d.reason}: {d.message}")

    def advance(self, now: float) -> bool:
        return self.world.advance(now)

    def next_deadline(self) -> float | None:
        due = self.world.next_due()
        first = self._deadlines.first()
        return first if due is None else due if first is None else min(first, due)

    def pop_deadlines(self, now: float) -> bool:
        return self._deadlines.pop_until(now)

    def _deadline(self, at: float | None, now: float) -> None:
        if at is not None and at > now:
            self._deadlines.add(at)

    def _app_status(self, d: SetAppStatus, now: float) -> None:
        key = d.key
        previous = self.app_state.get(key)
        if previous != d.state:
            self.app_state[key] = d.state
            if d.state == "Killed":
                self.counters["killed"] += 1
                self.verdicts.append((key, Outcome.KILLED, d.message or d.reason))
            elif d.state == "Rejected":
                self.counters["rejected"] += 1
                self.verdicts.append((key, Outcome.REJECTED, d.message or d.reason))
        self._actions_seen(key, d.reason, d.message, d.reserved_nodes, now, "app",
                           shown=previous != d.state)
        spec = self.world.apps.get(key)
        if spec is None or d.state in ("Completed", "Killed", "Rejected"):
            return
        self._deadline(d.reservation_expiry, now)
        self._deadline(d.retry_after, now)
        if d.state == "Accepted" and d.reserved_nodes == () and "elect" in self.config.actions:
            since = d.state_since or 0.0
            if d.reservation_expiry is None and self.expired.get(key) is not None:
                since = max(since, self.expired[key])
            self._deadline(since + self.config.starvation_threshold, now)
        policy = spec.policy
        if d.placeholder_timer_start is not None:
            self._deadline(d.placeholder_timer_start + policy.placeholder_timeout, now)
        if d.waiting_since is not None:
            self._deadline(d.waiting_since + policy.waiting_timeout, now)
        queue = self.queues.get(spec.queue)
        if (d.starting_since is not None and queue is not None
                and queue.sort_policy is SortPolicy.STATE_AWARE):
            self._deadline(d.starting_since + queue.state_aware_timeout, now)

    def _group_status(self, d: SetPodGroupStatus, now: float) -> None:
        key = d.key
        previous = self.group_phase.get(key)
        if previous != d.phase:
            self.group_phase[key] = d.phase
            text = d.phase if previous is None else f"{previous} -> {d.phase}"
            self.timeline.add(now, f"podgroup {_short(key)}", SOURCE,
                              f"{text}: {d.message}" if d.message else text)
            if d.phase == "TimedOut":
                self.counters["podGroupTimeouts"] += 1
                self.verdicts.append((key, Outcome.TIMED_OUT, d.message or d.reason))
            elif d.phase == "Failed":
                self.counters["rejected"] += 1
                self.verdicts.append((key, Outcome.REJECTED, d.message or d.reason))
        self._actions_seen(key, d.reason, d.message, d.reserved_nodes, now, "podgroup",
                           shown=previous != d.phase)
        spec = self.world.groups.get(key)
        if spec is not None and d.schedule_start is not None and d.phase in ("Pending",
                                                                             "Inqueue",
                                                                             "Scheduling"):
            self._deadline(d.schedule_start + spec.schedule_timeout, now)
        if spec is not None and d.phase in ("Pending", "Inqueue", "Scheduling"):
            self._deadline(d.reservation_expiry, now)
            self._deadline(d.retry_after, now)
            if not d.reserved_nodes and "elect" in self.config.actions:
                since = max(spec.creation, self.expired.get(key, spec.creation))
                self._deadline(since + self.config.starvation_threshold, now)

    def _actions_seen(self, key: str, reason: str, message: str, nodes: tuple[str, ...],
                      now: float, kind: str, *, shown: bool) -> None:
        """Timeline entries for what the actions did that no state change shows (``shown``:
        this status changed the state, with its message): a deadlock victim, nodes
        reserved for a starving gang and given back."""
        if reason != self.reason.get(key):
            self.reason[key] = reason
            if reason == "DeadlockVictim":
                self.counters["deadlockVictims"] += 1
                if not shown:
                    self.timeline.add(now, f"{kind} {_short(key)}", SOURCE,
                                      f"deadlock victim: {message}")
        held = self.reserved.get(key, ())
        if nodes != held:
            self.reserved[key] = nodes
            if nodes:
                self.counters["nodeReservations"] += 1
                self.timeline.add(now, f"{kind} {_short(key)}", SOURCE,
                                  f"nodes reserved: {', '.join(nodes)}")
            else:
                self.expired[key] = now
                self.timeline.add(now, f"{kind} {_short(key)}", SOURCE,
                                  f"nodes given back: {', '.join(held)}")


def _short(key: str) -> str:
    namespace, _, name = key.partition("/")
    return name if namespace == "default" else key
