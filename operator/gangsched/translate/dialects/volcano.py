"""Volcano: the ``scheduling.k8s.io/group-name`` annotation, the queue annotations and the
``scheduling.volcano.sh/v1beta1`` PodGroup.

A pod annotated ``scheduling.k8s.io/group-name: <name>`` (or
``scheduling.volcano.sh/group-name``) joins the Volcano PodGroup ``<name>`` of its
namespace, known to the core as ``<namespace>/volcano:<name>``. When Volcano's CRD is
installed, the shell watches those PodGroups; :func:`podgroup_from_k8s` reads
``minMember``, ``minResources`` and ``queue``. Volcano has no gang timeout, so the gang
gets gangsched's default (600 s), Strict. ``minTaskMember`` (a minimum per task role) is
not read: the whole gang's ``minMember`` still holds.

Read only: Volcano's own controllers own a PodGroup's status (its phases are not
gangsched's), so gangsched writes none, and reads no timer or phase from it.

The queue: annotation ``scheduling.volcano.sh/queue-name``, else ``volcano.sh/queue-name``,
names the gangsched Queue.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import podgroups
from gangsched.translate.dialects import VOLCANO, Claim, PodMeta, first, foreign_key
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"
PLURAL = "podgroups"
API_VERSION = f"{GROUP}/{VERSION}"
ANN_GROUP_NAME = "scheduling.k8s.io/group-name"
ANN_VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
ANN_QUEUE = "scheduling.volcano.sh/queue-name"
ANN_LEGACY_QUEUE = "volcano.sh/queue-name"
SCHEDULER_NAME = "volcano"

GROUP_KEYS = (("annotation", ANN_GROUP_NAME), ("annotation", ANN_VOLCANO_GROUP_NAME))
QUEUE_KEYS = (("annotation", ANN_QUEUE), ("annotation", ANN_LEGACY_QUEUE))
_SPEC_FIELDS = ("minMember", "minResources", "queue", "priorityClassName")


def read(meta: PodMeta) -> Claim | None:
    """Volcano's claim on a pod, or ``None`` when it has none of its annotations.
    Conflicts: group-name or queue annotations that disagree."""
    name, source, name_disagree = first(meta, GROUP_KEYS)
    queue, queue_source, queue_disagree = first(meta, QUEUE_KEYS)
    if name is None and queue is None:
        return None
    conflicts = [f"Volcano group name: {text}" for text in name_disagree]
    conflicts += [f"Volcano queue: {text}" for text in queue_disagree]
    return Claim(
        dialect=VOLCANO,
        source=source,
        pod_group=foreign_key(VOLCANO, meta.namespace, name) if name else None,
        queue=queue,
        queue_source=queue_source,
        conflicts=tuple(conflicts),
    )


def podgroup_from_k8s(obj: Mapping[str, Any], *,
                      priorities: PriorityClasses = NO_CLASSES) -> model.PodGroupSpec:
    """A ``scheduling.volcano.sh`` PodGroup as the core's PodGroupSpec, keyed
    ``namespace/volcano:name``: ``minMember`` (required, 1 to 10000), ``minResources``,
    ``queue`` (default ``default``), ``priorityClassName`` (resolved in ``priorities``),
    checked as a gangsched PodGroup's, with every problem in ``invalid``. Nothing is read
    from ``status``."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    shaped: dict[str, Any] = {"metadata": meta, "spec": spec}
    if isinstance(spec, Mapping):
        shaped["spec"] = {key: spec[key] for key in _SPEC_FIELDS if key in spec}
    result = podgroups.podgroup_from_k8s(shaped, priorities=priorities)
    namespace = str(meta.get("namespace") or "")
    return dataclasses.replace(
        result, key=foreign_key(VOLCANO, namespace, str(meta.get("name") or ""))
    )
