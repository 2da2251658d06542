"""The harness of the plugin conformance tables: nodes, placed pods and a pod to place,
written as the Kubernetes objects a user writes, translated as the operator translates
them, and run through the default profile.

``feasible(...)`` is the set of nodes every filter accepts (filters are exact, so it is
the same set kube-scheduler's filters give); ``chosen(...)`` is the node placement picks
(scoring); ``why(...)`` the FitError message when nothing fits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gangsched.core.cluster import Cluster
from gangsched.core.constraints import Taint, TaintEffect
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.model import Node, Scoring
from gangsched.core.podindex import PlacedPod
from gangsched.core.resources import Resources
from gangsched.core.runtime import PodState
from gangsched.translate.pods import pod_from_k8s

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: str = "110", *,
         zone: str | None = None, labels: Mapping[str, str] | None = None,
         taints: Iterable[tuple[str, str, str]] = (), unschedulable: bool = False,
         hostname: bool = True) -> Node:
    """A Ready node labelled with its hostname (and ``zone`` when given)."""
    all_labels = {HOST: name} if hostname else {}
    if zone is not None:
        all_labels[ZONE] = zone
    all_labels.update(labels or {})
    return Node(name, Resources.from_k8s({"cpu": cpu, "memory": memory, "pods": pods}),
                all_labels, tuple(Taint(k, v, TaintEffect(e)) for k, v, e in taints),
                unschedulable)


def pod(name: str = "incoming", *, namespace: str = "default",
        labels: Mapping[str, str] | None = None, cpu: str = "100m", memory: str = "64Mi",
        ports: Iterable[Mapping[str, Any]] = (), **spec: Any) -> dict[str, Any]:
    """A v1 Pod; ``spec`` keys are merged into its spec as they are."""
    container: dict[str, Any] = {"name": "c", "image": "busybox",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    if ports:
        container["ports"] = list(ports)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}",
                         "labels": dict(labels or {})},
            "spec": {"containers": [container], **spec}}


def info(obj: Mapping[str, Any]) -> PodInfo:
    translated = pod_from_k8s(obj)
    assert translated.invalid is None, translated.invalid
    return PodState(translated).info


def cluster(nodes: Iterable[Node], placed: Iterable[tuple[Mapping[str, Any], str]] = (),
            namespaces: Mapping[str, Mapping[str, str]] | None = None) -> Cluster:
    """Nodes, and pods already on them as (pod, node)."""
    found = Cluster()
    for n in nodes:
        found.upsert_node(n)
    for name, ns_labels in (namespaces or {}).items():
        found.upsert_namespace(name, ns_labels)
    for obj, where in placed:
        p = info(obj)
        terminating = obj.get("metadata", {}).get("deletionTimestamp") is not None
        found.charge(where, p.uid, p.request,
                     PlacedPod(p.uid, p.namespace, p.labels, p.placement, where, terminating))
    return found


def feasible(c: Cluster, obj: Mapping[str, Any]) -> set[str]:
    p = info(obj)
    return {name for name in c.nodes if c.fits(name, p.request, p.constraints, pod=p)}


def chosen(c: Cluster, obj: Mapping[str, Any], scoring: Scoring = Scoring.SPREAD) -> str | None:
    p = info(obj)
    return c.place(p.request, p.constraints, scoring, pod=p)


def place(c: Cluster, obj: Mapping[str, Any], scoring: Scoring = Scoring.SPREAD) -> str | None:
    """Place the pod and charge it where it went, as a bind would."""
    p = info(obj)
    where = c.place(p.request, p.constraints, scoring, pod=p)
    if where is not None:
        c.charge(where, p.uid, p.request,
                 PlacedPod(p.uid, p.namespace, p.labels, p.placement, where))
    return where


def why(c: Cluster, obj: Mapping[str, Any]) -> str:
    p = info(obj)
    return c.diagnose(p.request, p.constraints, pod=p).message()


def term(key: str, match: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    """A PodAffinityTerm selecting ``match`` labels on ``key``."""
    found: dict[str, Any] = {"topologyKey": key, **extra}
    if match is not None:
        found["labelSelector"] = {"matchLabels": dict(match)}
    return found


def anti(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def affinity(*terms: Mapping[str, Any]) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def spread(key: str, skew: int = 1, when: str = "DoNotSchedule",
           match: Mapping[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
                             **extra}
    if match is not None:
        found["labelSelector"] = {"matchLabels": dict(match)}
    return found
