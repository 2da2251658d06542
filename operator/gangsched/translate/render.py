"""Core decisions to Kubernetes API bodies: placeholder pods, statuses, conditions, Events.

Everything returned is plain JSON-ready data; the shell sends it. The bodies respect the
API's rules (names, lengths, the CRD schemas), because one bad field makes the API server
refuse the whole request:

* placeholder pods are hardened ``pause`` pods (non-root, read-only, no capabilities, no
  service account token), sized exactly like their task group's ``minResource``, owned by
  their Application, and carry the task group's constraints *raw*, so pod (anti-)affinity
  and topology spread constraints reach them too;
* status bodies (:mod:`gangsched.translate.statuses`, re-exported here) are meant for a
  JSON merge patch of ``/status``: timestamps that are not set are ``null``, and with
  ``old_status`` every key the old status has and the new one does not is ``null`` too,
  so nothing stale survives the merge;
* Events are ``events.k8s.io/v1`` with a deterministic name per object and message, so
  that the shell can turn repeats into a ``series`` on the first one.
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import decisions, naming
from gangsched.translate import group_claims, labels, statuses, times

MAX_NAME = 253
MAX_NOTE_BYTES = 1024
MAX_EVENT_FIELD = 128
EVENT_HASH_LENGTH = 16
PAUSE_USER = 65535

_COPIED_CONSTRAINTS = ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints")
_REGARDING_API = {
    "Pod": "v1",
    "Node": "v1",
    "Application": labels.API_VERSION,
    "PodGroup": labels.API_VERSION,
    "Queue": labels.API_VERSION,
}
_CLUSTER_SCOPED_EVENTS_NAMESPACE = "default"

# The status bodies live in their own module; they are part of this module's interface.
app_status_body = statuses.app_status_body
podgroup_status_body = statuses.podgroup_status_body
queue_status_body = statuses.queue_status_body


def _strings(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    return {key: value for key, value in raw.items() if isinstance(value, str)}


def _task_group(app_spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    groups = app_spec.get("taskGroups")
    for group in groups if isinstance(groups, list) else ():
        if isinstance(group, Mapping) and group.get("name") == name:
            return group
    return {}


def placeholder_pod(
    d: decisions.CreatePlaceholder,
    app_obj: Mapping[str, Any],
    *,
    image: str = labels.PLACEHOLDER_IMAGE,
    scheduler_name: str = labels.DEFAULT_SCHEDULER_NAME,
) -> dict[str, Any]:
    """The placeholder pod for ``d``, a member of a task group of Application ``app_obj``.

    Labels: the task group's ``labels``, then (taking precedence) ``gangsched.io/app``,
    ``gangsched.io/placeholder: "true"`` and ``app.kubernetes.io/managed-by``.
    Annotations: the task group's ``annotations``, then the task group, member index and
    full application name, and the task group's ``resourceClaims`` (JSON) when it has
    any: the placeholder holds devices for them in memory, it has no claims of its own.
    Requests and limits are both ``d.requests`` (Guaranteed QoS;
    no ``resources`` at all when it is zero). ``nodeSelector``, ``tolerations``,
    ``affinity`` and ``topologySpreadConstraints`` are copied from the task group as they
    are, ``priorityClassName`` from the Application spec. When the task group is no longer
    in the spec, the pod is rendered without the group's labels and constraints.
    """
    meta = app_obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = app_obj.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    app_name = str(meta.get("name") or d.app.split("/", 1)[-1])
    group = _task_group(spec, d.task_group)

    pod_labels = _strings(group.get("labels"))
    pod_labels.update(
        {
            labels.LABEL_APP: naming.label_value(app_name),
            labels.LABEL_PLACEHOLDER: "true",
            labels.LABEL_MANAGED_BY: labels.MANAGED_BY,
        }
    )
    annotations = _strings(group.get("annotations"))
    annotations.update(
        {
            labels.ANN_TASK_GROUP: d.task_group,
            labels.ANN_MEMBER_INDEX: str(d.index),
            labels.ANN_APP_NAME: app_name,
        }
    )
    if d.claims:
        annotations[group_claims.ANNOTATION] = group_claims.annotation(d.claims)
    container: dict[str, Any] = {
        "name": "pause",
        "image": image,
        "imagePullPolicy": "IfNotPresent",
    }
    amounts = d.requests.to_k8s()
    if amounts:
        container["resources"] = {"requests": dict(amounts), "limits": dict(amounts)}
    container["securityContext"] = {
        "runAsNonRoot": True,
        "runAsUser": PAUSE_USER,
        "runAsGroup": PAUSE_USER,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    pod_spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "containers": [container],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": labels.PLACEHOLDER_GRACE_SECONDS,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": PAUSE_USER,
            "runAsGroup": PAUSE_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    for key in _COPIED_CONSTRAINTS:
        value = group.get(key)
        if value:
            pod_spec[key] = copy.deepcopy(value)
    priority_class = spec.get("priorityClassName")
    if isinstance(priority_class, str) and priority_class:
        pod_spec["priorityClassName"] = priority_class
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": d.name,
            "namespace": d.namespace,
            "labels": pod_labels,
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": labels.API_VERSION,
                    "kind": "Application",
                    "name": app_name,
                    "uid": str(meta.get("uid") or ""),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": pod_spec,
    }


_FIT_ERROR = re.compile(r"\d+/\d+ nodes are available")
"""The start of kube-scheduler's ``FitError`` message."""


def pod_scheduled_condition(d: decisions.PodPending, *, now: float) -> dict[str, Any]:
    """The ``PodScheduled=False`` pod condition kube-scheduler would write for ``d``:
    reason ``Unschedulable``; for a gated pod reason ``SchedulingGated`` with the API
    server's message.

    The message of a pod that no node fits is kube-scheduler's ``FitError`` text as it
    is, ``0/N nodes are available: ...`` (pkg/scheduler/framework/types.go
    ``FitError.Error``, written by ``handleSchedulingFailure``): tools and people match
    on that prefix. A pod that waits for something kube-scheduler has no words for (its
    gang, its queue's quota) reads ``"<reason>: <message>"``."""
    if d.reason == decisions.SCHEDULING_GATED:
        reason, message = d.reason, d.message
    else:
        reason = "Unschedulable"
        if _FIT_ERROR.match(d.message):
            message = d.message
        else:
            message = f"{d.reason}: {d.message}" if d.message else d.reason
    return {
        "type": "PodScheduled",
        "status": "False",
        "reason": reason,
        "message": message,
        "lastProbeTime": None,
        "lastTransitionTime": times.format_time_seconds(now),
    }


# Events.

_NOT_NAME = re.compile(r"[^a-z0-9.-]")


def _name_base(name: str) -> str:
    cleaned = _NOT_NAME.sub("-", name.lower())[: MAX_NAME - EVENT_HASH_LENGTH - 1]
    segments = (segment.strip("-") for segment in cleaned.split("."))
    return ".".join(segment for segment in segments if segment) or "object"


def event_name(d: decisions.RecordEvent) -> str:
    """``<object name>.<16 hex digits>``: the same for every repeat of the same event (same
    object, uid, type, reason and message), at most 253 characters and a valid DNS
    subdomain, whatever the object's name is."""
    target = d.target
    return event_name_of(target.kind, target.namespace, target.name, target.uid,
                         d.type.value, d.reason, d.message)


def event_name_of(kind: str, namespace: str, name: str, uid: str, type_: str, reason: str,
                  message: str) -> str:
    """:func:`event_name` of the Event of this type, reason and message about this object,
    with no :class:`~gangsched.core.values.decisions.RecordEvent` to make first."""
    key = "\x00".join((kind, namespace, name, uid, type_, reason, message))
    digest = hashlib.sha256(key.encode()).hexdigest()[:EVENT_HASH_LENGTH]
    return f"{_name_base(name)}.{digest}"


def _note(message: str) -> str:
    data = message.encode()
    if len(data) <= MAX_NOTE_BYTES:
        return message
    return data[: MAX_NOTE_BYTES - 3].decode(errors="ignore") + "..."


def event_body(
    d: decisions.RecordEvent,
    *,
    now: float,
    component: str = "gangsched",
    instance: str = "",
) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event for ``d``, named :func:`event_name`.

    Events about cluster-scoped objects (Node, Queue) go to the ``default`` namespace, as
    the API requires. ``reason`` and ``action`` (both the decision's reason) are cut to
    128 characters, ``note`` to 1024 bytes; ``reportingInstance`` is ``instance``, or
    ``component`` when it is empty. ``eventTime`` is ``now`` as a MicroTime.
    """
    target = d.target
    regarding: dict[str, Any] = {
        "apiVersion": _REGARDING_API.get(target.kind, "v1"),
        "kind": target.kind,
        "name": target.name,
    }
    if target.namespace:
        regarding["namespace"] = target.namespace
    if target.uid:
        regarding["uid"] = target.uid
    reason = (d.reason or "Unknown")[:MAX_EVENT_FIELD]
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "name": event_name(d),
            "namespace": target.namespace or _CLUSTER_SCOPED_EVENTS_NAMESPACE,
        },
        "eventTime": times.format_micro_time(now),
        "reportingController": labels.REPORTING_CONTROLLER,
        "reportingInstance": (instance or component)[:MAX_EVENT_FIELD],
        "action": reason,
        "reason": reason,
        "type": d.type.value,
        "note": _note(d.message),
        "regarding": regarding,
    }
