"""``gangsched explain``: why an Application or PodGroup is where it is.

Reads the object's status (written by the operator) and its Events from the cluster with
a small synchronous client (pykube-ng), and prints, per task group, the placeholders and
members needed, reserved, bound and replaced, and the blocking reason with its numbers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

KINDS = {"application": ("Application", "applications"), "podgroup": ("PodGroup", "podgroups")}


def format_explanation(obj: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = ()) -> str:
    """Human-readable explanation of an Application's or PodGroup's status."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    kind = str(obj.get("kind", "Application"))
    lines = [f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}"]
    if kind == "PodGroup":
        lines.append(f"  phase:   {status.get('phase', 'Pending')}  "
                     f"(min {spec.get('minMember', '?')}, mode {spec.get('mode', 'Strict')})")
        lines.append(f"  members: {status.get('members', 0)}, "
                     f"assumed {status.get('assumed', 0)}, "
                     f"scheduled {status.get('scheduled', 0)}, running {status.get('running', 0)}")
        lines.extend(_blocking("  ", status.get("blockingReason")))
    else:
        lines.append(f"  state:   {status.get('state', 'New')}  "
                     f"queue {spec.get('queue', 'default')}  "
                     f"reserved {status.get('reserved', '-')}  running {status.get('running', 0)}")
    if status.get("reason") or status.get("message"):
        lines.append(f"  reason:  {status.get('reason', '')}: {status.get('message', '')}")
    for group in status.get("taskGroups") or []:
        ph = group.get("placeholders") or {}
        lines.append(f"  task group {group.get('name')}: minMember {group.get('minMember')}")
        lines.append(f"    placeholders: {ph.get('allocated', 0)} allocated, "
                     f"{ph.get('pending', 0)} pending, {ph.get('replaced', 0)} replaced, "
                     f"{ph.get('released', 0)} released (created {ph.get('created', 0)})")
        lines.append(f"    real pods:    {group.get('realPodsBound', 0)} bound, "
                     f"{group.get('realPodsPending', 0)} pending")
        lines.extend(_blocking("    ", group.get("blockingReason")))
    recent = list(events)
    if recent:
        lines.append("  events:")
        for event in recent[-20:]:
            count = (event.get("series") or {}).get("count") or event.get("count") or 1
            note = event.get("note") or event.get("message") or ""
            times = f" (x{count})" if int(count) > 1 else ""
            lines.append(f"    {event.get('type', '')} {event.get('reason', '')}{times}: {note}")
    return "\n".join(lines) + "\n"


def _blocking(indent: str, blocking: object) -> list[str]:
    if not isinstance(blocking, Mapping) or blocking.get("reason") in (None, "", "None"):
        return []
    out = [f"{indent}blocked by {blocking.get('reason')}: {blocking.get('message', '')}"]
    for key, value in sorted((blocking.get("details") or {}).items()):
        out.append(f"{indent}  {key}: {value}")
    return out


def explain(namespace: str, name: str, kind: str = "application") -> int:
    """Print the explanation; exit code 0, or 1 when the object does not exist."""
    import pykube

    kind_name, plural = KINDS.get(kind.lower(), KINDS["application"])
    api = pykube.HTTPClient(pykube.KubeConfig.from_env())
    response = api.get(url=f"{plural}/{name}", version="gangsched.io/v1alpha1",
                       namespace=namespace)
    if response.status_code == 404:
        print(f"{kind_name} {namespace}/{name} not found", file=sys.stderr)
        return 1
    response.raise_for_status()
    obj = response.json()
    events_response = api.get(
        url="events", version="events.k8s.io/v1", namespace=namespace,
        params={"fieldSelector": f"regarding.name={name},regarding.kind={kind_name}"},
    )
    events = events_response.json().get("items", []) if events_response.ok else []
    events.sort(key=lambda e: e.get("eventTime") or e.get("deprecatedLastTimestamp") or "")
    sys.stdout.write(format_explanation(obj, events))
    return 0
