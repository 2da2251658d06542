"""Watches of what the volume plugins and priorities read, and the volume writes.

List+watch (with :class:`~gangsched.shell.watch.Reflector`) of PersistentVolumes,
PersistentVolumeClaims, StorageClasses and CSINodes, translated by
:mod:`gangsched.translate.volumes` into observations; and of Dynamic Resource
Allocation's objects when the resource.k8s.io API is served (tried at ``v1``, then
``v1beta1``; a 404 on both means it is not, which the core is told: pods with resource
claims then wait, saying so; a 403, the operator's role not granting it, is taken the
same way, with a warning): ResourceClaims (``VolumeObserved``, read by
:mod:`gangsched.translate.device_claims`: a restart rebuilds every allocation from
them), and at the same version DeviceClasses, ResourceSlices and ResourceClaimTemplates
(``DeviceObserved``/``DeviceGone``).

:func:`write_volumes` carries out a BindPod's volume writes before its Binding:

* :class:`~gangsched.core.values.decisions.BindVolume`: the PV is read, must still be at the
  resourceVersion the core chose it at and free (else 409: another claim took it), and
  is updated with ``spec.claimRef`` (an update, so a concurrent change is a 409 too). The
  PV controller then binds the claim to it.
* :class:`~gangsched.core.values.decisions.AnnotateClaim`: the claim is merge-patched with the
  ``volume.kubernetes.io/selected-node`` annotation (nothing else); the provisioner
  then creates a volume reachable from that node.
* :class:`~gangsched.core.values.decisions.AllocateClaim` and
  :class:`~gangsched.core.values.decisions.ReserveClaim`: a ResourceClaim's allocation
  and reservation for the pod (:func:`gangsched.shell.resourceclaims.reserve_claim`);
  nothing is waited for after them.

A failure raises :class:`~gangsched.shell.client.ApiError`; the caller does not bind the
pod and reports ``VolumeBindFailed``. It returns the resourceVersion of each object
written, and the caller then waits, as kube-scheduler's PreBind does, until the claims
are bound (:mod:`gangsched.shell.prebind`, fed by the claim and PV watches here:
:attr:`StorageWatches.bindings`) before it creates the Binding.

CSIDrivers and CSIStorageCapacities are watched too: a capacity-tracking driver's
claims are provisioned only for nodes with room published for them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core.values.decisions import (
    AllocateClaim,
    AnnotateClaim,
    BindVolume,
    ReserveClaim,
    VolumeWrite,
)
from gangsched.core.values.devices import DeviceObject
from gangsched.core.values.observations import (
    DeviceGone,
    DeviceObserved,
    Observation,
    ResourceClaimsServed,
    VolumeGone,
    VolumeObserved,
)
from gangsched.core.values.volume_specs import SELECTED_NODE, VolumeObject
from gangsched.shell.client import ApiError, KubeClient
from gangsched.shell.prebind import BindingState
from gangsched.shell.resourceclaims import release_claim, reserve_claim
from gangsched.shell.watch import Reflector
from gangsched.translate import device_claims, devices
from gangsched.translate import volumes as translate

log = logging.getLogger(__name__)

JSON = Mapping[str, Any]
RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS = ("v1", "v1beta1")
DEVICE_KINDS: tuple[tuple[str, str, bool, Callable[[Mapping[str, Any]], DeviceObject]], ...] = (
    ("deviceclasses", "DeviceClass", False, devices.device_class),
    ("resourceslices", "ResourceSlice", False, devices.resource_slice),
    ("resourceclaimtemplates", "ResourceClaimTemplate", True,
     device_claims.resource_claim_template),
)
"""The other kinds of resource.k8s.io, watched at the version ResourceClaims are served."""
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def _key(obj: JSON, namespaced: bool) -> str:
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    return f"{meta.get('namespace', '')}/{name}" if namespaced else name


class StorageWatches:
    """The reflectors for storage objects (and ResourceClaims), feeding ``submit``."""

    def __init__(self, client: KubeClient, submit: Callable[[Observation], None], *,
                 watch_timeout: int = 300) -> None:
        self.client = client
        self.submit = submit
        self.watch_timeout = watch_timeout
        kinds: tuple[tuple[str, str, bool, Callable[[JSON], VolumeObject]], ...] = (
            ("/api/v1/persistentvolumes", "PersistentVolume", False,
             translate.persistent_volume),
            ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim", True,
             translate.persistent_volume_claim),
            ("/apis/storage.k8s.io/v1/storageclasses", "StorageClass", False,
             translate.storage_class),
            ("/apis/storage.k8s.io/v1/csinodes", "CSINode", False, translate.csi_node),
            ("/apis/storage.k8s.io/v1/csidrivers", "CSIDriver", False, translate.csi_driver),
            ("/apis/storage.k8s.io/v1/csistoragecapacities", "CSIStorageCapacity", True,
             translate.storage_capacity),
        )
        self.bindings = BindingState()
        """What PreBind's wait looks at: the latest claims and PVs."""
        self.reflectors = [self._reflector(path, kind, namespaced, reader)
                           for path, kind, namespaced, reader in kinds]
        self.claims: Reflector | None = None
        self.device_reflectors: list[Reflector] = []
        self.resource_version = RESOURCE_VERSIONS[0]
        """The resource.k8s.io version served (once :meth:`list` found it)."""

    def _reflector(self, path: str, kind: str, namespaced: bool,
                   reader: Callable[[JSON], VolumeObject]) -> Reflector:
        seen = {"PersistentVolume": self.bindings.volume_event,
                "PersistentVolumeClaim": self.bindings.claim_event}.get(kind)

        def on_event(event: str, obj: JSON) -> None:
            if seen is not None:
                seen(event, obj)
            if event == "DELETED":
                self.submit(VolumeGone(kind, _key(obj, namespaced)))
            else:
                self.submit(VolumeObserved(reader(obj)))

        return Reflector(self.client, path, on_event, name=path.rsplit("/", 1)[-1],
                         timeout_seconds=self.watch_timeout)

    def first_lists(self) -> list[str]:
        """The paths :meth:`list` lists (ResourceClaims: the version tried first)."""
        return [*(r.path for r in self.reflectors),
                f"/apis/{RESOURCE_GROUP}/{RESOURCE_VERSIONS[0]}/resourceclaims"]

    async def list(self) -> None:
        """List every kind once (raises ApiError on failure: the caller retries); find
        out whether ResourceClaims are served."""
        for reflector in self.reflectors:
            await reflector.list()
        if self.claims is None:
            for version in RESOURCE_VERSIONS:
                path = f"/apis/{RESOURCE_GROUP}/{version}/resourceclaims"
                try:
                    await self.client.list(path)
                except ApiError as err:
                    if err.code == 404:
                        continue
                    if err.code == 403:  # not granted: as if not served, and say so
                        log.warning("cannot list %s (%s): pods with resource claims will "
                                    "wait as if DRA were not served", path, err)
                        break
                    raise
                self.claims = self._reflector(path, "ResourceClaim", True,
                                              device_claims.resource_claim)
                self.resource_version = version
                self.device_reflectors = [
                    self._device_reflector(f"/apis/{RESOURCE_GROUP}/{version}/{plural}", kind,
                                           namespaced, reader)
                    for plural, kind, namespaced, reader in DEVICE_KINDS]
                break
        for reflector in list(self.device_reflectors):
            try:
                await reflector.list()
            except ApiError as err:
                if err.code not in (403, 404):
                    raise
                log.warning("cannot list %s (%s): its objects are taken as absent",
                            reflector.path, err)
                self.device_reflectors.remove(reflector)
        if self.claims is not None:
            await self.claims.list()
        self.submit(ResourceClaimsServed(self.claims is not None))

    def _device_reflector(self, path: str, kind: str, namespaced: bool,
                          reader: Callable[[JSON], DeviceObject]) -> Reflector:
        def on_event(event: str, obj: JSON) -> None:
            if event == "DELETED":
                self.submit(DeviceGone(kind, _key(obj, namespaced)))
            else:
                self.submit(DeviceObserved(reader(obj)))

        return Reflector(self.client, path, on_event, name=path.rsplit("/", 1)[-1],
                         timeout_seconds=self.watch_timeout)

    async def run(self, stop: asyncio.Event) -> None:
        """Watch every kind until ``stop``."""
        watched = [*self.reflectors, *self.device_reflectors,
                   *([self.claims] if self.claims is not None else [])]
        await asyncio.gather(*(r.run(stop) for r in watched))


async def write_volumes(client: KubeClient, writes: tuple[VolumeWrite, ...], *,
                        resource_version: str = RESOURCE_VERSIONS[0],
                        written: dict[str, str] | None = None) -> dict[str, str]:
    """Carry out a pod's volume and claim writes, in order (see the module docstring);
    the resourceVersion each left its object at, by ``pv/<name>``,
    ``pvc/<namespace>/<name>`` and ``resourceclaim/<namespace>/<name>`` (empty when
    nothing had to be written), filled into ``written`` as they succeed (so that, when
    a later one fails, the caller knows which claims to release). ``resource_version``
    is the resource.k8s.io version served."""
    written = {} if written is None else written
    for write in writes:
        if isinstance(write, AllocateClaim | ReserveClaim):
            ref = write.reserved_for
            written[f"resourceclaim/{write.namespace}/{write.claim}"] = await reserve_claim(
                client, version=resource_version, namespace=write.namespace, name=write.claim,
                claim_uid=write.claim_uid, resource_version=write.resource_version,
                allocation=device_claims.allocation_to_k8s(write.allocation)
                if isinstance(write, AllocateClaim) else None,
                pod=ref.name, pod_uid=ref.uid, resource=ref.resource, api_group=ref.api_group)
            continue
        if isinstance(write, BindVolume):
            written[f"pv/{write.volume}"] = await _bind_volume(client, write)
        elif isinstance(write, AnnotateClaim):
            claim = await client.patch(
                "", "v1", "persistentvolumeclaims", write.namespace, write.claim,
                {"metadata": {"annotations": {SELECTED_NODE: write.node}}})
            written[f"pvc/{write.namespace}/{write.claim}"] = _version(claim)
    return written


def _version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


async def _bind_volume(client: KubeClient, write: BindVolume) -> str:
    volume = dict(await client.get("", "v1", "persistentvolumes", None, write.volume))
    meta = volume.get("metadata") or {}
    spec = dict(volume.get("spec") or {})
    ref = spec.get("claimRef")
    if isinstance(ref, Mapping) and ref.get("name"):
        if (ref.get("namespace"), ref.get("name")) == (write.namespace, write.claim):
            return ""  # bound to this claim already (an earlier attempt did it)
        raise ApiError(409, "Conflict", f"persistentvolume {write.volume} is bound to "
                                        f"{ref.get('namespace')}/{ref.get('name')} now")
    if write.resource_version and meta.get("resourceVersion") != write.resource_version:
        raise ApiError(409, "Conflict", f"persistentvolume {write.volume} changed since it "
                                        "was chosen")
    spec["claimRef"] = {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                        "namespace": write.namespace, "name": write.claim,
                        "uid": write.claim_uid}
    volume["spec"] = spec
    updated = await client.replace("", "v1", "persistentvolumes", None, write.volume, volume)
    log.info("bound persistentvolume %s to claim %s/%s", write.volume, write.namespace,
             write.claim)
    return _version(updated)


async def release_claims(client: KubeClient, writes: tuple[VolumeWrite, ...],
                         written: Mapping[str, str], *,
                         resource_version: str = RESOURCE_VERSIONS[0]) -> None:
    """Release the ResourceClaims of ``writes`` that were written (their key in
    ``written``) for a pod that will not be bound now: the pod leaves ``reservedFor``, and
    a claim this attempt allocated is deallocated
    (:func:`gangsched.shell.resourceclaims.release_claim`). Best effort."""
    for write in writes:
        if isinstance(write, AllocateClaim | ReserveClaim) and \
                f"resourceclaim/{write.namespace}/{write.claim}" in written:
            await release_claim(client, version=resource_version, namespace=write.namespace,
                                name=write.claim, pod_uid=write.reserved_for.uid,
                                claim_uid=write.claim_uid,
                                deallocate=isinstance(write, AllocateClaim))
