"""The DeviceClasses, ResourceSlices and ResourceClaimTemplates the core knows, and which
devices are taken.

Level-based: each object is kept as last observed (``DeviceObserved``) until it is gone
(``DeviceGone``). The volume catalogue holds one (``VolumeCatalog.devices``), next to the
ResourceClaims it already keeps, and tells it of every claim seen or gone
(:meth:`DeviceCatalog.claim_seen`).

A device is *taken* (kube-scheduler's allocated state plus its in-flight allocations)
when an observed claim's ``status.allocation`` names it (admin-access results do not
take a device), or when the core *assumed* it for a claim of a pod it placed and has not
yet seen that claim's allocation written (:meth:`assume`). An assumption ends when the
claim is seen allocated (the allocation is then what takes the device), when the pod's
placement is undone or its writes fail (:meth:`forget_pod`), or when the claim goes. So a
restart rebuilds the taken devices from the claims alone.

``epoch`` grows on every change that may let a waiting pod fit (a slice published, a
claim deallocated...); ``version`` on every change of what is taken.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.devices.celeval import SelectorCache
from gangsched.core.devices.matching import MatchIndex
from gangsched.core.devices.pools import PoolIndex, PoolKey
from gangsched.core.values.devices import (
    AllocationResult,
    ConsumerRef,
    DeviceClass,
    DeviceID,
    DeviceObject,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)


@dataclass(frozen=True, slots=True)
class Assumed:
    """A claim of pod ``uid`` the core allocated (``allocation`` set) or reserved
    (``allocation`` None: it was allocated already) and has not seen written."""

    claim: str
    uid: str
    resource_version: str
    allocation: AllocationResult | None
    consumer: ConsumerRef | None = None
    """Whom the claim is reserved for when not the pod: its PodGroup."""


class DeviceCatalog:
    """Classes by name, slices by name, templates by ``namespace/name``; taken devices."""

    def __init__(self) -> None:
        self.classes: dict[str, DeviceClass] = {}
        self.slices: dict[str, ResourceSlice] = {}
        self.templates: dict[str, ResourceClaimTemplate] = {}
        self.selectors = SelectorCache()
        self.taken: dict[DeviceID, str] = {}
        """Device -> the claim (``namespace/name``) that takes it, observed or assumed."""
        self.matching = MatchIndex(self.taken)
        self.epoch = 0
        self.version = 0
        self.inventory = 0
        """Grows on every change of a class, slice or template (not of a claim)."""
        self._index: PoolIndex | None = None
        self._allocated: dict[str, tuple[DeviceID, ...]] = {}
        """Claim key -> the devices its observed allocation takes."""
        self.assumed: dict[str, Assumed] = {}
        """Claim key -> what the core assumed for it."""
        self.by_pod: dict[str, list[str]] = {}
        """Pod uid -> the claims it has assumptions for."""
        self.group_claims: dict[str, tuple[str, ConsumerRef]] = {}
        """Claim key -> (the PodGroup key, the PodGroup as consumer) of the Workload API
        PodGroups' claims: allocated once for the group, reserved for it."""
        self._groups: dict[str, tuple[str, ...]] = {}

    # --- observed objects ---------------------------------------------------------------

    def upsert(self, obj: DeviceObject) -> None:
        """Record the latest version of ``obj``."""
        self.epoch += 1
        self.inventory += 1
        if isinstance(obj, DeviceClass):
            self.classes[obj.name] = obj
            self.matching.clear()
        elif isinstance(obj, ResourceSlice):
            self.slices[obj.name] = obj
            self._index = None
        else:
            self.templates[obj.key] = obj

    def remove(self, kind: str, key: str) -> None:
        """Forget the DeviceClass, ResourceSlice (by name) or ResourceClaimTemplate (by
        ``namespace/name``) ``key``. Unknown kinds and keys are ignored."""
        self.epoch += 1
        self.inventory += 1
        if kind == "DeviceClass":
            self.classes.pop(key, None)
            self.matching.clear()
        elif kind == "ResourceSlice":
            self.slices.pop(key, None)
            self._index = None
        elif kind == "ResourceClaimTemplate":
            self.templates.pop(key, None)

    def group_seen(self, group: str, namespace: str, claims: tuple[str, ...],
                   consumer: ConsumerRef | None) -> None:
        """PodGroup ``group`` (``namespace/...``) now has ``claims`` (object names),
        reserved for ``consumer``; no claims or no consumer: it has none."""
        keys = tuple(f"{namespace}/{name}" for name in claims) if consumer is not None else ()
        if self._groups.get(group, ()) == keys and all(
                self.group_claims.get(k, ("", None))[1] == consumer for k in keys):
            return
        self.group_gone(group)
        if keys and consumer is not None:
            self._groups[group] = keys
            for key in keys:
                self.group_claims[key] = (group, consumer)
        self.epoch += 1

    @property
    def group_keys(self) -> dict[str, tuple[str, ...]]:
        """PodGroup key -> the keys of its claims (groups with claims only)."""
        return self._groups

    def group_gone(self, group: str) -> None:
        """PodGroup ``group`` is gone: its claims are no one's group claims any more."""
        for key in self._groups.pop(group, ()):
            if self.group_claims.get(key, ("",))[0] == group:
                del self.group_claims[key]
            self.epoch += 1

    def pools(self) -> PoolIndex:
        """The pools of the slices as they are now (rebuilt after a slice changes)."""
        if self._index is None:
            self._index = PoolIndex(self.slices)
        return self._index

    # --- taken devices ------------------------------------------------------------------

    def claim_seen(self, claim: ResourceClaim | None, key: str) -> None:
        """Claim ``key`` is now ``claim`` (None: gone): what its allocation takes."""
        self.version += 1
        self.epoch += 1
        for device in self._allocated.pop(key, ()):
            if self.taken.get(device) == key:
                self._release(device)
        assumed = self.assumed.get(key)
        if claim is None or (assumed is not None and claim.allocation is not None
                             and (assumed.allocation is None
                                  or claim.resource_version != assumed.resource_version)):
            self._drop(key)
        if claim is None or claim.allocation is None:
            return
        devices = tuple(r.device_id for r in claim.allocation.devices if not r.admin_access)
        self._allocated[key] = devices
        for device in devices:
            self._take(device, key)

    def assume(self, item: Assumed) -> None:
        """Take what ``item`` allocates for its pod until the claim is seen written."""
        self.version += 1
        self._drop(item.claim)
        self.assumed[item.claim] = item
        self.by_pod.setdefault(item.uid, []).append(item.claim)
        if item.allocation is not None:
            for result in item.allocation.devices:
                if not result.admin_access:
                    self._take(result.device_id, item.claim)

    def forget_pod(self, uid: str) -> None:
        """Give back what pod ``uid`` assumed. Unknown: no-op."""
        for key in self.by_pod.pop(uid, ()):
            found = self.assumed.get(key)
            if found is not None and found.uid == uid:
                self._drop(key)
                self.epoch += 1

    def _drop(self, key: str) -> None:
        found = self.assumed.pop(key, None)
        if found is None:
            return
        self.version += 1
        claims = self.by_pod.get(found.uid)
        if claims is not None and key in claims:
            claims.remove(key)
            if not claims:
                del self.by_pod[found.uid]
        if found.allocation is not None:
            for result in found.allocation.devices:
                if self.taken.get(result.device_id) == key:
                    self._release(result.device_id)
            for device in self._allocated.get(key, ()):
                self._take(device, key)

    def _take(self, device: DeviceID, key: str) -> None:
        if device not in self.taken:
            self.matching.changed(device, -1)
        self.taken[device] = key

    def _release(self, device: DeviceID) -> None:
        del self.taken[device]
        self.matching.changed(device, +1)

    def taken_in(self, pool: PoolKey) -> list[DeviceID]:
        """The taken devices of ``pool`` (for its shared counters)."""
        return [d for d in self.taken if d.driver == pool.driver and d.pool == pool.pool]
