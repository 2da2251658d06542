"""Reserve and PreBind of VolumeBinding, for the scheduler's placements.

Placement runs the profile (Filter included) through ``Cluster.place``, which returns a
node name. Once the scheduler takes that node for a pod, :func:`reserve` assumes the
pod's volume bindings there at once (kube-scheduler's Reserve), so that the next pod
placed (another member of the same gang, say) cannot take the same volume, and
:func:`writes` gives the PreBind writes its BindPod carries, done before its Binding. A
gang's members are reserved one by one as they are assumed, all before any is bound.
Assumptions are given back when the pod's placement is undone (``Scheduler.uncharge`` of
a pod not yet bound) or its bind fails. The VolumeBinding plugin's own Reserve and
PreBind (:mod:`gangsched.core.plugins.volumebinding`) do the same from a cycle state.

Claims of ``spec.resourceClaims`` (DynamicResources) are allocated on the node and
assumed the same way (:func:`gangsched.core.volumes.claims.reserve`), and their writes
(allocation and reservation of each claim) follow the volume writes.

Pods without claims pay one attribute test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.values.decisions import VolumeWrite
from gangsched.core.values.model import Pod, PodUID, Scoring
from gangsched.core.volumes import binding
from gangsched.core.volumes import claims as resource_claims

VOLUME_BINDING = "VolumeBinding"
DYNAMIC_RESOURCES = "DynamicResources"

if TYPE_CHECKING:
    from gangsched.core.placement.cluster import Cluster
    from gangsched.core.volumes.catalog import VolumeCatalog


def reserve(cluster: Cluster, volumes: VolumeCatalog, uid: PodUID, pod: Pod, node: str) -> None:
    """Assume the bindings of ``pod`` (whose uid is ``uid``) on ``node`` in ``volumes`` (a
    no-op for a pod without claims, for a node ``cluster`` does not know, when they do not
    fit there, which Filter has ruled out, or when the profile disables VolumeBinding)."""
    hold_claims(cluster, volumes, uid, pod, node)
    if not pod.volumes.claims:
        return
    if cluster.framework(Scoring.BINPACK).plugin(VOLUME_BINDING) is None:
        return  # the profile disables VolumeBinding: claims are left to others
    state = cluster.nodes.get(node)
    claims = binding.prefilter(volumes, pod.namespace, pod.volumes)
    if state is None or isinstance(claims, binding.Blocked):
        return
    reason, plan = binding.match(volumes, claims, state.node)
    if reason is None:
        volumes.assume(uid, plan)


def hold_claims(cluster: Cluster, volumes: VolumeCatalog, uid: PodUID, pod: Pod,
                node: str) -> str | None:
    """Make sure the resource claims of ``pod`` are held for it on ``node``: reserved for
    it, or allocated and assumed there now (a placeholder's: its task group's, in
    memory). The reason when they cannot be (then the pod
    must not be bound there); None for a pod without claims, or when the profile
    disables DynamicResources."""
    names = pod.volumes.resource_claims + tuple(name for name, _ in pod.volumes.held_claims)
    if not names or resource_claims.held(volumes, pod.namespace, names, uid, pod.pod_group):
        return None
    if cluster.framework(Scoring.BINPACK).plugin(DYNAMIC_RESOURCES) is None:
        return None
    state = cluster.nodes.get(node)
    if state is None:
        return f"node {node} is gone"
    return resource_claims.reserve(volumes, pod.namespace, pod.volumes, uid, state.node,
                                   pod.pod_group)


def writes(volumes: VolumeCatalog, uid: PodUID, pod: Pod) -> tuple[VolumeWrite, ...]:
    """The PreBind writes for the bindings and claims the pod ``uid`` assumed in
    ``volumes`` (none for most pods, and for a pod it does not know): volume bindings
    first, then claim allocations and reservations."""
    assumed = volumes.by_pod.get(uid)
    found = binding.writes(volumes, assumed) if assumed else ()
    if pod.volumes.resource_claims and uid in volumes.devices.by_pod:
        found += resource_claims.writes(volumes, uid, pod.name, pod.volumes.resource_claims,
                               pod.namespace)
    return found
