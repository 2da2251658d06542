"""Builders for DRA tests: classes, slices, devices, claims, as the upstream allocator
tests name them (driver-a, pool-1, device-1, claim-0, req-0...)."""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.values.constraints import (
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
)
from gangsched.core.values.devices import (
    AllocationMode,
    AttributeValue,
    ClaimSpec,
    CounterConsumption,
    CounterSet,
    Device,
    DeviceCapacity,
    DeviceClass,
    DeviceConstraint,
    DeviceRequest,
    DeviceTaint,
    DeviceToleration,
    PoolRef,
    Quantity,
    RequestSpec,
    ResourceClaim,
    ResourceSlice,
)
from gangsched.core.values.model import Node
from gangsched.core.values.resources import Resources

DRIVER_A = "driver-a"
DRIVER_B = "driver-b"
CLASS_A = "class-a"
CLASS_B = "class-b"
REGION = "region"


def make_class(name: str = CLASS_A, driver: str = DRIVER_A, *selectors: str) -> DeviceClass:
    """A class of ``driver``'s devices (``device.driver == driver``), as upstream's."""
    return DeviceClass(name, (f'device.driver == "{driver}"', *selectors))


def device(name: str = "device-1", *, attributes: Mapping[str, AttributeValue] | None = None,
           memory: str | None = None, taints: tuple[DeviceTaint, ...] = (),
           counters: Mapping[str, str] | None = None, counter_set: str = "gpu-0",
           node: str | None = None, **kwargs: object) -> Device:
    capacity = {"memory": DeviceCapacity(Quantity.parse(memory))} if memory else {}
    consumes = ((CounterConsumption(counter_set, {k: Quantity.parse(v)
                                                  for k, v in counters.items()}),)
                if counters else ())
    return Device(name, dict(attributes or {}), capacity, consumes, taints=taints,
                  node_name=node, **kwargs)  # type: ignore[arg-type]


def make_slice(name: str = "slice-1", *devices: Device, node: str | None = "node-1",
               pool: str = "pool-1", driver: str = DRIVER_A, generation: int = 0,
               count: int = 1, selector: NodeAffinity | None = None, all_nodes: bool = False,
               per_device: bool = False, counters: Mapping[str, Mapping[str, str]] | None = None,
               ) -> ResourceSlice:
    if selector is not None or all_nodes or per_device:
        node = None
    shared = tuple(CounterSet(k, {n: Quantity.parse(v) for n, v in c.items()})
                   for k, c in (counters or {}).items())
    return ResourceSlice(name, driver, PoolRef(pool, generation, count), node_name=node,
                         node_selector=selector, all_nodes=all_nodes,
                         per_device_node_selection=per_device,
                         devices=devices or (device(),), shared_counters=shared)


def label_selector(key: str, value: str) -> NodeAffinity:
    return NodeAffinity((NodeSelectorTerm((SelectorRequirement(key, SelectorOperator.IN,
                                                               (value,)),)),))


def request(name: str = "req-0", device_class: str = CLASS_A, count: int = 1, *selectors: str,
            all_devices: bool = False, admin: bool = False,
            tolerations: tuple[DeviceToleration, ...] = (),
            capacity: Mapping[str, str] | None = None) -> DeviceRequest:
    return DeviceRequest(name, exactly=spec(device_class, count, *selectors,
                                            all_devices=all_devices, admin=admin,
                                            tolerations=tolerations, capacity=capacity))


def spec(device_class: str = CLASS_A, count: int = 1, *selectors: str, name: str = "",
         all_devices: bool = False, admin: bool = False,
         tolerations: tuple[DeviceToleration, ...] = (),
         capacity: Mapping[str, str] | None = None) -> RequestSpec:
    mode = AllocationMode.ALL if all_devices else AllocationMode.EXACT_COUNT
    return RequestSpec(device_class, name, tuple(selectors), mode,
                       0 if all_devices else count, admin, tolerations,
                       {k: Quantity.parse(v) for k, v in (capacity or {}).items()})


def first_available(name: str, *alternatives: RequestSpec) -> DeviceRequest:
    return DeviceRequest(name, first_available=alternatives)


def claim(name: str = "claim-0", *requests: DeviceRequest,
          constraints: tuple[DeviceConstraint, ...] = (), namespace: str = "default",
          uid: str = "") -> ResourceClaim:
    return ResourceClaim(namespace, name, uid or f"uid-{name}", "1",
                         ClaimSpec(requests or (request(),), constraints))


def match(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(tuple(requests), match_attribute=attribute)


def distinct(attribute: str, *requests: str) -> DeviceConstraint:
    return DeviceConstraint(tuple(requests), distinct_attribute=attribute)


def node(name: str = "node-1", region: str = "region-1") -> Node:
    return Node(name, Resources(), labels={REGION: region, "kubernetes.io/hostname": name})
