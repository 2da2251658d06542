"""Apache YuniKorn: applications, task groups and queues from pod labels and annotations.

Read as YuniKorn's k8s shim reads them:

* the application ID: label ``yunikorn.apache.org/app-id``, annotation
  ``yunikorn.apache.org/app-id``, label ``applicationId``, label ``spark-app-selector``,
  the first one set (YuniKorn refuses a pod whose keys disagree; here the first wins and
  the pod gets an Event). The Application is named :func:`~.dns_name` of it;
* the task group: annotation ``yunikorn.apache.org/task-group-name``;
* the gang: annotation ``yunikorn.apache.org/task-groups``, a JSON list of task groups
  whose field names are matched ignoring case (``minmember``, ``MinMember``), as Go's
  ``encoding/json`` does, and ``yunikorn.apache.org/schedulingPolicyParameters``
  (``placeholderTimeoutInSeconds=N gangSchedulingStyle=Hard|Soft``);
* the queue: label ``yunikorn.apache.org/queue``, annotation of the same name, label
  ``queue``. YuniKorn queues are dotted paths from ``root`` and case-insensitive;
  gangsched's Queues are flat names with ``spec.parent``, so the last segment, in lower
  case, names the gangsched Queue (``root.sandbox`` -> ``sandbox``);
* ``yunikorn.apache.org/allow-preemption: "false"``: never a preemption victim.

An application ID alone (no task group name, no task groups) makes no gang: like a
YuniKorn app without task groups, its pods are scheduled one by one in their queue. This
also keeps the ``spark-app-selector`` label that Spark puts on every pod from pulling
pods written for another scheduler into an Application.
"""

from __future__ import annotations

from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields, gangspec, labels
from gangsched.translate.dialects import (
    APPLICATION,
    YUNIKORN,
    Claim,
    Definition,
    PodMeta,
    annotation_path,
    dns_name,
    first,
    owned_metadata,
)

PREFIX = "yunikorn.apache.org/"
APP_ID = f"{PREFIX}app-id"
LABEL_APPLICATION_ID = "applicationId"
LABEL_SPARK_APP = "spark-app-selector"
QUEUE = f"{PREFIX}queue"
LABEL_LEGACY_QUEUE = "queue"
ANN_TASK_GROUP_NAME = f"{PREFIX}task-group-name"
ANN_TASK_GROUPS = f"{PREFIX}task-groups"
ANN_POLICY = f"{PREFIX}schedulingPolicyParameters"
ANN_ALLOW_PREEMPTION = f"{PREFIX}allow-preemption"
SCHEDULER_NAME = "yunikorn"

APP_ID_KEYS = (
    ("label", APP_ID),
    ("annotation", APP_ID),
    ("label", LABEL_APPLICATION_ID),
    ("label", LABEL_SPARK_APP),
)
QUEUE_KEYS = (("label", QUEUE), ("annotation", QUEUE), ("label", LABEL_LEGACY_QUEUE))
_TRUE = frozenset({"1", "t", "true"})
_FALSE = frozenset({"0", "f", "false"})


def queue_name(path: str) -> str:
    """The gangsched Queue of a YuniKorn queue path: its last segment, in lower case."""
    return path.strip().rsplit(".", 1)[-1].lower()


def _speaks(meta: PodMeta) -> bool:
    return any(
        key.startswith(PREFIX) for keys in (meta.labels, meta.annotations) for key in keys
    ) or bool(meta.labels.get(LABEL_APPLICATION_ID) or meta.labels.get(LABEL_SPARK_APP))


def _allow_preemption(meta: PodMeta) -> bool | None:
    text = meta.annotations.get(ANN_ALLOW_PREEMPTION)
    if text is None:
        return None
    folded = text.strip().lower()
    if folded in _TRUE or folded in _FALSE:
        return folded in _TRUE
    raise fields.TranslationError(
        f'{annotation_path(ANN_ALLOW_PREEMPTION)}: expected "true" or "false", got "{text}"'
    )


def read(meta: PodMeta) -> Claim | None:
    """YuniKorn's claim on a pod, or ``None`` when it speaks no YuniKorn.

    Problems: a task group (name or list) without an application ID, and an
    ``allow-preemption`` that is not a boolean. Conflicts: application ID or queue keys
    that disagree.
    """
    if not _speaks(meta):
        return None
    problems = fields.Problems()
    app_id, source, app_disagree = first(meta, APP_ID_KEYS)
    queue, queue_source, queue_disagree = first(meta, QUEUE_KEYS)
    group_name = meta.annotations.get(ANN_TASK_GROUP_NAME) or None
    defines = ANN_TASK_GROUPS in meta.annotations
    gang = group_name is not None or defines
    if gang and not app_id:
        key = ANN_TASK_GROUP_NAME if group_name is not None else ANN_TASK_GROUPS
        problems.add(
            f"{annotation_path(key)}: a YuniKorn task group needs an application ID: set "
            f"label {APP_ID} (or label {LABEL_APPLICATION_ID} or {LABEL_SPARK_APP})"
        )
    preemptible = problems.read(lambda: _allow_preemption(meta), None)
    conflicts = [f"YuniKorn application ID: {text}" for text in app_disagree]
    conflicts += [f"YuniKorn queue: {text}" for text in queue_disagree]
    member = gang and app_id is not None
    return Claim(
        dialect=YUNIKORN,
        source=source,
        app=model.AppKey(f"{meta.namespace}/{dns_name(app_id)}") if member and app_id else None,
        task_group=group_name if member else None,
        queue=queue_name(queue) if queue else None,
        queue_source=queue_source,
        preemptible=preemptible,
        defines=member and defines,
        problems=tuple(problems.messages),
        conflicts=tuple(conflicts),
    )


def define(meta: PodMeta, queue: str | None, queue_path: str) -> Definition:
    """The Application a YuniKorn pod with ``task-groups`` asks for.

    Named :func:`dns_name` of the application ID (the ID itself is kept in the annotation
    ``yunikorn.apache.org/app-id``), in ``queue`` (read from ``queue_path``; ``default``
    when ``None``), with the task groups, the scheduling policy and the pod's
    ``priorityClassName``. Every problem (invalid JSON with line and column, a bad task
    group, a bad policy, a queue that is not a valid name) is in ``error``, each with its
    path.
    """
    app_id, _, _ = first(meta, APP_ID_KEYS)
    name = dns_name(app_id or "")
    key = f"{meta.namespace}/{name}"
    problems = fields.Problems()
    groups_path = annotation_path(ANN_TASK_GROUPS)
    task_groups: list[dict[str, Any]] = problems.read(
        lambda: gangspec.task_groups_from_json(
            meta.annotations.get(ANN_TASK_GROUPS, ""), path=groups_path
        ),
        [],
    )
    policy_path = annotation_path(ANN_POLICY)
    policy: dict[str, Any] = problems.read(
        lambda: gangspec.scheduling_policy_from_text(
            meta.annotations.get(ANN_POLICY, ""), path=policy_path
        ),
        {},
    )
    queue = queue or model.DEFAULT_QUEUE
    problems.read(lambda: fields.dns_subdomain(queue, queue_path, what="queue name"), "")
    error = problems.message()
    if error is not None:
        return Definition(APPLICATION, key, None, error)
    spec: dict[str, Any] = {"queue": queue, "taskGroups": task_groups}
    if policy:
        spec["schedulingPolicy"] = policy
    if meta.priority_class:
        spec["priorityClassName"] = meta.priority_class
    metadata = owned_metadata(meta, name, YUNIKORN)
    metadata["annotations"] = {APP_ID: app_id or ""}
    manifest = {
        "apiVersion": labels.API_VERSION,
        "kind": APPLICATION,
        "metadata": metadata,
        "spec": spec,
    }
    return Definition(APPLICATION, key, manifest)
