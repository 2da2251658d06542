"""The resource types the fake serves: built-ins plus CRD-registered ones.

A :class:`ResourceType` is one served group/version/plural, with the facts that
discovery publishes (kind, singular, scope, shortNames, categories, verbs,
subresources) and the facts that the store needs (status subresource, schema).
Versions of one CRD share their storage (``storage_key``), as in the real server;
the only conversion is rewriting ``apiVersion`` (``conversion: None``).

Simplified: the core and ``events.k8s.io`` events are stored separately (the real
server stores them once, in two shapes); ``scale`` is advertised but not served.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    verbs: tuple[str, ...] = ALL_VERBS
    builtin: bool = True
    schema: dict[str, Any] | None = None
    """The CRD ``openAPIV3Schema`` for this version; ``None`` for built-ins."""
    selectable_fields: tuple[str, ...] = ()
    """Extra field-selector paths (CRD ``selectableFields``), without the leading dot."""
    printer_columns: tuple[dict[str, Any], ...] = ()
    """The version's ``additionalPrinterColumns`` (see :mod:`fakeapi.tables`)."""
    drops_status_on_create: bool = False
    """A built-in whose create strategy drops ``status`` (as CRDs with a status
    subresource do): the PodGroup of the Workload API."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def storage_key(self) -> tuple[str, str]:
        """Objects live under (group, plural), shared by all versions."""
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


def _t(group: str, version: str, plural: str, kind: str, namespaced: bool,
       *, short: tuple[str, ...] = (), subs: tuple[str, ...] = (),
       cats: tuple[str, ...] = (), verbs: tuple[str, ...] = ALL_VERBS) -> ResourceType:
    return ResourceType(group=group, version=version, plural=plural, kind=kind,
                        namespaced=namespaced, singular=kind.lower(), short_names=short,
                        categories=cats, subresources=frozenset(subs), verbs=verbs)


BUILTINS: tuple[ResourceType, ...] = (
    _t("", "v1", "namespaces", "Namespace", False, short=("ns",), subs=("status", "finalize")),
    _t("", "v1", "nodes", "Node", False, short=("no",), subs=("status",)),
    _t("", "v1", "pods", "Pod", True, short=("po",), cats=("all",),
       subs=("status", "binding", "eviction")),
    _t("", "v1", "bindings", "Binding", True, verbs=("create",)),
    _t("", "v1", "events", "Event", True, short=("ev",)),
    _t("", "v1", "configmaps", "ConfigMap", True, short=("cm",)),
    _t("", "v1", "persistentvolumes", "PersistentVolume", False, short=("pv",),
       subs=("status",)),
    _t("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short=("pvc",),
       subs=("status",)),
    _t("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, short=("sc",)),
    _t("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _t("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _t("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _t("events.k8s.io", "v1", "events", "Event", True, short=("ev",)),
    _t("coordination.k8s.io", "v1", "leases", "Lease", True),
    _t("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, short=("pc",)),
    _t("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, short=("pdb",),
       subs=("status",)),
    _t("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
       False, short=("crd", "crds"), subs=("status",)),
)

WORKLOAD_API_GROUP = "scheduling.k8s.io"


def workload_api(version: str) -> tuple[ResourceType, ...]:
    """The Workload API's types at ``version`` (``v1alpha2`` in Kubernetes 1.36): built in,
    but served only with the ``GenericWorkload`` feature gate on, so not in
    :data:`BUILTINS` (see :meth:`Registry.serve`). PodGroup has a status subresource and
    its create drops ``status``; Workload has no status."""
    podgroups = _t(WORKLOAD_API_GROUP, version, "podgroups", "PodGroup", True, subs=("status",))
    return (_t(WORKLOAD_API_GROUP, version, "workloads", "Workload", True),
            dataclasses.replace(podgroups, drops_status_on_create=True))


DRA_GROUP = "resource.k8s.io"


def dra_api(version: str) -> tuple[ResourceType, ...]:
    """Dynamic Resource Allocation's types at ``version`` (``v1``, GA since Kubernetes
    1.34): DeviceClass and ResourceSlice cluster-scoped, ResourceClaim (with its
    ``status`` subresource, where the scheduler writes ``allocation`` and ``reservedFor``)
    and ResourceClaimTemplate namespaced. Built in but not in :data:`BUILTINS`: an older
    cluster (or one with the API turned off) serves none of them (see
    :meth:`Registry.serve`)."""
    return (_t(DRA_GROUP, version, "deviceclasses", "DeviceClass", False),
            _t(DRA_GROUP, version, "resourceclaims", "ResourceClaim", True, subs=("status",)),
            _t(DRA_GROUP, version, "resourceclaimtemplates", "ResourceClaimTemplate", True),
            _t(DRA_GROUP, version, "resourceslices", "ResourceSlice", False))


#: Subresource discovery entries that name another kind (the rest repeat the parent's).
SUBRESOURCE_KINDS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # subresource: (group, version, kind, verbs)
    "binding": ("", "v1", "Binding", ("create",)),
    "eviction": ("policy", "v1", "Eviction", ("create",)),
    "scale": ("autoscaling", "v1", "Scale", ("get", "patch", "update")),
    "finalize": ("", "v1", "Namespace", ("update",)),
    "status": ("", "", "", ("get", "patch", "update")),
}


def types_from_crd(crd: dict[str, Any]) -> list[ResourceType]:
    """One :class:`ResourceType` per served version of a (validated) CRD object."""
    spec = crd["spec"]
    names = spec["names"]
    result = []
    for ver in spec["versions"]:
        if not ver.get("served", True):
            continue
        subs = set(ver.get("subresources") or {})
        schema = (ver.get("schema") or {}).get("openAPIV3Schema")
        fields = tuple(f["jsonPath"].lstrip(".") for f in ver.get("selectableFields") or ())
        result.append(ResourceType(
            group=spec["group"], version=ver["name"], plural=names["plural"], kind=names["kind"],
            namespaced=spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            categories=tuple(names.get("categories") or ()),
            subresources=frozenset(subs), builtin=False, schema=schema,
            selectable_fields=fields,
            printer_columns=tuple(ver.get("additionalPrinterColumns") or ()),
        ))
    return result


class Registry:
    """Lookup of served types by (group, version, plural), kind or short name."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._crd_types: dict[str, list[ResourceType]] = {}
        self.generation = 0
        """Bumped on every (un)registration; discovery caches key on it."""
        for rtype in BUILTINS:
            self._add(rtype)

    def _add(self, rtype: ResourceType) -> None:
        self._types[(rtype.group, rtype.version, rtype.plural)] = rtype
        self.generation += 1

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def versions_of(self, group: str) -> list[str]:
        """Served versions of a group, the preferred (first registered) first."""
        seen: dict[str, None] = {}
        for g, v, _ in self._types:
            if g == group:
                seen.setdefault(v)
        return list(seen)

    def groups(self) -> list[str]:
        seen: dict[str, None] = {}
        for g, _, _ in self._types:
            if g:
                seen.setdefault(g)
        return list(seen)

    def register_crd(self, crd: dict[str, Any]) -> list[ResourceType]:
        """(Re-)register the types a CRD object declares; returns them."""
        self.unregister_crd(crd["metadata"]["name"])
        types = types_from_crd(crd)
        for rtype in types:
            self._add(rtype)
        self._crd_types[crd["metadata"]["name"]] = types
        return types

    def serve(self, types: tuple[ResourceType, ...]) -> None:
        """Start serving built-in ``types`` that a feature gate turns on (discovery lists
        them from now on); their objects are kept across :meth:`unserve`, as etcd keeps
        them when a gate is turned off and on again."""
        for rtype in types:
            self._add(rtype)

    def unserve(self, types: tuple[ResourceType, ...]) -> None:
        """Stop serving ``types`` (404 from now on)."""
        for rtype in types:
            if self._types.pop((rtype.group, rtype.version, rtype.plural), None) is not None:
                self.generation += 1

    def unregister_crd(self, name: str) -> list[ResourceType]:
        types = self._crd_types.pop(name, [])
        for rtype in types:
            self._types.pop((rtype.group, rtype.version, rtype.plural), None)
            self.generation += 1
        return types

    def resolve(self, what: str, api_version: str | None = None) -> ResourceType:
        """Find a type by plural, kind, singular or short name (core group first).

        ``what`` may also be ``plural.group`` (``leases.coordination.k8s.io``).
        Raises :class:`KeyError` naming the input when nothing matches.
        """
        group_filter: str | None = None
        version_filter: str | None = None
        if api_version is not None:
            group_filter, _, version_filter = api_version.rpartition("/")
        elif "." in what:
            what, _, group_filter = what.partition(".")
        candidates = [
            t for t in self._types.values()
            if what in (t.plural, t.kind, t.singular) or what in t.short_names
        ]
        if group_filter is not None:
            candidates = [t for t in candidates if t.group == group_filter]
        if version_filter is not None:
            candidates = [t for t in candidates if t.version == version_filter]
        if not candidates:
            raise KeyError(f"no served resource type matches {what!r} ({api_version=})")
        candidates.sort(key=lambda t: (t.group != "", t.group))
        return candidates[0]

    def by_storage(self, key: tuple[str, str]) -> ResourceType | None:
        """Any served type of a storage (group, plural), or ``None`` if none is served."""
        for rtype in self._types.values():
            if rtype.storage_key == key:
                return rtype
        return None

    def serves_kind(self, api_version: str, kind: str) -> bool:
        group, _, version = api_version.rpartition("/")
        return any(t.kind == kind and t.group == group and t.version == version
                   for t in self._types.values())
