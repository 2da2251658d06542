"""NodeVolumeLimits: how many volumes of a CSI driver a node can attach.

As kube-scheduler v1.32's CSI limits: a node's CSINode gives, per driver, an
``allocatable.count``. The pod's new volumes of a driver (claims not already used on the
node, and inline CSI volumes) plus those the node's pods use must stay within it:
``node(s) exceed max volume count``. A claim's driver is its PV's ``csi.driver`` when
bound, else its StorageClass's provisioner. A node without a CSINode, or a driver
without a count, has no limit; a pod with no new volume of a driver is never refused
for that driver (as in kube-scheduler, a node already over its limit keeps its pods).

In-tree volumes count against the CSI driver they migrated to, as kube-scheduler's
``CSILimits`` does through the CSI translation library (migration is GA for these, so
``isCSIMigrationOn`` holds whenever the node has a CSINode): a PV or inline volume of
``awsElasticBlockStore``, ``gcePersistentDisk``, ``azureDisk`` or ``cinder`` is
translated at the edge (the PV's ``csi_driver``, the pod's ``csi_inline``), and an
unbound claim of an in-tree provisioner (``kubernetes.io/aws-ebs``...) counts for the
driver :data:`~gangsched.core.values.volume_specs.MIGRATED_PROVISIONERS` names.
"""

from __future__ import annotations

from gangsched.core.values.volume_specs import (
    MIGRATED_PROVISIONERS,
    ClaimKey,
    PodVolumes,
    claim_key,
)
from gangsched.core.volumes.catalog import VolumeCatalog

EXCEEDED = "node(s) exceed max volume count"


def driver_of(catalog: VolumeCatalog, key: ClaimKey) -> str:
    """The CSI driver serving claim ``key``; empty when unknown or not CSI."""
    claim = catalog.claims.get(key)
    if claim is None:
        return ""
    name = catalog.volume_of(claim)
    if name:
        volume = catalog.volumes.get(name)
        return volume.csi_driver if volume is not None else ""
    storage_class = catalog.classes.get(claim.storage_class or "")
    if storage_class is None:
        return ""
    return MIGRATED_PROVISIONERS.get(storage_class.provisioner, storage_class.provisioner)


def exceeded(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes,
             node: str) -> str | None:
    """The reason the pod's volumes do not fit ``node``'s limits, or None."""
    csinode = catalog.csinodes.get(node)
    if csinode is None or not csinode.limits:
        return None
    on_node = catalog.node_claims.get(node, {})
    new: dict[str, int] = {}
    for item in volumes.claims:
        key = claim_key(namespace, item.name)
        if key in on_node:
            continue
        driver = driver_of(catalog, key)
        if driver in csinode.limits:
            new[driver] = new.get(driver, 0) + 1
    for driver in volumes.csi_inline:
        if driver in csinode.limits:
            new[driver] = new.get(driver, 0) + 1
    if not new:
        return None
    used: dict[str, int] = dict(catalog.node_inline.get(node, {}))
    for key in on_node:
        driver = driver_of(catalog, key)
        if driver in new:
            used[driver] = used.get(driver, 0) + 1
    for driver, count in new.items():
        if used.get(driver, 0) + count > csinode.limits[driver]:
            return EXCEEDED
    return None
