"""Kueue plain-pod groups: ``kueue.x-k8s.io/pod-group-name`` and
``kueue.x-k8s.io/pod-group-total-count``.

Kueue admits a pod group as one Workload once all ``total-count`` pods exist; gangsched
schedules it as one gang. A pod labelled ``kueue.x-k8s.io/pod-group-name: <name>`` joins
the gangsched PodGroup :func:`~.dns_name` of ``<name>``; with the annotation
``kueue.x-k8s.io/pod-group-total-count: "<n>"`` it carries the definition, and the
PodGroup is created with ``minMember`` and ``totalNumber`` both ``n`` (Kueue's groups
are all or nothing). The label ``kueue.x-k8s.io/queue-name`` (a LocalQueue for Kueue)
names the gangsched Queue.
"""

from __future__ import annotations

from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields
from gangsched.translate.dialects import (
    KUEUE,
    Claim,
    Definition,
    PodMeta,
    annotation_path,
    count,
    dns_name,
    label_path,
    podgroup_definition,
)

LABEL_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
ANN_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
LABEL_QUEUE = "kueue.x-k8s.io/queue-name"


def read(meta: PodMeta) -> Claim | None:
    """Kueue's claim on a pod, or ``None`` when it has neither a group nor a queue.
    ``terms``: the total count, when it can be read."""
    name = meta.labels.get(LABEL_GROUP_NAME) or None
    queue = meta.labels.get(LABEL_QUEUE) or None
    if name is None and queue is None:
        return None
    terms: dict[str, tuple[object, str]] = {}
    text = meta.annotations.get(ANN_TOTAL_COUNT)
    if name is not None and text is not None:
        total = fields.Problems().read(lambda: count(text, annotation_path(ANN_TOTAL_COUNT)), None)
        if total is not None:
            terms = {
                "minMember": (total, annotation_path(ANN_TOTAL_COUNT)),
                "totalNumber": (total, annotation_path(ANN_TOTAL_COUNT)),
            }
    return Claim(
        dialect=KUEUE,
        source=label_path(LABEL_GROUP_NAME),
        pod_group=model.GroupKey(f"{meta.namespace}/{dns_name(name)}") if name else None,
        queue=queue,
        queue_source=label_path(LABEL_QUEUE),
        defines=name is not None and text is not None,
        terms=terms,
    )


def define(meta: PodMeta, queue: str | None, queue_path: str) -> Definition:
    """The PodGroup a pod group asks for: named :func:`dns_name` of the group name, with
    ``minMember`` and ``totalNumber`` the total count (an integer from 1 to 10000), in
    ``queue`` (read from ``queue_path``; omitted when ``None``). Problems are in
    ``error`` with their paths."""
    problems = fields.Problems()
    path = annotation_path(ANN_TOTAL_COUNT)
    total = problems.read(lambda: count(meta.annotations.get(ANN_TOTAL_COUNT, ""), path), 0)
    spec: dict[str, Any] = {"minMember": total, "totalNumber": total}
    name = dns_name(meta.labels.get(LABEL_GROUP_NAME, ""))
    return podgroup_definition(meta, name, KUEUE, spec, problems, queue, queue_path)
