"""gangsched's own names: ``gangsched.io/app``, ``gangsched.io/task-group``,
``gangsched.io/pod-group`` and ``gangsched.io/queue``.

The native dialect is always first in the precedence: a pod that names a gangsched
gang explicitly means it. Its pods-first definition (``gangsched.io/task-groups``) is
built by :func:`gangsched.translate.pods.app_manifest_from_pod`.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.values import model, naming
from gangsched.translate import fields, labels
from gangsched.translate.dialects import NATIVE, Claim, PodMeta, annotation_path, label_path


def app_name(pod_labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The Application a pod names: the label, or the full name in the annotation when the
    label is its shortened form. Raises when the two disagree."""
    label = pod_labels.get(labels.LABEL_APP)
    if not label:
        return None
    full = annotations.get(labels.ANN_APP_NAME)
    if not full or full == label:
        return label
    if naming.label_value(full) != label:
        path = fields.key_path("metadata.annotations", labels.ANN_APP_NAME)
        raise fields.TranslationError(
            f'{path}: "{full}" does not match label {labels.LABEL_APP} "{label}" '
            f'(expected "{naming.label_value(full)}")'
        )
    return full


def queue(pod_labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The label ``gangsched.io/queue``, else the annotation of the same name."""
    return pod_labels.get(labels.LABEL_QUEUE) or annotations.get(labels.ANN_QUEUE) or None


def read(meta: PodMeta) -> Claim | None:
    """The native claim of a pod, or ``None`` when it uses no gangsched name.

    A pod naming both an Application and a PodGroup keeps both, with a problem: it is a
    member of one gang only, and the core keeps it pending with that message.
    """
    problems = fields.Problems()
    name = problems.read(lambda: app_name(meta.labels, meta.annotations), None)
    group = meta.labels.get(labels.LABEL_POD_GROUP) or None
    found_queue = queue(meta.labels, meta.annotations)
    if name is None and group is None and found_queue is None and not problems.messages:
        return None
    if name and group:
        problems.add(
            f"conflicting gang membership: label {labels.LABEL_APP} names Application "
            f'"{name}" and label {labels.LABEL_POD_GROUP} names PodGroup "{group}"; '
            "a pod can be a member of one gang only"
        )
    queue_path = (
        label_path(labels.LABEL_QUEUE)
        if meta.labels.get(labels.LABEL_QUEUE)
        else annotation_path(labels.ANN_QUEUE)
    )
    return Claim(
        dialect=NATIVE,
        source=label_path(labels.LABEL_APP if name else labels.LABEL_POD_GROUP),
        app=model.AppKey(f"{meta.namespace}/{name}") if name else None,
        task_group=meta.annotations.get(labels.ANN_TASK_GROUP) or None,
        pod_group=model.GroupKey(f"{meta.namespace}/{group}") if group else None,
        queue=found_queue,
        queue_source=queue_path,
        defines=bool(name) and labels.ANN_TASK_GROUPS in meta.annotations,
        problems=tuple(problems.messages),
    )

