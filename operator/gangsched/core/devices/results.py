"""What an allocation writes: the devices, the configuration, the node selector.

As kube-scheduler builds ``status.allocation``:

* one result per device, named by its request (``<request>/<alternative>`` for
  ``firstAvailable``), with ``adminAccess`` set only when asked, and the request's
  tolerations;
* the configuration: each DeviceClass's ``config`` once (source FromClass) for the
  requests of that class, then the claim's own ``config`` entries (source FromClaim)
  for the requests that were allocated; a config for every request names none;
* the node selector: a device of a node-local slice (or device) pins the claim to the
  node (``matchFields metadata.name In [node]``); devices of slices that select nodes
  give those selectors (all of them must hold: their terms are combined); devices of
  ``allNodes`` slices add nothing, and a claim with only those has none.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.core.values.constraints import (
    NODE_NAME_FIELD,
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
)
from gangsched.core.values.devices import (
    FROM_CLAIM,
    FROM_CLASS,
    AllocatedConfig,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceID,
    DeviceResult,
    OpaqueConfig,
    RequestSpec,
    ResourceClaim,
    ResourceSlice,
)
from gangsched.core.values.model import Node

Chosen = tuple[str, DeviceClass, DeviceID, Device, ResourceSlice, RequestSpec]
"""(request name, class, device id, device, its slice, the spec it was chosen for)."""


def on_node(name: str) -> NodeAffinity:
    """The selector of a claim whose devices are on node ``name`` alone."""
    return NodeAffinity((NodeSelectorTerm(match_fields=(
        SelectorRequirement(NODE_NAME_FIELD, SelectorOperator.IN, (name,)),)),))


def build_results(claim: ResourceClaim, chosen: Sequence[Chosen], node: Node) -> AllocationResult:
    devices = tuple(
        DeviceResult(name, device_id.driver, device_id.pool, device_id.device,
                     admin_access=True if spec.admin_access else None,
                     tolerations=spec.tolerations)
        for name, _, device_id, _, _, spec in chosen)
    return AllocationResult(devices, _config(claim, chosen), _node_selector(chosen, node))


def _config(claim: ResourceClaim, chosen: Sequence[Chosen]) -> tuple[AllocatedConfig, ...]:
    by_request: dict[str, tuple[str, DeviceClass]] = {}
    for name, device_class, *_ in chosen:
        base = name.partition("/")[0]
        by_request.setdefault(base, (name, device_class))
    configs: list[tuple[str, OpaqueConfig, list[str]]] = []
    class_slots: dict[str, list[int]] = {}
    for request in claim.spec.requests:
        found = by_request.get(request.name)
        if found is None:
            continue
        name, device_class = found
        slots = class_slots.get(device_class.name)
        if slots is not None:
            for slot in slots:
                configs[slot][2].append(name)
            continue
        class_slots[device_class.name] = []
        for opaque in device_class.config:
            class_slots[device_class.name].append(len(configs))
            configs.append((FROM_CLASS, opaque, [name]))
    total = len(claim.spec.requests)
    result = [AllocatedConfig(source, opaque, () if len(names) == total else tuple(names))
              for source, opaque, names in configs]
    for entry in claim.spec.config:
        if not entry.requests:
            result.append(AllocatedConfig(FROM_CLAIM, entry.opaque))
            continue
        for request in claim.spec.requests:
            picked = by_request.get(request.name, ("", None))[0]
            if request.name in entry.requests or (picked and picked in entry.requests):
                result.append(AllocatedConfig(
                    FROM_CLAIM, entry.opaque,
                    () if len(entry.requests) == total else entry.requests))
    return tuple(result)


def _node_selector(chosen: Sequence[Chosen], node: Node) -> NodeAffinity | None:
    selectors: list[NodeAffinity] = []
    for _, _, _, device, item, _ in chosen:
        if item.node_name or device.node_name:
            return on_node(node.name)
        selector = device.node_selector if item.per_device_node_selection else item.node_selector
        if selector is not None and selector not in selectors:
            selectors.append(selector)
    if not selectors:
        return None
    terms: tuple[NodeSelectorTerm, ...] = selectors[0].required_terms or ()
    for other in selectors[1:]:
        terms = tuple(NodeSelectorTerm(a.match_expressions + b.match_expressions,
                                       a.match_fields + b.match_fields)
                      for a in terms for b in other.required_terms or ())
    return NodeAffinity(terms)
