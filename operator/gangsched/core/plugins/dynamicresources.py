"""DynamicResources (PreFilter, Filter): kube-scheduler's structured allocation.

See :mod:`gangsched.core.volumes.claims`: PreFilter reads the pod's claims (waiting,
in kube-scheduler's words, for a claim not made yet, missing, being deleted or in use,
or for a DeviceClass that does not exist); Filter wants each allocated claim's
``nodeSelector`` to select the node and every claim still to allocate to be allocated
there together (``cannot allocate all claims``). Reserve and PreBind (assume the devices,
write each claim's allocation and reservation before the Binding) are carried out by the
scheduler once it takes the node, through
:mod:`gangsched.core.placement.volume_assumptions`. When the resource.k8s.io API is
not served, the pod waits saying so. A placeholder's claims are its task group's, held
in memory. Skips pods without any.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.devices import DeviceID
from gangsched.core.volumes import claims
from gangsched.core.volumes.catalog import VolumeCatalog

NAME = "DynamicResources"
_REJECT = fw.Rejections()


class DynamicResources:
    name = NAME
    static = False
    scan_cost = 90

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        volumes = pod.volumes
        if not volumes.dynamic:
            return fw.SKIP
        plan, why = claims.prefilter(snapshot.volumes, pod.namespace, volumes, pod.uid,
                                     pod.owner)
        if why is not None:
            return fw.unresolvable(why)
        state.write(NAME, (snapshot.volumes, plan))
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        found = state.read(NAME)
        if not isinstance(found, tuple):
            return fw.SUCCESS
        catalog, plan = found
        assert isinstance(catalog, VolumeCatalog) and isinstance(plan, claims.ClaimPlan)
        reason = claims.node_failure(catalog, plan, node.node, _freed(state))
        return fw.SUCCESS if reason is None else _REJECT(reason)

    def filter_nodes(self, state: fw.CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        found = state.read(NAME)
        if not isinstance(found, tuple):
            return nodes
        catalog, plan = found
        assert isinstance(catalog, VolumeCatalog) and isinstance(plan, claims.ClaimPlan)
        reasons = claims.nodes_failures(catalog, plan, [state.node for state in nodes],
                                        _freed(state))
        return [state for state, reason in zip(nodes, reasons, strict=True) if reason is None]


def _freed(state: fw.CycleState) -> frozenset[DeviceID]:
    """The devices to count as free: those of the placeholder the pod replaces."""
    found = state.read(claims.FREED)
    return found if isinstance(found, frozenset) else frozenset()


def factory(args: object | None) -> DynamicResources:
    return DynamicResources()
