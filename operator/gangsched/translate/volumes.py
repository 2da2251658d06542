"""Storage objects and a pod's volumes, to the core's values (:mod:`gangsched.core.volumes`).

PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes and ResourceClaims
are translated here; so are the parts of a pod's spec the volume plugins read
(:func:`pod_volumes`). Missing fields take the API's defaults: a class binds
``Immediate``; a claim without ``storageClassName`` has none (``None``); a PV's phase is
``Available`` until the PV controller says otherwise. A PV or claim that cannot be read
is still returned, with ``invalid`` set: a pod using it waits with that message. A
StorageClass or CSINode that cannot be read is returned with the safe reading (a class
that binds Immediately; no limits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import constraints
from gangsched.core.values import volume_specs as vmodel
from gangsched.translate import fields, k8s_constraints

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _meta(obj: Mapping[str, Any], problems: fields.Problems) -> Mapping[str, Any]:
    return problems.read(lambda: fields.mapping(obj.get("metadata"), "metadata"), {})


def _part(obj: Mapping[str, Any], key: str, problems: fields.Problems) -> Mapping[str, Any]:
    return problems.read(lambda: fields.mapping(obj.get(key), key), {})


def _access_modes(raw: object, path: str,
                  problems: fields.Problems) -> frozenset[vmodel.AccessMode]:
    modes: set[vmodel.AccessMode] = set()
    empty: Sequence[Any] = ()
    for index, item in enumerate(problems.read(lambda: fields.sequence(raw, path), empty)):
        if not isinstance(item, str):
            problems.add(f"{path}[{index}]: must be a string")
            continue
        try:
            modes.add(vmodel.AccessMode.from_string(item))
        except constraints.ConstraintError as error:
            problems.add(f"{path}[{index}]: {error}")
    return frozenset(modes)


def _storage(raw: object, path: str, problems: fields.Problems) -> int:
    found = problems.read(lambda: fields.resource_list(raw, path), None)
    return found.get("storage") if found is not None else 0


def _node_affinity(raw: object, path: str) -> constraints.NodeAffinity:
    """``spec.nodeAffinity`` of a PV (``required`` is a NodeSelector); None: any node."""
    spec = fields.mapping(raw, path)
    required = spec.get("required")
    if required is None:
        return constraints.ANY_NODE
    try:
        return k8s_constraints.node_affinity_from_k8s({"nodeAffinity": {_REQUIRED: required}},
                                                      path="")
    except constraints.ConstraintError as error:
        raise fields.TranslationError(
            f"{path}.required" + str(error).replace(f".nodeAffinity.{_REQUIRED}", "", 1)
        ) from None


def persistent_volume(obj: Mapping[str, Any]) -> vmodel.PersistentVolume:
    """A ``v1/PersistentVolume``; problems go into ``invalid``."""
    problems = fields.Problems()
    meta = _meta(obj, problems)
    spec = _part(obj, "spec", problems)
    status = _part(obj, "status", problems)
    ref = spec.get("claimRef")
    claim_ref = None
    if isinstance(ref, Mapping) and ref.get("name"):
        claim_ref = vmodel.ClaimRef(str(ref.get("namespace") or ""), str(ref["name"]),
                                    str(ref.get("uid") or ""))
    csi = spec.get("csi")
    return vmodel.PersistentVolume(
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        capacity=_storage(spec.get("capacity"), "spec.capacity", problems),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes", problems),
        storage_class=problems.read(
            lambda: fields.string(spec.get("storageClassName"), "spec.storageClassName"), ""),
        node_affinity=problems.read(
            lambda: _node_affinity(spec.get("nodeAffinity"), "spec.nodeAffinity"),
            constraints.NodeAffinity(()),
        ),
        claim_ref=claim_ref,
        phase=str(status.get("phase") or "Available"),
        labels=problems.read(lambda: fields.string_map(meta.get("labels"), "metadata.labels"),
                             dict[str, str]()),
        csi_driver=str(csi.get("driver") or "") if isinstance(csi, Mapping) else "",
        terminating=meta.get("deletionTimestamp") is not None,
        invalid=problems.message(),
    )


def persistent_volume_claim(obj: Mapping[str, Any]) -> vmodel.PersistentVolumeClaim:
    """A ``v1/PersistentVolumeClaim``; problems go into ``invalid``."""
    problems = fields.Problems()
    meta = _meta(obj, problems)
    spec = _part(obj, "spec", problems)
    status = _part(obj, "status", problems)
    resources = spec.get("resources")
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    none: dict[str, str] = {}
    annotations = problems.read(
        lambda: fields.string_map(meta.get("annotations"), "metadata.annotations"), none)
    class_name = spec.get("storageClassName")
    return vmodel.PersistentVolumeClaim(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        storage_class=class_name if isinstance(class_name, str) else None,
        request=_storage(requests, "spec.resources.requests", problems),
        access_modes=_access_modes(spec.get("accessModes"), "spec.accessModes", problems),
        volume_name=problems.read(
            lambda: fields.string(spec.get("volumeName"), "spec.volumeName"), ""),
        phase=str(status.get("phase") or "Pending"),
        selected_node=annotations.get(vmodel.SELECTED_NODE, ""),
        terminating=meta.get("deletionTimestamp") is not None,
        invalid=problems.message(),
    )


def storage_class(obj: Mapping[str, Any]) -> vmodel.StorageClass:
    """A ``storage.k8s.io/v1`` StorageClass; an unknown binding mode reads Immediate."""
    meta = obj.get("metadata") or {}
    mode = obj.get("volumeBindingMode")
    binding = vmodel.BindingMode.IMMEDIATE
    if mode == vmodel.BindingMode.WAIT_FOR_FIRST_CONSUMER.value:
        binding = vmodel.BindingMode.WAIT_FOR_FIRST_CONSUMER
    provisioner = obj.get("provisioner")
    return vmodel.StorageClass(str(meta.get("name") or ""),
                               provisioner if isinstance(provisioner, str) else "", binding)


def csi_node(obj: Mapping[str, Any]) -> vmodel.CSINode:
    """A ``storage.k8s.io/v1`` CSINode: each driver's ``allocatable.count``, when set."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    limits: dict[str, int] = {}
    drivers = spec.get("drivers") if isinstance(spec, Mapping) else None
    for driver in drivers if isinstance(drivers, list) else []:
        if not isinstance(driver, Mapping):
            continue
        allocatable = driver.get("allocatable")
        count = allocatable.get("count") if isinstance(allocatable, Mapping) else None
        name = driver.get("name")
        if isinstance(name, str) and isinstance(count, int) and not isinstance(count, bool):
            limits[name] = count
    return vmodel.CSINode(str(meta.get("name") or ""), limits)


def resource_claim(obj: Mapping[str, Any]) -> vmodel.ResourceClaim:
    """A ``resource.k8s.io`` ResourceClaim: allocated when ``status.allocation`` is set; its
    ``nodeSelector`` (unreadable: no node) limits where the pod may go."""
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    allocation = status.get("allocation") if isinstance(status, Mapping) else None
    affinity = constraints.ANY_NODE
    if isinstance(allocation, Mapping) and allocation.get("nodeSelector") is not None:
        try:
            affinity = _node_affinity({"required": allocation["nodeSelector"]},
                                      "status.allocation")
        except (fields.TranslationError, constraints.ConstraintError):
            affinity = constraints.NodeAffinity(())
    return vmodel.ResourceClaim(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                allocated=isinstance(allocation, Mapping), node_affinity=affinity)


def pod_volumes(name: str, spec: Mapping[str, Any], status: Mapping[str, Any],
                problems: fields.Problems) -> vmodel.PodVolumes:
    """The claims (``persistentVolumeClaim.claimName``; an ``ephemeral`` volume's claim is
    ``<pod>-<volume>``), inline CSI drivers and resource claims of a pod. A
    ``resourceClaimTemplateName`` resolves through ``status.resourceClaimStatuses``; one
    not listed there yet is unresolved. Malformed entries are problems."""
    claims: list[vmodel.PodClaim] = []
    inline: list[str] = []
    empty: Sequence[Any] = ()
    raw_volumes = problems.read(lambda: fields.sequence(spec.get("volumes"), "spec.volumes"),
                                empty)
    for index, volume in enumerate(raw_volumes):
        if not isinstance(volume, Mapping):
            problems.add(f"spec.volumes[{index}]: must be an object")
            continue
        pvc = volume.get("persistentVolumeClaim")
        if isinstance(pvc, Mapping):
            claim_name = pvc.get("claimName")
            if isinstance(claim_name, str) and claim_name:
                claims.append(vmodel.PodClaim(claim_name))
            else:
                problems.add(f"spec.volumes[{index}].persistentVolumeClaim.claimName: "
                             "Required value")
        elif isinstance(volume.get("ephemeral"), Mapping):
            claims.append(vmodel.PodClaim(f"{name}-{volume.get('name', '')}", ephemeral=True))
        elif isinstance(volume.get("csi"), Mapping):
            driver = volume["csi"].get("driver")
            if isinstance(driver, str) and driver:
                inline.append(driver)
    resolved: list[str] = []
    unresolved: list[str] = []
    statuses = {str(s.get("name")): s.get("resourceClaimName")
                for s in status.get("resourceClaimStatuses") or [] if isinstance(s, Mapping)}
    raw_claims = problems.read(
        lambda: fields.sequence(spec.get("resourceClaims"), "spec.resourceClaims"), empty)
    for entry in raw_claims:
        if not isinstance(entry, Mapping):
            continue
        direct = entry.get("resourceClaimName")
        if isinstance(direct, str) and direct:
            resolved.append(direct)
            continue
        made = statuses.get(str(entry.get("name")))
        if isinstance(made, str) and made:
            resolved.append(made)
        else:
            unresolved.append(str(entry.get("name") or ""))
    return vmodel.PodVolumes(tuple(claims), tuple(inline), tuple(resolved), tuple(unresolved))
