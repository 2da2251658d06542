"""The devices of a node that one simple request could take, kept between placements.

The allocator's search is exact but costs a few hundred microseconds a node; a pod's
Filter asks it on hundreds of nodes. Most pods ask for something simple: ``count``
devices of one class, with selectors, nothing else (no constraint, no alternatives, no
``All``, no admin access, no tolerations, no capacity). Then a node fits exactly when
at least ``count`` of the devices that pass the selectors there are free, which is what
the search would find (every such device serves any of the ``count``).

:class:`MatchIndex` keeps, per request signature (class, its selectors, the request's
selectors) and node, the devices that pass: what the search would consider, in complete
and valid pools, reachable from the node, untainted, without binding conditions. It is
rebuilt when the slices or classes change; whether the devices are free is read from the
taken devices at each question. A node whose devices share counters (partitionable
devices), or whose selectors fail, is left to the search (``None``).
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from gangsched.core.devices.celeval import SelectorCache, SelectorError
from gangsched.core.devices.pools import PoolIndex, device_reaches
from gangsched.core.values.devices import DeviceClass, DeviceID, DeviceTaintEffect
from gangsched.core.values.model import Node

Signature = tuple[str, tuple[str, ...], tuple[str, ...]]

_COMPLEX: None = None


class _Signature:
    __slots__ = ("free", "lists")

    def __init__(self) -> None:
        self.lists: dict[str, list[DeviceID] | None] = {}
        self.free: dict[str, int] = {}
        """Node -> how many of its listed devices are free now."""


class MatchIndex:
    """The matching devices per signature and node, with their free counts kept up to
    date as devices are taken and given back (:meth:`changed`)."""

    def __init__(self, taken: Container[DeviceID]) -> None:
        self._taken = taken
        self._pools: PoolIndex | None = None
        self._signatures: dict[Signature, _Signature] = {}
        self._by_device: dict[DeviceID, list[tuple[_Signature, str]]] = {}

    def clear(self) -> None:
        self._signatures.clear()
        self._by_device.clear()

    def changed(self, device: DeviceID, delta: int) -> None:
        """``device`` was just taken (``delta`` -1) or given back (+1)."""
        for signature, node in self._by_device.get(device, ()):
            signature.free[node] += delta

    def fits(self, pools: PoolIndex, selectors: SelectorCache, device_class: DeviceClass,
             request_selectors: tuple[str, ...], count: int,
             nodes: Sequence[Node]) -> list[bool | None]:
        """For each of ``nodes``: whether ``count`` of its devices that a simple request
        of ``device_class`` with ``request_selectors`` could take are free now; None
        where the search must decide."""
        if pools is not self._pools:
            self.clear()
            self._pools = pools
        key = (device_class.name, device_class.selectors, request_selectors)
        signature = self._signatures.get(key)
        if signature is None:
            signature = self._signatures[key] = _Signature()
        free = signature.free
        verdicts: list[bool | None] = []
        for node in nodes:
            left = free.get(node.name)
            if left is None:
                left = self._build(signature, pools, selectors, device_class,
                                   request_selectors, node)
                if left is None:
                    verdicts.append(None)
                    continue
            verdicts.append(left >= count)
        return verdicts

    def _build(self, signature: _Signature, pools: PoolIndex, selectors: SelectorCache,
               device_class: DeviceClass, request_selectors: tuple[str, ...],
               node: Node) -> int | None:
        if node.name in signature.lists:
            return None  # left to the search
        found = signature.lists[node.name] = _matching(pools, selectors, device_class,
                                                       request_selectors, node)
        if found is None:
            return None
        for device in found:
            self._by_device.setdefault(device, []).append((signature, node.name))
        left = signature.free[node.name] = sum(1 for d in found if d not in self._taken)
        return left


def _matching(pools: PoolIndex, selectors: SelectorCache, device_class: DeviceClass,
              request_selectors: tuple[str, ...], node: Node) -> list[DeviceID] | None:
    found: list[DeviceID] = []
    expressions = (*device_class.selectors, *request_selectors)
    for pool in pools.for_node(node):
        if pool.incomplete or pool.invalid:
            continue
        for item in pool.slices:
            for device in item.devices:
                if device.consumes_counters:
                    return _COMPLEX
                if (device.binding_conditions or device.binds_to_node
                        or device.allow_multiple_allocations
                        or any(t.effect is not DeviceTaintEffect.NONE for t in device.taints)
                        or (item.per_device_node_selection
                            and not device_reaches(device, node))):
                    continue
                try:
                    if all(selectors.matches(e, item.driver, device) for e in expressions):
                        found.append(DeviceID(item.driver, item.pool.name, device.name))
                except SelectorError:
                    return _COMPLEX
    return found
