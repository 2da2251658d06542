"""VolumeBinding, as kube-scheduler v1.32 runs it: PreFilter, Filter, Reserve, PreBind.

PreFilter (:func:`prefilter`) sorts a pod's claims, or says why the pod can go nowhere
now (the words are kube-scheduler's):

* a missing claim: ``persistentvolumeclaim "x" not found`` (a generic ephemeral
  volume's: ``waiting for ephemeral volume controller to create the
  persistentvolumeclaim "x"``); a claim being deleted; an invalid one;
* an unbound claim whose class is missing (``storageclass.storage.k8s.io "x" not
  found``) or binds Immediately (or has no class), or a claim pre-bound to a PV
  (``spec.volumeName``) that the PV controller has not bound yet (still ``Pending``):
  ``pod has unbound immediate PersistentVolumeClaims``: the PV controller binds those,
  the pod waits;
* a claim bound to a PV that does not exist.

Filter (:func:`match`) checks one node as ``FindPodVolumes`` (volumebinding/binder.go):
every bound claim's PV node affinity must match it (``node(s) had volume node affinity
conflict``); an unbound WaitForFirstConsumer claim that already carries the
selected-node annotation is provisioned there and fits no other node; every other one
needs a static PV that fits (``FindMatchingVolume``: the pre-bound one first, else the
smallest Available one of its class with the same volume mode, labels matching the
claim's ``selector``, enough capacity and the access modes asked for, not being deleted,
whose node affinity matches) or else a class that can provision for the node
(``checkVolumeProvisions``: a real provisioner whose ``allowedTopologies`` admit the node
(``node(s) didn't find available persistent volumes to bind``), and, for a CSI driver
with ``storageCapacity: true``, a CSIStorageCapacity of the class reachable from the node
with room for the request (``node(s) did not have enough free storage``)). Two claims
of one pod never get the same PV.

Reserve assumes that plan in the catalog; PreBind is the writes (:func:`writes`):
:class:`~gangsched.core.values.decisions.BindVolume` for static PVs and
:class:`~gangsched.core.values.decisions.AnnotateClaim` for provisioning, carried by the pod's
BindPod and done before its Binding; the shell then waits for the claims to be bound
before it binds the pod (``BindPodVolumes``), and reports a failure back.

Capacity assumed by this cycle's other pods is not subtracted from CSIStorageCapacity
(neither does upstream).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from gangsched.core.values.constraints import matches_affinity
from gangsched.core.values.decisions import AnnotateClaim, BindVolume, VolumeWrite
from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import (
    BindingMode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodVolumes,
    StorageClass,
    claim_key,
)
from gangsched.core.volumes.catalog import HOSTNAME, Assumption, VolumeCatalog

NODE_CONFLICT = "node(s) had volume node affinity conflict"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"


@dataclass(frozen=True, slots=True)
class Claims:
    """A pod's claims after PreFilter: bound ones with their PV, unbound delayed ones."""

    bound: tuple[PersistentVolume, ...] = ()
    delayed: tuple[PersistentVolumeClaim, ...] = ()


@dataclass(frozen=True, slots=True)
class Blocked:
    """The pod can go to no node now; ``message`` says why."""

    message: str


def prefilter(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes) -> Claims | Blocked:
    """Sort the pod's claims (see the module docstring). The first problem found wins."""
    bound: list[PersistentVolume] = []
    delayed: list[PersistentVolumeClaim] = []
    for item in volumes.claims:
        claim = catalog.claims.get(claim_key(namespace, item.name))
        if claim is None:
            if item.ephemeral:
                return Blocked("waiting for ephemeral volume controller to create the "
                               f'persistentvolumeclaim "{item.name}"')
            return Blocked(f'persistentvolumeclaim "{item.name}" not found')
        if claim.terminating:
            return Blocked(f'persistentvolumeclaim "{item.name}" is being deleted')
        if claim.invalid:
            return Blocked(f'persistentvolumeclaim "{item.name}" is invalid: {claim.invalid}')
        if claim.volume_name and claim.phase == "Pending":
            # Pre-bound (spec.volumeName) but not bound by the PV controller yet: as
            # GetPodVolumes, an unbound immediate claim (isPVCFullyBound is false).
            return Blocked(UNBOUND_IMMEDIATE)
        volume_name = catalog.volume_of(claim)
        if volume_name:
            volume = catalog.volumes.get(volume_name)
            if volume is None:
                return Blocked(f'persistentvolumeclaim "{item.name}" bound to non-existent '
                               f'persistentvolume "{volume_name}"')
            bound.append(volume)
            continue
        class_name = claim.storage_class or ""
        if not class_name:
            return Blocked(UNBOUND_IMMEDIATE)
        storage_class = catalog.classes.get(class_name)
        if storage_class is None:
            return Blocked(f'storageclass.storage.k8s.io "{class_name}" not found')
        if storage_class.binding_mode is not BindingMode.WAIT_FOR_FIRST_CONSUMER:
            return Blocked(UNBOUND_IMMEDIATE)
        delayed.append(claim)
    return Claims(tuple(bound), tuple(delayed))


def _fits(volume: PersistentVolume, claim: PersistentVolumeClaim, node: Node) -> bool:
    """A free volume for ``claim`` on ``node``, as ``FindMatchingVolume`` (component-helpers
    storage/volume) tests one in the scheduler's path: same volume mode, not being
    deleted, the claim's selector matching its labels, every access mode asked for,
    enough capacity and a node affinity the node satisfies. (Class and phase are the
    caller's: the candidates are of the claim's class, and Available.)"""
    return (_fits_free(volume, claim)
            and matches_affinity(volume.node_affinity, node.labels, node.name))


def _fits_free(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """:func:`_fits` but the node affinity: for a free volume whose affinity names the
    node judged (see :func:`match_nodes`)."""
    return (volume.volume_mode == claim.volume_mode and not volume.terminating
            and volume.invalid is None
            and (claim.selector is None or claim.selector.matches(volume.labels))
            and volume.capacity >= claim.request
            and claim.access_modes <= volume.access_modes)


def _fits_for(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    return _fits_free(volume, claim)


def _prebound_usable(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Is the volume pre-bound to ``claim`` one ``FindMatchingVolume`` returns (on a node
    it reaches)? Neither its class, phase, selector nor access modes are looked at, only
    the volume mode, deletion and capacity; one that fails these is skipped and a free
    volume looked for instead."""
    return (volume.volume_mode == claim.volume_mode and not volume.terminating
            and volume.invalid is None and volume.capacity >= claim.request)


def match(catalog: VolumeCatalog, claims: Claims,
          node: Node) -> tuple[str | None, tuple[Assumption, ...]]:
    """Filter for one node: (None, the plan) when every claim can be served there, else
    (the reason, ()). As ``FindPodVolumes`` (volumebinding/binder.go): a claim already
    carrying the selected-node annotation is provisioned there and fits no other node; the
    others get a static volume (``findMatchingVolumes``) or else are provisioned, which
    ``checkVolumeProvisions`` allows when the class has a provisioner, its
    ``allowedTopologies`` admit the node, and, for a driver that tracks capacity, some
    CSIStorageCapacity reachable from the node has room (``hasEnoughCapacity``)."""
    for volume in claims.bound:
        if not matches_affinity(volume.node_affinity, node.labels, node.name):
            return NODE_CONFLICT, ()
    plan: list[Assumption] = []
    taken: set[str] = set()
    for claim in claims.delayed:
        if claim.selected_node and claim.selected_node != node.name:
            return BIND_CONFLICT, ()
        if not claim.selected_node:
            chosen = _static_volume(catalog, claim, node, taken)
            if chosen is not None:
                taken.add(chosen.name)
                plan.append(Assumption(claim.key, chosen.name, node.name))
                continue
        other = catalog.assumed_claim.get(claim.key)
        if other is not None and other.node != node.name:
            return BIND_CONFLICT, ()
        reason = provision_failure(catalog, claim, node)
        if reason is not None:
            return reason, ()
        plan.append(Assumption(claim.key, "", node.name))
    return None, tuple(plan)


class _Labelled(Protocol):
    @property
    def labels(self) -> Mapping[str, str]: ...


T = TypeVar("T", bound=_Labelled)
"""A node as the caller holds it: its labels are the node's (``Node``, ``NodeState``)."""


def match_nodes(catalog: VolumeCatalog, claims: Claims, nodes: list[T],
                node_of: Callable[[T], Node]) -> list[T]:
    """The nodes of ``nodes`` (each read through ``node_of``; their labels read directly)
    for which :func:`match` finds a plan, in order: the same verdicts, with what does
    not depend on the node worked out once per claim.

    An unbound claim without a selected node, volume or assumption of its own is served
    on every node when its class provisions alike everywhere (no ``allowedTopologies``,
    no tracked capacity): a static volume or a new one. When its class cannot provision,
    only a free static volume serves it; if every volume of the class names its node
    alone (local volumes, :meth:`VolumeCatalog.free_hosts`), the nodes are those with
    a free volume that fits the claim (:func:`_fits` but the node affinity, which names
    the node) -- exactly, for a pod with that one claim; with several, the nodes
    without a free volume are dropped and :func:`match` judges the rest, as it does
    whenever a verdict depends on more."""
    if claims.bound or any(claim.selected_node for claim in claims.delayed):
        return [n for n in nodes if match(catalog, claims, node_of(n))[0] is None]
    alone = len(claims.delayed) == 1  # no two claims of the pod compete for a volume
    undecided = False
    for claim in claims.delayed:
        if (catalog.claim_refs.get(claim.key) is not None
                or catalog.assumed_claim.get(claim.key) is not None):
            undecided = True  # its own volume, or an assumption: match says
            continue
        provisions = _provisions_anywhere(catalog, claim)
        if provisions is True:
            continue
        reach = catalog.free_hosts(claim.storage_class or "")
        if provisions is None or reach is None:
            undecided = True
            continue
        if alone:
            served = catalog.serving_hosts(claim.storage_class or "", _signature(claim),
                                           functools.partial(_fits_for, claim))
            nodes = [n for n in nodes if n.labels.get(HOSTNAME, "") in served]
        else:
            undecided = True
            nodes = [n for n in nodes if reach.get(n.labels.get(HOSTNAME, ""))]
        if not nodes:
            return nodes
    if not undecided:
        return nodes
    return [n for n in nodes if match(catalog, claims, node_of(n))[0] is None]


@dataclass(frozen=True, slots=True)
class HostsDigest:
    """What :func:`match_nodes`' verdicts follow from when they follow from a node's
    hostname alone: per delayed claim, its class and the fields a volume is matched
    against (the free local volumes of the node's host serve it), or None (it is served
    on every node); and where the catalogue's log of local volumes stood. Equal digests
    but the mark: the verdicts differ only on the hosts the log names since."""

    catalog: VolumeCatalog
    mark: tuple[int, int]
    claims: tuple[tuple[str, Hashable] | None, ...]

    def changed_hosts(self, old: HostsDigest) -> set[str] | None:
        """The hostnames whose verdicts may differ from those under ``old``; None:
        any node's may."""
        if self.catalog is not old.catalog or self.claims != old.claims:
            return None
        classes = {claim[0] for claim in self.claims if claim is not None}
        if not classes:
            return set()  # served on every node under both
        return self.catalog.hosts_changed_since(old.mark, classes)


def hosts_digest(catalog: VolumeCatalog, claims: Claims) -> HostsDigest | None:
    """The digest of :func:`match_nodes`' verdicts when they follow from the node's
    hostname alone: every claim delayed, with neither a selected node, a volume nor an
    assumption of its own, and each either provisioned alike everywhere or of a class
    that cannot provision and whose every volume names its node (then a node's verdict
    follows from the free volumes of its host, which the catalogue's log names whenever
    they change); None otherwise."""
    if claims.bound:
        return None
    found: list[tuple[str, Hashable] | None] = []
    for claim in claims.delayed:
        if (claim.selected_node or catalog.claim_refs.get(claim.key) is not None
                or catalog.assumed_claim.get(claim.key) is not None):
            return None
        provisions = _provisions_anywhere(catalog, claim)
        if provisions is True:
            found.append(None)
            continue
        storage_class = claim.storage_class or ""
        if provisions is None or catalog.free_hosts(storage_class) is None:
            return None
        found.append((storage_class, _signature(claim)))
    return HostsDigest(catalog, catalog.host_mark(), tuple(found))


def _signature(claim: PersistentVolumeClaim) -> Hashable:
    """The fields of ``claim`` a free volume is matched against (:func:`_fits_free`)."""
    return (claim.volume_mode, claim.selector, claim.request, claim.access_modes)


def _provisions_anywhere(catalog: VolumeCatalog, claim: PersistentVolumeClaim) -> bool | None:
    """:func:`provision_failure` when it is the same for every node: False when the
    class is missing or has no real provisioner, True when it provisions with neither
    ``allowedTopologies`` nor tracked capacity; None when the node decides."""
    storage_class = catalog.classes.get(claim.storage_class or "")
    if storage_class is None or not storage_class.provisions:
        return False
    if storage_class.allowed_topologies.required_terms is not None:
        return None
    if claim.request > 0:
        driver = catalog.csidrivers.get(storage_class.provisioner)
        if driver is not None and driver.storage_capacity:
            return None
    return True


def provision_failure(catalog: VolumeCatalog, claim: PersistentVolumeClaim,
                      node: Node) -> str | None:
    """Why a volume for ``claim`` cannot be provisioned for ``node``, or None
    (``checkVolumeProvisions``): no class or no real provisioner, or the class's
    ``allowedTopologies`` exclude the node (:data:`BIND_CONFLICT`); or the driver tracks
    storage capacity and none is published for the node (:data:`NOT_ENOUGH_SPACE`)."""
    storage_class = catalog.classes.get(claim.storage_class or "")
    if storage_class is None or not storage_class.provisions:
        return BIND_CONFLICT
    if not matches_affinity(storage_class.allowed_topologies, node.labels, node.name):
        return BIND_CONFLICT
    if not has_enough_capacity(catalog, storage_class, claim, node):
        return NOT_ENOUGH_SPACE
    return None


def has_enough_capacity(catalog: VolumeCatalog, storage_class: StorageClass,
                        claim: PersistentVolumeClaim, node: Node) -> bool:
    """``hasEnoughCapacity`` (binder.go): True unless the class's provisioner is a
    CSIDriver with ``storageCapacity: true`` and no CSIStorageCapacity of the class whose
    ``nodeTopology`` selects the node offers ``maximumVolumeSize`` (when set, else
    ``capacity``) of at least the claim's request. A claim without a storage request
    (read as 0) needs no room; a capacity object without ``nodeTopology`` or without
    either size serves no node."""
    if claim.request <= 0:
        return True
    driver = catalog.csidrivers.get(storage_class.provisioner)
    if driver is None or not driver.storage_capacity:
        return True
    for capacity in catalog.capacities.values():
        if capacity.storage_class != storage_class.name or capacity.node_topology is None:
            continue
        limit = (capacity.maximum_volume_size if capacity.maximum_volume_size is not None
                 else capacity.capacity)
        if limit is not None and limit >= claim.request \
                and capacity.node_topology.matches(node.labels):
            return True
    return False


def _static_volume(catalog: VolumeCatalog, claim: PersistentVolumeClaim, node: Node,
                   taken: set[str]) -> PersistentVolume | None:
    """``FindMatchingVolume`` for the scheduler: the PV whose claimRef names ``claim``
    (or assumed for it: then no other, it is the claim's) if it fits ``node``; else the
    smallest free fitting one (ties by name). Only the volumes that may reach the node
    are looked at (see :meth:`VolumeCatalog.candidates`)."""
    own = catalog.claim_refs.get(claim.key)
    if own is None:
        assumed = catalog.assumed_claim.get(claim.key)
        own = assumed.volume if assumed is not None and assumed.volume else None
    if own is not None:
        volume = catalog.volumes.get(own)
        ref = volume.claim_ref if volume is not None else None
        if (volume is None or own in taken
                or (ref is not None and ref.uid and ref.uid != claim.uid)):
            return None
        if _prebound_usable(volume, claim):
            if matches_affinity(volume.node_affinity, node.labels, node.name):
                return volume
            return None  # the claim's own volume does not reach this node
    best: PersistentVolume | None = None
    hostname = node.labels.get(HOSTNAME, "")
    if not catalog.may_have_free(claim.storage_class or "", hostname):
        return None
    for volume in catalog.candidates(claim.storage_class or "", hostname):
        if volume.name in taken or catalog.claimed(volume) is not None:
            continue
        if volume.phase not in ("Available", "") or not _fits(volume, claim, node):
            continue
        if best is None or (volume.capacity, volume.name) < (best.capacity, best.name):
            best = volume
    return best


def writes(catalog: VolumeCatalog, plan: tuple[Assumption, ...]) -> tuple[VolumeWrite, ...]:
    """PreBind: the API writes that make ``plan`` real. A PV already bound to its claim
    (pre-bound by a user) needs no write."""
    found: list[VolumeWrite] = []
    for item in plan:
        claim = catalog.claims.get(item.claim)
        if claim is None:
            continue
        if item.volume:
            volume = catalog.volumes.get(item.volume)
            if volume is None:
                continue
            ref = volume.claim_ref
            if ref is not None and ref.key == claim.key and ref.uid == claim.uid:
                continue
            found.append(BindVolume(volume.name, volume.resource_version, claim.namespace,
                                    claim.name, claim.uid))
        elif claim.selected_node != item.node:
            found.append(AnnotateClaim(claim.namespace, claim.name, item.node))
    return tuple(found)
