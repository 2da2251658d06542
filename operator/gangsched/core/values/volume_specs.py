"""The volume values the core reasons about, built once at the edge from API objects.

Names follow the API: a claim is keyed ``namespace/name`` (:data:`ClaimKey`), a
PersistentVolume, StorageClass or CSINode by its name. Capacities are integer bytes.

An object that failed translation is still observed, with ``invalid`` set: a pod using
an invalid claim waits with that message rather than being placed on a guess.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NewType

from gangsched.core.values.constraints import ANY_NODE, ConstraintError, NodeAffinity
from gangsched.core.values.devices import ResourceClaim as ResourceClaim
from gangsched.core.values.selectors import LabelSelector

ClaimKey = NewType("ClaimKey", str)
"""``namespace/name`` of a PersistentVolumeClaim or a ResourceClaim."""

SELECTED_NODE = "volume.kubernetes.io/selected-node"
"""The claim annotation that tells a provisioner which node the pod goes to."""

NO_PROVISIONER = "kubernetes.io/no-provisioner"
"""The provisioner of classes whose volumes are only ever created by hand (local PVs)."""

FILESYSTEM = "Filesystem"
"""The default ``volumeMode`` of PVs and claims (the other one is ``Block``)."""

MIGRATED_PROVISIONERS: Mapping[str, str] = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
}
"""In-tree provisioners whose volumes are served by a CSI driver now (CSI migration is
GA for these, so kube-scheduler translates them whenever the node has a CSINode)."""


def claim_key(namespace: str, name: str) -> ClaimKey:
    return ClaimKey(f"{namespace}/{name}")


class AccessMode(enum.StrEnum):
    READ_WRITE_ONCE = "ReadWriteOnce"
    READ_ONLY_MANY = "ReadOnlyMany"
    READ_WRITE_MANY = "ReadWriteMany"
    READ_WRITE_ONCE_POD = "ReadWriteOncePod"

    @classmethod
    def from_string(cls, text: str) -> AccessMode:
        """The access mode named ``text``; :class:`ConstraintError` names the accepted ones."""
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f"unknown access mode {text!r} (accepted: {accepted})")


class BindingMode(enum.StrEnum):
    """``StorageClass.volumeBindingMode``: bind at once, or when the first pod is placed."""

    IMMEDIATE = "Immediate"
    WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

    @classmethod
    def from_string(cls, text: str) -> BindingMode:
        """The mode named ``text``; :class:`ConstraintError` names the accepted ones."""
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f"unknown volumeBindingMode {text!r} (accepted: {accepted})")


@dataclass(frozen=True, slots=True)
class StorageClass:
    name: str
    provisioner: str = ""
    binding_mode: BindingMode = BindingMode.IMMEDIATE
    allowed_topologies: NodeAffinity = ANY_NODE
    """``allowedTopologies`` as a node affinity (terms ORed, a term's ``key In values``
    ANDed): the nodes a volume of this class may be provisioned for. Unset: any node."""

    @property
    def provisions(self) -> bool:
        """Can a volume of this class be created on demand (a real provisioner)?"""
        return bool(self.provisioner) and self.provisioner != NO_PROVISIONER


@dataclass(frozen=True, slots=True)
class ClaimRef:
    """``PersistentVolume.spec.claimRef``: the claim a volume is (being) bound to."""

    namespace: str
    name: str
    uid: str = ""

    @property
    def key(self) -> ClaimKey:
        return claim_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    """A PersistentVolume. ``phase`` is ``status.phase`` (Available, Bound, Released...)."""

    name: str
    uid: str = ""
    resource_version: str = ""
    capacity: int = 0
    access_modes: frozenset[AccessMode] = frozenset()
    storage_class: str = ""
    node_affinity: NodeAffinity = ANY_NODE
    claim_ref: ClaimRef | None = None
    phase: str = "Available"
    labels: Mapping[str, str] = field(default_factory=dict)
    csi_driver: str = ""
    """``spec.csi.driver``, or the CSI driver an in-tree source (``awsElasticBlockStore``,
    ``gcePersistentDisk``, ``azureDisk``, ``cinder``) migrated to: counted against the
    node's CSINode limit for that driver."""
    volume_mode: str = FILESYSTEM
    terminating: bool = False
    invalid: str | None = None


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim:
    """A PersistentVolumeClaim. ``storage_class`` None means ``storageClassName`` unset."""

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    storage_class: str | None = None
    request: int = 0
    access_modes: frozenset[AccessMode] = frozenset()
    volume_name: str = ""
    """``spec.volumeName``: the PV it is bound (or pre-bound) to; empty while unbound."""
    phase: str = "Pending"
    selected_node: str = ""
    """The :data:`SELECTED_NODE` annotation: a provisioner is creating its volume there."""
    selector: LabelSelector | None = None
    """``spec.selector``: a static PV must carry matching labels. None: no selector."""
    volume_mode: str = FILESYSTEM
    terminating: bool = False
    invalid: str | None = None
    key: ClaimKey = field(init=False, repr=False, compare=False)
    """``namespace/name``, computed once (it is looked up for every node tried)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", claim_key(self.namespace, self.name))

    @property
    def bound(self) -> bool:
        return bool(self.volume_name) and self.phase == "Bound"


@dataclass(frozen=True, slots=True)
class CSINode:
    """A CSINode: ``limits`` is each driver's ``allocatable.count`` (drivers with none are
    unlimited)."""

    name: str
    limits: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CSIDriver:
    """A CSIDriver (storage.k8s.io/v1): ``storage_capacity`` is ``spec.storageCapacity``,
    whether the driver publishes CSIStorageCapacity objects that scheduling must honour."""

    name: str
    storage_capacity: bool = False


@dataclass(frozen=True, slots=True)
class StorageCapacity:
    """A CSIStorageCapacity (storage.k8s.io/v1): room for new volumes of ``storage_class``
    on the nodes ``node_topology`` selects (None: on no node). ``capacity`` and
    ``maximum_volume_size`` are bytes, None when unset."""

    namespace: str
    name: str
    storage_class: str
    node_topology: LabelSelector | None = None
    capacity: int | None = None
    maximum_volume_size: int | None = None

    @property
    def key(self) -> ClaimKey:
        return claim_key(self.namespace, self.name)


@dataclass(frozen=True, slots=True)
class PodClaim:
    """A pod volume backed by a PersistentVolumeClaim.

    ``ephemeral`` is a generic ephemeral volume: its claim (named ``<pod>-<volume>``) is
    made by the ephemeral-volume controller, so a missing one is waited for.
    """

    name: str
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class GroupClaim:
    """One claim a task group's members will have (``taskGroups[].resourceClaims[]``,
    the shape of a pod's ``spec.resourceClaims[]``): ``name`` and exactly one of
    ``template`` (``resourceClaimTemplateName``: each member gets a claim of its own)
    and ``claim`` (``resourceClaimName``: the members share that claim)."""

    name: str
    template: str = ""
    claim: str = ""


HELD_SEPARATOR = ":"
"""Between a placeholder's name and its claim's name in the key of a claim it holds in
memory (``<placeholder>:<claim>``): no ResourceClaim name can contain it."""


def held_claim_name(pod: str, claim: str) -> str:
    """The name under which placeholder ``pod`` holds its claim ``claim`` in memory."""
    return f"{pod}{HELD_SEPARATOR}{claim}"


def is_held_claim(key: str) -> bool:
    """Is ``key`` (``namespace/name``) a claim a placeholder holds in memory only?"""
    return HELD_SEPARATOR in key


@dataclass(frozen=True, slots=True)
class PodVolumes:
    """What of a pod's ``spec.volumes`` and ``spec.resourceClaims`` scheduling looks at.

    ``resource_claims`` are the names of the ResourceClaim objects its
    ``spec.resourceClaims`` resolve to; ``unresolved_claims`` the entries whose claim is
    not made yet (a template whose ``status.resourceClaimStatuses`` entry is missing).

    A placeholder's claims are those of its task group, never written: ``held_claims``
    (the name it holds each under, :func:`held_claim_name`, and the
    ResourceClaimTemplate it is made from) are allocated in memory from their template
    and hold their devices until the real member takes the placeholder's place;
    ``shared_claims`` (existing ResourceClaims its member will share) hold nothing but
    keep it where their allocation is reachable.
    """

    claims: tuple[PodClaim, ...] = ()
    csi_inline: tuple[str, ...] = ()
    """Drivers of inline CSI volumes: each counts against its driver's limit."""
    resource_claims: tuple[str, ...] = ()
    unresolved_claims: tuple[str, ...] = ()
    held_claims: tuple[tuple[str, str], ...] = ()
    shared_claims: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.claims or self.csi_inline or self.resource_claims
                    or self.unresolved_claims or self.held_claims or self.shared_claims)

    @property
    def dynamic(self) -> bool:
        """Has it any resource claim (its own, or its task group's for a placeholder)?"""
        return bool(self.resource_claims or self.unresolved_claims or self.held_claims
                    or self.shared_claims)


NO_VOLUMES = PodVolumes()


def placeholder_volumes(pod: str, claims: tuple[GroupClaim, ...]) -> PodVolumes:
    """The claims placeholder ``pod`` carries for its task group's ``claims``."""
    if not claims:
        return NO_VOLUMES
    return PodVolumes(
        held_claims=tuple((held_claim_name(pod, c.name), c.template)
                          for c in claims if c.template),
        shared_claims=tuple(c.claim for c in claims if c.claim and not c.template))

VolumeObject = (PersistentVolume | PersistentVolumeClaim | StorageClass | CSINode
                | ResourceClaim | CSIDriver | StorageCapacity)
"""Any volume object the catalogue keeps."""
