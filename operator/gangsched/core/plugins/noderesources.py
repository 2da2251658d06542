"""NodeResourcesFit (PreFilter, Filter, Score): the request must fit the free capacity.

Filter: every requested resource must be free on the node; the reasons name each one
short, ``Insufficient cpu``, ``Insufficient nvidia.com/gpu``, and ``Too many pods`` for
the pod slots. A resource the node does not list is one it has none of.

Score (arguments :class:`FitArgs`, ``scoringStrategy`` in a profile):

* ``LeastAllocated`` (kube-scheduler's default; gangsched's ``spread``): per resource
  ``(allocatable - requested) * 100 / allocatable``, weighted average;
* ``MostAllocated`` (gangsched's ``binpack``): ``requested * 100 / allocatable``.

``requested`` is what the node's pods hold plus this pod's request (cpu and memory with
kube-scheduler's non-zero defaults, 100m and 200Mi, for pods without one). Resources the node
has none of are left out, as are extended resources the pod does not ask for.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState, nonzero
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.resources import CPU, MEMORY, PODS

NAME = "NodeResourcesFit"
TOO_MANY_PODS = "Too many pods"


class Strategy(enum.StrEnum):
    LEAST_ALLOCATED = "LeastAllocated"
    MOST_ALLOCATED = "MostAllocated"

    @classmethod
    def from_string(cls, text: str) -> Strategy:
        """The strategy spelled ``text``; others (``RequestedToCapacityRatio``, not
        supported) raise :class:`ConstraintError` naming the accepted ones."""
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f'unsupported scoring strategy "{text}" (accepted: {accepted})')


DEFAULT_RESOURCES = ((CPU, 1), (MEMORY, 1))


@dataclass(frozen=True, slots=True)
class FitArgs:
    strategy: Strategy = Strategy.LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES

    def __post_init__(self) -> None:
        for name, weight in self.resources:
            if not 1 <= weight <= 100:
                raise ConstraintError(f"weight of {name} must be within 1..100, got {weight}")


def insufficient(pod: PodInfo, node: NodeState) -> list[str]:
    """The reasons ``pod``'s request does not fit ``node``'s free capacity, sorted."""
    free = node.free
    found = []
    for name, amount in pod.request.items():
        if amount > free.get(name):
            found.append(TOO_MANY_PODS if name == PODS else f"Insufficient {name}")
    return sorted(found)


class NodeResourcesFit:
    name = NAME
    static = False

    def __init__(self, args: FitArgs) -> None:
        self.args = args
        self.most = args.strategy is Strategy.MOST_ALLOCATED
        names = [name for name, _ in args.resources]
        self._cpu_memory = (dict(args.resources)
                            if sorted(names) == sorted((CPU, MEMORY)) else None)
        """Weights of cpu and memory when they are the only resources scored (the
        default): then :meth:`score_nodes` scores without a call per node."""
        self._rejected: dict[tuple[str, ...], fw.Status] = {}
        """The status for each set of reasons, made once: a diagnosis of a pod that fits
        nowhere judges every node, most of them short of the same resources."""

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        if pod.request.fits_in(node.free):
            return fw.SUCCESS
        reasons = tuple(insufficient(pod, node))
        found = self._rejected.get(reasons)
        if found is None:
            if len(self._rejected) >= 256:
                self._rejected.clear()
            found = self._rejected[reasons] = fw.unschedulable(*reasons)
        return found

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Scores read allocatable and what is requested on the node: always."""
        return True

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        cpu, memory = pod.nonzero or nonzero(pod.request)
        state.write(NAME, (cpu, memory))
        return fw.SUCCESS

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        # cpu and memory count a pod without a request as kube-scheduler's defaults
        # (``nonzero``); other resources only when the pod asks for them.
        found = state.data.get(NAME)
        cpu, memory = found if isinstance(found, tuple) else (
            pod.nonzero or nonzero(pod.request))
        alloc = node.node.allocatable
        total = weights = 0
        most = self.most
        for name, weight in self.args.resources:
            if name == CPU:
                capacity = node.alloc_cpu
                requested = node.nonzero_cpu + cpu
            elif name == MEMORY:
                capacity = node.alloc_memory
                requested = node.nonzero_memory + memory
            else:
                capacity = alloc.get(name)
                want = pod.request.get(name)
                if not want:
                    continue
                requested = node.used.get(name) + want
            if capacity <= 0:
                continue
            if most:
                value = min(requested, capacity) * fw.MAX_NODE_SCORE // capacity
            elif requested > capacity:
                value = 0
            else:
                value = (capacity - requested) * fw.MAX_NODE_SCORE // capacity
            total += value * weight
            weights += weight
        return total // weights if weights else 0

    def score_nodes(self, state: fw.CycleState, pod: PodInfo,
                    nodes: Sequence[NodeState]) -> list[int]:
        """:meth:`score` of each node, inlined for cpu and memory alone."""
        weights = self._cpu_memory
        if weights is None:
            return [self.score(state, pod, node) for node in nodes]
        found = state.data.get(NAME)
        cpu, memory = found if isinstance(found, tuple) else (
            pod.nonzero or nonzero(pod.request))
        w_cpu, w_mem = weights[CPU], weights[MEMORY]
        most = self.most
        top = fw.MAX_NODE_SCORE
        out: list[int] = []
        for node in nodes:
            total = used_weights = 0
            capacity = node.alloc_cpu
            if capacity > 0:
                requested = node.nonzero_cpu + cpu
                if most:
                    total += (requested if requested < capacity else capacity
                              ) * top // capacity * w_cpu
                elif requested <= capacity:
                    total += (capacity - requested) * top // capacity * w_cpu
                used_weights += w_cpu
            capacity = node.alloc_memory
            if capacity > 0:
                requested = node.nonzero_memory + memory
                if most:
                    total += (requested if requested < capacity else capacity
                              ) * top // capacity * w_mem
                elif requested <= capacity:
                    total += (capacity - requested) * top // capacity * w_mem
                used_weights += w_mem
            out.append(total // used_weights if used_weights else 0)
        return out

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        return None


def factory(args: object | None) -> NodeResourcesFit:
    if args is None:
        return NodeResourcesFit(FitArgs())
    if not isinstance(args, FitArgs):
        raise TypeError("NodeResourcesFit takes FitArgs")
    return NodeResourcesFit(args)
