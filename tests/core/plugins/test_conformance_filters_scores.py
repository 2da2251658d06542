"""Conformance of filters and scores with kube-scheduler, second round: one row per
defect found by reading the placement code against kube-scheduler's sources. Each row
names the upstream function it follows; each failed before its fix.

Rows, and the upstream functions (kubernetes ``pkg/scheduler`` unless named):

- the first pod of a self-affine group, its term selecting namespaces by label:
  interpodaffinity/filtering.go ``satisfyPodAffinity``, ``podMatchesAllAffinityTerms``
  after ``mergeAffinityTermNamespacesIfNotEmpty``;
- terminating pods do not count for topology spread: podtopologyspread/common.go
  ``countPodsMatchSelector``;
- every feasible node scored below 100 nodes, an adaptive share above: schedule_one.go
  ``numFeasibleNodesToFind``;
- a pod tolerating ``unreachable`` on a node whose Ready is Unknown: the node lifecycle
  controller's ``doNoScheduleTaintingPass``, and TaintToleration's ``Filter``;
- scoring defaults per container, not per pod: noderesources/resource_allocation.go
  ``calculatePodResourceRequest``, component-helpers ``PodRequests`` with
  ``NonMissingContainerRequests``;
- ImageLocality: imagelocality/image_locality.go ``Score``;
- spread scores rounded half away from zero: podtopologyspread/scoring.go ``Score``
  (``math.Round``);
- the PodScheduled message starts ``0/N nodes are available:``: framework/types.go
  ``FitError.Error``, schedule_one.go ``handleSchedulingFailure``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from conformance import HOST, ZONE, affinity, chosen, cluster, feasible, node, pod, spread, term
from gangsched.core.placement.cluster import Cluster, feasible_nodes_to_find
from gangsched.core.plugins.imagelocality import priority
from gangsched.core.plugins.podtopologyspread import go_round
from gangsched.core.values.decisions import PodPending
from gangsched.core.values.model import PodUID, Scoring
from gangsched.translate.nodes import node_from_k8s
from gangsched.translate.pods import scoring_requests
from gangsched.translate.render import pod_scheduled_condition

WEB = {"app": "web"}
TEAMS = {"team-a": {"team": "a"}, "team-b": {"team": "b"}}
FOUR = [node("a", zone="z1"), node("b", zone="z1"), node("c", zone="z2"), node("d", zone="z2")]


# --- InterPodAffinity: the first pod of a group, namespaces chosen by label --------------

SELF_AFFINE = [
    pytest.param("team-a", {"matchLabels": {"team": "a"}}, {"a", "b", "c", "d"},
                 id="selector-selects-its-own-namespace:first-pod-goes-anywhere"),
    pytest.param("team-a", {}, {"a", "b", "c", "d"},
                 id="empty-selector-is-every-namespace:first-pod-goes-anywhere"),
    pytest.param("team-a", {"matchLabels": {"team": "b"}}, set(),
                 id="selector-selects-another-namespace:no-self-match"),
]


@pytest.mark.parametrize(("namespace", "selector", "expected"), SELF_AFFINE)
def test_first_pod_of_a_self_affine_group_with_a_namespace_selector(
        namespace: str, selector: dict[str, Any], expected: set[str]) -> None:
    """``podMatchesAllAffinityTerms`` after ``mergeAffinityTermNamespacesIfNotEmpty``:
    the namespaces a term's ``namespaceSelector`` selects are merged into its
    ``namespaces``, so the incoming pod matches its own term when its namespace is
    selected by label."""
    incoming = pod(namespace=namespace, labels=WEB,
                   affinity=affinity(term(ZONE, WEB, namespaceSelector=selector)))
    assert feasible(cluster(FOUR, (), TEAMS), incoming) == expected


# --- PodTopologySpread: terminating pods do not count ---------------------------------------

def _terminating(obj: dict[str, Any]) -> dict[str, Any]:
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


SPREAD_ROWS = [
    pytest.param([(pod("w1", labels=WEB), "a"), (_terminating(pod("w2", labels=WEB)), "c")],
                 {"c", "d"}, id="terminating-pod-not-counted:only-the-empty-zone"),
    pytest.param([(pod("w1", labels=WEB), "a"), (pod("w2", labels=WEB), "c")],
                 {"a", "b", "c", "d"}, id="running-pod-counted:both-zones-even"),
]


@pytest.mark.parametrize(("placed", "expected"), SPREAD_ROWS)
def test_spread_skips_terminating_pods(placed: Any, expected: set[str]) -> None:
    """``countPodsMatchSelector`` bypasses pods with a ``deletionTimestamp``."""
    incoming = pod(labels=WEB, topologySpreadConstraints=[spread(ZONE, match=WEB)])
    assert feasible(cluster(FOUR, placed), incoming) == expected


# --- Scoring every feasible node --------------------------------------------------------

@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    pytest.param(0, 40, 40, id="under-100-every-node"),
    pytest.param(0, 99, 99, id="99-every-node"),
    pytest.param(0, 100, 100, id="100-at-least-100"),
    pytest.param(0, 1000, 420, id="1000-adaptive-42-percent"),
    pytest.param(0, 5000, 500, id="5000-adaptive-10-percent"),
    pytest.param(0, 20000, 1000, id="20000-adaptive-floor-5-percent"),
    pytest.param(0, 5624, 337, id="5624-adaptive-6-percent"),
    pytest.param(0, 5625, 281, id="5625-adaptive-5-percent-from-here"),
    pytest.param(0, 65000, 3250, id="65000-adaptive-floor-5-percent"),
    pytest.param(0, 100_000, 5000, id="100000-adaptive-floor-5-percent"),
    pytest.param(10, 5000, 500, id="percentage-set"),
    pytest.param(1, 300, 100, id="never-under-100"),
    pytest.param(100, 5000, 5000, id="100-percent-every-node"),
])
def test_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    """``numFeasibleNodesToFind``."""
    assert feasible_nodes_to_find(percentage, nodes) == expected


def _forty(prefer_no_schedule: bool) -> list[Any]:
    taints = [("dedicated", "batch", "PreferNoSchedule")] if prefer_no_schedule else []
    return [node(f"n{i:02}", taints=taints if i < 32 else (),
                 labels={"disk": "ssd"} if i == 39 else {}) for i in range(40)]


PREFERRED_NODE = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "preference": {"matchExpressions": [
        {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}


@pytest.mark.parametrize("scoring", [Scoring.BINPACK, Scoring.SPREAD])
@pytest.mark.parametrize(("taints", "incoming", "expected"), [
    pytest.param(False, pod(affinity=PREFERRED_NODE), "n39",
                 id="weight-100-preferred-node-past-the-32nd"),
    pytest.param(True, pod(), "n32", id="prefer-no-schedule-on-the-first-32"),
    pytest.param(False, pod(), "n00", id="no-preference:the-first-of-equals"),
])
def test_every_feasible_node_is_scored_under_100_nodes(
        scoring: Scoring, taints: bool, incoming: dict[str, Any], expected: str) -> None:
    """40 nodes: every one is scored (``numFeasibleNodesToFind``), so a preference that
    only the last nodes satisfy wins. Ties go to scan order (bin-packing scans from the
    first node; spread from where its last scan stopped, the first node here): a
    deliberate difference from ``selectHost``'s random draw, documented in
    ``Cluster.select_host``."""
    assert chosen(cluster(_forty(taints)), incoming, scoring) == expected


def test_a_large_cluster_scores_an_adaptive_share() -> None:
    c = Cluster()
    for i in range(1000):
        c.upsert_node(node(f"n{i:04}"))
    assert c.sample_size == 420


# --- NodeReady: unreachable nodes --------------------------------------------------------

def _k8s_node(ready: str) -> dict[str, Any]:
    return {"metadata": {"name": "n", "labels": {HOST: "n"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready}]}}


def _tolerating(key: str) -> dict[str, Any]:
    return pod(tolerations=[{"key": key, "operator": "Exists", "effect": "NoSchedule"}])


@pytest.mark.parametrize(("ready", "incoming", "fits"), [
    pytest.param("Unknown", _tolerating("node.kubernetes.io/unreachable"), True,
                 id="unknown-tolerating-unreachable"),
    pytest.param("Unknown", _tolerating("node.kubernetes.io/not-ready"), False,
                 id="unknown-tolerating-not-ready-only"),
    pytest.param("False", _tolerating("node.kubernetes.io/not-ready"), True,
                 id="false-tolerating-not-ready"),
    pytest.param("False", _tolerating("node.kubernetes.io/unreachable"), False,
                 id="false-tolerating-unreachable-only"),
    pytest.param("Unknown", pod(), False, id="unknown-tolerating-nothing"),
])
def test_a_node_not_ready_takes_the_pods_that_tolerate_its_taint(
        ready: str, incoming: dict[str, Any], fits: bool) -> None:
    """The node lifecycle controller taints a node whose Ready condition is Unknown
    ``node.kubernetes.io/unreachable`` and one whose condition is False
    ``node.kubernetes.io/not-ready`` (``doNoScheduleTaintingPass``); TaintToleration
    lets through the pods that tolerate it."""
    assert feasible(cluster([node_from_k8s(_k8s_node(ready))]), incoming) == (
        {"n"} if fits else set())


# --- PodTopologySpread: Go's rounding ----------------------------------------------------

@pytest.mark.parametrize(("value", "expected"), [
    (0.5, 1), (1.5, 2), (2.5, 3), (2.4999, 2), (3.0, 3), (-2.5, -3), (0.0, 0)])
def test_spread_scores_round_half_away_from_zero(value: float, expected: int) -> None:
    """``int64(math.Round(score))`` in ``PodTopologySpread.Score``: Python's ``round``
    gives 2 for 2.5 where Go gives 3."""
    assert go_round(value) == expected


# --- The PodScheduled message ---------------------------------------------------------

@pytest.mark.parametrize(("reason", "message", "expected"), [
    pytest.param("Constraints",
                 "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.",
                 "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.",
                 id="constraints-fit-error-as-kube-scheduler"),
    pytest.param("Capacity", "0/2 nodes are available: 2 Insufficient cpu.",
                 "0/2 nodes are available: 2 Insufficient cpu.", id="capacity-fit-error"),
    pytest.param("QueueQuota", "queue research has cpu=2 free",
                 "QueueQuota: queue research has cpu=2 free", id="no-fit-error:reason-first"),
])
def test_pod_scheduled_message_is_the_fit_error(reason: str, message: str,
                                                expected: str) -> None:
    """``handleSchedulingFailure`` writes ``FitError.Error()``, which starts
    ``0/N nodes are available:``."""
    condition = pod_scheduled_condition(PodPending(PodUID("u"), "ns", "p", reason, message),
                                        now=0)
    assert (condition["reason"], condition["message"]) == ("Unschedulable", expected)


# --- NodeResourcesFit: the scoring defaults, per container ----------------------------

def _containers(*requests: dict[str, str] | None) -> list[dict[str, Any]]:
    return [{"name": f"c{i}", "image": "busybox",
             **({"resources": {"requests": r}} if r is not None else {})}
            for i, r in enumerate(requests)]


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"containers": _containers(None, None)}, (200, 400 * 1024 * 1024),
                 id="two-containers-without-requests-count-the-default-twice"),
    pytest.param({"containers": _containers({"cpu": "1"}, None)}, (1100, 400 * 1024 * 1024),
                 id="one-with-cpu-one-without"),
    pytest.param({"containers": _containers({"cpu": "0", "memory": "0"})}, (0, 0),
                 id="explicit-zero-stays-zero"),
    pytest.param({"containers": _containers({"cpu": "1"}),
                  "initContainers": _containers(None)}, (1000, 200 * 1024 * 1024),
                 id="init-container-defaulted-then-max"),
    pytest.param({"containers": _containers(None), "overhead": {"cpu": "50m"}},
                 (150, 200 * 1024 * 1024), id="overhead-added"),
])
def test_scoring_defaults_apply_per_container(spec: dict[str, Any],
                                              expected: tuple[int, int]) -> None:
    """``calculatePodResourceRequest``: ``PodRequests`` with ``NonMissingContainerRequests``
    gives every container that names no cpu (memory) request 100m (200Mi)."""
    assert scoring_requests(spec) == expected


def test_per_container_defaults_steer_least_allocated_scoring() -> None:
    """Node a holds a pod of three containers without requests (300m by kube-scheduler's
    count), b one of one container with 200m. LeastAllocated prefers b; counted once per
    pod (100m) a would look emptier."""
    many = pod("many", cpu="0", memory="0")
    many["spec"]["containers"] = _containers(None, None, None)
    c = cluster([node("a"), node("b")], [(many, "a"), (pod("one", cpu="200m"), "b")])
    assert chosen(c, pod(cpu="100m"), Scoring.SPREAD) == "b"


# --- ImageLocality ----------------------------------------------------------------------

MiB = 1024 * 1024


def _with_images(name: str, images: dict[str, int]) -> Any:
    return dataclasses.replace(node(name), images=images)


@pytest.mark.parametrize(("images", "expected"), [
    pytest.param({"a": {"big:1.0": 900 * MiB}}, "a", id="the-node-with-the-image"),
    pytest.param({"b": {"big:1.0": 900 * MiB}}, "b", id="whichever-node-has-it"),
    pytest.param({"a": {"small:1.0": 10 * MiB}}, "b",
                 id="under-23MiB-no-pull:bin-packing-decides"),
    pytest.param({"b": {"big:latest": 900 * MiB}}, "b", id="untagged-name-is-latest"),
])
def test_image_locality(images: dict[str, dict[str, int]], expected: str) -> None:
    """``ImageLocality.Score``. Node b is fuller, so MostAllocated alone picks it; an
    image of 900 MiB on one node of two adds 900 * 1/2 = 450 MiB: about 44 points."""
    nodes = [_with_images(name, images.get(name, {})) for name in ("a", "b")]
    c = cluster(nodes, [(pod("x", cpu="1"), "b")])
    image = "big" if "big:latest" in images.get("b", {}) else (
        "small:1.0" if "a" in images and "small:1.0" in images["a"] else "big:1.0")
    incoming = pod(cpu="100m")
    incoming["spec"]["containers"][0]["image"] = image
    assert chosen(c, incoming, Scoring.BINPACK) == expected


@pytest.mark.parametrize(("total", "containers", "expected"), [
    (0, 1, 0), (23 * MiB, 1, 0), (1000 * MiB, 1, 100), (2000 * MiB, 1, 100),
    (1000 * MiB, 2, 49), (511 * MiB + MiB // 2, 1, 50)])
def test_image_locality_priority(total: int, containers: int, expected: int) -> None:
    """``calculatePriority``."""
    assert priority(total, containers) == expected
