"""VolumeRestrictions: a ReadWriteOncePod claim is used by one pod at a time.

As kube-scheduler v1.32 (PreFilter): when another pod that holds a node (bound, or
assumed by this scheduler) already uses a claim with access mode ReadWriteOncePod, the
pod fits nowhere: ``node has pod using PersistentVolumeClaim with the same name and
ReadWriteOncePod access mode``. Claims that are missing are VolumeBinding's concern.
"""

from __future__ import annotations

from gangsched.core.values.volume_specs import AccessMode, PodVolumes, claim_key
from gangsched.core.volumes.catalog import VolumeCatalog

RWOP_CONFLICT = ("node has pod using PersistentVolumeClaim with the same name and "
                 "ReadWriteOncePod access mode")


def conflict(catalog: VolumeCatalog, uid: str, namespace: str,
             volumes: PodVolumes) -> str | None:
    """The reason pod ``uid`` may not use its ReadWriteOncePod claims now, or None."""
    for item in volumes.claims:
        key = claim_key(namespace, item.name)
        claim = catalog.claims.get(key)
        if claim is None or AccessMode.READ_WRITE_ONCE_POD not in claim.access_modes:
            continue
        if catalog.users.get(key, set()) - {uid}:
            return RWOP_CONFLICT
    return None
