"""Defaulting and validation of ``resource.k8s.io/v1`` objects, as the real API server does.

Faithful to ``pkg/apis/resource/validation`` and the v1 defaults, for the rules a
scheduler's writes and a test's objects meet:

* Defaults: an ``exactly`` request (and each ``firstAvailable`` subrequest) without
  ``allocationMode`` gets ``ExactCount``, and ``count: 1`` when it is ``ExactCount``
  with no count; a new claim's ``status`` is dropped (the create strategy).
* DeviceClass: each selector needs ``cel.expression``; each config an ``opaque`` with
  ``driver`` and ``parameters``; at most 32 selectors.
* ResourceSlice: ``driver`` (a CSI driver name), ``pool.name``, ``pool.resourceSliceCount``
  above zero, ``pool.generation`` not negative; exactly one of ``nodeName``,
  ``nodeSelector``, ``allNodes``, ``perDeviceNodeSelection``; device names DNS labels
  and unique, each attribute with exactly one value; ``driver``, ``pool.name`` and
  ``nodeName`` immutable.
* ResourceClaim and ResourceClaimTemplate: request names DNS labels and unique, exactly
  one of ``exactly`` or ``firstAvailable``, ``deviceClassName`` required, ``count``
  above zero for ``ExactCount`` and absent for ``All``; constraints name requests of
  the claim; the spec is immutable.
* ResourceClaim status (``ValidateResourceClaimStatusUpdate``): ``reservedFor`` entries
  need ``resource``, ``name`` and ``uid``, unique by uid, at most 256; ``reservedFor``
  only with an ``allocation``; no new consumers once the claim is being deleted; a set
  ``allocation`` cannot be changed (only cleared); each result names a request of the
  claim, a driver, a pool and a device.

Simplified: CEL expressions are not compiled (the real server refuses one that does
not compile), and quantities, taints, counters and capacity are not checked. Only the
built-in ``v1`` is checked (older versions' shapes differ: a v1beta1 request has its
fields flat).
"""

from __future__ import annotations

import re
from typing import Any

from fakeapi import validation

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

REQUESTS_MAX = 32
SELECTORS_MAX = 32
RESERVED_FOR_MAX = 256
SLICE_DEVICES_MAX = 128
_ATTRIBUTE_KINDS = ("int", "bool", "string", "version")
_NODE_FIELDS = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")


def _invalid(value: Any, message: str) -> str:
    shown = f'"{value}"' if isinstance(value, str) else repr(value)
    return f"Invalid value: {shown}: {message}"


def _immutable(value: Any) -> str:
    return _invalid(value, "field is immutable")


# --- defaulting --------------------------------------------------------------------------


def _default_request(request: Obj) -> Obj:
    request = dict(request)
    if "allocationMode" not in request or not request["allocationMode"]:
        request["allocationMode"] = "ExactCount"
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    return request


def _default_claim_spec(spec: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    devices = dict(spec["devices"])
    requests = []
    for request in devices.get("requests") or []:
        if isinstance(request, dict):
            request = dict(request)
            if isinstance(request.get("exactly"), dict):
                request["exactly"] = _default_request(request["exactly"])
            if isinstance(request.get("firstAvailable"), list):
                request["firstAvailable"] = [_default_request(s) if isinstance(s, dict) else s
                                             for s in request["firstAvailable"]]
        requests.append(request)
    if "requests" in devices:
        devices["requests"] = requests
    return {**spec, "devices": devices}


def admit(kind: str, obj: Obj, old: Obj | None) -> Obj:
    """The v1 defaults (see the module docstring); a new claim starts without status."""
    if kind == "ResourceClaim":
        obj = {**obj, "spec": _default_claim_spec(obj.get("spec"))}
        if old is None:
            obj.pop("status", None)
    elif kind == "ResourceClaimTemplate" and isinstance(obj.get("spec"), dict):
        template = dict(obj["spec"])
        template["spec"] = _default_claim_spec(template.get("spec"))
        obj = {**obj, "spec": template}
    return obj


# --- the rules ---------------------------------------------------------------------------


def _driver_causes(driver: Any, where: str) -> Causes:
    if not driver:
        return [(where, "Required value")]
    if not isinstance(driver, str):
        return [(where, _invalid(driver, "must be a string"))]
    if len(driver) > 63:
        return [(where, "Too long: may not be more than 63 bytes")]
    problem = validation.dns_subdomain_problem(driver.lower())
    return [(where, _invalid(driver, problem))] if problem else []


def _label_causes(name: Any, where: str) -> Causes:
    if not name:
        return [(where, "Required value")]
    problem = validation.dns_label_problem(name) if isinstance(name, str) else "must be a string"
    return [(where, _invalid(name, problem))] if problem else []


def _qualified_name_causes(name: Any, where: str) -> Causes:
    """A constraint's attribute must be fully qualified: ``domain/id``."""
    if not isinstance(name, str) or "/" not in name:
        return [(where, _invalid(name, "must include a domain"))]
    domain, _, ident = name.partition("/")
    problem = validation.dns_subdomain_problem(domain) or (
        None if re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", ident) and len(ident)
        <= 32 else "a C identifier of at most 32 characters is required after the domain")
    return [(where, _invalid(name, problem))] if problem else []


def _selectors_causes(selectors: Any, where: str) -> Causes:
    causes: Causes = []
    if not isinstance(selectors, list | type(None)):
        return [(where, _invalid(selectors, "must be a list"))]
    if selectors and len(selectors) > SELECTORS_MAX:
        causes.append((where, f"Too many: {len(selectors)}: must have at most {SELECTORS_MAX} "
                              "items"))
    for i, selector in enumerate(selectors or []):
        cel = selector.get("cel") if isinstance(selector, dict) else None
        if not isinstance(cel, dict):
            causes.append((f"{where}[{i}].cel", "Required value"))
        elif not cel.get("expression"):
            causes.append((f"{where}[{i}].cel.expression", "Required value"))
    return causes


def _mode_causes(request: Obj, where: str) -> Causes:
    mode, count = request.get("allocationMode"), request.get("count")
    if mode == "All":
        return [] if not count else [(f"{where}.count", _invalid(
            count, "must not be specified when allocationMode is 'All'"))]
    if mode == "ExactCount":
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            return [(f"{where}.count", _invalid(count, "must be greater than zero"))]
        return []
    return [(f"{where}.allocationMode",
             f'Unsupported value: "{mode}": supported values: "All", "ExactCount"')]


def _exact_causes(request: Obj, where: str) -> Causes:
    causes: Causes = []
    name = request.get("deviceClassName")
    if not name:
        causes.append((f"{where}.deviceClassName", "Required value"))
    else:
        problem = validation.dns_subdomain_problem(str(name))
        if problem:
            causes.append((f"{where}.deviceClassName", _invalid(name, problem)))
    causes += _selectors_causes(request.get("selectors"), f"{where}.selectors")
    return causes + _mode_causes(request, where)


def _request_names(requests: list[Any]) -> set[str]:
    names: set[str] = set()
    for request in requests:
        if not isinstance(request, dict):
            continue
        names.add(str(request.get("name")))
        for sub in request.get("firstAvailable") or []:
            if isinstance(sub, dict):
                names.add(f"{request.get('name')}/{sub.get('name')}")
    return names


def claim_spec_causes(spec: Any, where: str) -> Causes:
    """``validateResourceClaimSpec``: requests and constraints (see the module docstring)."""
    if not isinstance(spec, dict):
        return [(where, "Required value")]
    devices = spec.get("devices") or {}
    if not isinstance(devices, dict):
        return [(f"{where}.devices", _invalid(devices, "must be an object"))]
    causes: Causes = []
    requests = devices.get("requests") or []
    if not isinstance(requests, list):
        return [(f"{where}.devices.requests", _invalid(requests, "must be a list"))]
    if len(requests) > REQUESTS_MAX:
        causes.append((f"{where}.devices.requests",
                       f"Too many: {len(requests)}: must have at most {REQUESTS_MAX} items"))
    seen: set[str] = set()
    for i, request in enumerate(requests):
        at = f"{where}.devices.requests[{i}]"
        if not isinstance(request, dict):
            causes.append((at, _invalid(request, "must be an object")))
            continue
        causes += _label_causes(request.get("name"), f"{at}.name")
        if request.get("name") in seen:
            causes.append((f"{at}.name", f'Duplicate value: "{request.get("name")}"'))
        seen.add(str(request.get("name")))
        exactly, first = request.get("exactly"), request.get("firstAvailable")
        if exactly is None and not first:
            causes.append((at, "Required value: exactly one of `exactly` or `firstAvailable` "
                               "is required"))
        elif exactly is not None and first:
            causes.append((at, "Invalid value: null: exactly one of `exactly` or "
                               "`firstAvailable` is required, but multiple fields are set"))
        elif isinstance(exactly, dict):
            causes += _exact_causes(exactly, f"{at}.exactly")
        elif isinstance(first, list):
            for j, sub in enumerate(first):
                sub_at = f"{at}.firstAvailable[{j}]"
                if not isinstance(sub, dict):
                    causes.append((sub_at, _invalid(sub, "must be an object")))
                    continue
                causes += _label_causes(sub.get("name"), f"{sub_at}.name")
                causes += _exact_causes(sub, sub_at)
    names = _request_names(requests)
    for i, constraint in enumerate(devices.get("constraints") or []):
        at = f"{where}.devices.constraints[{i}]"
        if not isinstance(constraint, dict):
            causes.append((at, _invalid(constraint, "must be an object")))
            continue
        for j, name in enumerate(constraint.get("requests") or []):
            if name not in names:
                causes.append((f"{at}.requests[{j}]", _invalid(
                    name, "must be the name of a request in the claim or the name of a "
                          "request and a subrequest separated by '/'")))
        attributes = [constraint.get(k) for k in ("matchAttribute", "distinctAttribute")
                      if constraint.get(k) is not None]
        if len(attributes) != 1:
            causes.append((at, "Required value: exactly one of `matchAttribute` or "
                               "`distinctAttribute` is required"))
        for attribute in attributes:
            field = "matchAttribute" if constraint.get("matchAttribute") is not None \
                else "distinctAttribute"
            causes += _qualified_name_causes(attribute, f"{at}.{field}")
    return causes


def _claim_status_causes(obj: Obj, old: Obj | None) -> Causes:
    status = obj.get("status") or {}
    old_status = (old or {}).get("status") or {}
    if not isinstance(status, dict):
        return [("status", _invalid(status, "must be an object"))]
    causes: Causes = []
    reserved = status.get("reservedFor") or []
    if len(reserved) > RESERVED_FOR_MAX:
        causes.append(("status.reservedFor", f"Too many: {len(reserved)}: must have at most "
                                             f"{RESERVED_FOR_MAX} items"))
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        for field in ("resource", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(field):
                causes.append((f"status.reservedFor[{i}].{field}", "Required value"))
        if isinstance(ref, dict) and ref.get("uid"):
            if ref["uid"] in uids:
                causes.append((f"status.reservedFor[{i}]", f'Duplicate value: {{"uid":'
                                                           f'"{ref["uid"]}"}}'))
            uids.add(ref["uid"])
    allocation = status.get("allocation")
    if reserved:
        if allocation is None:
            causes.append(("status.reservedFor",
                           "Forbidden: may not be specified when `allocated` is not set"))
        elif obj["metadata"].get("deletionTimestamp"):
            before = {r.get("uid") for r in old_status.get("reservedFor") or []
                      if isinstance(r, dict)}
            if uids - before:
                causes.append(("status.reservedFor",
                               "Forbidden: new entries may not be added while "
                               "`deallocationRequested` or `deletionTimestamp` are set"))
    old_allocation = old_status.get("allocation")
    if allocation is not None and old_allocation is not None:
        if allocation != old_allocation:
            causes.append(("status.allocation", _immutable(allocation)))
    elif allocation is not None:
        causes += _allocation_causes(allocation, _request_names(
            ((obj.get("spec") or {}).get("devices") or {}).get("requests") or []))
    return causes


def _allocation_causes(allocation: Any, names: set[str]) -> Causes:
    if not isinstance(allocation, dict):
        return [("status.allocation", _invalid(allocation, "must be an object"))]
    causes: Causes = []
    results = (allocation.get("devices") or {}).get("results") or []
    for i, result in enumerate(results):
        at = f"status.allocation.devices.results[{i}]"
        if not isinstance(result, dict):
            causes.append((at, _invalid(result, "must be an object")))
            continue
        if result.get("request") not in names:
            causes.append((f"{at}.request", _invalid(
                result.get("request"), "must be the name of a request in the claim or the "
                                       "name of a request and a subrequest separated by '/'")))
        causes += _driver_causes(result.get("driver"), f"{at}.driver")
        if not result.get("pool"):
            causes.append((f"{at}.pool", "Required value"))
        causes += _label_causes(result.get("device"), f"{at}.device")
    return causes


def _resource_claim(obj: Obj, old: Obj | None) -> Causes:
    if old is not None:
        causes: Causes = []
        if obj.get("spec") != old.get("spec"):
            causes.append(("spec", _immutable(obj.get("spec"))))
        if obj.get("status") != old.get("status"):
            causes += _claim_status_causes(obj, old)
        return causes
    return claim_spec_causes(obj.get("spec"), "spec")


def _resource_claim_template(obj: Obj, old: Obj | None) -> Causes:
    if old is not None:
        return [] if obj.get("spec") == old.get("spec") else [
            ("spec", _immutable(obj.get("spec")))]
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value")]
    return claim_spec_causes(spec.get("spec"), "spec.spec")


def _device_class(obj: Obj, old: Obj | None) -> Causes:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        return [("spec", _invalid(spec, "must be an object"))]
    causes = _selectors_causes(spec.get("selectors"), "spec.selectors")
    for i, config in enumerate(spec.get("config") or []):
        opaque = config.get("opaque") if isinstance(config, dict) else None
        if not isinstance(opaque, dict):
            causes.append((f"spec.config[{i}].opaque", "Required value"))
            continue
        causes += _driver_causes(opaque.get("driver"), f"spec.config[{i}].opaque.driver")
        if opaque.get("parameters") is None:
            causes.append((f"spec.config[{i}].opaque.parameters", "Required value"))
    return causes


def _slice_device_causes(device: Any, at: str, per_device: bool) -> Causes:
    if not isinstance(device, dict):
        return [(at, _invalid(device, "must be an object"))]
    causes = _label_causes(device.get("name"), f"{at}.name")
    for key, attribute in (device.get("attributes") or {}).items():
        values = [k for k in _ATTRIBUTE_KINDS if isinstance(attribute, dict) and k in attribute]
        if len(values) != 1:
            causes.append((f"{at}.attributes[{key}]", "Invalid value: exactly one value must "
                                                      "be specified"))
    placed = [f for f in ("nodeName", "nodeSelector", "allNodes") if device.get(f) is not None]
    if per_device and len(placed) != 1:
        causes.append((at, "Required value: exactly one of `nodeName`, `nodeSelector`, or "
                           "`allNodes` is required when `perDeviceNodeSelection` is set to "
                           "true in the ResourceSlice spec"))
    elif not per_device and placed:
        causes.append((at, "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can "
                           "only be set if `perDeviceNodeSelection` is set to true in the "
                           "ResourceSlice spec"))
    return causes


def _resource_slice(obj: Obj, old: Obj | None) -> Causes:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [("spec", "Required value")]
    causes = _driver_causes(spec.get("driver"), "spec.driver")
    pool = spec.get("pool") or {}
    if not pool.get("name"):
        causes.append(("spec.pool.name", "Required value"))
    count = pool.get("resourceSliceCount")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        causes.append(("spec.pool.resourceSliceCount", _invalid(count,
                                                                "must be greater than zero")))
    generation = pool.get("generation", 0)
    if not isinstance(generation, int) or generation < 0:
        causes.append(("spec.pool.generation", _invalid(
            generation, "must be greater than or equal to zero")))
    if old is not None:
        old_spec = old.get("spec") or {}
        for path, new_value, old_value in (
                ("spec.pool.name", pool.get("name"), (old_spec.get("pool") or {}).get("name")),
                ("spec.driver", spec.get("driver"), old_spec.get("driver")),
                ("spec.nodeName", spec.get("nodeName"), old_spec.get("nodeName"))):
            if new_value != old_value:
                causes.append((path, _immutable(new_value)))
    if spec.get("nodeName") == "":
        causes.append(("spec.nodeName", _invalid("", "must be either unset or set to a "
                                                     "non-empty string")))
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is False:
            causes.append((f"spec.{flag}", _invalid(False, "must be either unset or set to "
                                                           "true")))
    chosen = [f for f in _NODE_FIELDS if spec.get(f) not in (None, "", False)]
    if not chosen:
        causes.append(("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, "
                               "`allNodes`, `perDeviceNodeSelection` is required"))
    elif len(chosen) > 1:
        shown = ", ".join(f"`{f}`" for f in chosen)
        causes.append(("spec", f'Invalid value: "{{{shown}}}": exactly one of `nodeName`, '
                               "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
                               "required, but multiple fields are set"))
    devices = spec.get("devices") or []
    if len(devices) > SLICE_DEVICES_MAX:
        causes.append(("spec.devices", f"Too many: {len(devices)}: must have at most "
                                       f"{SLICE_DEVICES_MAX} items"))
    names: set[str] = set()
    per_device = spec.get("perDeviceNodeSelection") is True
    for i, device in enumerate(devices):
        causes += _slice_device_causes(device, f"spec.devices[{i}]", per_device)
        name = device.get("name") if isinstance(device, dict) else None
        if name in names:
            causes.append((f"spec.devices[{i}].name", f'Duplicate value: "{name}"'))
        names.add(str(name))
    return causes


RULES = {
    "DeviceClass": _device_class,
    "ResourceSlice": _resource_slice,
    "ResourceClaim": _resource_claim,
    "ResourceClaimTemplate": _resource_claim_template,
}
"""The rules by kind, registered in :data:`fakeapi.validation.KIND_RULES`."""
