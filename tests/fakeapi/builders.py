"""Builders of raw API objects for tests: ``make_pod(...)``, ``make_node(...)``, ...

Each returns a fresh JSON dict with only what the caller asked for plus the
minimum the API server requires; the server fills in the rest.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def _meta(name: str | None, namespace: str | None, labels: dict[str, str] | None,
          generate_name: str | None = None, **extra: Any) -> Obj:
    md: Obj = {}
    if name is not None:
        md["name"] = name
    if generate_name is not None:
        md["generateName"] = generate_name
    if namespace is not None:
        md["namespace"] = namespace
    if labels:
        md["labels"] = dict(labels)
    md.update({k: v for k, v in extra.items() if v is not None})
    return md


def make_pod(name: str | None = "pod", namespace: str | None = "default", *,
             labels: dict[str, str] | None = None, generate_name: str | None = None,
             node_name: str | None = None, scheduler_name: str | None = None,
             cpu: str | None = None, memory: str | None = None,
             priority_class: str | None = None, finalizers: list[str] | None = None,
             owner: Obj | None = None, gates: list[str] | None = None) -> Obj:
    container: Obj = {"name": "main", "image": "busybox:1.36"}
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    if requests:
        container["resources"] = {"requests": requests}
    spec: Obj = {"containers": [container]}
    if node_name is not None:
        spec["nodeName"] = node_name
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": _meta(name, namespace, labels, generate_name, finalizers=finalizers,
                              ownerReferences=[owner_ref(owner)] if owner else None),
            "spec": spec}


def make_node(name: str = "node", *, labels: dict[str, str] | None = None,
              cpu: str = "8", memory: str = "32Gi", pods: str = "110") -> Obj:
    alloc = {"cpu": cpu, "memory": memory, "pods": pods}
    return {"apiVersion": "v1", "kind": "Node", "metadata": _meta(name, None, labels),
            "spec": {},
            "status": {"capacity": dict(alloc), "allocatable": alloc,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def make_namespace(name: str, *, labels: dict[str, str] | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(name, None, labels)}


def make_configmap(name: str = "cm", namespace: str = "default", *,
                   data: dict[str, str] | None = None, labels: dict[str, str] | None = None,
                   finalizers: list[str] | None = None, owner: Obj | None = None) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": _meta(name, namespace, labels, finalizers=finalizers,
                              ownerReferences=[owner_ref(owner)] if owner else None),
            "data": dict(data or {})}


def make_pdb(name: str, namespace: str = "default", *, match_labels: dict[str, str],
             min_available: int | str | None = None,
             max_unavailable: int | str | None = None) -> Obj:
    spec: Obj = {"selector": {"matchLabels": dict(match_labels)}}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": _meta(name, namespace, None), "spec": spec}


def make_priority_class(name: str, value: int, *, global_default: bool = False) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": global_default}


def owner_ref(owner: Obj, *, controller: bool = True) -> Obj:
    md = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": md["name"],
            "uid": md["uid"], "controller": controller, "blockOwnerDeletion": True}


def make_crd(*, group: str = "example.dev", plural: str = "widgets", kind: str = "Widget",
             scope: str = "Namespaced", short_names: tuple[str, ...] = ("wd",),
             status: bool = True, spec_schema: Obj | None = None,
             versions: tuple[str, ...] = ("v1",)) -> Obj:
    """A CRD with a structural schema; the default schema has ``spec.size`` (int ≥ 1,
    default 1), ``spec.mode`` (enum), ``spec.port`` (int-or-string), ``spec.extra``
    (preserve-unknown-fields) and a free-form ``status``."""
    spec_schema = spec_schema or {
        "type": "object",
        "required": ["image"],
        "properties": {
            "image": {"type": "string"},
            "size": {"type": "integer", "minimum": 1, "default": 1},
            "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
            "port": {"x-kubernetes-int-or-string": True},
            "note": {"type": "string", "nullable": True},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    schema = {"type": "object", "properties": {
        "spec": spec_schema,
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    }}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                      "listKind": f"{kind}List", "shortNames": list(short_names)},
            "versions": [{
                "name": v, "served": True, "storage": i == 0,
                "schema": {"openAPIV3Schema": schema},
                **({"subresources": {"status": {}}} if status else {}),
            } for i, v in enumerate(versions)],
        },
    }


NOT_READY_TAINT = "node.kubernetes.io/not-ready"


def untaint_ready(node: Obj) -> Obj | None:
    """The merge patch the node lifecycle controller sends for a Ready node that still has
    the ``not-ready`` taint the API server added at creation (None when nothing is to
    remove, or the node is not Ready). Other taints are kept."""
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = (node.get("spec") or {}).get("taints") or []
    kept = [t for t in taints if t.get("key") != NOT_READY_TAINT]
    if not ready or len(kept) == len(taints):
        return None
    return {"spec": {"taints": kept or None}}
