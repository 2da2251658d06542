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
from gangsched.core.values.model import Scoring
from gangsched.core.volumes import binding

VOLUME_BINDING = "VolumeBinding"

if TYPE_CHECKING:
    from gangsched.core.state.records import PodState
    from gangsched.core.state.session import Session


def reserve(s: Session, ps: PodState, node: str) -> None:
    """Assume the pod's volume bindings on ``node`` (a no-op for a pod without claims,
    when they do not fit there, which Filter has ruled out, or when the profile disables
    VolumeBinding)."""
    pod = ps.pod
    if not pod.volumes.claims:
        return
    if s.cluster.framework(Scoring.BINPACK).plugin(VOLUME_BINDING) is None:
        return  # the profile disables VolumeBinding: claims are left to others
    state = s.cluster.nodes.get(node)
    claims = binding.prefilter(s.volumes, pod.namespace, pod.volumes)
    if state is None or isinstance(claims, binding.Blocked):
        return
    reason, plan = binding.match(s.volumes, claims, state.node)
    if reason is None:
        s.volumes.assume(ps.uid, plan)


def writes(s: Session, ps: PodState) -> tuple[VolumeWrite, ...]:
    """The PreBind writes for the bindings pod ``ps`` assumed (none for most pods)."""
    assumed = s.volumes.by_pod.get(ps.uid)
    if not assumed:
        return ()
    return binding.writes(s.volumes, assumed)
