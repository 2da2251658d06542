"""Observations: what the shell (or the simulator) tells the core happened.

Each is a frozen value. "Observed" carries the full current object (level-based: the
latest observation wins, whatever came before); "Gone" says the object no longer exists.
The bind and create outcomes close the loop on decisions the core made earlier.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.values.devices import DeviceObject
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GroupKey,
    Node,
    Pod,
    PodGroupSpec,
    PodUID,
    QueueSpec,
)
from gangsched.core.values.volume_specs import VolumeObject


@dataclass(frozen=True, slots=True)
class PodObserved:
    pod: Pod


@dataclass(frozen=True, slots=True)
class PodGone:
    uid: PodUID


@dataclass(frozen=True, slots=True)
class NodeObserved:
    node: Node


@dataclass(frozen=True, slots=True)
class NodeGone:
    name: str


@dataclass(frozen=True, slots=True)
class NamespaceObserved:
    """A namespace and its labels (what pod affinity ``namespaceSelector`` matches)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NamespaceGone:
    name: str


@dataclass(frozen=True, slots=True)
class AppObserved:
    spec: AppSpec


@dataclass(frozen=True, slots=True)
class AppGone:
    key: AppKey


@dataclass(frozen=True, slots=True)
class PodGroupObserved:
    spec: PodGroupSpec


@dataclass(frozen=True, slots=True)
class PodGroupGone:
    key: GroupKey


@dataclass(frozen=True, slots=True)
class QueueObserved:
    spec: QueueSpec


@dataclass(frozen=True, slots=True)
class QueueGone:
    name: str


@dataclass(frozen=True, slots=True)
class BindFailed:
    """A bind the core asked for did not happen (409 already bound, 404 gone, 5xx...)."""

    uid: PodUID
    node: str
    code: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class PlaceholderCreateFailed:
    """Creating a placeholder failed for a reason other than "already exists"."""

    app: AppKey
    name: str
    code: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class EvictionFailed:
    """An eviction the core asked for was refused (429: a PodDisruptionBudget) or failed."""

    uid: PodUID
    code: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class VolumeObserved:
    """A PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode or ResourceClaim."""

    obj: VolumeObject


@dataclass(frozen=True, slots=True)
class VolumeGone:
    """``kind`` is the API kind; ``key`` the name, or ``namespace/name`` for claims."""

    kind: str
    key: str


@dataclass(frozen=True, slots=True)
class ResourceClaimsServed:
    """Whether ResourceClaims (resource.k8s.io) are served and watched."""

    served: bool


@dataclass(frozen=True, slots=True)
class VolumeBindFailed:
    """Writing a pod's volume bindings failed (a PV taken meanwhile: 409; a claim gone:
    404...), or they were not completed in time: the pod was not bound."""

    uid: PodUID
    node: str
    code: int
    message: str = ""


@dataclass(frozen=True, slots=True)
class DeviceObserved:
    """A DeviceClass, ResourceSlice or ResourceClaimTemplate (resource.k8s.io/v1), as it
    is now. ResourceClaims come as :class:`VolumeObserved`."""

    obj: DeviceObject


@dataclass(frozen=True, slots=True)
class DeviceGone:
    """``kind`` is DeviceClass, ResourceSlice (``key`` the name) or ResourceClaimTemplate
    (``key`` is ``namespace/name``)."""

    kind: str
    key: str


Observation = (
    PodObserved
    | PodGone
    | NodeObserved
    | NodeGone
    | NamespaceObserved
    | NamespaceGone
    | AppObserved
    | AppGone
    | PodGroupObserved
    | PodGroupGone
    | QueueObserved
    | QueueGone
    | BindFailed
    | PlaceholderCreateFailed
    | EvictionFailed
    | VolumeObserved
    | VolumeGone
    | ResourceClaimsServed
    | VolumeBindFailed
    | DeviceObserved
    | DeviceGone
)

OBSERVATIONS: tuple[type, ...] = typing.get_args(Observation)
"""The observation types, for a test at run time."""
