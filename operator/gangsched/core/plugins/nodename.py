"""NodeName (Filter, static): a pod naming a node (``spec.nodeName``) fits only there.

A pod whose ``spec.nodeName`` is set is already bound, so the core never places one; a
hypothetical pod (its :class:`~gangsched.core.framework.podinfo.Constraints` with
``node_name``) is checked as kube-scheduler checks it.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME
    static = True

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        wanted = pod.constraints.node_name
        if not wanted or wanted == node.node.name:
            return fw.SUCCESS
        return fw.unresolvable(REASON)


def factory(args: object | None) -> NodeName:
    return NodeName()
