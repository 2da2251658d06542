"""Node objects (``v1/Node``) to the core's :class:`~gangsched.core.model.Node`.

Nodes are written by kubelets and cloud controllers, not by gangsched's users, so a node
has no ``invalid`` message. A node that cannot be read safely (a malformed quantity in
``status.allocatable``, a malformed taint) is returned *not ready with nothing
allocatable*: nothing is placed on it, which is the safe reading. :func:`node_problems`
says what was wrong, for the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core import constraints, model, resources
from gangsched.translate import fields, k8s_constraints


def _ready(status: Mapping[str, Any]) -> str:
    """The ``Ready`` condition's status: ``"True"``, ``"False"``, ``"Unknown"``; ``""``
    when the node has none (or a malformed list)."""
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        return ""
    for condition in conditions:
        if isinstance(condition, Mapping) and condition.get("type") == "Ready":
            found = condition.get("status")
            return found if isinstance(found, str) else ""
    return ""


def _read(obj: Mapping[str, Any]) -> tuple[model.Node, list[str]]:
    problems = fields.Problems()
    meta: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("metadata"), "metadata"), {}
    )
    spec: Mapping[str, Any] = problems.read(lambda: fields.mapping(obj.get("spec"), "spec"), {})
    status: Mapping[str, Any] = problems.read(
        lambda: fields.mapping(obj.get("status"), "status"), {}
    )
    name = meta.get("name")
    node_labels: dict[str, str] = problems.read(
        lambda: fields.string_map(meta.get("labels"), "metadata.labels"), {}
    )
    allocatable = problems.read(
        lambda: fields.resource_list(status.get("allocatable"), "status.allocatable"),
        resources.Resources.ZERO,
    )
    taints: tuple[constraints.Taint, ...] = problems.read(
        lambda: k8s_constraints.taints_from_k8s(spec.get("taints"), path="spec.taints"), ()
    )
    unschedulable = problems.read(
        lambda: fields.boolean(spec.get("unschedulable"), "spec.unschedulable", default=False),
        False,
    )
    broken = bool(problems.messages)
    ready = _ready(status)
    node = model.Node(
        name=name if isinstance(name, str) else "",
        allocatable=resources.Resources.ZERO if broken else allocatable,
        labels=node_labels,
        taints=taints,
        unschedulable=unschedulable,
        ready=not broken and ready == "True",
        unreachable=not broken and ready == "Unknown",
    )
    return node, problems.messages


def node_from_k8s(obj: Mapping[str, Any]) -> model.Node:
    """Translate a Node object.

    ``allocatable`` is ``status.allocatable`` as it is (a node without it has nothing,
    including no pod slots); ``ready`` is whether the ``Ready`` condition has status
    ``"True"`` (no condition: not ready); ``unreachable`` whether it is ``"Unknown"`` (the
    kubelet stopped reporting); ``unschedulable`` is ``spec.unschedulable``.
    Taint ``timeAdded`` is ignored. A node with any problem (see :func:`node_problems`)
    is not ready and has nothing allocatable.
    """
    return _read(obj)[0]


def node_problems(obj: Mapping[str, Any]) -> list[str]:
    """What is wrong with a Node object, each message starting with its path; ``[]`` when
    :func:`node_from_k8s` reads it as it is."""
    return _read(obj)[1]
