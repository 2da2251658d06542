"""ResourceClaims and ResourceClaimTemplates into the core's values, and an allocation the
core decided back into a claim's ``status.allocation``.

:func:`resource_claim` reads a claim's spec (requests with ``exactly`` or
``firstAvailable``, constraints, config), its ``status.allocation`` and
``status.reservedFor``, whether it is being deleted, and the pod it was made for (its
controller owner reference of kind Pod); :func:`resource_claim_template` the spec of a
template. Both read v1 and v1beta1 (a request's fields flat in the request); problems go
into ``invalid`` with their paths (see :mod:`gangsched.translate.devices`).

:func:`allocation_to_k8s` is the reverse of the allocation's reading: results (request,
driver, pool, device, and ``adminAccess``, ``tolerations``, ``consumedCapacity``,
``shareID`` where set), config (source, requests, opaque driver and parameters) and
``nodeSelector``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import constraints
from gangsched.core.values import devices as dv
from gangsched.translate import fields, k8s_constraints
from gangsched.translate.devices import (
    read_items,
    read_map,
    read_meta,
    read_node_selector,
    read_opaque,
    read_part,
    read_quantities,
    read_selectors,
    read_string,
    read_strings,
)

JSON = Mapping[str, Any]
_EXACT_FIELDS = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess",
                 "tolerations", "capacity")


def _seconds(raw: object, path: str, problems: fields.Problems) -> int:
    return problems.read(lambda: fields.integer(raw, path, default=0), 0)


def _tolerations(raw: Mapping[str, Any], path: str,
                 problems: fields.Problems) -> tuple[dv.DeviceToleration, ...]:
    out = []
    for at, item in read_items(raw, "tolerations", path, problems):
        try:
            operator = constraints.TolerationOperator.from_string(str(item.get("operator")
                                                                      or ""))
            effect = None if not item.get("effect") else dv.DeviceTaintEffect.from_string(
                str(item["effect"]))
        except constraints.ConstraintError as error:
            problems.add(f"{at}: {error}")
            continue
        seconds = _seconds(item.get("tolerationSeconds"), f"{at}.tolerationSeconds", problems)
        out.append(dv.DeviceToleration(
            read_string(item, "key", at, problems), operator,
            read_string(item, "value", at, problems), effect,
            None if item.get("tolerationSeconds") is None else seconds))
    return tuple(out)


def _request_spec(raw: Mapping[str, Any], path: str, problems: fields.Problems, *,
                  name: str = "") -> dv.RequestSpec:
    try:
        mode = dv.AllocationMode.from_string(str(raw.get("allocationMode") or ""))
    except constraints.ConstraintError as error:
        problems.add(f"{path}.allocationMode: {error}")
        mode = dv.AllocationMode.EXACT_COUNT
    count = problems.read(lambda: fields.integer(raw.get("count"), f"{path}.count", default=1,
                                                 minimum=1 if raw.get("count") is not None
                                                 and mode is dv.AllocationMode.EXACT_COUNT
                                                 else None), 1)
    capacity = read_part(raw, "capacity", path, problems)
    return dv.RequestSpec(
        read_string(raw, "deviceClassName", path, problems, required=True), name,
        read_selectors(raw, path, problems), mode, count,
        problems.read(lambda: fields.boolean(raw.get("adminAccess"), f"{path}.adminAccess",
                                             default=False), False),
        _tolerations(raw, path, problems),
        read_quantities(capacity.get("requests"), f"{path}.capacity.requests", problems))


def _request(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> dv.DeviceRequest:
    name = read_string(raw, "name", path, problems, required=True)
    if raw.get("firstAvailable") is not None:
        return dv.DeviceRequest(name, first_available=tuple(
            _request_spec(sub, at, problems, name=read_string(sub, "name", at, problems,
                                                          required=True))
            for at, sub in read_items(raw, "firstAvailable", path, problems)))
    exactly = raw.get("exactly")
    if exactly is None and any(k in raw for k in _EXACT_FIELDS):  # v1beta1: flat
        return dv.DeviceRequest(name, _request_spec(raw, path, problems))
    if not isinstance(exactly, Mapping):
        problems.add(f"{path}: exactly one of `exactly` or `firstAvailable` is required")
        return dv.DeviceRequest(name)
    return dv.DeviceRequest(name, _request_spec(exactly, f"{path}.exactly", problems))


def claim_spec(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> dv.ClaimSpec:
    """A ``ResourceClaimSpec`` at ``path`` (``spec``, or ``spec.spec`` of a template)."""
    devices = read_part(raw, "devices", path, problems)
    where = fields.key_path(path, "devices")
    requests = tuple(_request(r, at, problems) for at, r in read_items(devices, "requests", where,
                                                                   problems))
    constraints_ = []
    for at, raw_constraint in read_items(devices, "constraints", where, problems):
        match = raw_constraint.get("matchAttribute")
        distinct = raw_constraint.get("distinctAttribute")
        if (match is None) == (distinct is None):
            problems.add(f"{at}: exactly one of `matchAttribute` or `distinctAttribute` is "
                         "required")
            continue
        constraints_.append(dv.DeviceConstraint(
            read_strings(raw_constraint, "requests", at, problems),
            None if match is None else read_string(raw_constraint, "matchAttribute", at, problems),
            None if distinct is None else read_string(raw_constraint, "distinctAttribute", at,
                                                  problems)))
    config = tuple(dv.ClaimConfig(read_opaque(c, at, problems), read_strings(c, "requests", at,
                                                                      problems))
                   for at, c in read_items(devices, "config", where, problems))
    return dv.ClaimSpec(requests, tuple(constraints_), config)


def _result(raw: Mapping[str, Any], path: str, problems: fields.Problems) -> dv.DeviceResult:
    admin = raw.get("adminAccess")
    share = raw.get("shareID")
    return dv.DeviceResult(
        read_string(raw, "request", path, problems, required=True),
        read_string(raw, "driver", path, problems, required=True),
        read_string(raw, "pool", path, problems, required=True),
        read_string(raw, "device", path, problems, required=True),
        None if admin is None else problems.read(
            lambda: fields.boolean(admin, f"{path}.adminAccess", default=False), False),
        _tolerations(raw, path, problems),
        read_quantities(raw.get("consumedCapacity"), f"{path}.consumedCapacity", problems),
        None if share is None else read_string(raw, "shareID", path, problems))


def _allocation(raw: object, problems: fields.Problems) -> dv.AllocationResult | None:
    if raw is None:
        return None
    path = "status.allocation"
    allocation = read_map(raw, path, problems)
    devices = read_part(allocation, "devices", path, problems)
    where = f"{path}.devices"
    results = tuple(_result(r, at, problems) for at, r in read_items(devices, "results", where,
                                                                 problems))
    config = tuple(dv.AllocatedConfig(read_string(c, "source", at, problems, required=True),
                                      read_opaque(c, at, problems),
                                      read_strings(c, "requests", at, problems))
                   for at, c in read_items(devices, "config", where, problems))
    return dv.AllocationResult(results, config, read_node_selector(
        allocation.get("nodeSelector"), f"{path}.nodeSelector", problems))


def resource_claim(obj: JSON) -> dv.ResourceClaim:
    """A ResourceClaim; problems go into ``invalid`` (the core then lets its pods wait with
    them). An unreadable allocation is still an allocation: its devices are taken."""
    problems = fields.Problems()
    meta = read_meta(obj, problems)
    spec = claim_spec(read_part(obj, "spec", "", problems), "spec", problems)
    status = read_part(obj, "status", "", problems)
    allocation = _allocation(status.get("allocation"), problems)
    reserved = tuple(dv.ConsumerRef(read_string(r, "name", at, problems),
                                    read_string(r, "uid", at, problems),
                                    read_string(r, "resource", at, problems),
                                    read_string(r, "apiGroup", at, problems))
                     for at, r in read_items(status, "reservedFor", "status", problems))
    owner = next((r for r in meta.get("ownerReferences") or []
                  if isinstance(r, Mapping) and r.get("controller") is True
                  and r.get("kind") == "Pod" and r.get("apiVersion") == "v1"), None)
    return dv.ResourceClaim(
        str(meta.get("namespace") or ""), str(meta.get("name") or ""),
        str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""), spec, allocation,
        reserved, deleting=meta.get("deletionTimestamp") is not None,
        owner_pod=str((owner or {}).get("uid") or ""), invalid=problems.message())


def resource_claim_template(obj: JSON) -> dv.ResourceClaimTemplate:
    """A ResourceClaimTemplate: the claim spec its claims get; problems go into
    ``invalid``."""
    problems = fields.Problems()
    meta = read_meta(obj, problems)
    template = read_part(obj, "spec", "", problems)
    spec = claim_spec(read_part(template, "spec", "spec", problems), "spec.spec", problems)
    return dv.ResourceClaimTemplate(str(meta.get("namespace") or ""),
                                    str(meta.get("name") or ""), spec,
                                    invalid=problems.message())


# --- back to JSON ------------------------------------------------------------------------


def _tolerations_to_k8s(tolerations: tuple[dv.DeviceToleration, ...]) -> list[dict[str, Any]]:
    out = []
    for t in tolerations:
        item: dict[str, Any] = {"operator": t.operator.value}
        if t.key:
            item["key"] = t.key
        if t.value:
            item["value"] = t.value
        if t.effect is not None:
            item["effect"] = t.effect.value
        if t.toleration_seconds is not None:
            item["tolerationSeconds"] = t.toleration_seconds
        out.append(item)
    return out


def _opaque_to_k8s(opaque: dv.OpaqueConfig) -> dict[str, Any]:
    return {"driver": opaque.driver, "parameters": json.loads(opaque.parameters or "{}")}


def allocation_to_k8s(allocation: dv.AllocationResult) -> dict[str, Any]:
    """``status.allocation`` for ``allocation`` (see the module docstring)."""
    results = []
    for r in allocation.devices:
        item: dict[str, Any] = {"request": r.request, "driver": r.driver, "pool": r.pool,
                                "device": r.device}
        if r.admin_access is not None:
            item["adminAccess"] = r.admin_access
        if r.tolerations:
            item["tolerations"] = _tolerations_to_k8s(r.tolerations)
        if r.consumed_capacity:
            item["consumedCapacity"] = {k: str(q) for k, q in r.consumed_capacity.items()}
        if r.share_id is not None:
            item["shareID"] = r.share_id
        results.append(item)
    devices: dict[str, Any] = {"results": results}
    if allocation.config:
        devices["config"] = [{"source": c.source, **({"requests": list(c.requests)}
                                                     if c.requests else {}),
                              "opaque": _opaque_to_k8s(c.opaque)} for c in allocation.config]
    out: dict[str, Any] = {"devices": devices}
    if allocation.node_selector is not None and \
            allocation.node_selector.required_terms is not None:
        affinity = k8s_constraints.node_affinity_to_k8s(allocation.node_selector)
        out["nodeSelector"] = affinity["nodeAffinity"][  # type: ignore[index]
            "requiredDuringSchedulingIgnoredDuringExecution"]
    return out
