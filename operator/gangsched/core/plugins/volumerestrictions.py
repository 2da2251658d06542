"""VolumeRestrictions (PreFilter): a ReadWriteOncePod claim serves one pod at a time.

See :mod:`gangsched.core.volumes.restrictions`: a pod whose ReadWriteOncePod claim is
used by another pod holding a node fits nowhere (``node has pod using
PersistentVolumeClaim with the same name and ReadWriteOncePod access mode``); preemption
of that pod could help, so the verdict is Unschedulable. Skips pods without claims.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.volumes import restrictions

NAME = "VolumeRestrictions"


class VolumeRestrictions:
    name = NAME

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        if not pod.volumes.claims:
            return fw.SKIP
        reason = restrictions.conflict(snapshot.volumes, pod.uid, pod.namespace, pod.volumes)
        return fw.SUCCESS if reason is None else fw.unschedulable(reason)


def factory(args: object | None) -> VolumeRestrictions:
    return VolumeRestrictions()
