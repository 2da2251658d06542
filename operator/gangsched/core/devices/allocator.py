"""The structured allocator: which devices of a node's pools a pod's claims get.

kube-scheduler's ``structured`` allocator (Kubernetes 1.36), step by step:

* each claim's requests, in order; a request is ``exactly`` one spec or
  ``firstAvailable`` alternatives tried in order (the first that can be satisfied,
  together with everything else, wins: its results are named ``<request>/<alternative>``);
* a spec needs ``count`` devices (ExactCount) or every matching device of the node's
  pools (All: at least one, none of them taken, no pool incomplete or invalid);
* a device fits a spec when it is not taken (by an observed allocation, an assumed one,
  or earlier in this search; with ``adminAccess`` only not twice in the same claim),
  passes its DeviceClass's selectors and the spec's selectors (CEL), is reachable from
  the node (per-device node selection), has the capacity the spec asks for (consumable
  capacity), has its shared counters left (partitionable devices), and carries no
  NoSchedule or NoExecute taint the spec does not tolerate;
* a claim's constraints hold over the devices chosen so far: ``matchAttribute`` (all
  devices of the named requests have the attribute, with one value) and
  ``distinctAttribute`` (no two share a value);
* depth first, devices in pool, slice, device order, combinations not permutations, the
  first full solution wins (no scoring: as upstream).

Refused, never allocated on a guess: devices with ``bindingConditions`` (their driver
must first prepare them: kube-scheduler's DRADeviceBindingConditions, which gangsched
does not carry out) and devices shared through consumable capacity
(``allowMultipleAllocations``). Such devices simply do not fit.

:meth:`Allocator.allocate` returns an :class:`Outcome`: the allocations (one per claim,
in order), or none with ``error`` empty (kube-scheduler's ``cannot allocate all
claims``), or an error in kube-scheduler's words (a selector that does not compile or
fails, a missing class, ``All`` over an incomplete pool, more than 32 devices).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gangsched.core.devices.catalog import DeviceCatalog
from gangsched.core.devices.celeval import SelectorError
from gangsched.core.devices.constraints import Constraint, make_constraints
from gangsched.core.devices.pools import Pool, PoolKey, device_reaches
from gangsched.core.devices.results import build_results
from gangsched.core.values.constraints import tolerates
from gangsched.core.values.devices import (
    ALLOCATION_RESULTS_MAX,
    AllocationMode,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceID,
    DeviceTaint,
    DeviceTaintEffect,
    DeviceToleration,
    RequestSpec,
    ResourceClaim,
    ResourceSlice,
)
from gangsched.core.values.model import Node

CANNOT_ALLOCATE = "cannot allocate all claims"
"""kube-scheduler's Filter reason when the claims do not fit a node's devices."""

STEP_LIMIT = 20_000
"""Devices looked at per allocation at most. kube-scheduler bounds the search in time (its
Filter timeout, 10 s); the core has no clock, so it bounds the steps: a search that
exhausts them ends with :data:`TIMED_OUT` (on that node), never by luck."""
TIMED_OUT = "timed out trying to allocate devices"


@dataclass(frozen=True, slots=True)
class Outcome:
    allocations: tuple[AllocationResult, ...] | None
    error: str = ""

    @property
    def reason(self) -> str:
        """Why nothing was allocated (empty when allocated)."""
        if self.allocations is not None:
            return ""
        return self.error or CANNOT_ALLOCATE


@dataclass(frozen=True, slots=True)
class Candidate:
    id: DeviceID
    device: Device
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True)
class _Request:
    claim: int
    base: str
    sub: str
    spec: RequestSpec
    device_class: DeviceClass
    count: int = 0
    all_devices: list[Candidate] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.base}/{self.sub}" if self.sub else self.base


class _Stop(Exception):
    """A hard error found during the search: the search ends with it."""


class _TooMany(Exception):
    """More than the claim limit of devices: try another alternative."""


class Allocator:
    """One allocation attempt: ``claims`` (not yet allocated) on ``node``."""

    def __init__(self, catalog: DeviceCatalog, *, freed: frozenset[DeviceID] = frozenset(),
                 taken: Mapping[DeviceID, str] | None = None) -> None:
        self.catalog = catalog
        self.taken = catalog.taken if taken is None else taken
        """Devices taken by claims (observed or assumed)."""
        self.freed = freed
        """Devices to count as free though taken (preemption's victims)."""

    def allocate(self, node: Node, claims: Sequence[ResourceClaim]) -> Outcome:
        try:
            return self._allocate(node, claims)
        except _Stop as stop:
            return Outcome(None, str(stop))

    def reason(self, node: Node, claims: Sequence[ResourceClaim]) -> str:
        """Why ``claims`` cannot be allocated on ``node`` (empty when they can): the
        search alone, without building the results (Filter's question)."""
        try:
            return self._allocate(node, claims, results=False).reason
        except _Stop as stop:
            return str(stop)

    def _allocate(self, node: Node, claims: Sequence[ResourceClaim], *,
                  results: bool = True) -> Outcome:
        self.node = node
        self.pools = self.catalog.pools().for_node(node)
        self.claims = claims
        self.requests: list[list[list[_Request]]] = []
        self.constraints: list[list[Constraint]] = []
        self.allocating: dict[DeviceID, set[int]] = {}
        self.results: list[list[tuple[_Request, Candidate]]] = [[] for _ in claims]
        self.counters: dict[PoolKey, dict[str, dict[str, int]]] = {}
        self.matched: dict[tuple[int, int, str, DeviceID], bool] = {}
        self.steps = 0
        for index, claim in enumerate(claims):
            self.requests.append(self._requests(index, claim))
            made = make_constraints(claim.spec.constraints)
            if isinstance(made, str):
                raise _Stop(f"claim {claim.key}, {made}")
            self.constraints.append(made)
        if not self._claim(0):
            if any(pool.invalid for pool in self.pools):
                return Outcome(None, "invalid resource pools were encountered")
            return Outcome(None)
        if not results:
            return Outcome(())
        return Outcome(tuple(build_results(claim, [(r.name, r.device_class, c.id, c.device,
                                                    c.slice, r.spec)
                                                   for r, c in self.results[i]], node)
                             for i, claim in enumerate(claims)))

    # --- preparation --------------------------------------------------------------------

    def _requests(self, index: int, claim: ResourceClaim) -> list[list[_Request]]:
        if claim.invalid:
            raise _Stop(f"claim {claim.key}: {claim.invalid}")
        found: list[list[_Request]] = []
        minimum = 0
        for request in claim.spec.requests:
            specs = ([request.exactly] if request.exactly is not None
                     else list(request.first_available))
            if not specs:
                raise _Stop(f"claim {claim.key}, request {request.name}: "
                            "unsupported request type")
            alternatives = []
            for spec in specs:
                alternatives.append(self._request(index, claim, request.name, spec))
            minimum += min(r.count for r in alternatives)
            found.append(alternatives)
        if minimum > ALLOCATION_RESULTS_MAX:
            raise _Stop(f"claim {claim.key}: number of requested devices {minimum} exceeds "
                        f"the claim limit of {ALLOCATION_RESULTS_MAX}")
        return found

    def _request(self, index: int, claim: ResourceClaim, base: str,
                 spec: RequestSpec) -> _Request:
        name = f"{base}/{spec.name}" if spec.name else base
        device_class = self.catalog.classes.get(spec.device_class)
        if device_class is None:
            raise _Stop(f"request {name}: device class {spec.device_class} does not exist")
        if device_class.invalid:
            raise _Stop(f"class {device_class.name}: {device_class.invalid}")
        request = _Request(index, base, spec.name, spec, device_class)
        if spec.allocation_mode is AllocationMode.EXACT_COUNT:
            request.count = spec.count
            return request
        for pool in self.pools:
            if pool.incomplete:
                raise _Stop(f"claim {claim.key}, request {name}: asks for all devices, but "
                            f"resource pool {pool.key} is currently being updated")
            if pool.invalid:
                raise _Stop(f"claim {claim.key}, request {name}: asks for all devices, but "
                            f"resource pool {pool.key} is currently invalid")
            for item in pool.slices:
                for device in item.devices:
                    candidate = Candidate(DeviceID(item.driver, item.pool.name, device.name),
                                          device, item, pool)
                    if self._selectable(request, candidate) and self._has_capacity(
                            request, candidate):
                        request.all_devices.append(candidate)
        request.count = len(request.all_devices)
        return request

    # --- the search ---------------------------------------------------------------------

    def _claim(self, index: int) -> bool:
        if index >= len(self.claims):
            return True
        try:
            return self._request_at(index, 0)
        except _TooMany:
            return False

    def _request_at(self, index: int, position: int) -> bool:
        requests = self.requests[index]
        if position >= len(requests):
            return self._claim(index + 1)
        alternatives = requests[position]
        exceeded = True
        for request in alternatives:
            try:
                if self._device(request, position, 0, (0, 0, 0)):
                    return True
                exceeded = False
            except _TooMany:
                continue
        if exceeded:
            raise _TooMany()
        return False

    def _device(self, request: _Request, position: int, nth: int,
                start: tuple[int, int, int]) -> bool:
        all_mode = request.spec.allocation_mode is AllocationMode.ALL
        if all_mode and not request.all_devices:
            return False
        if nth >= request.count:
            return self._request_at(request.claim, position + 1)
        if len(self.results[request.claim]) + request.count - nth > ALLOCATION_RESULTS_MAX:
            raise _TooMany()
        if all_mode:
            candidate = request.all_devices[nth]
            if not self._free(request, candidate.id) or not self._take(request, candidate):
                return False
            if self._device(request, position, nth + 1, (0, 0, 0)):
                return True
            self._give_back(request, candidate)
            return False
        first_pool, first_slice, first_device = start
        for p in range(first_pool, len(self.pools)):
            pool = self.pools[p]
            if pool.incomplete or pool.invalid:
                continue
            s0 = first_slice if p == first_pool else 0
            for s in range(s0, len(pool.slices)):
                item = pool.slices[s]
                d0 = first_device if (p == first_pool and s == first_slice) else 0
                for d in range(d0, len(item.devices)):
                    device = item.devices[d]
                    self.steps += 1
                    if self.steps > STEP_LIMIT:
                        raise _Stop(TIMED_OUT)
                    candidate = Candidate(DeviceID(item.driver, item.pool.name, device.name),
                                          device, item, pool)
                    if not self._free(request, candidate.id):
                        continue
                    if not self._selectable(request, candidate):
                        continue
                    if not self._has_capacity(request, candidate):
                        continue
                    if not self._take(request, candidate):
                        continue
                    try:
                        if self._device(request, position, nth + 1, (p, s, d + 1)):
                            return True
                    except BaseException:
                        self._give_back(request, candidate)
                        raise
                    self._give_back(request, candidate)
        return False

    # --- one device ---------------------------------------------------------------------

    def _free(self, request: _Request, device: DeviceID) -> bool:
        allocating = self.allocating.get(device)
        if request.spec.admin_access:
            return not allocating or request.claim not in allocating
        if allocating:
            return False
        return device not in self.taken or device in self.freed

    def _selectable(self, request: _Request, candidate: Candidate) -> bool:
        key = (request.claim, id(request), "", candidate.id)
        found = self.matched.get(key)
        if found is not None:
            return found
        device = candidate.device
        result = (not device.binding_conditions and not device.binds_to_node
                  and not device.allow_multiple_allocations
                  and self._passes(request, candidate)
                  and (not candidate.slice.per_device_node_selection
                       or device_reaches(device, self.node)))
        self.matched[key] = result
        return result

    def _passes(self, request: _Request, candidate: Candidate) -> bool:
        selectors = self.catalog.selectors
        driver = candidate.slice.driver
        for where, expressions in (
                (f"class {request.device_class.name}", request.device_class.selectors),
                (f"claim {self.claims[request.claim].key}", request.spec.selectors)):
            for number, expression in enumerate(expressions):
                try:
                    if not selectors.matches(expression, driver, candidate.device):
                        return False
                except SelectorError as err:
                    text = str(err)
                    on = "" if "compile" in text else f" on device {candidate.id}"
                    raise _Stop(f"{where}: selector #{number}{on}: {text}") from None
        return True

    def _has_capacity(self, request: _Request, candidate: Candidate) -> bool:
        for name, wanted in request.spec.capacity.items():
            capacity = _capacity(candidate.device, name, candidate.slice.driver)
            if capacity is None or wanted.milli > capacity:
                return False
        return True

    def _take(self, request: _Request, candidate: Candidate) -> bool:
        if _tainted(candidate.device.taints, request.spec.tolerations):
            return False
        device = candidate.device
        if device.consumes_counters and not self._counters_left(candidate):
            return False
        constraints = self.constraints[request.claim]
        for i, constraint in enumerate(constraints):
            if not constraint.add(request.base, request.sub, device, candidate.id):
                for undo in constraints[:i]:
                    undo.remove(request.base, request.sub, device, candidate.id)
                if request.spec.allocation_mode is AllocationMode.ALL:
                    raise _Stop(f"claim {self.claims[request.claim].key}, request "
                                f"{request.name}: cannot add device {candidate.id} because a "
                                "claim constraint would not be satisfied")
                return False
        self.allocating.setdefault(candidate.id, set()).add(request.claim)
        self._consume(candidate, -1)
        self.results[request.claim].append((request, candidate))
        return True

    def _give_back(self, request: _Request, candidate: Candidate) -> None:
        for constraint in self.constraints[request.claim]:
            constraint.remove(request.base, request.sub, candidate.device, candidate.id)
        holders = self.allocating.get(candidate.id)
        if holders is not None:
            holders.discard(request.claim)
            if not holders:
                del self.allocating[candidate.id]
        self._consume(candidate, +1)
        self.results[request.claim].pop()

    # --- shared counters ----------------------------------------------------------------

    def _left(self, pool: Pool) -> dict[str, dict[str, int]]:
        found = self.counters.get(pool.key)
        if found is not None:
            return found
        left = {name: dict(counters) for name, counters in pool.counters.items()}
        index = self.catalog.pools()
        for taken in self.taken:
            if taken.driver != pool.key.driver or taken.pool != pool.key.pool:
                continue
            if taken in self.freed:
                continue
            device = index.device(taken)
            if device is not None:
                _apply(left, device, -1)
        self.counters[pool.key] = left
        return left

    def _counters_left(self, candidate: Candidate) -> bool:
        left = self._left(candidate.pool)
        for use in candidate.device.consumes_counters:
            available = left.get(use.counter_set)
            if available is None:
                return False
            for name, amount in use.counters.items():
                if available.get(name, 0) < amount.milli:
                    return False
        return True

    def _consume(self, candidate: Candidate, sign: int) -> None:
        if candidate.device.consumes_counters:
            _apply(self._left(candidate.pool), candidate.device, sign)


def _apply(left: dict[str, dict[str, int]], device: Device, sign: int) -> None:
    for use in device.consumes_counters:
        counters = left.get(use.counter_set)
        if counters is None:
            continue
        for name, amount in use.counters.items():
            counters[name] = counters.get(name, 0) + sign * amount.milli


def _capacity(device: Device, name: str, driver: str) -> int | None:
    found = device.capacity.get(name)
    if found is None and name.startswith(driver + "/"):
        found = device.capacity.get(name[len(driver) + 1:])
    return None if found is None else found.value.milli


def _tainted(taints: Sequence[DeviceTaint], tolerations: Sequence[DeviceToleration]) -> bool:
    for taint in taints:
        if taint.effect is DeviceTaintEffect.NONE:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return True
    return False
