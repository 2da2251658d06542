"""scheduler-plugins coscheduling: the ``scheduling.x-k8s.io/pod-group`` label and the
``scheduling.x-k8s.io/v1alpha1`` PodGroup.

A pod labelled ``scheduling.x-k8s.io/pod-group: <name>`` joins the coscheduling
PodGroup ``<name>`` of its namespace, known to the core as
``<namespace>/coscheduling:<name>`` (:func:`~.foreign_key`). When the CRD is installed,
the shell watches those PodGroups; :func:`podgroup_from_k8s` reads one as a gang
(``minMember``, ``minResources``, ``scheduleTimeoutSeconds``, default 60 s as the
plugin's) with the plugin's timer: no member is placed before ``minMember`` pods of the
group exist (PreFilter: "cannot find enough sibling pods"), so the wait starts at the
quorum; a timeout sends the waiting members back to the queue with a backoff and the
group is tried again (Permit's timeout and Unreserve), never ``TimedOut`` for good. Plus
the Koordinator annotations that its design doc puts on PodGroups
(``total-number``, ``mode``, ``groups``: members of ``groups`` are coscheduling
PodGroups too). gangsched then owns the status, as the coscheduling controller would:
:func:`status_body` gives ``phase``, ``running``, ``succeeded``, ``failed`` and
``scheduleStartTime`` (the coscheduling phases; a ``TimedOut`` phase written by an
older gangsched does not stop the group: it is scheduled again).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import decisions, model
from gangsched.translate import fields, podgroups, times
from gangsched.translate.dialects import (
    COSCHEDULING,
    Claim,
    PodMeta,
    annotation_path,
    foreign_key,
    koordinator,
    label_path,
)
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

GROUP = "scheduling.x-k8s.io"
VERSION = "v1alpha1"
PLURAL = "podgroups"
API_VERSION = f"{GROUP}/{VERSION}"
LABEL_POD_GROUP = f"{GROUP}/pod-group"
SCHEDULER_NAME = "scheduler-plugins-scheduler"
DEFAULT_SCHEDULE_TIMEOUT = 60
_SPEC_FIELDS = ("minMember", "minResources", "scheduleTimeoutSeconds")


def read(meta: PodMeta) -> Claim | None:
    """The coscheduling claim of a pod, or ``None`` without the label."""
    name = meta.labels.get(LABEL_POD_GROUP)
    if not name:
        return None
    return Claim(
        dialect=COSCHEDULING,
        source=label_path(LABEL_POD_GROUP),
        pod_group=foreign_key(COSCHEDULING, meta.namespace, name),
    )


def podgroup_from_k8s(obj: Mapping[str, Any], *,
                      priorities: PriorityClasses = NO_CLASSES) -> model.PodGroupSpec:
    """A ``scheduling.x-k8s.io`` PodGroup as the core's PodGroupSpec, keyed
    ``namespace/coscheduling:name``. It names no PriorityClass: its priority is the
    global default's in ``priorities`` (else 0), the core takes the highest of it and
    its members'.

    The spec is checked as a gangsched PodGroup's (``minMember`` from 1 to 10000,
    quantities, a positive timeout); problems, including those of the Koordinator
    annotations, are in ``invalid`` with their paths. Queue ``default``. The persisted
    ``scheduleStartTime`` and phase come from ``status``, which gangsched writes (its
    ``PreScheduling`` read back as ``Inqueue``, see :data:`PHASES`).
    """
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    namespace = str(meta.get("namespace") or "")
    problems = fields.Problems()
    annotations: dict[str, str] = problems.read(
        lambda: fields.string_map(meta.get("annotations"), "metadata.annotations"), {}
    )

    def ref(ref_namespace: str, name: str) -> str:
        return foreign_key(COSCHEDULING, ref_namespace, name)

    extra = koordinator.options(annotations, problems, ref, waiting_time=False)
    shaped: dict[str, Any] = {key: obj[key] for key in ("metadata", "status") if key in obj}
    shaped["spec"] = spec
    if isinstance(spec, Mapping):
        shaped["spec"] = {key: spec[key] for key in _SPEC_FIELDS if key in spec}
        shaped["spec"].setdefault("scheduleTimeoutSeconds", DEFAULT_SCHEDULE_TIMEOUT)
        shaped["spec"].update(onTimeout=model.TimeoutAction.REQUEUE.value,
                              waitForMinMember=True)
    result = podgroups.podgroup_from_k8s(shaped, priorities=priorities)
    total: int | None = extra.get("totalNumber")
    if total is not None and total < result.min_member:
        problems.add(
            f"{annotation_path(koordinator.ANN_TOTAL_NUMBER)}: must be at least "
            f"spec.minMember ({result.min_member}), got {total}"
        )
    mode = model.GangMode(extra["mode"]) if "mode" in extra else result.mode
    persisted = {v: k for k, v in PHASES.items()}.get(str(result.persisted_phase),
                                                       result.persisted_phase)
    return dataclasses.replace(
        result,
        persisted_phase=persisted,
        key=foreign_key(COSCHEDULING, namespace, str(meta.get("name") or "")),
        mode=mode,
        total_number=total,
        gang_group=tuple(model.GroupKey(key) for key in extra.get("gangGroup", ())),
        invalid="; ".join(m for m in (result.invalid, problems.message()) if m) or None,
    )


PHASES: dict[str, str] = {"Inqueue": "PreScheduling"}
"""gangsched's PodGroup phases in coscheduling's words, where they differ. coscheduling's
are Pending, PreScheduling, Scheduling, Scheduled, Running, Unknown, Finished and Failed;
``Inqueue`` is Volcano's, and coscheduling's ``PreScheduling`` (every member waits to be
scheduled) is the same moment."""


def status_body(d: decisions.SetPodGroupStatus) -> dict[str, Any]:
    """The coscheduling ``status`` for ``d``: only the fields of its schema (the API
    server would prune any other), for a merge patch of ``/status``, with the phase in
    coscheduling's words (:data:`PHASES`). A ``null`` ``scheduleStartTime`` removes it."""
    start = d.schedule_start
    return {
        "phase": PHASES.get(d.phase, d.phase),
        "running": d.running,
        "succeeded": d.succeeded,
        "failed": d.failed,
        "scheduleStartTime": None if start is None else times.format_time(start),
    }
