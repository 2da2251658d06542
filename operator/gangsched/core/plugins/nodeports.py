"""NodePorts (PreFilter, Filter): a host port (port, protocol, IP) is used once per node.

Two ports conflict when port and protocol are equal and the IPs are equal or either is
``0.0.0.0`` (see :meth:`gangsched.core.values.placement_terms.HostPort.conflicts`). Every pod placed
on the node counts, whoever placed it. PreFilter skips a pod without host ports.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo

NAME = "NodePorts"
REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts:
    name = NAME
    static = False
    node_local = True

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        return fw.SUCCESS if pod.placement.ports else fw.SKIP

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        if not node.ports:
            return fw.SUCCESS
        wanted = pod.placement.ports
        for used in node.ports.values():
            for port in used:
                if any(port.conflicts(mine) for mine in wanted):
                    return fw.unschedulable(REASON)
        return fw.SUCCESS


def factory(args: object | None) -> NodePorts:
    return NodePorts()
