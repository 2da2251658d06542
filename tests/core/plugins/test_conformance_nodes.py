"""Conformance of the node plugins with kube-scheduler v1.32: one row per documented rule.

NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts, NodeResourcesFit
and NodeResourcesBalancedAllocation. Each filter row gives the nodes, the pods already
placed, the pod to place, the nodes the filters accept and, when none, the words of the
FitError.
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance import chosen, cluster, feasible, info, node, pod, why
from gangsched.core.framework.interface import CycleState
from gangsched.core.placement.cluster import Cluster, Constraints, PodInfo
from gangsched.core.plugins import balancedallocation
from gangsched.core.values.model import Scoring
from gangsched.core.values.resources import Resources

NS = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
EXPR = "requiredDuringSchedulingIgnoredDuringExecution"


def required(*expressions: dict[str, Any], fields: list[dict[str, Any]] | None = None
             ) -> dict[str, Any]:
    term: dict[str, Any] = {"matchExpressions": list(expressions)}
    if fields:
        term = {"matchFields": fields}
    return {"nodeAffinity": {EXPR: {"nodeSelectorTerms": [term]}}}


def port(host: int, protocol: str = "TCP", ip: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"containerPort": host, "hostPort": host, "protocol": protocol}
    if ip is not None:
        found["hostIP"] = ip
    return found


FILTERS = [
    # NodeUnschedulable
    pytest.param([node("a", unschedulable=True), node("b")], [], pod(), {"b"}, None,
                 id="unschedulable-cordoned-node-rejected"),
    pytest.param([node("a", unschedulable=True)], [],
                 pod(tolerations=[{"key": "node.kubernetes.io/unschedulable",
                                   "operator": "Exists", "effect": "NoSchedule"}]), {"a"}, None,
                 id="unschedulable-tolerated"),
    pytest.param([node("a", unschedulable=True)], [], pod(), set(),
                 "1 node(s) were unschedulable", id="unschedulable-reason"),
    # TaintToleration
    pytest.param([node("a", taints=[("dedicated", "gpu", "NoSchedule")]), node("b")], [], pod(),
                 {"b"}, None, id="taint-noschedule-untolerated"),
    pytest.param([node("a", taints=[("dedicated", "gpu", "NoExecute")])], [], pod(), set(),
                 "1 node(s) had untolerated taint {dedicated: gpu}", id="taint-noexecute-reason"),
    pytest.param([node("a", taints=[("dedicated", "gpu", "NoSchedule")])], [],
                 pod(tolerations=[NS]), {"a"}, None, id="taint-tolerated-equal"),
    pytest.param([node("a", taints=[("dedicated", "gpu", "NoSchedule")])], [],
                 pod(tolerations=[{"operator": "Exists"}]), {"a"}, None,
                 id="taint-tolerated-by-empty-key-exists"),
    pytest.param([node("a", taints=[("dedicated", "gpu", "NoSchedule")])], [],
                 pod(tolerations=[{**NS, "value": "cpu"}]), set(),
                 "had untolerated taint", id="taint-other-value-not-tolerated"),
    pytest.param([node("a", taints=[("spot", "", "PreferNoSchedule")])], [], pod(), {"a"}, None,
                 id="taint-prefernoschedule-does-not-filter"),
    # NodeAffinity
    pytest.param([node("a", labels={"disk": "ssd"}), node("b")], [],
                 pod(nodeSelector={"disk": "ssd"}), {"a"}, None, id="nodeselector-match"),
    pytest.param([node("a")], [], pod(nodeSelector={"disk": "ssd"}), set(),
                 "1 node(s) didn't match Pod's node affinity/selector", id="nodeselector-reason"),
    pytest.param([node("a", zone="z1"), node("b", zone="z2")], [],
                 pod(affinity=required({"key": "topology.kubernetes.io/zone", "operator": "In",
                                        "values": ["z2"]})), {"b"}, None,
                 id="affinity-in"),
    pytest.param([node("a", zone="z1"), node("b", zone="z2"), node("c")], [],
                 pod(affinity=required({"key": "topology.kubernetes.io/zone",
                                        "operator": "NotIn", "values": ["z2"]})), {"a", "c"},
                 None, id="affinity-notin-matches-missing-label"),
    pytest.param([node("a", labels={"gen": "5"}), node("b", labels={"gen": "3"})], [],
                 pod(affinity=required({"key": "gen", "operator": "Gt", "values": ["4"]})),
                 {"a"}, None, id="affinity-gt"),
    pytest.param([node("a"), node("b")], [],
                 pod(affinity=required(fields=[{"key": "metadata.name", "operator": "In",
                                                "values": ["b"]}])), {"b"}, None,
                 id="affinity-matchfields-node-name"),
    # NodePorts
    pytest.param([node("a"), node("b")], [(pod("p", ports=[port(8080)]), "a")],
                 pod(ports=[port(8080)]), {"b"}, None, id="ports-same-port-conflicts"),
    pytest.param([node("a")], [(pod("p", ports=[port(8080)]), "a")], pod(ports=[port(8080)]),
                 set(), "1 node(s) didn't have free ports for the requested pod ports",
                 id="ports-reason"),
    pytest.param([node("a")], [(pod("p", ports=[port(8080, "UDP")]), "a")],
                 pod(ports=[port(8080)]), {"a"}, None, id="ports-other-protocol"),
    pytest.param([node("a")], [(pod("p", ports=[port(8080, ip="10.0.0.1")]), "a")],
                 pod(ports=[port(8080, ip="10.0.0.2")]), {"a"}, None, id="ports-other-ip"),
    pytest.param([node("a")], [(pod("p", ports=[port(8080, ip="10.0.0.1")]), "a")],
                 pod(ports=[port(8080, ip="0.0.0.0")]), set(), "free ports",
                 id="ports-any-ip-conflicts-with-specific"),
    pytest.param([node("a")], [(pod("p", ports=[port(8080)], schedulerName="other"), "a")],
                 pod(ports=[port(8080)]), set(), "free ports",
                 id="ports-of-another-schedulers-pod"),
    pytest.param([node("a")], [(pod("p", ports=[{"containerPort": 8080}]), "a")],
                 pod(ports=[{"containerPort": 8080}]), {"a"}, None,
                 id="ports-container-port-only-is-no-host-port"),
    # NodeResourcesFit
    pytest.param([node("a", cpu="1"), node("b", cpu="2")], [], pod(cpu="1500m"), {"b"}, None,
                 id="fit-cpu"),
    pytest.param([node("a", cpu="1")], [], pod(cpu="1500m"), set(),
                 "0/1 nodes are available: 1 Insufficient cpu.", id="fit-insufficient-cpu"),
    pytest.param([node("a", pods="1")], [(pod("p"), "a")], pod(), set(),
                 "1 Too many pods", id="fit-too-many-pods"),
    pytest.param([node("a", cpu="1", memory="1Gi")], [], pod(cpu="2", memory="2Gi"), set(),
                 "1 Insufficient cpu, 1 Insufficient memory", id="fit-every-resource-named"),
    # The FitError: "<count> <reason>" strings sorted as strings, as kube-scheduler sorts
    pytest.param([node("a", cpu="1"), node("b", cpu="1"),
                  node("c", taints=[("dedicated", "gpu", "NoSchedule")])], [], pod(cpu="2"),
                 set(), "0/3 nodes are available: 1 node(s) had untolerated taint "
                 "{dedicated: gpu}, 2 Insufficient cpu.", id="fit-error-reasons-sorted-as-strings"),
]


@pytest.mark.parametrize(("nodes", "placed", "incoming", "expected", "reason"), FILTERS)
def test_filter(nodes: Any, placed: Any, incoming: dict[str, Any], expected: set[str],
                reason: str | None) -> None:
    c = cluster(nodes, placed)
    assert feasible(c, incoming) == expected
    placed_on = chosen(c, incoming)
    assert (placed_on in expected) if expected else placed_on is None
    if reason is not None:
        assert reason in why(c, incoming)


@pytest.mark.parametrize(("name", "fits"), [pytest.param("a", True, id="the-named-node"),
                                            pytest.param("b", False, id="another-node")])
def test_node_name(name: str, fits: bool) -> None:
    c = cluster([node("a"), node("b")])
    probe = PodInfo(Resources.ZERO, Constraints(node_name="a"))
    assert c.fits(name, probe.request, probe.constraints, pod=probe) is fits


SCORES = [
    pytest.param([node("a", taints=[("spot", "", "PreferNoSchedule")]), node("b")], [], pod(),
                 Scoring.BINPACK, "b", id="taint-prefernoschedule-scores-lower"),
    pytest.param([node("a", taints=[("spot", "", "PreferNoSchedule")]), node("b")], [],
                 pod(tolerations=[{"key": "spot", "operator": "Exists"}]), Scoring.BINPACK, "a",
                 id="taint-prefernoschedule-tolerated"),
    pytest.param([node("a"), node("b", labels={"disk": "ssd"})], [],
                 pod(affinity={"nodeAffinity": {
                     "preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": 50, "preference": {"matchExpressions": [
                             {"key": "disk", "operator": "In", "values": ["ssd"]}]}}]}}),
                 Scoring.BINPACK, "b", id="affinity-preferred-term"),
    pytest.param([node("a"), node("b")], [(pod("p", cpu="2", memory="4Gi"), "a")],
                 pod(), Scoring.SPREAD, "b", id="fit-least-allocated"),
    pytest.param([node("a"), node("b")], [(pod("p", cpu="2", memory="4Gi"), "b")],
                 pod(), Scoring.BINPACK, "b", id="fit-most-allocated"),
    pytest.param([node("a", memory="8Gi"), node("b", memory="8Gi")],
                 [(pod("p", cpu="3", memory="64Mi"), "a"), (pod("q", cpu="1", memory="2Gi"), "b")],
                 pod(cpu="100m", memory="1Gi"), Scoring.SPREAD, "b",
                 id="balanced-allocation-prefers-the-balanced-node"),
    pytest.param([node("a"), node("b")], [(pod("p", cpu="1"), "a")],
                 pod(cpu="0", memory="0"), Scoring.SPREAD, "b",
                 id="fit-best-effort-counts-as-100m-and-200Mi"),
]


@pytest.mark.parametrize(("nodes", "placed", "incoming", "scoring", "expected"), SCORES)
def test_score(nodes: Any, placed: Any, incoming: dict[str, Any], scoring: Scoring,
               expected: str) -> None:
    assert chosen(cluster(nodes, placed), incoming, scoring) == expected


def test_empty_cluster_message() -> None:
    assert why(Cluster(), pod()) == "0/0 nodes are available: no nodes in the cluster."


@pytest.mark.parametrize(("placed", "expected"), [
    pytest.param([], 99, id="balanced-empty-node"),
    pytest.param([pod(f"be{i}", cpu="0", memory="0") for i in range(5)], 99,
                 id="balanced-best-effort-pods-add-no-request"),
    pytest.param([pod("p", cpu="500m", memory="64Mi")], 89, id="balanced-requests-count"),
])
def test_balanced_allocation_counts_actual_requests(placed: list[dict[str, Any]],
                                                     expected: int) -> None:
    """kube-scheduler's BalancedAllocation uses what pods request (``useRequested``), not
    the 100m/200Mi NodeResourcesFit gives pods without requests: with five best-effort pods
    counted so, the fractions would be 0.3 cpu and 0.54 memory (88), not 0.05 and 0.05
    (99); a real request does count (0.3 and 0.08: 89)."""
    c = cluster([node("a", cpu="2", memory="2Gi")], [(p, "a") for p in placed])
    plugin = balancedallocation.factory(None)
    incoming = info(pod(cpu="100m", memory="100Mi"))
    assert plugin.score(CycleState(), incoming, c.nodes["a"]) == expected
