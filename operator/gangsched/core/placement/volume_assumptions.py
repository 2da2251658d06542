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

Pods without claims pay one attribute test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.values.decisions import VolumeWrite
from gangsched.core.values.model import Pod, PodUID, Scoring
from gangsched.core.volumes import binding

VOLUME_BINDING = "VolumeBinding"

if TYPE_CHECKING:
    from gangsched.core.placement.cluster import Cluster
    from gangsched.core.volumes.catalog import VolumeCatalog


def reserve(cluster: Cluster, volumes: VolumeCatalog, uid: PodUID, pod: Pod, node: str) -> None:
    """Assume the bindings of ``pod`` (whose uid is ``uid``) on ``node`` in ``volumes`` (a
    no-op for a pod without claims, for a node ``cluster`` does not know, when they do not
    fit there, which Filter has ruled out, or when the profile disables VolumeBinding)."""
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


def writes(volumes: VolumeCatalog, uid: PodUID) -> tuple[VolumeWrite, ...]:
    """The PreBind writes for the bindings the pod ``uid`` assumed in ``volumes`` (none for
    most pods, and for a pod it does not know)."""
    assumed = volumes.by_pod.get(uid)
    if not assumed:
        return ()
    return binding.writes(volumes, assumed)
