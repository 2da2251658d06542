"""Dynamic Resource Allocation values (``resource.k8s.io/v1``), built once at the edge.

The translation layer turns DeviceClasses, ResourceSlices, ResourceClaims and
ResourceClaimTemplates into these frozen values; the core's allocator
(:mod:`gangsched.core.devices`) reads nothing else. Names and shapes follow the v1 API
(Kubernetes 1.34 and later), field by field:

* a :class:`ResourceSlice` publishes the :class:`Device` s of one driver's pool (or part
  of it: ``pool.resource_slice_count`` slices make a pool, all of its ``generation``);
  where they can be reached is said by the slice (``node_name``, ``node_selector``,
  ``all_nodes``) or, with ``per_device_node_selection``, by each device;
* a :class:`DeviceClass` has CEL ``selectors`` every device of the class must pass, and
  opaque ``config`` copied into the allocation;
* a :class:`ResourceClaim` asks for devices (:class:`ClaimSpec`: requests, constraints,
  config) and, once allocated, says which (:class:`AllocationResult`) and for whom
  (``reserved_for``);
* a :class:`ResourceClaimTemplate` is the spec the resourceclaim controller copies into
  the claim it makes for each pod.

Quantities (capacities, counters, capacity requests) are :class:`Quantity` values: an
integer number of thousandths (Kubernetes' ``MilliValue``, rounded up) and the text the
API served, for messages and for CEL's ``quantity``. Attribute values keep v1's four
types: ``int``, ``bool``, ``str`` and :class:`Version` (a semantic version string).
Attribute and capacity names are kept as the API spells them: a name without a domain
(``model``) belongs to the driver's domain (``gpu.example.com/model``); see
:func:`qualified`.

An object the translation could not read is still observed, with ``invalid`` set to the
reason: a claim that is invalid makes its pod wait with that reason; an invalid slice or
class offers no device. Nothing here validates: whatever the API server admitted is
taken as it is.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from gangsched.core.values.constraints import ConstraintError, NodeAffinity, TolerationOperator
from gangsched.core.values.resources import parse_quantity

RESERVED_FOR_MAX = 256
"""``ResourceClaimReservedForMaxSize``: at most this many consumers share one claim."""

ALLOCATION_RESULTS_MAX = 32
"""``AllocationResultsMaxSize``: at most this many devices in one claim's allocation."""

DELETE_PROTECTION = "resource.kubernetes.io/delete-protection"
"""The finalizer kube-scheduler puts on a claim before writing its allocation (the
resourceclaim controller removes it once the allocation is cleared)."""

POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
"""The annotation the resourceclaim controller puts on a claim made from a template."""

FROM_CLASS = "FromClass"
FROM_CLAIM = "FromClaim"
"""``DeviceAllocationConfiguration.source``: where a config of the allocation came from."""


def qualified(name: str, driver: str) -> str:
    """The fully qualified attribute or capacity name: ``name`` itself when it has a
    domain (``domain/id``), else ``driver/name`` (the driver's domain)."""
    return name if "/" in name else f"{driver}/{name}"


class AllocationMode(enum.StrEnum):
    EXACT_COUNT = "ExactCount"
    ALL = "All"

    @classmethod
    def from_string(cls, text: str) -> AllocationMode:
        """The mode named ``text`` (empty: ExactCount, the API's default);
        :class:`ConstraintError` names the accepted ones."""
        if not text:
            return cls.EXACT_COUNT
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f"unknown allocationMode {text!r} (accepted: {accepted})")


class DeviceTaintEffect(enum.StrEnum):
    """``DeviceTaint.effect``: None only informs; NoSchedule keeps new allocations off;
    NoExecute also evicts (gangsched, like kube-scheduler, only avoids the device)."""

    NONE = "None"
    NO_SCHEDULE = "NoSchedule"
    NO_EXECUTE = "NoExecute"

    @classmethod
    def from_string(cls, text: str) -> DeviceTaintEffect:
        """The effect named ``text``; :class:`ConstraintError` names the accepted ones."""
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f"unknown device taint effect {text!r} (accepted: {accepted})")


@dataclass(frozen=True, slots=True)
class Quantity:
    """A ``resource.Quantity``: ``milli`` thousandths (rounded up), ``text`` as served.

    Equality and order are by value alone (``"1Gi" == "1073741824"``)."""

    milli: int
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str | int) -> Quantity:
        """The quantity ``text`` (``"80Gi"``, ``"500m"``, ``4``); raises
        :class:`~gangsched.core.values.resources.QuantityError` on bad syntax."""
        value = parse_quantity(text)
        return cls(math.ceil(value * 1000), str(text))

    @classmethod
    def of(cls, units: int) -> Quantity:
        """``units`` whole units (bytes, counts)."""
        return cls(units * 1000, str(units))

    def __str__(self) -> str:
        if self.text:
            return self.text
        return str(self.milli // 1000) if self.milli % 1000 == 0 else f"{self.milli}m"


@dataclass(frozen=True, slots=True)
class Version:
    """A ``version`` attribute: a semantic version string (``1.2.3``), compared with CEL's
    ``semver`` functions."""

    text: str


AttributeValue = bool | int | str | Version
"""One device attribute: exactly one of v1's ``bool``, ``int``, ``string``, ``version``."""


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    """``DeviceCapacity.requestPolicy`` (consumable capacity): what a request may consume
    of a shared device. ``valid_values`` and ``valid_range`` are exclusive; with neither,
    any amount up to the capacity is accepted."""

    default: Quantity | None = None
    valid_values: tuple[Quantity, ...] = ()
    range_min: Quantity | None = None
    range_max: Quantity | None = None
    range_step: Quantity | None = None


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Quantity
    request_policy: CapacityRequestPolicy | None = None


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    """``Device.consumesCounters[]``: what the device takes, when allocated, of the
    slice's (or pool's) :class:`CounterSet` named ``counter_set``."""

    counter_set: str
    counters: Mapping[str, Quantity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CounterSet:
    """``ResourceSlice.spec.sharedCounters[]``: counters partitionable devices share."""

    name: str
    counters: Mapping[str, Quantity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str = ""
    effect: DeviceTaintEffect = DeviceTaintEffect.NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    """A request's toleration of device taints: an empty ``key`` with ``Exists`` tolerates
    every taint; ``effect`` None matches every effect."""

    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: DeviceTaintEffect | None = None
    toleration_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Device:
    """One device of a :class:`ResourceSlice` (``spec.devices[]``).

    ``node_name``/``node_selector``/``all_nodes`` are set only in a slice with
    ``per_device_node_selection`` (exactly one of them). ``binding_conditions`` (a device
    that is ready only once its driver says so) and ``binds_to_node`` are kept so that the
    allocator can refuse such devices with a reason.
    """

    name: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeAffinity | None = None
    all_nodes: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    allow_multiple_allocations: bool = False
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PoolRef:
    """``ResourceSlice.spec.pool``."""

    name: str
    generation: int = 0
    resource_slice_count: int = 1


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """A ResourceSlice (cluster-scoped, keyed by ``name``).

    Exactly one of ``node_name``, ``node_selector``, ``all_nodes`` and
    ``per_device_node_selection`` says where the devices are reachable."""

    name: str
    driver: str
    pool: PoolRef
    node_name: str | None = None
    node_selector: NodeAffinity | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()
    invalid: str | None = None


@dataclass(frozen=True, slots=True)
class OpaqueConfig:
    """``OpaqueDeviceConfiguration``: ``parameters`` is the JSON text of the object, as
    served (the core copies it and never reads it)."""

    driver: str
    parameters: str = "{}"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """A DeviceClass (cluster-scoped): every device of the class passes all ``selectors``
    (CEL expressions); ``config`` is copied into allocations (source FromClass).
    ``extended_resource_name`` (a class that also serves an extended resource) is kept so
    that pods asking for that resource can be refused with a reason."""

    name: str
    selectors: tuple[str, ...] = ()
    config: tuple[OpaqueConfig, ...] = ()
    extended_resource_name: str = ""
    invalid: str | None = None


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """What one request (``exactly``) or one alternative of ``firstAvailable`` asks for.

    ``name`` is empty for ``exactly`` and the sub-request's name for an alternative.
    ``count`` matters for ExactCount only (the API's default 1). ``capacity`` is
    ``capacity.requests`` (consumable capacity): what each device gives this request."""

    device_class: str
    name: str = ""
    selectors: tuple[str, ...] = ()
    allocation_mode: AllocationMode = AllocationMode.EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity: Mapping[str, Quantity] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """``spec.devices.requests[]``: exactly one of ``exactly`` and ``first_available``."""

    name: str
    exactly: RequestSpec | None = None
    first_available: tuple[RequestSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    """``spec.devices.constraints[]``: ``requests`` empty means every request; exactly one
    of ``match_attribute`` and ``distinct_attribute`` (fully qualified names)."""

    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimConfig:
    """``spec.devices.config[]``: ``requests`` empty means every request."""

    opaque: OpaqueConfig
    requests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[ClaimConfig, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """``status.allocation.devices.results[]``: one device given to ``request`` (for a
    ``firstAvailable`` request: ``<request>/<sub-request>``). ``admin_access`` is None
    unless the request asked for it; ``consumed_capacity`` and ``share_id`` are set for
    consumable capacity only."""

    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    consumed_capacity: Mapping[str, Quantity] = field(default_factory=dict)
    share_id: str | None = None

    @property
    def device_id(self) -> DeviceID:
        return DeviceID(self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class AllocatedConfig:
    """``status.allocation.devices.config[]``: ``source`` is :data:`FROM_CLASS` or
    :data:`FROM_CLAIM`."""

    source: str
    opaque: OpaqueConfig
    requests: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AllocationResult:
    """``status.allocation``. ``node_selector`` None: the devices are reachable from every
    node (the API's unset ``nodeSelector``)."""

    devices: tuple[DeviceResult, ...] = ()
    config: tuple[AllocatedConfig, ...] = ()
    node_selector: NodeAffinity | None = None


@dataclass(frozen=True, slots=True)
class ConsumerRef:
    """``status.reservedFor[]``: for a pod, resource ``pods``, its name and uid."""

    name: str
    uid: str
    resource: str = "pods"
    api_group: str = ""


class DeviceID(NamedTuple):
    """A device, cluster-wide: driver, pool and device name (a tuple: it is hashed for
    every device looked at)."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    """A ResourceClaim (namespaced; keyed ``namespace/name``).

    ``spec`` is what it asks for; ``allocation`` is ``status.allocation`` (None: not
    allocated); ``reserved_for`` is ``status.reservedFor``. ``deleting`` is set while
    ``metadata.deletionTimestamp`` is: such a claim is not allocated or reserved anew.
    ``owner_pod`` is the uid of the pod the claim was made for (its controller owner
    reference, for claims made from a template), empty for a claim made by hand.
    """

    namespace: str
    name: str
    uid: str = ""
    resource_version: str = ""
    spec: ClaimSpec = ClaimSpec()
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerRef, ...] = ()
    deleting: bool = False
    owner_pod: str = ""
    invalid: str | None = None

    @property
    def key(self) -> str:
        """``namespace/name`` (the same as ``volume_specs.claim_key``)."""
        return f"{self.namespace}/{self.name}"

    @property
    def allocated(self) -> bool:
        return self.allocation is not None

    @property
    def node_affinity(self) -> NodeAffinity:
        """The nodes that can reach the allocated devices (every node when not allocated
        or when the allocation names none)."""
        if self.allocation is None or self.allocation.node_selector is None:
            return NodeAffinity()
        return self.allocation.node_selector

    def reserved_by(self, uid: str) -> bool:
        return any(ref.uid == uid for ref in self.reserved_for)


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    """A ResourceClaimTemplate (namespaced): ``spec`` is its ``spec.spec``."""

    namespace: str
    name: str
    spec: ClaimSpec = ClaimSpec()
    invalid: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


DeviceObject = DeviceClass | ResourceSlice | ResourceClaimTemplate
"""What :class:`~gangsched.core.values.observations.DeviceObserved` carries (claims come
as :class:`~gangsched.core.values.observations.VolumeObserved`, as before)."""
