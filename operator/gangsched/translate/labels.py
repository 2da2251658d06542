"""The names gangsched reads and writes on Kubernetes objects: labels, annotations, images.

Users put these on their pods (``LABEL_APP``, ``ANN_TASK_GROUP``, ``LABEL_POD_GROUP``,
``ANN_QUEUE``, ...); the operator puts the rest on the placeholder pods it creates. They are
plain constants: the only place where these spellings appear.
"""

from __future__ import annotations

GROUP = "gangsched.io"
"""The API group of the Application, PodGroup and Queue custom resources."""

API_VERSION = f"{GROUP}/v1alpha1"
"""The ``apiVersion`` of the custom resources."""

LABEL_APP = f"{GROUP}/app"
"""Pod label: the name of the Application the pod belongs to, made label-safe with
:func:`gangsched.core.values.naming.label_value`."""

ANN_APP_NAME = f"{GROUP}/app-name"
"""Pod annotation: the full Application name, when the label had to be shortened."""

ANN_TASK_GROUP = f"{GROUP}/task-group"
"""Pod annotation: the task group of the Application the pod is a member of."""

ANN_TASK_GROUPS = f"{GROUP}/task-groups"
"""Pod annotation (pods-first flow): the Application's task groups, as a JSON list."""

ANN_SCHEDULING_POLICY = f"{GROUP}/scheduling-policy"
"""Pod annotation (pods-first flow): the Application's scheduling policy, either a JSON
object or YuniKorn-style ``key=value`` text."""

ANN_QUEUE = f"{GROUP}/queue"
"""Pod annotation: the queue of the pod (pods-first Applications and ordinary pods)."""

LABEL_QUEUE = ANN_QUEUE
"""The same key, accepted as a pod label too (the label wins when both are set)."""

LABEL_POD_GROUP = f"{GROUP}/pod-group"
"""Pod label: the name of the PodGroup (same namespace) the pod is a member of."""

LABEL_PLACEHOLDER = f"{GROUP}/placeholder"
"""Pod label: ``"true"`` on the placeholder pods the operator creates."""

ANN_MEMBER_INDEX = f"{GROUP}/member-index"
"""Placeholder pod annotation: the member index within its task group."""

ANN_PREEMPTIBLE = f"{GROUP}/preemptible"
"""Pod annotation: ``"false"`` means the pod is never chosen as a preemption victim."""

LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
"""The well-known label naming the tool that manages an object."""

MANAGED_BY = "gangsched"
"""The value of :data:`LABEL_MANAGED_BY` on the objects the operator creates."""

DEFAULT_SCHEDULER_NAME = "gangsched"
"""The ``spec.schedulerName`` of the pods the operator schedules."""

PLACEHOLDER_IMAGE = "registry.k8s.io/pause:3.10"
PLACEHOLDER_GRACE_SECONDS = 5
"""Termination grace period of placeholder pods (their spec, and every deletion by the
operator): the kubelet stops the container and releases its CPUs and devices before the
pod is gone, so its device and CPU managers never see them assigned twice. Never 0."""
"""The image of the placeholder pods: it does nothing and needs no privileges."""

REPORTING_CONTROLLER = f"{GROUP}/scheduler"
"""The ``reportingController`` of the Events the operator records."""
