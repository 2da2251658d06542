"""PodGroup objects (``gangsched.io/v1alpha1``) to the core's :class:`PodGroupSpec`.

Every field is checked again although the CRD's schema checks most of them (the API
server cannot check the ``gangGroup`` entries against each other, and objects may come
from older schema versions). A PodGroup that breaks a rule is returned with ``invalid``
naming every problem with its path; the core then fails it with that message.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from gangsched.core.values import model, resources
from gangsched.translate import fields, times, topology
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

DEFAULT_SCHEDULE_TIMEOUT = 600
MAX_MIN_MEMBER = 10000

_GROUP_REF = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def _mode(raw: object) -> model.GangMode:
    text = fields.string(raw, "spec.mode", default=model.GangMode.STRICT.value)
    try:
        return cast(model.GangMode, model.GangMode.from_string(text))
    except ValueError as error:
        raise fields.TranslationError(f"spec.mode: {error}") from None


def _on_timeout(raw: object) -> model.TimeoutAction:
    text = fields.string(raw, "spec.onTimeout", default=model.TimeoutAction.FAIL.value)
    try:
        return cast(model.TimeoutAction, model.TimeoutAction.from_string(text))
    except ValueError as error:
        raise fields.TranslationError(f"spec.onTimeout: {error}") from None


def _gang_group(raw: object, problems: fields.Problems) -> tuple[model.GroupKey, ...]:
    path = "spec.gangGroup"
    items: Sequence[Any] = problems.read(lambda: fields.sequence(raw, path), ())
    keys: list[model.GroupKey] = []
    for index, item in enumerate(items):
        item_path = f"{path}[{index}]"
        if not isinstance(item, str):
            problems.add(str(fields.wrong_type("a string", item, item_path)))
        elif len(item) > 317 or not _GROUP_REF.fullmatch(item):
            problems.add(
                f'{item_path}: invalid PodGroup reference "{item}": expected namespace/name'
            )
        elif item in keys:
            problems.add(f'{item_path}: duplicate PodGroup reference "{item}"')
        else:
            keys.append(model.GroupKey(item))
    return tuple(keys)


def podgroup_from_k8s(obj: Mapping[str, Any], *,
                      priorities: PriorityClasses = NO_CLASSES) -> model.PodGroupSpec:
    """Translate a PodGroup object into the core's PodGroupSpec.

    ``key`` is ``namespace/name``. ``spec.minMember`` is required (1 to 10000; 1 is used
    while it is missing or wrong). Defaults: no minResources, ``scheduleTimeoutSeconds``
    600, ``onTimeout`` Fail, ``waitForMinMember`` false, mode Strict, no gangGroup,
    ``totalNumber`` None (minMember), queue ``default``, creation 0.0. ``priority``:
    ``spec.priorityClassName`` resolved in ``priorities`` (no
    class: the global default, else 0; the core takes the highest of it and the
    members'; an unknown class counts as none until it is made). Invalid:
    wrong types, bad or negative quantities, out-of-range integers, an unknown mode,
    gangGroup entries that are not unique ``namespace/name`` references, ``totalNumber``
    below ``minMember``, a queue name that is not a DNS subdomain, a ``topology`` that breaks
    the rules of :func:`gangsched.translate.topology.from_k8s` (slices at most
    ``totalNumber``, else ``minMember``). ``persisted_start`` and
    ``persisted_phase`` come from ``status.scheduleStartTime`` and ``status.phase``; the
    persisted node reservation from ``status.reservationExpiry`` and ``reservedNodes``.
    """
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {}
    )
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    if spec.get("minMember") is None:
        problems.add("spec.minMember: required")
    min_member = problems.read(
        lambda: fields.integer(
            spec.get("minMember"), "spec.minMember", default=1, minimum=1, maximum=MAX_MIN_MEMBER
        ),
        1,
    )
    min_resources = problems.read(
        lambda: fields.resource_list(spec.get("minResources"), "spec.minResources"),
        resources.Resources.ZERO,
    )
    timeout = problems.read(
        lambda: fields.integer(
            spec.get("scheduleTimeoutSeconds"),
            "spec.scheduleTimeoutSeconds",
            default=DEFAULT_SCHEDULE_TIMEOUT,
            minimum=1,
        ),
        DEFAULT_SCHEDULE_TIMEOUT,
    )
    mode = problems.read(lambda: _mode(spec.get("mode")), model.GangMode.STRICT)
    on_timeout = problems.read(lambda: _on_timeout(spec.get("onTimeout")),
                               model.TimeoutAction.FAIL)
    wait = problems.read(lambda: fields.boolean(spec.get("waitForMinMember"),
                                                "spec.waitForMinMember", default=False), False)
    gang_group = _gang_group(spec.get("gangGroup"), problems)
    total: int | None = None
    if spec.get("totalNumber") is not None:
        total = problems.read(
            lambda: fields.integer(
                spec.get("totalNumber"),
                "spec.totalNumber",
                default=0,
                minimum=1,
                maximum=MAX_MIN_MEMBER,
            ),
            None,
        )
        if total is not None and total < min_member:
            problems.add(
                f"spec.totalNumber: must be at least spec.minMember ({min_member}), got {total}"
            )
    queue = problems.read(
        lambda: fields.string(spec.get("queue"), "spec.queue") or model.DEFAULT_QUEUE,
        model.DEFAULT_QUEUE,
    )
    problems.read(lambda: fields.dns_subdomain(queue, "spec.queue", what="queue name"), "")
    request = topology.from_k8s(
        spec.get("topology"), "spec.topology", problems, members=max(min_member, total or 0)
    )
    namespace, name, uid = meta.get("namespace"), meta.get("name"), meta.get("uid")
    phase = status.get("phase")
    priority, _unknown = priorities.resolve(spec.get("priorityClassName"))
    return model.PodGroupSpec(
        key=model.GroupKey(f"{namespace or ''}/{name or ''}"),
        uid=uid if isinstance(uid, str) else "",
        min_member=min_member,
        min_resources=min_resources,
        schedule_timeout=float(timeout),
        mode=mode,
        on_timeout=on_timeout,
        wait_for_min_member=wait,
        gang_group=gang_group,
        total_number=total,
        queue=queue,
        priority=priority,
        creation=times.parse_time(meta.get("creationTimestamp")) or 0.0,
        invalid=problems.message(),
        persisted_start=times.parse_time(status.get("scheduleStartTime")),
        persisted_phase=phase if isinstance(phase, str) else "",
        persisted_reservation_expiry=times.parse_time(status.get("reservationExpiry")),
        persisted_reserved_nodes=_node_names(status.get("reservedNodes")),
        topology=request,
    )


def _node_names(value: object) -> tuple[str, ...]:
    """``status.reservedNodes``: node names; anything that is not a string is dropped."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str) and item)
