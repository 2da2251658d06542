"""DynamicResources: a pod's ResourceClaims, allocated as kube-scheduler allocates them.

PreFilter (:func:`prefilter`) reads the pod's claims, in kube-scheduler's words when
one is not usable: the resource.k8s.io API not served, a claim from a template not made
yet (``pod.status.resourceClaimStatuses`` does not name it: the resourceclaim
controller makes it), a claim missing or being deleted, a shared claim reserved for its
limit of 256 consumers (``resourceclaim in use``), a DeviceClass that does not exist. An
allocated claim (observed, or assumed for another pod and not yet seen written) is only
to be reserved; the others are to be allocated.

Filter (:func:`node_failure`): an allocated claim's ``nodeSelector`` must select the
node (``resourceclaim not available on the node``), and the claims to allocate must all
be allocated on the node's devices together (:mod:`gangsched.core.devices.allocator`;
``cannot allocate all claims`` or the allocator's error).

Reserve (:func:`reserve`) allocates again on the node chosen and *assumes* the result
(the devices are taken for every other pod from then on); :func:`writes` gives the
PreBind writes (:class:`~gangsched.core.values.decisions.AllocateClaim`,
:class:`~gangsched.core.values.decisions.ReserveClaim`) that go before the Binding. A
failed write, or the placement undone, gives the devices back
(``VolumeCatalog.forget_pod``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gangsched.core.devices.allocator import Allocator
from gangsched.core.devices.catalog import Assumed
from gangsched.core.values.constraints import matches_affinity
from gangsched.core.values.decisions import AllocateClaim, ReserveClaim, VolumeWrite
from gangsched.core.values.devices import (
    RESERVED_FOR_MAX,
    AllocationResult,
    ConsumerRef,
    DeviceID,
    ResourceClaim,
)
from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import PodVolumes, claim_key
from gangsched.core.volumes.catalog import VolumeCatalog

NOT_ON_NODE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
NOT_SERVED = ("pod has spec.resourceClaims, but the resource.k8s.io API is not served: "
              "its dynamic resources cannot be allocated, so it is not bound")


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """A pod's claims: those allocated already (with the allocation, observed or
    assumed), those to allocate, in the order of ``spec.resourceClaims``."""

    allocated: tuple[tuple[ResourceClaim, AllocationResult], ...] = ()
    to_allocate: tuple[ResourceClaim, ...] = ()


def prefilter(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes,
              uid: str = "") -> tuple[ClaimPlan, str | None]:
    """(the plan, None) or (an empty plan, why the pod fits nowhere). A pod without
    claims: (empty plan, None)."""
    none = ClaimPlan()
    if not volumes.resource_claims and not volumes.unresolved_claims:
        return none, None
    if not catalog.resource_claims_served:
        return none, NOT_SERVED
    for name in volumes.unresolved_claims:
        return none, f'waiting for the resourceclaim of pod claim "{name}" to be created'
    devices = catalog.devices
    allocated: list[tuple[ResourceClaim, AllocationResult]] = []
    to_allocate: list[ResourceClaim] = []
    for name in volumes.resource_claims:
        key = claim_key(namespace, name)
        claim = catalog.resource_claims.get(key)
        if claim is None:
            return none, f'resourceclaim "{name}" not found'
        if claim.deleting:
            return none, f'resourceclaim "{name}" is being deleted'
        if claim.invalid:
            return none, f'resourceclaim "{name}": {claim.invalid}'
        assumed = devices.assumed.get(key)
        allocation = claim.allocation
        if allocation is None and assumed is not None and assumed.uid != uid:
            allocation = assumed.allocation
        if allocation is not None:
            if not claim.reserved_by(uid) and _consumers(claim, devices.assumed.values(),
                                                         key) >= RESERVED_FOR_MAX:
                return none, IN_USE
            allocated.append((claim, allocation))
            continue
        for request in claim.spec.requests:
            alternatives = ((request.exactly,) if request.exactly is not None
                            else request.first_available)
            for spec in alternatives:
                if spec.device_class not in devices.classes:
                    return none, (f"request {request.name}: device class "
                                  f"{spec.device_class} does not exist")
        to_allocate.append(claim)
    return ClaimPlan(tuple(allocated), tuple(to_allocate)), None


def _consumers(claim: ResourceClaim, assumed: Iterable[Assumed], key: str) -> int:
    extra = sum(1 for item in assumed if item.claim == key and not claim.reserved_by(item.uid))
    return len(claim.reserved_for) + extra


def node_failure(catalog: VolumeCatalog, plan: ClaimPlan, node: Node,
                 freed: frozenset[DeviceID] = frozenset()) -> str | None:
    """Why the pod's claims cannot be had on ``node``; None when they can."""
    for _, allocation in plan.allocated:
        selector = allocation.node_selector
        if selector is not None and not matches_affinity(selector, node.labels, node.name):
            return NOT_ON_NODE
    if not plan.to_allocate:
        return None
    outcome = Allocator(catalog.devices, freed=freed).allocate(node, plan.to_allocate)
    return outcome.reason or None


def reserve(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes, uid: str,
            node: Node) -> str | None:
    """Allocate and assume the claims of pod ``uid`` on ``node``; the reason when they
    do not fit there (then nothing is assumed)."""
    devices = catalog.devices
    devices.forget_pod(uid)
    plan, why = prefilter(catalog, namespace, volumes, uid)
    if why is not None:
        return why
    outcome = None
    if plan.to_allocate:
        outcome = Allocator(catalog.devices).allocate(node, plan.to_allocate)
        if outcome.allocations is None:
            return outcome.reason
    for claim, _ in plan.allocated:
        if not claim.reserved_by(uid):
            devices.assume(Assumed(claim.key, uid, claim.resource_version, None))
    if outcome is not None and outcome.allocations is not None:
        for claim, allocation in zip(plan.to_allocate, outcome.allocations, strict=True):
            devices.assume(Assumed(claim.key, uid, claim.resource_version, allocation))
    catalog.epoch += 1
    return None


def writes(catalog: VolumeCatalog, uid: str, pod_name: str,
           names: Sequence[str], namespace: str) -> tuple[VolumeWrite, ...]:
    """The PreBind writes of pod ``uid`` for its claims ``names``: allocate (and reserve)
    what it assumed allocating, reserve what was allocated already."""
    found: list[VolumeWrite] = []
    consumer = ConsumerRef(pod_name, uid)
    devices = catalog.devices
    for name in names:
        key = claim_key(namespace, name)
        assumed = devices.assumed.get(key)
        claim = catalog.resource_claims.get(key)
        if assumed is None or assumed.uid != uid or claim is None:
            continue
        if assumed.allocation is not None:
            found.append(AllocateClaim(namespace, name, claim.uid, assumed.resource_version,
                                       assumed.allocation, consumer))
        else:
            found.append(ReserveClaim(namespace, name, claim.uid, assumed.resource_version,
                                      consumer))
    return tuple(found)
