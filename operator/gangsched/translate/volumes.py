"""Storage objects and a pod's volumes, to the core's values (:mod:`gangsched.core.volumes`).

PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and ResourceClaims are translated here; so are the parts of a pod's
spec the volume plugins read (:func:`pod_volumes`). Missing fields take the API's
defaults: a class binds ``Immediate``; a claim without ``storageClassName`` has none
(``None``); a PV's phase is ``Available`` until the PV controller says otherwise; a
``volumeMode`` is ``Filesystem``. A PV or claim that cannot be read is still returned,
with ``invalid`` set: a pod using it waits with that message. A StorageClass, CSINode,
CSIDriver or CSIStorageCapacity that cannot be read is returned with the safe reading
(a class that binds Immediately and, with unreadable ``allowedTopologies``, provisions
for no node; no limits; no capacity tracking; no capacity).

In-tree volume sources count as the CSI driver they migrated to
(:data:`MIGRATED_SOURCES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import constraints
from gangsched.core.values import volume_specs as vmodel
from gangsched.core.values.devices import AllocationResult
from gangsched.translate import fields, k8s_constraints, k8s_placement

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"

MIGRATED_SOURCES: Mapping[str, str] = {
    "awsElasticBlockStore": "ebs.csi.aws.com",
    "gcePersistentDisk": "pd.csi.storage.gke.io",
    "azureDisk": "disk.csi.azure.com",
    "cinder": "cinder.csi.openstack.org",
}
"""In-tree volume sources (of a PV or a pod's inline volume) and the CSI driver they are
migrated to, as the CSI translation library names them: they count against that
driver's limit."""


def _driver(source: Mapping[str, Any]) -> str:
    """The CSI driver serving a volume source: ``csi.driver``, or a migrated in-tree
    source's driver; empty for anything else."""
    csi = source.get("csi")
    if isinstance(csi, Mapping):
        driver = csi.get("driver")
        return driver if isinstance(driver, str) else ""
    for key, driver in MIGRATED_SOURCES.items():
        if isinstance(source.get(key), Mapping):
            return driver
    return ""


def _volume_mode(raw: object, path: str, problems: fields.Problems) -> str:
    """``volumeMode``: ``Filesystem`` when unset, as the API server defaults it."""
    if raw is None:
        return vmodel.FILESYSTEM
    if raw not in (vmodel.FILESYSTEM, "Block"):
        problems.add(f'{path}: Unsupported value: "{raw}": supported values: "Block", '
                     '"Filesystem"')
        return vmodel.FILESYSTEM
    return str(raw)


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
        csi_driver=_driver(spec),
        volume_mode=_volume_mode(spec.get("volumeMode"), "spec.volumeMode", problems),
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
        selector=problems.read(
            lambda: k8s_placement.label_selector(spec.get("selector"), "spec.selector"), None),
        volume_mode=_volume_mode(spec.get("volumeMode"), "spec.volumeMode", problems),
        terminating=meta.get("deletionTimestamp") is not None,
        invalid=problems.message(),
    )


def storage_class(obj: Mapping[str, Any]) -> vmodel.StorageClass:
    """A ``storage.k8s.io/v1`` StorageClass; an unknown binding mode reads Immediate.
    ``allowedTopologies`` (terms of ``matchLabelExpressions``, each ``key`` In
    ``values``) becomes a node affinity; unset or empty: any node; unreadable: no node
    (nothing is provisioned on a guess)."""
    meta = obj.get("metadata") or {}
    mode = obj.get("volumeBindingMode")
    binding = vmodel.BindingMode.IMMEDIATE
    if mode == vmodel.BindingMode.WAIT_FOR_FIRST_CONSUMER.value:
        binding = vmodel.BindingMode.WAIT_FOR_FIRST_CONSUMER
    provisioner = obj.get("provisioner")
    try:
        allowed = _allowed_topologies(obj.get("allowedTopologies"))
    except (fields.TranslationError, constraints.ConstraintError):
        allowed = constraints.NodeAffinity(())
    return vmodel.StorageClass(str(meta.get("name") or ""),
                               provisioner if isinstance(provisioner, str) else "", binding,
                               allowed)


def _allowed_topologies(raw: object) -> constraints.NodeAffinity:
    """``MatchTopologySelectorTerms``: no terms match every node; terms are ORed, a
    term's expressions ANDed, each ``key`` In ``values``."""
    if raw is None:
        return constraints.ANY_NODE
    terms: list[constraints.NodeSelectorTerm] = []
    for index, term in enumerate(fields.sequence(raw, "allowedTopologies")):
        path = f"allowedTopologies[{index}].matchLabelExpressions"
        entry = fields.mapping(term, f"allowedTopologies[{index}]")
        requirements = []
        for position, item in enumerate(fields.sequence(entry.get("matchLabelExpressions"),
                                                        path)):
            expression = fields.mapping(item, f"{path}[{position}]")
            key = fields.string(expression.get("key"), f"{path}[{position}].key")
            values = tuple(fields.string(v, f"{path}[{position}].values")
                           for v in fields.sequence(expression.get("values"),
                                                    f"{path}[{position}].values"))
            requirements.append(constraints.SelectorRequirement(
                key, constraints.SelectorOperator.IN, values))
        terms.append(constraints.NodeSelectorTerm(tuple(requirements)))
    return constraints.NodeAffinity(tuple(terms)) if terms else constraints.ANY_NODE


def csi_driver(obj: Mapping[str, Any]) -> vmodel.CSIDriver:
    """A ``storage.k8s.io/v1`` CSIDriver: whether ``spec.storageCapacity`` is true (unset
    or unreadable: false, as the API server defaults it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    tracked = spec.get("storageCapacity") if isinstance(spec, Mapping) else None
    return vmodel.CSIDriver(str(meta.get("name") or ""), tracked is True)


def storage_capacity(obj: Mapping[str, Any]) -> vmodel.StorageCapacity:
    """A ``storage.k8s.io/v1`` CSIStorageCapacity. An unreadable ``nodeTopology`` selects
    no node; an unreadable size is unset (the object then serves no claim)."""
    meta = obj.get("metadata") or {}
    try:
        topology = k8s_placement.label_selector(obj.get("nodeTopology"), "nodeTopology")
    except (fields.TranslationError, constraints.ConstraintError):
        topology = None
    return vmodel.StorageCapacity(
        namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
        storage_class=str(obj.get("storageClassName") or ""), node_topology=topology,
        capacity=_quantity(obj.get("capacity")),
        maximum_volume_size=_quantity(obj.get("maximumVolumeSize")))


def _quantity(raw: object) -> int | None:
    if raw is None:
        return None
    found = fields.Problems().read(lambda: fields.resource_list({"storage": raw}, "size"),
                                   None)
    return found.get("storage") if found is not None else None


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
    result = None
    if isinstance(allocation, Mapping):
        result = AllocationResult(node_selector=None if affinity.required_terms is None
                                  else affinity)
    return vmodel.ResourceClaim(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                allocation=result)


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
        else:
            driver = _driver(volume)
            if driver:
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
