"""``gangsched explain``: why an Application or PodGroup is where it is.

Reads the object's status (written by the operator), its Events, its pods and the
ResourceClaims of its namespace from the cluster with a small synchronous client
(pykube-ng), and prints, per task group, the placeholders and members needed, reserved,
bound and replaced, and the blocking reason with the numbers behind it; then why its pods
wait, the devices of each member's claims or why it has none
(:mod:`gangsched.shell.explain_devices`), and its event history, oldest first.

:func:`format_explanation` is pure: it takes the objects as the API returns them, so that
what it prints is tested on statuses exactly as the operator writes them.
"""

from __future__ import annotations

import collections
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any

from gangsched.core.gangs import partialgang
from gangsched.core.values import naming
from gangsched.shell.explain_devices import device_lines
from gangsched.translate import labels, times

KINDS = {"application": ("Application", "applications"), "podgroup": ("PodGroup", "podgroups")}
MAX_EVENTS = 20
MAX_POD_REASONS = 10

NODE_FILTERS = {
    "Insufficient": "not enough free resources",
    "NodeSelector": "nodeSelector does not match",
    "NodeAffinity": "node affinity does not match",
    "Taints": "an untolerated taint",
    "NodeNotReady": "not ready",
    "NodeUnschedulable": "cordoned",
    "Reserved": "reserved for a starving gang",
    "Fits": "would fit",
}
"""Node filter names of earlier versions, still readable in old statuses. Today the
``details`` of Capacity and Constraints count nodes by kube-scheduler's reason text
(``Insufficient cpu``, ``node(s) didn't match pod anti-affinity rules``), printed as is."""

DETAILS = {
    "queue": "queue",
    "needed": "needed",
    "headroom": "queue headroom",
    "max": "queue max",
    "bestNodeShortfall": "closest node is short of",
    "startingApplication": "starting application",
    "missing": "missing",
    "gang": "gang ahead",
    "position": "position in queue",
    "free": "left for new gangs",
    "committed": "still needed by enqueued gangs",
    "overcommitFactor": "over-commit factor",
    "gangs": "deadlocked with",
    "progress": "held when released",
    "held": "given back",
    "blockedBy": "blocked by",
    "retryAfterSeconds": "backoff (s)",
    "member": "each member needs",
    "largestNode": "largest node allowed",
    "nodesAllowed": "nodes allowed",
    "nodesAllowedHave": "nodes allowed have",
    "cluster": "all nodes have",
    "short": "short of",
    "reason": "reason",
    "domains not shown": "more domains tried",
}
"""Labels of the detail keys the core writes, in the order they are printed; other keys
(a reason added later) follow by name."""

HEADLINES = {
    "QueueQuota": "the queue has no room for it",
    "Capacity": "no node has room for it",
    "Constraints": "its constraints exclude every node that has room",
    "OlderGangAhead": "an older gang of its queue goes first",
    "StateAwareGate": "its queue starts one application at a time",
    "Reservation": "nodes that would fit are reserved, or its reservation is in progress",
    "Deadlock": "it was released to break a deadlock with other gangs",
    "Preempting": "victims are being preempted to make room for it",
    "WaitingForGang": "a member of its gang is missing",
    "Unsatisfiable": "it can never fit the nodes as they are; it waits for nodes to be added",
    "Topology": "no single domain of the topology it requires holds the whole gang",
}

PREEMPTION_SCOPE = (
    "only lower-priority work of its own queue, or of other schedulers, is preempted for "
    "it; other queues give room back by reclaim, as far as the queue shares allow")
"""Where gangsched is narrower than kube-scheduler's preemption, on purpose: priority
preemption does not cross queues (shown with the reasons preemption may cure)."""

ROOM_REASONS = ("Capacity", "QueueQuota", "Preempting")


def format_explanation(obj: Mapping[str, Any], events: Iterable[Mapping[str, Any]] = (),
                       pods: Iterable[Mapping[str, Any]] = (), *,
                       now: float | None = None,
                       claims: Iterable[Mapping[str, Any]] = ()) -> str:
    """Human-readable explanation of an Application's or PodGroup's status.

    ``events`` are its ``events.k8s.io/v1`` Events in any order (printed oldest first, the
    last :data:`MAX_EVENTS`); ``pods`` its pods (their PodScheduled reasons are counted,
    and whether the gang is partial right now: see :func:`partial_line`; how long is
    told only with ``now``), and ``claims`` the ResourceClaims of its namespace (for the
    devices of members with resource claims). Missing fields print as their defaults;
    nothing here raises on a partial object.
    """
    pods = list(pods)
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    kind = str(obj.get("kind") or "Application")
    lines = [f"{kind} {meta.get('namespace', '')}/{meta.get('name', '')}"]
    if kind == "PodGroup":
        lines.extend(_podgroup(spec, status))
    else:
        lines.extend(_application(spec, status))
    lines.extend(partial_line(spec, pods, kind, now))
    lines.extend(_pods(pods))
    lines.extend(device_lines(pods, claims))
    lines.extend(_history(events))
    return "\n".join(lines) + "\n"


def _minimum(spec: Mapping[str, Any], kind: str) -> int:
    try:
        if kind == "PodGroup":
            return int(spec.get("minMember") or 0)
        return sum(int(g.get("minMember") or 0) for g in spec.get("taskGroups") or ()
                   if isinstance(g, Mapping))
    except (TypeError, ValueError):
        return 0


def partial_line(spec: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], kind: str,
                 now: float | None) -> list[str]:
    """The gang's partial-gang figure from its pods, as the operator's metric counts it
    (:mod:`gangsched.shell.holdings`): members holding their room are real pods bound and
    placeholders bound that are not being deleted; the gang is partial while a real pod
    is bound and fewer than the minimum hold their room. How long: since the earliest
    deletion of a placeholder still leaving (``deletionTimestamp`` minus its grace
    period), given ``now``. No pods, or a minimum that is not a number: no line."""
    minimum = _minimum(spec, kind)
    real = placeholders = leaving = waiting = 0
    started: list[float] = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        is_placeholder = (meta.get("labels") or {}).get(labels.LABEL_PLACEHOLDER) == "true"
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        if is_placeholder and meta.get("deletionTimestamp"):
            leaving += 1
            gone_by = times.parse_time(meta.get("deletionTimestamp"))
            if gone_by is not None:
                started.append(gone_by - float(meta.get("deletionGracePeriodSeconds") or 0))
        elif bound:
            placeholders += is_placeholder
            real += not is_placeholder
        elif not is_placeholder:
            waiting += 1
    if minimum <= 0 or not (real or placeholders or leaving or waiting):
        return []
    holding = real + placeholders
    counts = (f"{holding} of {minimum} minimum members hold their room ({real} real pods "
              f"bound, {placeholders} placeholders; {leaving} placeholders being deleted, "
              f"{waiting} real pods waiting)")
    if not (real and partialgang.is_partial(holding, minimum)):
        return [f"  partial: no: {counts}"]
    how_long = ""
    if now is not None and started:
        seconds = max(0.0, now - min(started))
        over = " (over the 3 s a swap may take)" if seconds > partialgang.DEFAULT_THRESHOLD \
            else ""
        how_long = f" for {seconds:.1f} s{over}"
    return [f"  partial: YES{how_long}: {counts}; the gang runs without all its members "
            f"(see gangsched_gang_partial_seconds)"]


def _application(spec: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
    state = status.get("state") or "New"
    policy = spec.get("schedulingPolicy") or {}
    lines = [f"  state:   {state}{_since(status.get('stateSince'))}  "
             f"queue {status.get('queue') or spec.get('queue') or 'default'}  "
             f"style {policy.get('style', 'Soft')}",
             f"  gang:    {status.get('reserved') or '-'} placeholders allocated, "
             f"{status.get('running', 0)} real pods running"]
    if status.get("reason") or status.get("message"):
        lines.append(f"  reason:  {status.get('reason', '')}: {status.get('message', '')}")
    lines.extend(_timer("placeholder timer", status.get("placeholderTimerStart"),
                        policy.get("placeholderTimeoutSeconds", 900)))
    lines.extend(_node_reservation(status))
    for group in status.get("taskGroups") or []:
        ph = group.get("placeholders") or {}
        lines.append(f"  task group {group.get('name')}: minMember {group.get('minMember')}")
        lines.append(f"    placeholders: {ph.get('allocated', 0)} allocated, "
                     f"{ph.get('pending', 0)} pending, {ph.get('replaced', 0)} replaced, "
                     f"{ph.get('released', 0)} released (created {ph.get('created', 0)})")
        lines.append(f"    real pods:    {group.get('realPodsBound', 0)} bound, "
                     f"{group.get('realPodsPending', 0)} pending")
        lines.extend(_blocking("    ", group.get("blockingReason")))
    return lines


def _podgroup(spec: Mapping[str, Any], status: Mapping[str, Any]) -> list[str]:
    lines = [f"  phase:   {status.get('phase') or 'Pending'}  "
             f"(min {spec.get('minMember', '?')}, mode {spec.get('mode', 'Strict')}, "
             f"queue {spec.get('queue') or 'default'})",
             f"  members: {status.get('members', 0)}, assumed {status.get('assumed', 0)}, "
             f"scheduled {status.get('scheduled', 0)}, running {status.get('running', 0)}"]
    gang = spec.get("gangGroup") or []
    if gang:
        lines.append(f"  gang group: {', '.join(str(g) for g in gang)}")
    if status.get("reason") or status.get("message"):
        lines.append(f"  reason:  {status.get('reason', '')}: {status.get('message', '')}")
    lines.extend(_timer("schedule timer", status.get("scheduleStartTime"),
                        spec.get("scheduleTimeoutSeconds", 600)))
    lines.extend(_node_reservation(status))
    lines.extend(_blocking("  ", status.get("blockingReason")))
    return lines


def _node_reservation(status: Mapping[str, Any]) -> list[str]:
    """The nodes reserved for a starving gang (the elect and reserve actions), if any."""
    nodes = status.get("reservedNodes")
    if not isinstance(nodes, list) or not nodes:
        return []
    until = status.get("reservationExpiry")
    return [f"  reserved nodes: {', '.join(str(n) for n in nodes)}"
            + (f" (until {until})" if until else "")]


def _since(text: object) -> str:
    return f" since {text}" if isinstance(text, str) and text else ""


def _timer(what: str, start: object, timeout: object) -> list[str]:
    started = times.parse_time(start)
    if started is None:
        return []
    try:
        seconds = float(str(timeout))
    except (TypeError, ValueError):
        return [f"  {what}: started {start}"]
    return [f"  {what}: started {start}, {seconds:g}s timeout expires "
            f"{times.format_time(started + seconds)}"]


def _blocking(indent: str, blocking: object) -> list[str]:
    """The blocking reason and its numbers; nothing when not blocked.

    A reason outside the CRD's enum is written as ``None`` with the real one in
    ``details.reason``: it is shown under its real name.
    """
    if not isinstance(blocking, Mapping):
        return []
    details = {str(k): str(v) for k, v in (blocking.get("details") or {}).items()}
    reason = str(blocking.get("reason") or "None")
    if reason == "None":
        reason = details.pop("reason", "None")
    if reason == "None":
        return []
    where = ""
    if reason == "QueueQuota" and "queue" in details:
        where = f" at queue {details.pop('queue')}"
    headline = HEADLINES.get(reason)
    out = [f"{indent}blocked by {reason}{where}"
           + (f" ({headline})" if headline else "") + ":",
           f"{indent}  {blocking.get('message') or '(no message)'}"]
    placement = reason in ("Capacity", "Constraints", "Reservation")
    nodes = {k: details.pop(k) for k in list(details) if placement and (
        k in NODE_FILTERS or (k not in DETAILS and details[k].isdigit()))}
    if nodes:
        parts = [f"{count} {NODE_FILTERS[name]} ({name})" if name in NODE_FILTERS
                 else f"{count} {name}"
                 for name, count in sorted(nodes.items(), key=lambda kv: (-_int(kv[1]), kv[0]))]
        out.append(f"{indent}  nodes: " + ", ".join(parts))
    tried = {k.removeprefix(DOMAIN): details.pop(k) for k in list(details)
             if k.startswith(DOMAIN)}
    for key in [*(k for k in DETAILS if k in details), *sorted(set(details) - set(DETAILS))]:
        out.append(f"{indent}  {DETAILS.get(key, key)}: {details[key]}")
    if tried:
        out.append(f"{indent}  domains tried:")
        out.extend(f"{indent}    {name}: {why}" for name, why in tried.items())
    if reason in ROOM_REASONS:
        out.append(f"{indent}  preemption: {PREEMPTION_SCOPE}")
    return out


DOMAIN = "domain "
"""The detail keys of a ``Topology`` blocking reason: ``domain rack=r1`` and why that
domain cannot hold the gang, in the order the core tried them (tightest first)."""


def _int(text: str) -> int:
    return int(text) if text.isdigit() else 0


def _pods(pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """How many pods wait, and why (their PodScheduled=False messages), most common first."""
    waiting: collections.Counter[tuple[str, str]] = collections.Counter()
    bound = total = 0
    for pod in pods:
        total += 1
        if (pod.get("spec") or {}).get("nodeName"):
            bound += 1
            continue
        pod_labels = (pod.get("metadata") or {}).get("labels") or {}
        role = "placeholder" if pod_labels.get(labels.LABEL_PLACEHOLDER) == "true" else "pod"
        message = "no reason recorded yet"
        for condition in (pod.get("status") or {}).get("conditions") or []:
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                message = str(condition.get("message") or condition.get("reason") or message)
        waiting[(role, message)] += 1
    if not total:
        return []
    lines = [f"  pods:    {total}, {bound} bound, {total - bound} waiting"]
    for (role, message), count in waiting.most_common(MAX_POD_REASONS):
        lines.append(f"    {count} {role}{'s' if count > 1 else ''}: {message}")
    return lines


def _event_time(event: Mapping[str, Any]) -> float:
    meta = event.get("metadata") or {}
    for text in (event.get("eventTime"), event.get("deprecatedFirstTimestamp"),
                 event.get("firstTimestamp"), meta.get("creationTimestamp")):
        parsed = times.parse_time(text)
        if parsed is not None:
            return parsed
    return 0.0


def history(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Events oldest first (by first occurrence; ties keep the order given)."""
    return sorted(events, key=_event_time)


def _history(events: Iterable[Mapping[str, Any]]) -> list[str]:
    ordered = history(events)
    if not ordered:
        return []
    lines = ["  events (oldest first):"]
    if len(ordered) > MAX_EVENTS:
        lines.append(f"    ... {len(ordered) - MAX_EVENTS} older events not shown")
    for event in ordered[-MAX_EVENTS:]:
        series = event.get("series") or {}
        count = series.get("count") or event.get("count") or 1
        note = event.get("note") or event.get("message") or ""
        when = event.get("eventTime") or event.get("deprecatedFirstTimestamp") or ""
        repeats = ""
        if _int(str(count)) > 1:
            last = series.get("lastObservedTime") or event.get("deprecatedLastTimestamp")
            repeats = f" (x{count}" + (f", last {last}" if last else "") + ")"
        lines.append(f"    {when} {event.get('type', '')} {event.get('reason', '')}"
                     f"{repeats}: {note}")
    return lines


EXIT_NOT_FOUND = 1
EXIT_NO_CLUSTER = 2


def explain(namespace: str, name: str, kind: str = "application") -> int:
    """Print the explanation; exit code 0, 1 when the object does not exist, 2 (after one
    line on stderr, no traceback) when there is no cluster to ask: no configuration, an
    unreachable server, or an answer that is not the object (403, 500...).

    Uses ``$KUBECONFIG`` (else the in-cluster config, else ``~/.kube/config``). Events and
    pods that cannot be listed are left out, not fatal.
    """
    import pykube
    import requests

    kind_name, plural = KINDS.get(kind.lower(), KINDS["application"])
    try:
        config = pykube.KubeConfig.from_env()
    except (pykube.exceptions.PyKubeError, OSError, ValueError, KeyError) as error:
        return _no_cluster(f"no cluster configured ({error}); set KUBECONFIG or run it "
                           "in a pod")
    api = pykube.HTTPClient(config)
    server = getattr(config.cluster, "get", lambda *_: None)("server") or "the cluster"
    try:
        response = api.get(url=f"{plural}/{name}", version=labels.API_VERSION,
                           namespace=namespace)
    except requests.RequestException as error:
        return _no_cluster(f"cannot reach {server}: {type(error).__name__}")
    if response.status_code == 404:
        print(f"{kind_name} {namespace}/{name} not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    if not response.ok:
        return _no_cluster(f"{server} answered {response.status_code} "
                           f"{response.reason or ''} for {kind_name} {namespace}/{name}"
                           f"{_status_message(response)}")
    obj = response.json()
    member = labels.LABEL_POD_GROUP if kind_name == "PodGroup" else labels.LABEL_APP
    events = _items(api, url="events", version="events.k8s.io/v1", namespace=namespace,
                    params={"fieldSelector": f"regarding.name={name},regarding.kind={kind_name}"})
    pods = _items(api, url="pods", version="v1", namespace=namespace,
                  params={"labelSelector": f"{member}={naming.label_value(name)}"})
    claims = _items(api, url="resourceclaims", version="resource.k8s.io/v1",
                    namespace=namespace) if any(
        (p.get("spec") or {}).get("resourceClaims") for p in pods) else []
    sys.stdout.write(format_explanation(obj, events, pods, now=time.time(), claims=claims))
    return 0


def _no_cluster(message: str) -> int:
    print(f"gangsched explain: {message}", file=sys.stderr)
    return EXIT_NO_CLUSTER


def _status_message(response: Any) -> str:
    """``: <message>`` of a Kubernetes Status answer, or nothing."""
    try:
        message = response.json().get("message")
    except ValueError:
        return ""
    return f": {message}" if isinstance(message, str) and message else ""


def _items(api: Any, **request: Any) -> list[Any]:
    """The items of a list request; none when it fails in any way (they are extras)."""
    import requests

    try:
        response = api.get(**request)
        return list(response.json().get("items", [])) if response.ok else []
    except (requests.RequestException, ValueError):
        return []
