"""VolumeZone (PreFilter, Filter): a bound PV's zone and region labels against the node's.

See :mod:`gangsched.core.volumes.zone` (``node(s) had no available volume zone``). PreFilter
collects the PVs the pod's claims are bound to (or assumed bound to) and skips a pod
without any.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.volume_specs import PersistentVolume, claim_key
from gangsched.core.volumes import zone

NAME = "VolumeZone"
_REJECT = fw.Rejections()


class VolumeZone:
    name = NAME
    static = False

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        catalog = snapshot.volumes
        bound: list[PersistentVolume] = []
        for item in pod.volumes.claims:
            claim = catalog.claims.get(claim_key(pod.namespace, item.name))
            volume = catalog.volumes.get(catalog.volume_of(claim)) if claim else None
            if volume is not None and volume.labels:
                bound.append(volume)
        if not bound:
            return fw.SKIP
        state.write(NAME, tuple(bound))
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        bound = state.read(NAME)
        if not isinstance(bound, tuple):
            return fw.SUCCESS
        reason = zone.conflict(bound, node.node)
        return fw.SUCCESS if reason is None else _REJECT(reason)


def factory(args: object | None) -> VolumeZone:
    return VolumeZone()
