"""NodeResourcesBalancedAllocation (Score): prefer nodes whose resources stay balanced.

The score is ``(1 - std) * 100`` of the fractions ``requested / allocatable`` (capped
at 1) of the scored resources (cpu and memory by default), ``requested`` including this
pod. Unlike NodeResourcesFit's scoring, ``requested`` is what pods actually request
(kube-scheduler's ``useRequested``): a pod without a cpu or memory request adds none. An
extended resource the pod does not ask for is left out. PreScore skips a pod that
requests none of the scored resources (a best-effort pod).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.plugins.noderesources import DEFAULT_RESOURCES
from gangsched.core.resources import CPU, MEMORY

_ALWAYS = frozenset({CPU, MEMORY, "ephemeral-storage"})
"""Resources scored whether the pod asks for them or not (the others only if it does)."""

NAME = "NodeResourcesBalancedAllocation"


@dataclass(frozen=True, slots=True)
class BalancedArgs:
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES


class BalancedAllocation:
    name = NAME

    def __init__(self, args: BalancedArgs) -> None:
        self.args = args

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Scores read allocatable and what is used on the node: always."""
        return True

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        if any(pod.request.get(name) for name, _ in self.args.resources):
            return fw.SUCCESS
        return fw.SKIP

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        fractions = []
        alloc = node.node.allocatable
        for name, _ in self.args.resources:
            capacity = alloc.get(name)
            want = pod.request.get(name)
            if capacity <= 0 or (not want and name not in _ALWAYS):
                continue
            fractions.append(min((node.used.get(name) + want) / capacity, 1.0))
        if len(fractions) < 2:
            return fw.MAX_NODE_SCORE
        if len(fractions) == 2:
            std = abs(fractions[0] - fractions[1]) / 2
        else:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
        return int((1 - std) * fw.MAX_NODE_SCORE)

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        return None


def factory(args: object | None) -> BalancedAllocation:
    if args is None:
        return BalancedAllocation(BalancedArgs())
    if not isinstance(args, BalancedArgs):
        raise TypeError("NodeResourcesBalancedAllocation takes BalancedArgs")
    return BalancedAllocation(args)
