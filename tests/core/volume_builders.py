"""Builders for volume tests: PVs, claims, classes, CSINodes, ResourceClaims, pods using them."""

from __future__ import annotations

import dataclasses

from gangsched.core.values.constraints import (
    ANY_NODE,
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
)
from gangsched.core.values.devices import AllocationResult
from gangsched.core.values.model import Pod
from gangsched.core.values.resources import parse_resource
from gangsched.core.values.selectors import LabelSelector
from gangsched.core.values.volume_specs import (
    FILESYSTEM,
    AccessMode,
    BindingMode,
    ClaimRef,
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    PodClaim,
    PodVolumes,
    ResourceClaim,
    StorageCapacity,
    StorageClass,
)

RWO = frozenset({AccessMode.READ_WRITE_ONCE})
RWOP = frozenset({AccessMode.READ_WRITE_ONCE_POD})
RWX = frozenset({AccessMode.READ_WRITE_MANY})
LOCAL = StorageClass("local", "kubernetes.io/no-provisioner", BindingMode.WAIT_FOR_FIRST_CONSUMER)
FAST = StorageClass("fast", "csi.example.com", BindingMode.WAIT_FOR_FIRST_CONSUMER)
IMMEDIATE = StorageClass("standard", "csi.example.com", BindingMode.IMMEDIATE)


def on_nodes(*names: str) -> NodeAffinity:
    """A required node affinity on ``kubernetes.io/hostname`` In ``names``."""
    return NodeAffinity((NodeSelectorTerm((SelectorRequirement(
        "kubernetes.io/hostname", SelectorOperator.IN, tuple(names)),)),))


def size(text: str) -> int:
    return parse_resource("storage", text)


def make_pv(name: str, capacity: str = "10Gi", *, storage_class: str = "local",
            node: str | None = None, modes: frozenset[AccessMode] = RWO,
            claim: str | None = None, phase: str = "Available", driver: str = "",
            labels: dict[str, str] | None = None, mode: str = FILESYSTEM,
            terminating: bool = False) -> PersistentVolume:
    return PersistentVolume(
        name=name, uid=f"uid-{name}", resource_version="7", capacity=size(capacity),
        access_modes=modes, storage_class=storage_class,
        node_affinity=on_nodes(node) if node else ANY_NODE,
        claim_ref=ClaimRef("default", claim, "") if claim else None, phase=phase,
        labels=dict(labels or {}), csi_driver=driver, volume_mode=mode,
        terminating=terminating)


def make_pvc(name: str, request: str = "5Gi", *, storage_class: str | None = "local",
             modes: frozenset[AccessMode] = RWO, volume: str = "",
             selected_node: str = "", terminating: bool = False,
             selector: LabelSelector | None = None,
             mode: str = FILESYSTEM) -> PersistentVolumeClaim:
    return PersistentVolumeClaim(
        namespace="default", name=name, uid=f"uid-pvc-{name}", resource_version="3",
        storage_class=storage_class, request=size(request), access_modes=modes,
        volume_name=volume, phase="Bound" if volume else "Pending",
        selected_node=selected_node, selector=selector, volume_mode=mode,
        terminating=terminating)


def in_zones(*zones: str) -> NodeAffinity:
    """A class's ``allowedTopologies``: ``topology.kubernetes.io/zone`` In ``zones``."""
    return NodeAffinity((NodeSelectorTerm((SelectorRequirement(
        "topology.kubernetes.io/zone", SelectorOperator.IN, tuple(zones)),)),))


def make_driver(name: str, *, capacity: bool = True) -> CSIDriver:
    return CSIDriver(name, storage_capacity=capacity)


def make_capacity(name: str, storage_class: str, *, zone: str | None = None,
                  capacity: str | None = None, maximum: str | None = None,
                  topology: bool = True) -> StorageCapacity:
    """A CSIStorageCapacity whose ``nodeTopology`` selects ``zone`` (every node when
    None; no node when ``topology`` is False)."""
    selector = None
    if topology:
        selector = LabelSelector.build({"topology.kubernetes.io/zone": zone} if zone else {})
    return StorageCapacity("kube-system", name, storage_class, selector,
                           size(capacity) if capacity else None,
                           size(maximum) if maximum else None)


def make_csinode(name: str, **limits: int) -> CSINode:
    return CSINode(name, {k.replace("_", "."): v for k, v in limits.items()})


def make_claim(name: str, *, allocated: bool = True,
               node: str | None = None) -> ResourceClaim:
    if not allocated:
        return ResourceClaim("default", name)
    selector = on_nodes(node) if node else None
    return ResourceClaim("default", name, allocation=AllocationResult(node_selector=selector))


def with_volumes(pod: Pod, *claims: str, ephemeral: tuple[str, ...] = (),
                 inline: tuple[str, ...] = (), resource_claims: tuple[str, ...] = (),
                 unresolved: tuple[str, ...] = ()) -> Pod:
    volumes = PodVolumes(
        tuple(PodClaim(c) for c in claims) + tuple(PodClaim(c, ephemeral=True)
                                                   for c in ephemeral),
        inline, resource_claims, unresolved)
    return dataclasses.replace(pod, volumes=volumes)
