"""NodeAffinity: nodeSelector and required node affinity filter, preferred terms score.

Filter (static): every ``nodeSelector`` pair and the required terms (ORed) must match,
else ``node(s) didn't match Pod's node affinity/selector``.
Score: the sum of the weights of the preferred terms the node matches, normalized by
the maximum. PreScore skips a pod without preferred terms.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.constraints import matches_affinity, matches_node_selector, matches_term

NAME = "NodeAffinity"
REASON = "node(s) didn't match Pod's node affinity/selector"


class NodeAffinity:
    name = NAME
    static = True

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        c = pod.constraints
        labels = node.labels
        if c.node_selector and not matches_node_selector(dict(c.node_selector), labels):
            return fw.unresolvable(REASON)
        if not matches_affinity(c.affinity, labels, node.node.name):
            return fw.unresolvable(REASON)
        return fw.SUCCESS

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Skips a pod without preferred node affinity."""
        return not pod.placement.node_preferred

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        return fw.SUCCESS if pod.placement.node_preferred else fw.SKIP

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        return sum(p.weight for p in pod.placement.node_preferred
                   if matches_term(p.term, node.labels, node.node.name))

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        fw.default_normalize(scores)


def factory(args: object | None) -> NodeAffinity:
    return NodeAffinity()
