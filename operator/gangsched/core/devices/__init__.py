"""Dynamic Resource Allocation: the structured allocator, as kube-scheduler's.

* :mod:`.catalog`: the DeviceClasses, ResourceSlices and ResourceClaimTemplates the core
  observed (:class:`~gangsched.core.values.observations.DeviceObserved`); claims stay in
  the volume catalogue, which holds this one.
"""
