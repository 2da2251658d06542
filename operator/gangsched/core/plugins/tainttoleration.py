"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Filter (static): the first ``NoSchedule`` or ``NoExecute`` taint no toleration tolerates
rejects the node, ``node(s) had untolerated taint {key: value}``.
Score: the number of ``PreferNoSchedule`` taints not tolerated by a toleration whose
effect is empty or ``PreferNoSchedule``; normalized reversed (fewest is 100). PreScore
skips when none of the nodes to score has such a taint (all would score alike), at once
when no node of the cluster has one (known per node epoch).
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.core.constraints import TaintEffect, tolerates, untolerated_taints
from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

NAME = "TaintToleration"


def reason(key: str, value: str) -> str:
    return f"node(s) had untolerated taint {{{key}: {value}}}"


def _prefers_not(node: NodeState) -> bool:
    return any(t.effect is TaintEffect.PREFER_NO_SCHEDULE for t in node.node.taints)


class TaintToleration:
    name = NAME
    static = True

    def __init__(self) -> None:
        self._epoch = -1
        self._any = False
        """Whether some node of the cluster, as of node epoch ``_epoch``, has a
        PreferNoSchedule taint."""

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        taints = node.node.taints
        if not taints:
            return fw.SUCCESS
        bad = untolerated_taints(pod.constraints.tolerations, taints)
        if not bad:
            return fw.SUCCESS
        return fw.unresolvable(reason(bad[0].key, bad[0].value))

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Skips whenever no node has a PreferNoSchedule taint."""
        return not self._any_prefers_not(snapshot)

    def _any_prefers_not(self, snapshot: fw.Snapshot) -> bool:
        if snapshot.node_epoch != self._epoch:
            self._any = any(_prefers_not(node) for node in snapshot.sorted_nodes())
            self._epoch = snapshot.node_epoch
        return self._any

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        if self._any_prefers_not(snapshot) and any(_prefers_not(node) for node in nodes):
            return fw.SUCCESS
        return fw.SKIP

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        relevant = [t for t in pod.constraints.tolerations
                    if t.effect is None or t.effect is TaintEffect.PREFER_NO_SCHEDULE]
        return sum(1 for taint in node.node.taints
                   if taint.effect is TaintEffect.PREFER_NO_SCHEDULE
                   and not any(tolerates(t, taint) for t in relevant))

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        fw.default_normalize(scores, reverse=True)


def factory(args: object | None) -> TaintToleration:
    return TaintToleration()
