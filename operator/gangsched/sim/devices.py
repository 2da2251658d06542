"""Dynamic Resource Allocation in a simulation: devices on nodes, classes, claim templates.

The workload file says it compactly (``examples/simulations/README.md``):

* ``deviceClasses``: ``{name, selectors: [<CEL expression>...]}``;
* ``claimTemplates``: ``{name, spec: <a ResourceClaimSpec, as in Kubernetes>}``;
* a node entry's ``devices``: ``[{driver, count, name, attributes, capacity, domain}]``,
  ``count`` devices ``<name>-0`` .. ``<name>-<count-1>`` of ``driver`` on each node of the
  entry, published as one ResourceSlice per node and driver (its pool named after the
  node). ``attributes`` and ``capacity`` are those of every device (an attribute is a
  string, an integer, a boolean, or a Kubernetes ``{version: 1.2.3}``); ``domain:
  {attribute, size}`` gives each run of ``size`` devices of a node its own value of
  ``attribute`` (``<node>-<k>``: an NVLink domain, a PCIe root), which a claim's
  ``matchAttribute`` can ask devices to share;
* a pod entry's ``claims``: ``[{name, template}]``, one claim per pod made from the
  template, as the resourceclaim controller makes them.

Everything is read by the translation layer's own readers (:mod:`gangsched.translate.devices`
and :mod:`gangsched.translate.device_claims`), so it means exactly what the same objects
mean on a cluster; their problems are errors of the workload file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core.values import devices as dv
from gangsched.sim.parse_jobs import NAME, NAME_WHAT
from gangsched.sim.schema import Reader
from gangsched.sim.source import Path
from gangsched.translate import device_claims, devices

DEVICES = ("driver", "count", "name", "attributes", "capacity", "domain")
DOMAIN = ("attribute", "size")
CLASS = ("name", "selectors")
TEMPLATE = ("name", "spec")
MAX_DEVICES_PER_SLICE = 128
"""A ResourceSlice holds at most this many devices (``ResourceSliceMaxDevices``)."""


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """One ``devices`` entry of a node entry, before it is given to each node."""

    driver: str
    count: int
    name: str
    attributes: Mapping[str, Any]
    capacity: Mapping[str, Any]
    domain_attribute: str = ""
    domain_size: int = 0


def _attribute(value: object) -> object:
    """The Kubernetes form of a plain attribute value (a mapping is kept as it is)."""
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    return value


def read_devices(r: Reader, obj: Mapping[str, object], path: Path) -> tuple[DeviceSpec, ...]:
    """The ``devices`` of a node entry (empty when absent)."""
    found = []
    for dpath, item in r.items(obj, path, "devices"):
        spec = r.mapping(item, dpath, DEVICES, required=("driver", "count"))
        if spec is None:
            continue
        count = r.integer(spec, dpath, "count", 1, minimum=1)
        if count > MAX_DEVICES_PER_SLICE:
            r.fail((*dpath, "count"), f"is {count}: a ResourceSlice holds at most "
                                      f"{MAX_DEVICES_PER_SLICE} devices")
        attributes = spec.get("attributes") or {}
        capacity = spec.get("capacity") or {}
        for key, value in (("attributes", attributes), ("capacity", capacity)):
            if not isinstance(value, dict):
                r.fail((*dpath, key), "must be a mapping")
        attribute, size = "", 0
        if spec.get("domain") is not None:
            domain = r.mapping(spec["domain"], (*dpath, "domain"), DOMAIN,
                               required=("attribute", "size"))
            if domain is not None:
                attribute = r.string(domain, (*dpath, "domain"), "attribute")
                size = r.integer(domain, (*dpath, "domain"), "size", 1, minimum=1)
        found.append(DeviceSpec(
            r.string(spec, dpath, "driver"), count,
            r.string(spec, dpath, "name", "device", pattern=NAME, what=NAME_WHAT),
            attributes if isinstance(attributes, dict) else {},
            capacity if isinstance(capacity, dict) else {}, attribute, size))
        probe = slice_for("probe", found[-1])
        if probe.invalid:
            r.fail(dpath, probe.invalid)
    return tuple(found)


def slice_for(node: str, spec: DeviceSpec) -> dv.ResourceSlice:
    """The ResourceSlice a driver publishes for ``node``'s devices of ``spec``."""
    items = []
    for index in range(spec.count):
        attributes = {k: _attribute(v) for k, v in spec.attributes.items()}
        if spec.domain_attribute:
            attributes[spec.domain_attribute] = {
                "string": f"{node}-{index // max(spec.domain_size, 1)}"}
        items.append({"name": f"{spec.name}-{index}", "attributes": attributes,
                      "capacity": {k: {"value": v} for k, v in spec.capacity.items()}})
    return devices.resource_slice({
        "metadata": {"name": f"{node}-{spec.driver}"},
        "spec": {"driver": spec.driver, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": items}})


def read_classes(r: Reader, top: Mapping[str, object]) -> tuple[dv.DeviceClass, ...]:
    found = []
    for path, item in r.items(top, (), "deviceClasses"):
        obj = r.mapping(item, path, CLASS, required=("name",))
        if obj is None:
            continue
        selectors = obj.get("selectors") or []
        if not isinstance(selectors, list) or not all(isinstance(s, str) for s in selectors):
            r.fail((*path, "selectors"), "must be a list of CEL expressions")
            continue
        made = devices.device_class({
            "metadata": {"name": r.string(obj, path, "name")},
            "spec": {"selectors": [{"cel": {"expression": s}} for s in selectors]}})
        if made.invalid:
            r.fail(path, made.invalid)
        found.append(made)
    return tuple(found)


def read_templates(r: Reader, top: Mapping[str, object]) -> dict[str, dv.ClaimSpec]:
    """The claim templates by name: the spec of the claims made from each."""
    found: dict[str, dv.ClaimSpec] = {}
    for path, item in r.items(top, (), "claimTemplates"):
        obj = r.mapping(item, path, TEMPLATE, required=("name", "spec"))
        if obj is None:
            continue
        name = r.string(obj, path, "name", pattern=NAME, what=NAME_WHAT)
        made = device_claims.resource_claim_template({
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": obj.get("spec")}})
        if made.invalid:
            r.fail((*path, "spec"), made.invalid.removeprefix("spec.spec."))
        if name in found:
            r.fail((*path, "name"), f'claim template "{name}" is defined twice')
        found[name] = made.spec
    return found


def claim_name(pod: str, entry: str) -> str:
    """The name of a simulated pod's claim (the controller's ``<pod>-<claim>-``, without
    the random suffix: names are unique in a simulation)."""
    return f"{pod}-{entry}"
