"""Status decisions to the ``status`` objects of Applications, PodGroups and Queues.

Each body follows its CRD's status schema and is meant to be sent as a JSON merge patch
of the ``/status`` subresource (``{"status": body}``). Merge patches merge objects key by
key, so a key that should disappear must be sent as ``null``: timestamps that are not
set are always ``null``, and when ``old_status`` is given every key present there but
absent from the new body (at any depth of nested objects; lists are replaced whole)
becomes ``null`` as well.

Conditions (see :mod:`gangsched.translate.conditions`):

* Application: ``Accepted``, ``GangReserved`` (gang applications only), ``Running``,
  ``Terminated`` (True in Completed, Rejected, Killed and Failed, with the state's reason,
  e.g. PlaceholderTimeout, QueueQuotaExceeded, InvalidSpec);
* PodGroup: ``Scheduled`` (True from phase Scheduled on) and ``Terminated`` (Finished or
  Failed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core.values import decisions, resources
from gangsched.translate import conditions, times

BLOCKING_REASONS = frozenset(
    {
        "None",
        "QueueQuota",
        "Capacity",
        "Constraints",
        "OlderGangAhead",
        "StateAwareGate",
        "Reservation",
        "Preempting",
        "Deadlock",
        "WaitingForGang",
        "Invalid",
        "Unsatisfiable",
        "Topology",
    }
)
"""The CRDs' enum of ``blockingReason.reason``."""

ACCEPTED_STATES = frozenset(
    {
        "Accepted",
        "Starting",
        "Running",
        "Waiting",
        "Resuming",
        "Completed",
        "Failing",
        "Failed",
        "Killed",
    }
)
TERMINAL_STATES = frozenset({"Completed", "Rejected", "Killed", "Failed"})
_STARTED_STATES = frozenset({"Running", "Waiting", "Completed"})
_SCHEDULED_PHASES = frozenset({"Scheduled", "Running", "Finished"})
_TERMINAL_PHASES = frozenset({"Finished", "Failed"})
MAX_RESERVED = 64
MAX_USAGE = 1024


def _time(t: float | None) -> str | None:
    return None if t is None else times.format_time(t)


def null_removed(new: dict[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """``new`` with ``None`` for every key of ``old`` it lacks, recursively through objects
    present in both (lists are not merged by a merge patch, so they are left alone)."""
    if not isinstance(old, Mapping):
        return new
    for key, old_value in old.items():
        if key not in new:
            new[key] = None
        elif isinstance(new[key], dict) and isinstance(old_value, Mapping):
            null_removed(new[key], old_value)
    return new


def _blocking(blocking: decisions.BlockingReason) -> dict[str, Any]:
    """A ``blockingReason`` object. A reason outside the CRD's enum would make the API
    server refuse the whole status, so it is sent as ``None`` with the original reason kept
    in ``details.reason``."""
    details = dict(blocking.details)
    reason = blocking.reason
    if reason not in BLOCKING_REASONS:
        details["reason"] = reason
        reason = "None"
    return {"reason": reason, "message": conditions.clip(blocking.message), "details": details}


def _task_group(group: decisions.TaskGroupStatus) -> dict[str, Any]:
    counts = group.placeholders
    return {
        "name": group.name,
        "minMember": group.min_member,
        "placeholders": {
            "created": counts.created,
            "pending": counts.pending,
            "allocated": counts.allocated,
            "replaced": counts.replaced,
            "released": counts.released,
        },
        "realPodsBound": group.real_bound,
        "realPodsPending": group.real_pending,
        "blockingReason": _blocking(group.blocking),
    }


def _reserved(text: str) -> tuple[int, int] | None:
    held, _, total = text.partition("/")
    if held.isdigit() and total.isdigit():
        return int(held), int(total)
    return None


def _gang_reserved(
    d: decisions.SetAppStatus, old_status: Mapping[str, Any] | None
) -> conditions.Wanted:
    kind = "GangReserved"
    counts = _reserved(d.reserved)
    progress = f"{d.reserved} placeholders hold a node" if counts else d.reserved
    if d.state in _STARTED_STATES:
        old = conditions.old_condition(old_status, kind)
        if old is not None and old.get("status") in ("True", "False"):
            return conditions.Wanted(
                kind,
                str(old["status"]),
                str(old.get("reason") or "Unknown"),
                str(old.get("message") or ""),
            )
    if d.state == "Starting" or d.state in _STARTED_STATES:
        return conditions.Wanted(kind, "True", "GangStarted", "the gang was reserved and started")
    if d.state == "Accepted" and counts is not None and counts[1] > 0 and counts[0] >= counts[1]:
        return conditions.Wanted(kind, "True", "Reserved", progress)
    if d.state == "Accepted":
        for group in d.task_groups:
            if group.blocking.reason != "None":
                message = f"task group {group.name}: {group.blocking.message}"
                return conditions.Wanted(kind, "False", group.blocking.reason, message)
        return conditions.Wanted(kind, "False", "Reserving", progress)
    if d.state == "New":
        return conditions.Wanted(kind, "False", "NotAccepted", "not admitted to a queue yet")
    return conditions.Wanted(kind, "False", d.reason or d.state, d.message)


def _app_conditions(
    d: decisions.SetAppStatus, old_status: Mapping[str, Any] | None
) -> list[conditions.Wanted]:
    if d.state in ACCEPTED_STATES:
        accepted = conditions.Wanted("Accepted", "True", "Accepted", f"admitted to queue {d.queue}")
    else:
        accepted = conditions.Wanted("Accepted", "False", d.reason or d.state, d.message)
    wanted = [accepted]
    if d.task_groups:
        wanted.append(_gang_reserved(d, old_status))
    wanted.append(
        conditions.Wanted(
            "Running", conditions.status_word(d.state == "Running"), d.state, d.message
        )
    )
    terminal = d.state in TERMINAL_STATES
    wanted.append(
        conditions.Wanted(
            "Terminated",
            conditions.status_word(terminal),
            (d.reason or d.state) if terminal else d.state,
            d.message if terminal else "",
        )
    )
    return wanted


def app_status_body(
    d: decisions.SetAppStatus,
    *,
    now: float,
    generation: int,
    old_status: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The Application ``status`` for ``d`` (see the module docstring).

    ``reserved`` is empty for applications without task groups. ``generation`` is the
    object's ``metadata.generation``, written as ``observedGeneration``.
    """
    body: dict[str, Any] = {
        "state": d.state,
        "reason": conditions.clip(d.reason, conditions.MAX_REASON),
        "message": conditions.clip(d.message),
        "observedGeneration": generation,
        "queue": d.queue,
        "reserved": d.reserved[:MAX_RESERVED] if d.task_groups else "",
        "running": d.running,
        "taskGroups": [_task_group(group) for group in d.task_groups],
        "stateSince": _time(d.state_since),
        "placeholderTimerStart": _time(d.placeholder_timer_start),
        "waitingSince": _time(d.waiting_since),
        "startingSince": _time(d.starting_since),
        "conditions": conditions.render(
            _app_conditions(d, old_status), now=now, generation=generation, old_status=old_status
        ),
    }
    _node_reservation(body, d.reserved_nodes, d.reservation_expiry)
    return null_removed(body, old_status)


def _node_reservation(body: dict[str, Any], nodes: tuple[str, ...],
                      expiry: float | None) -> None:
    """``reservedNodes`` and ``reservationExpiry`` while nodes are reserved for the gang;
    absent otherwise (so :func:`null_removed` clears them)."""
    if nodes:
        body["reservedNodes"] = list(nodes)
    if expiry is not None:
        body["reservationExpiry"] = _time(expiry)


def _group_conditions(d: decisions.SetPodGroupStatus) -> list[conditions.Wanted]:
    if d.phase in _SCHEDULED_PHASES:
        scheduled = conditions.Wanted(
            "Scheduled", "True", "Scheduled", f"{d.scheduled} members bound to nodes"
        )
    elif d.blocking.reason not in ("None", ""):
        scheduled = conditions.Wanted("Scheduled", "False", d.blocking.reason, d.blocking.message)
    else:
        scheduled = conditions.Wanted("Scheduled", "False", d.reason or d.phase, d.message)
    terminal = d.phase in _TERMINAL_PHASES
    terminated = conditions.Wanted(
        "Terminated",
        conditions.status_word(terminal),
        (d.reason or d.phase) if terminal else d.phase,
        d.message if terminal else "",
    )
    return [scheduled, terminated]


def podgroup_status_body(
    d: decisions.SetPodGroupStatus,
    *,
    now: float,
    generation: int,
    old_status: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The PodGroup ``status`` for ``d`` (see the module docstring)."""
    body: dict[str, Any] = {
        "phase": d.phase,
        "reason": conditions.clip(d.reason, conditions.MAX_REASON),
        "message": conditions.clip(d.message),
        "observedGeneration": generation,
        "members": d.members,
        "assumed": d.assumed,
        "scheduled": d.scheduled,
        "running": d.running,
        "succeeded": d.succeeded,
        "failed": d.failed,
        "scheduleStartTime": _time(d.schedule_start),
        "blockingReason": _blocking(d.blocking),
        "conditions": conditions.render(
            _group_conditions(d), now=now, generation=generation, old_status=old_status
        ),
    }
    _node_reservation(body, d.reserved_nodes, d.reservation_expiry)
    return null_removed(body, old_status)


def usage_summary(allocated: resources.Resources, limit: resources.Resources | None) -> str:
    """``cpu 4/10, memory 8Gi/32Gi``: allocated over max per resource, ``-`` for no max.

    Lists cpu and memory always, then every other resource allocated or limited, by name;
    ``pods`` only when it is limited.
    """
    limited = limit if limit is not None else resources.Resources.ZERO
    others = {*allocated.names(), *limited.names()} - {resources.CPU, resources.MEMORY}
    if resources.PODS not in limited.names():
        others.discard(resources.PODS)
    parts = []
    for name in [resources.CPU, resources.MEMORY, *sorted(others)]:
        used = resources.format_amount(name, allocated.get(name))
        cap = resources.format_amount(name, limited.get(name)) if limited.get(name) else "-"
        parts.append(f"{name} {used}/{cap}")
    return conditions.clip(", ".join(parts), MAX_USAGE)


def queue_status_body(
    d: decisions.SetQueueStatus, *, old_status: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The Queue ``status`` for ``d``: canonical quantity maps, the applications by state,
    a :func:`usage_summary` and the message. ``max`` is ``{}`` when unlimited. Pass
    ``old_status`` so that resources no longer present are cleared by the merge patch."""
    body: dict[str, Any] = {
        "allocated": d.allocated.to_k8s(),
        "pending": d.pending.to_k8s(),
        "reservedByPlaceholders": d.reserved_by_placeholders.to_k8s(),
        "max": d.max.to_k8s() if d.max is not None else {},
        "guaranteed": d.guaranteed.to_k8s(),
        "applications": dict(d.applications),
        "usage": usage_summary(d.allocated, d.max),
        "message": conditions.clip(d.message),
    }
    return null_removed(body, old_status)
