"""Queue objects (``gangsched.io/v1alpha1``, cluster scoped) to the core's :class:`QueueSpec`.

A queue that breaks a rule is returned with ``invalid`` naming every problem with its
path; the core then admits nothing to it and reports why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from gangsched.core.values import model, resources
from gangsched.translate import fields

DEFAULT_STATE_AWARE_TIMEOUT = 300
MAX_WEIGHT = 1000


def _sort_policy(raw: object) -> model.SortPolicy:
    text = fields.string(raw, "spec.sortPolicy", default=model.SortPolicy.FIFO.value)
    try:
        return cast(model.SortPolicy, model.SortPolicy.from_string(text))
    except ValueError as error:
        raise fields.TranslationError(f"spec.sortPolicy: {error}") from None


def _over_max(
    guaranteed: resources.Resources, limit: resources.Resources, raw_max: Mapping[str, Any]
) -> list[str]:
    """Messages for every resource guaranteed above its max (a resource absent from max is
    unlimited; one listed with 0 allows nothing)."""
    messages = []
    for name, amount in sorted(guaranteed.items()):
        if name in raw_max and amount > limit.get(name):
            shown = resources.format_amount(name, amount)
            cap = resources.format_amount(name, limit.get(name))
            messages.append(
                f"{fields.key_path('spec.guaranteed', name)}: {shown} is more than "
                f"{fields.key_path('spec.max', name)} {cap}"
            )
    return messages


def queue_from_k8s(obj: Mapping[str, Any]) -> model.QueueSpec:
    """Translate a Queue object into the core's QueueSpec.

    ``name`` is ``metadata.name``. Defaults: no parent (also for ``""``), ``max`` None (no
    quota) when absent; ``limited`` names every resource ``max`` lists, zeros included
    (``nvidia.com/gpu: 0`` allows no GPUs), no guarantee, ``maxApplications`` 0
    (unlimited), sortPolicy ``fifo``, ``stateAwareTimeoutSeconds`` 300, weight 1,
    reclaimable. Invalid: wrong types, bad or negative quantities, out-of-range integers,
    an unknown sort policy, a parent name that is not a DNS subdomain, a guarantee above
    the max.
    """
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {}
    )
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    name = meta.get("name")
    parent = problems.read(lambda: fields.string(spec.get("parent"), "spec.parent"), "")
    if parent:
        problems.read(lambda: fields.dns_subdomain(parent, "spec.parent", what="queue name"), "")
    raw_max: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(spec.get("max"), "spec.max"), {}
    )
    limit: resources.Resources | None = None
    if spec.get("max") is not None:
        limit = problems.read(lambda: fields.resource_list(raw_max, "spec.max"), None)
    guaranteed = problems.read(
        lambda: fields.resource_list(spec.get("guaranteed"), "spec.guaranteed"),
        resources.Resources.ZERO,
    )
    if limit is not None:
        for message in _over_max(guaranteed, limit, raw_max):
            problems.add(message)
    max_apps = problems.read(
        lambda: fields.integer(
            spec.get("maxApplications"), "spec.maxApplications", default=0, minimum=0
        ),
        0,
    )
    policy = problems.read(lambda: _sort_policy(spec.get("sortPolicy")), model.SortPolicy.FIFO)
    state_aware = problems.read(
        lambda: fields.integer(
            spec.get("stateAwareTimeoutSeconds"),
            "spec.stateAwareTimeoutSeconds",
            default=DEFAULT_STATE_AWARE_TIMEOUT,
            minimum=1,
        ),
        DEFAULT_STATE_AWARE_TIMEOUT,
    )
    weight = problems.read(
        lambda: fields.integer(
            spec.get("weight"), "spec.weight", default=1, minimum=1, maximum=MAX_WEIGHT
        ),
        1,
    )
    reclaimable = problems.read(
        lambda: fields.boolean(spec.get("reclaimable"), "spec.reclaimable", default=True), True
    )
    return model.QueueSpec(
        name=name if isinstance(name, str) else "",
        parent=parent or None,
        max=limit,
        guaranteed=guaranteed,
        max_applications=max_apps,
        sort_policy=policy,
        state_aware_timeout=float(state_aware),
        weight=weight,
        reclaimable=reclaimable,
        invalid=problems.message(),
        limited=frozenset(raw_max) if limit is not None else frozenset(),
    )
