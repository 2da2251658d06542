"""``resource.k8s.io`` objects into the core's device values, and allocations back to JSON.

:func:`device_class`, :func:`resource_slice`, :func:`resource_claim` and
:func:`resource_claim_template` read the v1 objects (Kubernetes 1.34 and later) and the
v1beta1 ones (1.32 and 1.33: a request's fields flat in the request instead of under
``exactly``, a device's under ``basic``) into :mod:`gangsched.core.values.devices`.
Nothing here crashes on bad input: every field that cannot be read is a problem, all of
an object's problems are joined (each starting with its field's path) into ``invalid``,
and the object is still observed, so that the core can say why (a claim's pod waits with
the reason; a bad slice or class offers no device) while everything else is scheduled.
Absent fields take the API server's defaults (``allocationMode: ExactCount``, ``count:
1``, toleration operator ``Equal``).

:func:`allocation_to_k8s` renders an allocation the core decided as the claim's
``status.allocation`` (the shell writes it before the Binding).

List-valued attributes (alpha in 1.36) are not read: a selector that looks one up sees
it missing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values import constraints, resources
from gangsched.core.values import devices as dv
from gangsched.translate import fields, k8s_constraints

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_ATTRIBUTE_KINDS = ("int", "bool", "string", "version")
JSON = Mapping[str, Any]


def read_map(raw: object, path: str, problems: fields.Problems) -> Mapping[str, Any]:
    """An object (``{}`` when absent, or after recording why it is not one)."""
    empty: Mapping[str, Any] = {}
    return problems.read(lambda: fields.mapping(raw, path), empty)


def read_seq(raw: object, path: str, problems: fields.Problems) -> Sequence[Any]:
    """A list (``()`` when absent, or after recording why it is not one)."""
    empty: Sequence[Any] = ()
    return problems.read(lambda: fields.sequence(raw, path), empty)


def read_meta(obj: JSON, problems: fields.Problems) -> Mapping[str, Any]:
    return read_map(obj.get("metadata"), "metadata", problems)


def read_part(obj: Mapping[str, Any], key: str, path: str,
          problems: fields.Problems) -> Mapping[str, Any]:
    return problems.read(lambda: fields.mapping(obj.get(key), fields.key_path(path, key)), {})


def read_items(obj: Mapping[str, Any], key: str, path: str,
           problems: fields.Problems) -> list[tuple[str, Mapping[str, Any]]]:
    """The objects of list ``obj[key]`` with their paths; a non-object item is a problem."""
    where = fields.key_path(path, key)
    empty: Sequence[Any] = ()
    found = []
    for index, item in enumerate(problems.read(lambda: fields.sequence(obj.get(key), where),
                                               empty)):
        at = f"{where}[{index}]"
        if isinstance(item, Mapping):
            found.append((at, item))
        else:
            problems.add(f"{at}: expected an object, got {fields.json_type(item)}")
    return found


def read_strings(obj: Mapping[str, Any], key: str, path: str,
             problems: fields.Problems) -> tuple[str, ...]:
    where = fields.key_path(path, key)
    empty: Sequence[Any] = ()
    out = []
    for index, item in enumerate(problems.read(lambda: fields.sequence(obj.get(key), where),
                                               empty)):
        if isinstance(item, str):
            out.append(item)
        else:
            problems.add(f"{where}[{index}]: expected a string, got {fields.json_type(item)}")
    return tuple(out)


def read_string(obj: Mapping[str, Any], key: str, path: str, problems: fields.Problems, *,
            required: bool = False) -> str:
    where = fields.key_path(path, key)
    text = problems.read(lambda: fields.string(obj.get(key), where), "")
    if required and not text and obj.get(key) is None:
        problems.add(f"{where}: Required value")
    return text


def read_quantity(raw: object, path: str, problems: fields.Problems) -> dv.Quantity | None:
    try:
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise fields.wrong_type("a quantity", raw, path)
        return dv.Quantity.parse(raw)
    except resources.QuantityError as error:
        problems.add(str(fields.quantity_error(error, path)))
    except fields.TranslationError as error:
        problems.add(str(error))
    return None


def read_quantities(raw: object, path: str, problems: fields.Problems) -> dict[str, dv.Quantity]:
    out: dict[str, dv.Quantity] = {}
    for name, value in read_map(raw, path, problems).items():
        found = read_quantity(value, fields.key_path(path, str(name)), problems)
        if found is not None:
            out[str(name)] = found
    return out


def read_node_selector(raw: object, path: str,
                   problems: fields.Problems) -> constraints.NodeAffinity | None:
    """A ``NodeSelector`` (``nodeSelectorTerms``); None when absent."""
    if raw is None:
        return None
    try:
        return k8s_constraints.node_affinity_from_k8s({"nodeAffinity": {_REQUIRED: raw}},
                                                      path="")
    except constraints.ConstraintError as error:
        problems.add(path + str(error).replace(f".nodeAffinity.{_REQUIRED}", "", 1))
        return None


def read_opaque(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> dv.OpaqueConfig:
    opaque = read_part(raw, "opaque", path, problems)
    where = fields.key_path(path, "opaque")
    parameters = opaque.get("parameters")
    return dv.OpaqueConfig(read_string(opaque, "driver", where, problems, required=True),
                           json.dumps(parameters if parameters is not None else {},
                                      sort_keys=True, separators=(",", ":")))


def read_selectors(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> tuple[str, ...]:
    out = []
    for at, selector in read_items(raw, "selectors", path, problems):
        cel = read_part(selector, "cel", at, problems)
        expression = read_string(cel, "expression", f"{at}.cel", problems, required=True)
        if expression:
            out.append(expression)
    return tuple(out)


# --- DeviceClass and ResourceSlice -------------------------------------------------------


def device_class(obj: JSON) -> dv.DeviceClass:
    """A DeviceClass: its CEL selectors and opaque configs; problems go into ``invalid``."""
    problems = fields.Problems()
    meta = read_meta(obj, problems)
    spec = read_part(obj, "spec", "", problems)
    configs = tuple(read_opaque(raw, at, problems) for at, raw in read_items(spec, "config", "spec",
                                                                      problems))
    return dv.DeviceClass(str(meta.get("name") or ""), read_selectors(spec, "spec", problems),
                          configs, read_string(spec, "extendedResourceName", "spec", problems),
                          invalid=problems.message())


def _attribute(raw: object, path: str, problems: fields.Problems) -> dv.AttributeValue | None:
    """One attribute: exactly one of ``int``, ``bool``, ``string``, ``version``; None for a
    list-valued one (not read) or a bad one (a problem)."""
    value = read_map(raw, path, problems)
    kinds = [k for k in _ATTRIBUTE_KINDS if k in value]
    if not kinds:
        if any(k.endswith("s") and k[:-1] in _ATTRIBUTE_KINDS for k in value):
            return None  # a list-valued attribute (alpha): not read
        problems.add(f"{path}: exactly one of int, bool, string, version is required")
        return None
    if len(kinds) > 1:
        problems.add(f"{path}: exactly one of int, bool, string, version is required, got "
                     f"{', '.join(kinds)}")
        return None
    kind = kinds[0]
    where = f"{path}.{kind}"
    if kind == "int":
        return problems.read(lambda: fields.integer(value[kind], where, default=0), None)
    if kind == "bool":
        return problems.read(lambda: fields.boolean(value[kind], where, default=False), None)
    text = problems.read(lambda: fields.string(value[kind], where), None)
    if text is None:
        return None
    return dv.Version(text) if kind == "version" else text


def _capacity(raw: object, path: str, problems: fields.Problems) -> dv.DeviceCapacity | None:
    capacity = read_map(raw, path, problems)
    value = read_quantity(capacity.get("value"), f"{path}.value", problems)
    if value is None:
        return None
    policy_raw = capacity.get("requestPolicy")
    if policy_raw is None:
        return dv.DeviceCapacity(value)
    where = f"{path}.requestPolicy"
    policy = read_map(policy_raw, where, problems)
    raw_values = read_seq(policy.get("validValues"), f"{where}.validValues", problems)
    values = tuple(q for i, text in enumerate(raw_values)
                   if (q := read_quantity(text, f"{where}.validValues[{i}]", problems))
                   is not None)
    valid_range = read_part(policy, "validRange", where, problems)

    def bound(key: str) -> dv.Quantity | None:
        raw_bound = valid_range.get(key)
        return None if raw_bound is None else read_quantity(raw_bound, f"{where}.validRange.{key}",
                                                        problems)

    default = policy.get("default")
    return dv.DeviceCapacity(value, dv.CapacityRequestPolicy(
        None if default is None else read_quantity(default, f"{where}.default", problems),
        values, bound("min"), bound("max"), bound("step")))


def _counters(raw: Mapping[str, Any], path: str,
              problems: fields.Problems) -> dict[str, dv.Quantity]:
    """``counters``: name to ``{"value": quantity}``."""
    out: dict[str, dv.Quantity] = {}
    where = fields.key_path(path, "counters")
    for name, counter in read_map(raw.get("counters"), where, problems).items():
        at = fields.key_path(where, str(name))
        value = read_map(counter, at, problems)
        found = read_quantity(value.get("value"), f"{at}.value", problems)
        if found is not None:
            out[str(name)] = found
    return out


def _taints(raw: Mapping[str, Any], path: str,
            problems: fields.Problems) -> tuple[dv.DeviceTaint, ...]:
    out = []
    for at, taint in read_items(raw, "taints", path, problems):
        try:
            effect = dv.DeviceTaintEffect.from_string(str(taint.get("effect") or ""))
        except constraints.ConstraintError as error:
            problems.add(f"{at}.effect: {error}")
            continue
        out.append(dv.DeviceTaint(read_string(taint, "key", at, problems, required=True),
                                  read_string(taint, "value", at, problems), effect))
    return tuple(out)


def _device(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> dv.Device:
    basic = raw.get("basic")  # v1beta1: the device's fields under "basic"
    body = basic if isinstance(basic, Mapping) else raw
    attributes: dict[str, dv.AttributeValue] = {}
    where = f"{path}.attributes"
    for name, value in read_map(body.get("attributes"), where, problems).items():
        found = _attribute(value, fields.key_path(where, str(name)), problems)
        if found is not None:
            attributes[str(name)] = found
    capacity: dict[str, dv.DeviceCapacity] = {}
    where = f"{path}.capacity"
    for name, value in read_map(body.get("capacity"), where, problems).items():
        found_capacity = _capacity(value, fields.key_path(where, str(name)), problems)
        if found_capacity is not None:
            capacity[str(name)] = found_capacity
    consumes = tuple(dv.CounterConsumption(read_string(c, "counterSet", at, problems,
                                                       required=True),
                                           _counters(c, at, problems))
                     for at, c in read_items(body, "consumesCounters", path, problems))
    node_name = body.get("nodeName")
    return dv.Device(
        read_string(raw, "name", path, problems, required=True), attributes, capacity, consumes,
        node_name=None if node_name is None else read_string(body, "nodeName", path, problems),
        node_selector=read_node_selector(body.get("nodeSelector"), f"{path}.nodeSelector",
                                     problems),
        all_nodes=problems.read(lambda: fields.boolean(body.get("allNodes"),
                                                       f"{path}.allNodes", default=False),
                                False),
        taints=_taints(body, path, problems),
        allow_multiple_allocations=problems.read(lambda: fields.boolean(
            body.get("allowMultipleAllocations"), f"{path}.allowMultipleAllocations",
            default=False), False),
        binds_to_node=problems.read(lambda: fields.boolean(
            body.get("bindsToNode"), f"{path}.bindsToNode", default=False), False),
        binding_conditions=read_strings(body, "bindingConditions", path, problems),
        binding_failure_conditions=read_strings(body, "bindingFailureConditions", path, problems))


def resource_slice(obj: JSON) -> dv.ResourceSlice:
    """A ResourceSlice: its pool, where its devices are reachable, the devices and shared
    counters; problems go into ``invalid`` (the allocator then uses none of its devices)."""
    problems = fields.Problems()
    meta = read_meta(obj, problems)
    spec = read_part(obj, "spec", "", problems)
    pool = read_part(spec, "pool", "spec", problems)
    ref = dv.PoolRef(
        read_string(pool, "name", "spec.pool", problems, required=True),
        problems.read(lambda: fields.integer(pool.get("generation"), "spec.pool.generation",
                                             default=0, minimum=0), 0),
        problems.read(lambda: fields.integer(pool.get("resourceSliceCount"),
                                             "spec.pool.resourceSliceCount", default=1,
                                             minimum=1), 1))
    node_name = spec.get("nodeName")
    devices = tuple(_device(raw, at, problems) for at, raw in read_items(spec, "devices", "spec",
                                                                      problems))
    counters = tuple(dv.CounterSet(read_string(raw, "name", at, problems, required=True),
                                   _counters(raw, at, problems))
                     for at, raw in read_items(spec, "sharedCounters", "spec", problems))
    return dv.ResourceSlice(
        str(meta.get("name") or ""), read_string(spec, "driver", "spec", problems, required=True),
        ref, node_name=None if node_name is None else read_string(spec, "nodeName", "spec",
                                                              problems),
        node_selector=read_node_selector(spec.get("nodeSelector"), "spec.nodeSelector", problems),
        all_nodes=problems.read(lambda: fields.boolean(spec.get("allNodes"), "spec.allNodes",
                                                       default=False), False),
        per_device_node_selection=problems.read(lambda: fields.boolean(
            spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection", default=False),
            False),
        devices=devices, shared_counters=counters, invalid=problems.message())
