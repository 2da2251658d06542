"""``gangsched explain``'s devices: per member, its ResourceClaims and what they hold.

For each pod with ``spec.resourceClaims`` (placeholders hold devices in the scheduler's
memory only, and have none): each entry's claim (named directly, or made from a template
and listed in ``status.resourceClaimStatuses``; until then *not made yet*), and either
the devices allocated to it (``driver/pool: devices (request)``) with the pods it is
reserved for, or why there are none: the pod's ``PodScheduled=False`` message, where the
scheduler says it in kube-scheduler's words (``cannot allocate all claims``, the
selector that matched nothing, ``resourceclaim "x" not found``...).

:func:`device_lines` is pure, like :func:`gangsched.shell.explain.format_explanation`:
it takes the pods and the claims of the namespace as the API returns them; missing or
malformed fields print as absent, nothing raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MAX_MEMBERS = 20


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _waiting_message(pod: Mapping[str, Any]) -> str:
    for condition in _list(_mapping(pod.get("status")).get("conditions")):
        condition = _mapping(condition)
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or condition.get("reason") or "")
    return ""


def _claim_name(pod: Mapping[str, Any], entry: Mapping[str, Any]) -> str:
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in _list(_mapping(pod.get("status")).get("resourceClaimStatuses")):
        status = _mapping(status)
        if status.get("name") == entry.get("name") and status.get("resourceClaimName"):
            return str(status["resourceClaimName"])
    return ""


def _claim_line(pod: Mapping[str, Any], entry: Mapping[str, Any],
                claims: Mapping[str, Mapping[str, Any]]) -> str:
    name = _claim_name(pod, entry)
    label = f"claim {entry.get('name', '?')}"
    if not name:
        template = entry.get("resourceClaimTemplateName") or "?"
        return (f"{label}: not made yet (the resourceclaim controller makes it from "
                f"template {template})")
    claim = claims.get(name)
    if claim is None:
        return f"{label} -> {name}: not found"
    status = _mapping(claim.get("status"))
    allocation = status.get("allocation")
    if not isinstance(allocation, Mapping):
        return f"{label} -> {name}: no devices allocated"
    grouped: dict[tuple[str, str, str], list[str]] = {}
    for result in _list(_mapping(allocation.get("devices")).get("results")):
        result = _mapping(result)
        where = (str(result.get("driver", "?")), str(result.get("pool", "?")),
                 str(result.get("request") or ""))
        grouped.setdefault(where, []).append(str(result.get("device", "?")))
    devices = [f"{driver}/{pool}: {', '.join(names)}" + (f" ({request})" if request else "")
               for (driver, pool, request), names in grouped.items()]
    users = [str(_mapping(r).get("name", "?")) for r in _list(status.get("reservedFor"))]
    reserved = f"; reserved for {', '.join(users)}" if users else "; reserved for no pod"
    return f"{label} -> {name}: {', '.join(devices) or 'no devices'}{reserved}"


def device_lines(pods: Iterable[Mapping[str, Any]],
                 claims: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ``devices:`` section (empty when no pod has resource claims)."""
    by_name = {str(_mapping(c.get("metadata")).get("name")): c for c in claims
               if isinstance(c, Mapping)}
    members = [p for p in pods if isinstance(p, Mapping)
               and _list(_mapping(p.get("spec")).get("resourceClaims"))]
    if not members:
        return []
    members.sort(key=lambda p: str(_mapping(p.get("metadata")).get("name", "")))
    lines = ["  devices (Dynamic Resource Allocation):"]
    for pod in members[:MAX_MEMBERS]:
        spec = _mapping(pod.get("spec"))
        name = _mapping(pod.get("metadata")).get("name", "?")
        node = spec.get("nodeName")
        lines.append(f"    {name}: " + (f"bound to {node}" if node else "not bound"))
        for entry in _list(spec.get("resourceClaims")):
            lines.append(f"      {_claim_line(pod, _mapping(entry), by_name)}")
        message = "" if node else _waiting_message(pod)
        if message:
            lines.append(f"      why: {message}")
    if len(members) > MAX_MEMBERS:
        lines.append(f"    ... {len(members) - MAX_MEMBERS} more members not shown")
    return lines
