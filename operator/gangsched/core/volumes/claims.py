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

A placeholder's claims are its task group's (``PodVolumes.held_claims``): each is made
in memory from its ResourceClaimTemplate, as the resourceclaim controller would make the
member's, allocated like any claim and *assumed* under the key ``<placeholder>:<claim>``
(no ResourceClaim name can have a colon), never written. The devices stay taken for every
other pod until the placeholder's place is taken (:mod:`gangsched.core.gangs.swap`) or
it is gone; a template that does not exist is the pod's reason
(``resourceclaimtemplate "t" not found``). A task group's claims by name
(``shared_claims``) are the real, shared claims: a placeholder holds nothing of them and
goes only where their allocation, if any, reaches. A pod that takes a placeholder's place
is judged with the placeholder's devices free (:data:`FREED`, :func:`held_devices`).

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

from gangsched.core.devices.allocator import CANNOT_ALLOCATE, Allocator
from gangsched.core.devices.catalog import Assumed
from gangsched.core.values.constraints import matches_affinity
from gangsched.core.values.decisions import AllocateClaim, ReserveClaim, VolumeWrite
from gangsched.core.values.devices import (
    ALLOCATION_RESULTS_MAX,
    RESERVED_FOR_MAX,
    AllocationMode,
    AllocationResult,
    ConsumerRef,
    DeviceID,
    ResourceClaim,
)
from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import (
    HELD_SEPARATOR,
    PodVolumes,
    claim_key,
    is_held_claim,
)
from gangsched.core.volumes.catalog import VolumeCatalog

NOT_ON_NODE = "resourceclaim not available on the node"
IN_USE = "resourceclaim in use"
FREED = "DynamicResources/freed"
"""Cycle-state key: devices Filter counts as free (those of the placeholder whose place
the pod takes)."""
NOT_SERVED = ("pod has spec.resourceClaims, but the resource.k8s.io API is not served: "
              "its dynamic resources cannot be allocated, so it is not bound")


@dataclass(frozen=True, slots=True)
class ClaimPlan:
    """A pod's claims: those allocated already (with the allocation, observed or
    assumed), those to allocate, in the order of ``spec.resourceClaims``."""

    allocated: tuple[tuple[ResourceClaim, AllocationResult], ...] = ()
    to_allocate: tuple[ResourceClaim, ...] = ()
    simple: tuple[str, tuple[str, ...], int] | None = None
    """When every request to allocate asks ``count`` devices of one class with the same
    selectors and nothing else: (class, selectors, total count); see
    :mod:`gangsched.core.devices.matching`."""
    reach: tuple[AllocationResult, ...] = ()
    """The allocations of a placeholder's shared claims: its node must reach them."""


def group_consumer(catalog: VolumeCatalog, key: str, group: str | None) -> ConsumerRef | None:
    """The PodGroup ``group`` (a pod's group key) as the consumer of claim ``key`` when
    the claim is one of that group's (the Workload API's PodGroup ``resourceClaims``);
    None for a claim the pod consumes itself."""
    if group is None:
        return None
    found = catalog.devices.group_claims.get(key)
    return found[1] if found is not None and found[0] == group else None


def prefilter(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes,
              uid: str = "", group: str | None = None) -> tuple[ClaimPlan, str | None]:
    """(the plan, None) or (an empty plan, why the pod fits nowhere). A pod without
    claims: (empty plan, None). ``group``: the pod's PodGroup key (its group's claims
    are reserved for the group, once, not for each pod)."""
    none = ClaimPlan()
    if not volumes.dynamic:
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
            consumer = group_consumer(catalog, key, group)
            if (not claim.reserved_by(uid)
                    and not (consumer is not None and claim.reserved_by(consumer.uid))
                    and _consumers(claim, devices.assumed.values(), key) >= RESERVED_FOR_MAX):
                return none, IN_USE
            allocated.append((claim, allocation))
            continue
        missing = _missing_class(catalog, claim)
        if missing is not None:
            return none, missing
        to_allocate.append(claim)
    for held_name, template in volumes.held_claims:
        made, why = held_claim(catalog, namespace, held_name, template)
        if made is None:
            return none, why
        to_allocate.append(made)
    reach: list[AllocationResult] = []
    for name in volumes.shared_claims:
        key = claim_key(namespace, name)
        claim = catalog.resource_claims.get(key)
        if claim is None:
            return none, f'resourceclaim "{name}" not found'
        assumed = devices.assumed.get(key)
        allocation = claim.allocation or (assumed.allocation if assumed is not None else None)
        if allocation is not None:
            reach.append(allocation)
    return ClaimPlan(tuple(allocated), tuple(to_allocate), _simple(to_allocate),
                     tuple(reach)), None


def held_claim(catalog: VolumeCatalog, namespace: str, held_name: str,
               template: str) -> tuple[ResourceClaim | None, str]:
    """The claim a placeholder holds under ``held_name``, made in memory from
    ResourceClaimTemplate ``template`` of ``namespace``; (None, why) when the template
    does not exist, cannot be read, or names a DeviceClass that does not exist."""
    claim_name = held_name.split(HELD_SEPARATOR, 1)[-1]
    found = catalog.devices.templates.get(claim_key(namespace, template))
    if found is None:
        return None, (f'task group claim "{claim_name}": resourceclaimtemplate '
                      f'"{template}" not found')
    if found.invalid:
        return None, (f'task group claim "{claim_name}": resourceclaimtemplate '
                      f'"{template}": {found.invalid}')
    made = ResourceClaim(namespace, held_name, spec=found.spec)
    missing = _missing_class(catalog, made)
    if missing is not None:
        return None, f'task group claim "{claim_name}": {missing}'
    return made, ""


def _missing_class(catalog: VolumeCatalog, claim: ResourceClaim) -> str | None:
    """kube-scheduler's words for a request of ``claim`` whose DeviceClass is missing."""
    classes = catalog.devices.classes
    for request in claim.spec.requests:
        alternatives = ((request.exactly,) if request.exactly is not None
                        else request.first_available)
        for spec in alternatives:
            if spec.device_class not in classes:
                return (f"request {request.name}: device class "
                        f"{spec.device_class} does not exist")
    return None


def held_devices(catalog: VolumeCatalog, uid: str) -> frozenset[DeviceID]:
    """The devices pod ``uid`` (a placeholder) holds in memory for its task group's
    claims; empty for any other pod."""
    devices = catalog.devices
    found: set[DeviceID] = set()
    for key in devices.by_pod.get(uid, ()):
        item = devices.assumed.get(key)
        if is_held_claim(key) and item is not None and item.allocation is not None:
            found.update(r.device_id for r in item.allocation.devices if not r.admin_access)
    return frozenset(found)


def _simple(claims: Sequence[ResourceClaim]) -> tuple[str, tuple[str, ...], int] | None:
    found: tuple[str, tuple[str, ...]] | None = None
    total = 0
    for claim in claims:
        if claim.spec.constraints:
            return None
        for request in claim.spec.requests:
            spec = request.exactly
            if (spec is None or spec.allocation_mode is not AllocationMode.EXACT_COUNT
                    or spec.admin_access or spec.tolerations or spec.capacity):
                return None
            key = (spec.device_class, spec.selectors)
            if found is not None and found != key:
                return None
            found = key
            total += spec.count
    if found is None or total > ALLOCATION_RESULTS_MAX:
        return None
    return found[0], found[1], total


def _consumers(claim: ResourceClaim, assumed: Iterable[Assumed], key: str) -> int:
    extra = sum(1 for item in assumed if item.claim == key and not claim.reserved_by(item.uid))
    return len(claim.reserved_for) + extra


def node_failure(catalog: VolumeCatalog, plan: ClaimPlan, node: Node,
                 freed: frozenset[DeviceID] = frozenset()) -> str | None:
    """Why the pod's claims cannot be had on ``node``; None when they can."""
    return nodes_failures(catalog, plan, [node], freed)[0]


def nodes_failures(catalog: VolumeCatalog, plan: ClaimPlan, nodes: Sequence[Node],
                   freed: frozenset[DeviceID] = frozenset()) -> list[str | None]:
    """:func:`node_failure` for each of ``nodes``, simple plans judged from the
    matching devices kept per node (:mod:`gangsched.core.devices.matching`)."""
    reasons: list[str | None] = [None] * len(nodes)
    if plan.allocated or plan.reach:
        reached = [allocation for _, allocation in plan.allocated] + list(plan.reach)
        for index, node in enumerate(nodes):
            for allocation in reached:
                selector = allocation.node_selector
                if selector is not None and not matches_affinity(selector, node.labels,
                                                                 node.name):
                    reasons[index] = NOT_ON_NODE
                    break
    if not plan.to_allocate:
        return reasons
    devices = catalog.devices
    if plan.simple is not None and not freed:
        class_name, selectors, count = plan.simple
        device_class = devices.classes.get(class_name)
        if device_class is not None and not device_class.invalid:
            verdicts = devices.matching.fits(devices.pools(), devices.selectors, device_class,
                                             selectors, count, nodes)
            if not plan.allocated and not plan.reach and None not in verdicts:
                return [None if verdict else CANNOT_ALLOCATE for verdict in verdicts]
            for index, verdict in enumerate(verdicts):
                if reasons[index] is None and verdict is not None:
                    reasons[index] = None if verdict else CANNOT_ALLOCATE
                elif reasons[index] is None:
                    reasons[index] = Allocator(devices).reason(node=nodes[index],
                                                               claims=plan.to_allocate) or None
            return reasons
    for index, node in enumerate(nodes):
        if reasons[index] is None:
            reasons[index] = Allocator(devices, freed=freed).reason(
                node, plan.to_allocate) or None
    return reasons


def reserve(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes, uid: str,
            node: Node, group: str | None = None) -> str | None:
    """Allocate and assume the claims of pod ``uid`` on ``node``; the reason when they
    do not fit there (then nothing is assumed). A claim of the pod's PodGroup ``group``
    is assumed for the group; one the group holds already (reserved for it, or assumed
    for another member) needs nothing more."""
    devices = catalog.devices
    devices.forget_pod(uid)
    plan, why = prefilter(catalog, namespace, volumes, uid, group)
    if why is not None:
        return why
    outcome = None
    if plan.to_allocate:
        outcome = Allocator(catalog.devices).allocate(node, plan.to_allocate)
        if outcome.allocations is None:
            return outcome.reason
    for claim, _ in plan.allocated:
        consumer = group_consumer(catalog, claim.key, group)
        if claim.reserved_by(uid) or _group_holds(catalog, claim, uid, consumer):
            continue
        devices.assume(Assumed(claim.key, uid, claim.resource_version, None, consumer))
    if outcome is not None and outcome.allocations is not None:
        for claim, allocation in zip(plan.to_allocate, outcome.allocations, strict=True):
            devices.assume(Assumed(claim.key, uid, claim.resource_version, allocation,
                                   group_consumer(catalog, claim.key, group)))
    catalog.epoch += 1
    return None


def failure_on(catalog: VolumeCatalog, namespace: str, volumes: PodVolumes, uid: str,
               node: Node) -> str | None:
    """Why the claims of pod ``uid`` cannot be had on ``node`` now (PreFilter's reason,
    or Filter's); None when they can."""
    plan, why = prefilter(catalog, namespace, volumes, uid)
    if why is not None:
        return why
    return node_failure(catalog, plan, node)


def _group_holds(catalog: VolumeCatalog, claim: ResourceClaim, uid: str,
                 consumer: ConsumerRef | None) -> bool:
    """Does the PodGroup ``consumer`` hold ``claim`` already: reserved for it (and
    allocated), or assumed for it by another member?"""
    if consumer is None:
        return False
    found = catalog.devices.assumed.get(claim.key)
    if found is not None and found.uid != uid and found.consumer == consumer:
        return True
    return claim.allocation is not None and claim.reserved_by(consumer.uid)


def held(catalog: VolumeCatalog, namespace: str, names: Sequence[str], uid: str,
         group: str | None = None) -> bool:
    """Whether every claim of ``names`` is reserved for pod ``uid`` (or, a claim of its
    PodGroup ``group``, for the group) or assumed for it."""
    devices = catalog.devices
    for name in names:
        key = claim_key(namespace, name)
        assumed = devices.assumed.get(key)
        if assumed is not None and assumed.uid == uid:
            continue
        claim = catalog.resource_claims.get(key)
        if claim is not None and _group_holds(catalog, claim, uid,
                                              group_consumer(catalog, key, group)):
            continue
        if claim is None or not claim.reserved_by(uid) or claim.allocation is None:
            return False
    return True


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
        whom = assumed.consumer or consumer  # a PodGroup's claim: reserved for the group
        if assumed.allocation is not None:
            found.append(AllocateClaim(namespace, name, claim.uid, assumed.resource_version,
                                       assumed.allocation, whom))
        else:
            found.append(ReserveClaim(namespace, name, claim.uid, assumed.resource_version,
                                      whom))
    return tuple(found)


def freed_by(catalog: VolumeCatalog, victims: Iterable[tuple[str, Sequence[str], str]]
             ) -> frozenset[DeviceID]:
    """The devices that the claims of ``victims`` ((namespace, claim names, uid) of each
    pod to be preempted) give back once they are gone: those of claims no pod but the
    victims uses (reserved or assumed for). The resourceclaim controller deallocates
    such claims when their pods are gone."""
    victims = list(victims)
    uids = {uid for _, _, uid in victims}
    freed: set[DeviceID] = set()
    for uid in uids:
        freed.update(held_devices(catalog, uid))  # a placeholder's, held in memory
    assumed = catalog.devices.assumed
    for namespace, names, _ in victims:
        for name in names:
            key = claim_key(namespace, name)
            claim = catalog.resource_claims.get(key)
            allocation = claim.allocation if claim is not None else None
            found = assumed.get(key)
            if allocation is None and found is not None:
                allocation = found.allocation
            if claim is None or allocation is None:
                continue
            users = {ref.uid for ref in claim.reserved_for}
            if found is not None:
                users.add(found.uid)
            if users <= uids:
                freed.update(r.device_id for r in allocation.devices if not r.admin_access)
    return frozenset(freed)


class Simulation:
    """The claims of a preemptor's members placed in a preemption simulation: the
    victims' devices count as free (:func:`freed_by`), and each member placed takes its
    devices from the members after it."""

    def __init__(self, catalog: VolumeCatalog, freed: frozenset[DeviceID]) -> None:
        self.catalog = catalog
        self.taken = {d: k for d, k in catalog.devices.taken.items() if d not in freed}
        self._found: dict[tuple[int, str], tuple[AllocationResult, ...] | None] = {}

    def fits(self, member: int, namespace: str, volumes: PodVolumes, uid: str,
             node: Node) -> bool:
        """Could member number ``member`` have its claims on ``node`` now?"""
        key = (member, node.name)
        if key not in self._found:
            self._found[key] = self._allocate(namespace, volumes, uid, node)
        return self._found[key] is not None

    def _allocate(self, namespace: str, volumes: PodVolumes, uid: str,
                  node: Node) -> tuple[AllocationResult, ...] | None:
        plan, why = prefilter(self.catalog, namespace, volumes, uid)
        if why is not None:
            return None
        for allocation in [a for _, a in plan.allocated] + list(plan.reach):
            selector = allocation.node_selector
            if selector is not None and not matches_affinity(selector, node.labels, node.name):
                return None
        if not plan.to_allocate:
            return ()
        outcome = Allocator(self.catalog.devices, taken=self.taken).allocate(
            node, plan.to_allocate)
        return outcome.allocations

    def take(self, member: int, node: str) -> None:
        """Member ``member`` goes to ``node``: its devices are taken."""
        for allocation in self._found.get((member, node)) or ():
            for result in allocation.devices:
                self.taken[result.device_id] = f"simulated/{member}"
        self._found = {k: v for k, v in self._found.items() if k[0] != member}
