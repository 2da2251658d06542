"""Application objects (``gangsched.io/v1alpha1``) to the core's :class:`AppSpec`.

The API server has already applied the CRD's schema and defaults, but nothing here
relies on it: every field is checked again (see :func:`gangspec.read_task_groups`), and
an Application that breaks a rule is returned with ``invalid`` naming every problem with
its path, so the core rejects it with that message instead of scheduling nonsense.

The status fields that must survive an operator restart (state, timers) come back as
:class:`PersistedAppStatus`; unreadable timestamps are treated as absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields, gangspec, times
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses


def _persisted(status: Mapping[str, Any]) -> model.PersistedAppStatus | None:
    state = status.get("state")
    if not isinstance(state, str) or not state:
        return None

    def text(key: str) -> str:
        value = status.get(key)
        return value if isinstance(value, str) else ""

    return model.PersistedAppStatus(
        state=state,
        reason=text("reason"),
        message=text("message"),
        state_since=times.parse_time(status.get("stateSince")),
        placeholder_timer_start=times.parse_time(status.get("placeholderTimerStart")),
        waiting_since=times.parse_time(status.get("waitingSince")),
        starting_since=times.parse_time(status.get("startingSince")),
        reservation_expiry=times.parse_time(status.get("reservationExpiry")),
        reserved_nodes=_names(status.get("reservedNodes")),
    )


def _names(value: object) -> tuple[str, ...]:
    """A list of node names; anything that is not a string is dropped."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str) and item)


def app_from_k8s(obj: Mapping[str, Any], *,
                 priorities: PriorityClasses = NO_CLASSES) -> model.AppSpec:
    """Translate an Application object into the core's AppSpec.

    ``key`` is ``namespace/name``. Defaults for missing fields: queue ``default`` (also
    for an empty string), no task groups (an ordinary, non-gang application), policy Soft
    with 900 s placeholder and 30 s waiting timeouts, creation time 0.0. ``priority`` is
    ``spec.priorityClassName`` resolved in ``priorities`` (no class: the global default,
    else 0; so is an unknown class until it is made). ``persisted`` is read from ``status``
    only when ``status.state`` is set. Problems (wrong types, a queue name that is not a
    DNS subdomain, and those of :func:`gangspec.read_task_groups` and
    :func:`gangspec.policy_from_k8s`) are joined into ``invalid``; the task groups that
    were valid are kept.
    """
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {}
    )
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    status = obj.get("status")
    namespace = meta.get("namespace")
    name = meta.get("name")
    uid = meta.get("uid")
    queue = problems.read(
        lambda: fields.string(spec.get("queue"), "spec.queue") or model.DEFAULT_QUEUE,
        model.DEFAULT_QUEUE,
    )
    problems.read(lambda: fields.dns_subdomain(queue, "spec.queue", what="queue name"), "")
    groups, errors = gangspec.read_task_groups(spec.get("taskGroups"), "spec.taskGroups")
    for error in errors:
        problems.add(error)
    policy = gangspec.policy_from_k8s(
        spec.get("schedulingPolicy"), "spec.schedulingPolicy", problems
    )
    priority, _unknown = priorities.resolve(spec.get("priorityClassName"))
    return model.AppSpec(
        key=model.AppKey(f"{namespace or ''}/{name or ''}"),
        uid=uid if isinstance(uid, str) else "",
        queue=queue,
        task_groups=tuple(group.model for group in groups),
        policy=policy,
        priority=priority,
        creation=times.parse_time(meta.get("creationTimestamp")) or 0.0,
        invalid=problems.message(),
        persisted=_persisted(status) if isinstance(status, Mapping) else None,
    )
