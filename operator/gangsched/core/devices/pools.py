"""Resource pools: the slices of one driver's pool that a node can use.

As kube-scheduler's ``GatherPools``: a slice is visible from a node when it names the
node (``nodeName``), serves all nodes (``allNodes``), selects the node
(``nodeSelector``), or leaves node selection to each device
(``perDeviceNodeSelection``: then every device says it, checked per device). Of a pool,
only the slices of its newest generation count (older ones are being replaced); a pool
is *incomplete* while fewer slices of that generation exist than its
``resourceSliceCount`` (the driver is still publishing it), and *invalid* when two of
its devices share a name or a slice could not be read. Devices of incomplete or invalid
pools are never allocated; a request for ``All`` devices fails while a pool it could
draw on is incomplete or invalid (its "all" is not known yet).

Shared counters (partitionable devices) are those of every slice of the pool at its
newest generation, whichever node the slice targets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.values.constraints import matches_affinity
from gangsched.core.values.devices import CounterSet, Device, DeviceID, ResourceSlice
from gangsched.core.values.model import Node


@dataclass(frozen=True, slots=True)
class PoolKey:
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


@dataclass(slots=True)
class Pool:
    """One pool as seen from one node: its visible slices at the newest generation."""

    key: PoolKey
    generation: int
    slices: list[ResourceSlice] = field(default_factory=list)
    incomplete: bool = False
    invalid: str = ""
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    """Counter set name -> counter name -> thousandths available in total."""


@dataclass(slots=True)
class _PoolAll:
    generation: int
    slices: list[ResourceSlice]
    invalid: str = ""
    counters: dict[str, dict[str, int]] = field(default_factory=dict)
    devices: dict[str, Device] = field(default_factory=dict)


class PoolIndex:
    """The slices of a catalogue at one epoch, indexed for per-node gathering."""

    def __init__(self, slices: dict[str, ResourceSlice]) -> None:
        newest: dict[PoolKey, _PoolAll] = {}
        for name in sorted(slices):
            item = slices[name]
            key = PoolKey(item.driver, item.pool.name)
            found = newest.get(key)
            if found is None or item.pool.generation > found.generation:
                newest[key] = _PoolAll(item.pool.generation, [item])
            elif item.pool.generation == found.generation:
                found.slices.append(item)
        self.pools = newest
        self.on_node: dict[str, list[ResourceSlice]] = {}
        self.shared: list[ResourceSlice] = []
        for key, pool in newest.items():
            self._summarise(key, pool)
            for item in pool.slices:
                if item.node_name:
                    self.on_node.setdefault(item.node_name, []).append(item)
                else:
                    self.shared.append(item)
        self._by_node: dict[str, list[Pool]] = {}

    @staticmethod
    def _summarise(key: PoolKey, pool: _PoolAll) -> None:
        for item in pool.slices:
            if item.invalid:
                pool.invalid = f"slice {item.name}: {item.invalid}"
            for counter_set in item.shared_counters:
                pool.counters[counter_set.name] = _counters(counter_set)
            for device in item.devices:
                if device.name in pool.devices:
                    pool.invalid = (f"duplicate device name {device.name} in resource pool "
                                    f"{key}")
                pool.devices[device.name] = device

    def device(self, device: DeviceID) -> Device | None:
        """The device ``device`` names, at its pool's newest generation; None if none."""
        pool = self.pools.get(PoolKey(device.driver, device.pool))
        return None if pool is None else pool.devices.get(device.device)

    def counters(self, key: PoolKey) -> dict[str, dict[str, int]]:
        pool = self.pools.get(key)
        return {} if pool is None else pool.counters

    def for_node(self, node: Node) -> list[Pool]:
        """The pools ``node`` can use, in a fixed order (driver, pool). Kept per node
        name for the life of this index (the caller makes a new index when slices or
        nodes change)."""
        found = self._by_node.get(node.name)
        if found is not None:
            return found
        pools: dict[PoolKey, Pool] = {}
        visible = [*self.on_node.get(node.name, ()),
                   *(s for s in self.shared if _slice_reaches(s, node))]
        for item in visible:
            key = PoolKey(item.driver, item.pool.name)
            pool = pools.get(key)
            if pool is None:
                whole = self.pools[key]
                pool = pools[key] = Pool(key, item.pool.generation, invalid=whole.invalid,
                                         counters=whole.counters)
                pool.incomplete = len(whole.slices) != item.pool.resource_slice_count
            if item.devices:
                pool.slices.append(item)
        result = [pools[k] for k in sorted(pools, key=lambda k: (k.driver, k.pool))]
        if len(self._by_node) > 100_000:
            self._by_node.clear()
        self._by_node[node.name] = result
        return result


def _counters(counter_set: CounterSet) -> dict[str, int]:
    return {name: value.milli for name, value in counter_set.counters.items()}


def _slice_reaches(item: ResourceSlice, node: Node) -> bool:
    if item.all_nodes or item.per_device_node_selection:
        return True
    if item.node_selector is not None:
        return matches_affinity(item.node_selector, node.labels, node.name)
    return not item.devices  # a slice of shared counters only: part of the pool


def device_reaches(device: Device, node: Node) -> bool:
    """Per-device node selection: whether ``device`` is reachable from ``node``."""
    if device.node_name:
        return device.node_name == node.name
    if device.all_nodes:
        return True
    if device.node_selector is not None:
        return matches_affinity(device.node_selector, node.labels, node.name)
    return False
