"""NodeReady (Filter, static): a node that is not Ready takes no pod.

Not a kube-scheduler plugin: there the node lifecycle controller taints a node whose
``Ready`` condition is ``False`` ``node.kubernetes.io/not-ready:NoSchedule``, and one
whose condition is ``Unknown`` (its kubelet stopped reporting)
``node.kubernetes.io/unreachable:NoSchedule`` (pkg/controller/nodelifecycle,
``doNoScheduleTaintingPass``), and TaintToleration keeps pods off it. The core also
sees nodes whose readiness is known before (or without) that taint, so it checks
readiness itself, letting a pod that tolerates the taint the controller puts on such a
node pass, as kube-scheduler would.
"""

from __future__ import annotations

from gangsched.core.constraints import Taint, TaintEffect, tolerates
from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

NAME = "NodeReady"
REASON = "node(s) were not ready"
_NOT_READY = Taint("node.kubernetes.io/not-ready", "", TaintEffect.NO_SCHEDULE)
_UNREACHABLE = Taint("node.kubernetes.io/unreachable", "", TaintEffect.NO_SCHEDULE)


class NodeReady:
    name = NAME
    static = True

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        if node.node.ready:
            return fw.SUCCESS
        taint = _UNREACHABLE if node.node.unreachable else _NOT_READY
        if any(tolerates(t, taint) for t in pod.constraints.tolerations):
            return fw.SUCCESS
        return fw.unresolvable(REASON)


def factory(args: object | None) -> NodeReady:
    return NodeReady()
