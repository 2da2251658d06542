"""Kueue plain-pod groups: ``kueue.x-k8s.io/pod-group-name`` and
``kueue.x-k8s.io/pod-group-total-count``.

Kueue admits a pod group as one Workload once all ``total-count`` pods exist; gangsched
schedules it as one gang. A pod labelled ``kueue.x-k8s.io/pod-group-name: <name>`` joins
the gangsched PodGroup :func:`~.dns_name` of ``<name>``; with the annotation
``kueue.x-k8s.io/pod-group-total-count: "<n>"`` it carries the definition, and the
PodGroup is created with ``minMember`` and ``totalNumber`` both ``n`` (Kueue's groups
are all or nothing). The label ``kueue.x-k8s.io/queue-name`` (a LocalQueue for Kueue)
names the gangsched Queue.

Topology-aware scheduling (Kueue's TAS), read from the pod's annotations (Kueue reads
them on the pod template of each PodSet; a plain pod is its own template) by
:func:`topology`. Kueue's levels are node-label keys listed in a ``Topology`` object;
the annotations name one of those keys, and gangsched reads that key as the level itself
(it does not read the ``Topology`` object):

==============================================  =========================================
annotation                                      TopologyRequest
==============================================  =========================================
``podset-required-topology: <key>``             ``required=<key>``
``podset-preferred-topology: <key>``            ``preferred=(<key>,)``: one domain of the
                                                key if one fits, else anywhere (the levels
                                                above it live in the Topology object, which
                                                gangsched does not read)
``podset-unconstrained-topology: "true"``       no request (any placement, as Kueue's)
``podset-slice-required-topology: <key>`` with  ``slice_key=<key>``, ``slice_size=<n>``
``podset-slice-size: "<n>"``
==============================================  =========================================

Checked as Kueue's webhook checks them: at most one of required, preferred and
unconstrained; every key a valid label key; unconstrained a Go boolean (``true``,
``false``, ``1``, ``0``, ``t``, ``f``, in any of Go's spellings); the slice level and
size only together; the size an integer of at least 1 and at most the gang's size.
Refused with a message: ``podset-slice-required-topology-constraints`` (Kueue's
multi-layer slices: gangsched keeps one slice level) and ``podset-group-name`` (one
topology across PodSets: a gangsched gang is one PodSet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields, topology
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
ANN_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
ANN_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
ANN_UNCONSTRAINED = "kueue.x-k8s.io/podset-unconstrained-topology"
ANN_SLICE_REQUIRED = "kueue.x-k8s.io/podset-slice-required-topology"
ANN_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
ANN_SLICE_CONSTRAINTS = "kueue.x-k8s.io/podset-slice-required-topology-constraints"
ANN_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
TOPOLOGY_ANNOTATIONS = (
    ANN_REQUIRED, ANN_PREFERRED, ANN_UNCONSTRAINED, ANN_SLICE_REQUIRED, ANN_SLICE_SIZE,
    ANN_SLICE_CONSTRAINTS, ANN_GROUP_NAME,
)
_GO_BOOL = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


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
    spec: dict[str, Any] = {"minMember": total, "totalNumber": total,
                            "onTimeout": "Requeue", "waitForMinMember": True}
    name = dns_name(meta.labels.get(LABEL_GROUP_NAME, ""))
    return podgroup_definition(meta, name, KUEUE, spec, problems, queue, queue_path)


def topology_request(annotations: Mapping[str, str], problems: fields.Problems, *,
                     members: int | None = None) -> model.TopologyRequest | None:
    """Kueue's TAS annotations as a request (see the module docstring); ``None`` when the
    pod carries none of them. Every broken rule is added to ``problems`` with the
    annotation's path."""
    present = [key for key in TOPOLOGY_ANNOTATIONS if key in annotations]
    if not present:
        return None
    for key in (ANN_SLICE_CONSTRAINTS, ANN_GROUP_NAME):
        if key in present:
            problems.add(
                f"{annotation_path(key)}: not supported: gangsched keeps one slice level "
                "per gang and one topology per gang"
            )
    levels = [key for key in (ANN_REQUIRED, ANN_PREFERRED, ANN_UNCONSTRAINED) if key in present]
    if len(levels) > 1:
        problems.add(
            "metadata.annotations: must not contain more than one topology annotation: "
            + ", ".join(levels)
        )
    if ANN_UNCONSTRAINED in present:
        text = annotations[ANN_UNCONSTRAINED]
        if text not in _GO_BOOL:
            problems.add(f'{annotation_path(ANN_UNCONSTRAINED)}: must be a boolean, got "{text}"')

    def pair(key: str) -> tuple[str, str] | None:
        return (annotations[key], annotation_path(key)) if key in annotations else None

    size: tuple[int, str] | None = None
    if ANN_SLICE_SIZE in annotations:
        size_path = annotation_path(ANN_SLICE_SIZE)
        value = problems.read(
            lambda: count(annotations[ANN_SLICE_SIZE], size_path, minimum=-(2**31),
                          maximum=2**31 - 1),
            None,
        )
        if value is not None:
            size = (value, size_path)
    return topology.build(
        required=pair(ANN_REQUIRED),
        preferred=[p] if (p := pair(ANN_PREFERRED)) is not None else [],
        slice_key=pair(ANN_SLICE_REQUIRED),
        slice_size=size,
        members=members,
        problems=problems,
    )
