"""NodeUnschedulable (Filter, static): a cordoned node (``spec.unschedulable``) takes
only pods that tolerate ``node.kubernetes.io/unschedulable:NoSchedule``."""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.constraints import Taint, TaintEffect, tolerates

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", TaintEffect.NO_SCHEDULE)


class NodeUnschedulable:
    name = NAME
    static = True

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        if not node.node.unschedulable:
            return fw.SUCCESS
        if any(tolerates(t, UNSCHEDULABLE_TAINT) for t in pod.constraints.tolerations):
            return fw.SUCCESS
        return fw.unresolvable(REASON)


def factory(args: object | None) -> NodeUnschedulable:
    return NodeUnschedulable()
