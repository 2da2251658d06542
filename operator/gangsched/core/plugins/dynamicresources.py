"""DynamicResources (PreFilter, Filter): a pod with resource claims is never bound blindly.

See :mod:`gangsched.core.volumes.claims`: until every claim of the pod exists and is
allocated (by something else: gangsched allocates no devices), the pod fits nowhere and
says why; then only the nodes of each allocation's ``nodeSelector`` fit. When the
resource.k8s.io API is not served, the pod waits saying so. Skips pods without
``spec.resourceClaims``.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.volumes import claims

NAME = "DynamicResources"
_REJECT = fw.Rejections()


class DynamicResources:
    name = NAME
    static = False

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        volumes = pod.volumes
        if not volumes.resource_claims and not volumes.unresolved_claims:
            return fw.SKIP
        allocated, why = claims.prefilter(snapshot.volumes, pod.namespace, volumes)
        if why is not None:
            return fw.unresolvable(why)
        state.write(NAME, allocated)
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        allocated = state.read(NAME)
        if not isinstance(allocated, tuple):
            return fw.SUCCESS
        reason = claims.node_failure(allocated, node.node)
        return fw.SUCCESS if reason is None else _REJECT(reason)


def factory(args: object | None) -> DynamicResources:
    return DynamicResources()
