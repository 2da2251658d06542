"""NodeVolumeLimits (PreFilter, Filter): per-driver attach limits from CSINode objects.

See :mod:`gangsched.core.volumes.limits`: the node's volumes of a CSI driver, with the
pod's new ones, must stay within its CSINode's ``allocatable.count`` for that driver
(``node(s) exceed max volume count``). Skips pods with neither claims nor inline CSI
volumes.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.volumes import limits
from gangsched.core.volumes.catalog import VolumeCatalog

NAME = "NodeVolumeLimits"
_REJECT = fw.Rejections()


class NodeVolumeLimits:
    name = NAME
    static = False
    scan_cost = 20

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        if not pod.volumes.claims and not pod.volumes.csi_inline:
            return fw.SKIP
        state.write(NAME, snapshot.volumes)
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        catalog = state.read(NAME)
        if not isinstance(catalog, VolumeCatalog):
            return fw.SUCCESS
        reason = limits.exceeded(catalog, pod.namespace, pod.volumes, node.node.name)
        return fw.SUCCESS if reason is None else _REJECT(reason)

    def filter_nodes(self, state: fw.CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        """:meth:`filter` over ``nodes``: a node without limits (no CSINode, or one
        without counts) passes at a look-up."""
        catalog = state.read(NAME)
        if not isinstance(catalog, VolumeCatalog):
            return nodes
        csinodes = catalog.csinodes
        if not csinodes:
            return nodes
        namespace, volumes, exceeded = pod.namespace, pod.volumes, limits.exceeded
        return [n for n in nodes
                if (found := csinodes.get(n.node.name)) is None or not found.limits
                or exceeded(catalog, namespace, volumes, n.node.name) is None]

    def verdict_digest(self, state: fw.CycleState, pod: PodInfo) -> object:
        """Without CSINodes every node passes; with them the verdicts follow from the
        claims each node's pods use: NO_DIGEST."""
        catalog = state.read(NAME)
        if not isinstance(catalog, VolumeCatalog) or not catalog.csinodes:
            return None
        return fw.NO_DIGEST

    def changed_domains(self, old: object, new: object) -> dict[str, set[str]] | None:
        return {} if old is None and new is None else None

    def refused(self, state: fw.CycleState, pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        return None

    def label_verdict(self, state: fw.CycleState,
                      pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        return None


def factory(args: object | None) -> NodeVolumeLimits:
    return NodeVolumeLimits()
