"""A naive pod-by-pod scheduler, to show what gang scheduling prevents.

This is deliberately *not* the core: it knows nothing of gangs, task groups, placeholders,
PodGroups or queues. Like kube-scheduler without a coscheduling plugin, it takes pending
pods one at a time in arrival order and binds each to a node where it fits (the first one,
going round the nodes from where the last bind went; node selectors, affinity and taints
are honoured as Kubernetes defines them). A pod that fits nowhere is skipped and tried
again when capacity is freed; it never blocks the pods behind it.

So when small drivers arrive before their executors, the drivers take the room the
executors need and every job waits for pods that cannot start: the deadlock that
gangsched's reservations rule out. Quotas are not enforced (Kubernetes' ResourceQuota
limits what may be *created*, which the workload does not model).
"""

from __future__ import annotations

import dataclasses

from gangsched.core.values import devices as dv
from gangsched.core.values.constraints import (
    matches_affinity,
    matches_node_selector,
    untolerated_taints,
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
from gangsched.core.values.resources import PODS, Resources
from gangsched.sim.jobs import Outcome
from gangsched.sim.latency import NO_LATENCY
from gangsched.sim.timeline import Timeline
from gangsched.sim.world import PodListener

ONE_POD = Resources({PODS: 1})


class _NodeState:
    __slots__ = ("free", "node")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.free = node.allocatable


def _shape(pod: Pod) -> tuple[object, ...]:
    """What decides where a pod may go: its request and its constraints."""
    return (pod.requests, tuple(sorted(pod.node_selector.items())), pod.tolerations,
            pod.affinity)


def _static_ok(node: Node, pod: Pod) -> bool:
    if not node.ready or node.unschedulable:
        return False
    if pod.node_selector and not matches_node_selector(pod.node_selector, node.labels):
        return False
    if not matches_affinity(pod.affinity, node.labels, node.name):
        return False
    return not (node.taints and untolerated_taints(pod.tolerations, node.taints))


class NaiveBackend:
    """FIFO, pod by pod, first fit; no gangs, no placeholders, no quotas."""

    name = "naive"
    latency = NO_LATENCY
    """Its cluster is instant."""

    def __init__(self, listener: PodListener, timeline: Timeline) -> None:
        self.listener = listener
        self.timeline = timeline
        self.cycles = 0
        self.verdicts: list[tuple[str, Outcome, str]] = []
        self.counters: dict[str, int] = {}
        self.nodes: dict[str, _NodeState] = {}
        self.order: list[_NodeState] = []
        self.pods: dict[PodUID, Pod] = {}
        self.pending: dict[PodUID, None] = {}
        self.cursor = 0
        self.epoch = 0
        """Bumped when capacity is freed or added; a pod that did not fit waits for it."""
        self.blocked: dict[tuple[object, ...], int] = {}
        """Pod shapes (request and constraints) that fitted nowhere, and at which epoch."""
        self.candidates: dict[tuple[object, ...], list[_NodeState]] = {}
        """Nodes passing each shape's static filters (dropped when nodes change)."""

    # --- objects (gang objects and queues mean nothing here) --------------------------------

    def add_node(self, node: Node) -> None:
        state = _NodeState(node)
        for pod in self.pods.values():
            if pod.node_name == node.name and pod.active:
                state.free = state.free - pod.requests - ONE_POD
        self.nodes[node.name] = state
        self.order = [self.nodes[name] for name in sorted(self.nodes)]
        self.candidates.clear()
        self.epoch += 1

    def remove_node(self, name: str) -> None:
        if self.nodes.pop(name, None) is None:
            return
        self.order = [self.nodes[n] for n in sorted(self.nodes)]
        self.candidates.clear()
        for pod in [p for p in self.pods.values() if p.node_name == name]:
            self.delete_pod(pod.uid)

    def add_queue(self, spec: QueueSpec) -> None:
        pass

    def add_app(self, spec: AppSpec) -> None:
        pass

    def remove_app(self, key: AppKey) -> None:
        pass

    def add_group(self, spec: PodGroupSpec) -> None:
        pass

    def remove_group(self, key: GroupKey) -> None:
        pass

    # --- pods ----------------------------------------------------------------------------

    def add_devices(self, classes: tuple[dv.DeviceClass, ...],
                    slices: tuple[dv.ResourceSlice, ...]) -> None:
        """Nothing: the naive binder models no devices (``gangsched simulate`` refuses to
        compare it on a workload with devices)."""

    def add_claims(self, claims: tuple[dv.ResourceClaim, ...]) -> None:
        """Nothing: see :meth:`add_devices`."""

    def add_pod(self, pod: Pod) -> None:
        self.pods[pod.uid] = pod
        if pod.node_name is None and pod.active:
            self.pending[pod.uid] = None
        self.listener.pod_changed(None, pod)

    def set_phase(self, uid: PodUID, phase: PodPhase) -> None:
        old = self.pods[uid]
        new = dataclasses.replace(old, phase=phase)
        self.pods[uid] = new
        if old.active and not new.active:
            self.pending.pop(uid, None)
            self._release(old)
        self.listener.pod_changed(old, new)

    def delete_pod(self, uid: PodUID) -> None:
        old = self.pods.pop(uid, None)
        if old is None:
            return
        self.pending.pop(uid, None)
        if old.active:
            self._release(old)
        self.listener.pod_changed(old, None)

    def has_pod(self, uid: PodUID) -> bool:
        return uid in self.pods

    def removal_cause(self, uid: PodUID) -> str | None:
        return None  # it never removes a running pod

    def state_of(self, key: str) -> str:
        return ""

    def _release(self, pod: Pod) -> None:
        if pod.node_name is None:
            return
        state = self.nodes.get(pod.node_name)
        if state is not None:
            state.free = state.free + pod.requests + ONE_POD
            self.epoch += 1

    # --- scheduling ----------------------------------------------------------------------

    def cycle(self, now: float) -> None:
        self.cycles += 1
        for uid in list(self.pending):
            pod = self.pods[uid]
            shape = _shape(pod)
            if self.blocked.get(shape) == self.epoch:
                continue
            node = self._first_fit(pod, shape)
            if node is None:
                self.blocked[shape] = self.epoch
                continue
            del self.pending[uid]
            node.free = node.free - pod.requests - ONE_POD
            bound = dataclasses.replace(pod, node_name=node.node.name, phase=PodPhase.RUNNING)
            self.pods[uid] = bound
            self.listener.pod_changed(pod, bound)

    def _first_fit(self, pod: Pod, shape: tuple[object, ...]) -> _NodeState | None:
        nodes = self.candidates.get(shape)
        if nodes is None:
            nodes = self.candidates[shape] = [s for s in self.order if _static_ok(s.node, pod)]
        request = pod.requests + ONE_POD
        count = len(nodes)
        for step in range(count):
            index = (self.cursor + step) % count
            state = nodes[index]
            if request.fits_in(state.free):
                self.cursor = index + 1
                return state
        return None

    def advance(self, now: float) -> bool:
        """The naive cluster is instant: nothing is ever due later."""
        return False

    def next_deadline(self) -> float | None:
        return None

    def pop_deadlines(self, now: float) -> bool:
        return False
