"""Volumes and dynamic resources, as kube-scheduler's volume plugins see them.

One concept per module:

* :mod:`.model`: the values (PersistentVolumes, claims, StorageClasses, CSINodes,
  CSIDrivers, CSIStorageCapacities, ResourceClaims, a pod's volumes) the translation
  layer builds from API objects.
* :mod:`.catalog`: the mutable store of those objects, with the bindings the core has
  *assumed* but not yet seen written (kube-scheduler's assume cache).
* :mod:`.binding`: VolumeBinding: PreFilter (missing, deleting or Immediate unbound
  claims), Filter (bound PVs' node affinity, a static PV to match or a class to
  provision for each unbound WaitForFirstConsumer claim, within its allowed topologies
  and published storage capacity), Reserve (assume) and the writes of PreBind
  (:class:`~gangsched.core.values.decisions.VolumeWrite`; the shell waits for the claims to be
  bound before the pod's Binding).
* :mod:`.restrictions`: VolumeRestrictions (ReadWriteOncePod claims used once).
* :mod:`.limits`: NodeVolumeLimits (CSINode allocatable counts per driver, migrated
  in-tree volumes included).
* :mod:`.zone`: VolumeZone (a bound PV's zone and region labels against the node's).
* :mod:`.claims`: DynamicResources: a pod with ``spec.resourceClaims`` is never bound
  before its claims are allocated.
* :mod:`.placing`: Reserve and PreBind for the scheduler's placements.

The plugins of the same names in :mod:`gangsched.core.plugins` run these rules at
their extension points.
"""
