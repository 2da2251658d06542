"""The DeviceClasses, ResourceSlices and ResourceClaimTemplates the core knows.

Level-based: each object is kept as last observed (``DeviceObserved``) until it is gone
(``DeviceGone``). ``epoch`` grows on every change (a slice published, a class edited):
pods waiting for devices are tried again then. The volume catalogue holds one
(``VolumeCatalog.devices``), next to the ResourceClaims it already keeps.
"""

from __future__ import annotations

from gangsched.core.values.devices import (
    DeviceClass,
    DeviceObject,
    ResourceClaimTemplate,
    ResourceSlice,
)


class DeviceCatalog:
    """Classes by name, slices by name, templates by ``namespace/name``."""

    def __init__(self) -> None:
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        self.templates: dict[str, ResourceClaimTemplate] = {}
        self.epoch = 0

    def upsert(self, obj: DeviceObject) -> None:
        """Record the latest version of ``obj``."""
        self.epoch += 1
        if isinstance(obj, DeviceClass):
            self.classes[obj.name] = obj
        elif isinstance(obj, ResourceSlice):
            self.slices[obj.name] = obj
        else:
            self.templates[obj.key] = obj

    def remove(self, kind: str, key: str) -> None:
        """Forget the DeviceClass, ResourceSlice (by name) or ResourceClaimTemplate (by
        ``namespace/name``) ``key``. Unknown kinds and keys are ignored."""
        self.epoch += 1
        if kind == "DeviceClass":
            self.classes.pop(key, None)
        elif kind == "ResourceSlice":
            self.slices.pop(key, None)
        elif kind == "ResourceClaimTemplate":
            self.templates.pop(key, None)
