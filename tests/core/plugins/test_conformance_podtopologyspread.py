"""Conformance of PodTopologySpread with kube-scheduler v1.32: one row per documented rule.

DoNotSchedule and ScheduleAnyway, maxSkew, minDomains, nodeAffinityPolicy,
nodeTaintsPolicy, matchLabelKeys, the selector and namespaces counted, nodes without
the topology key, and the cluster's default constraints.
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance import (
    HOST,
    ZONE,
    chosen,
    cluster,
    feasible,
    info,
    node,
    place,
    pod,
    spread,
    why,
)
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.placement.cluster import Cluster
from gangsched.core.plugins.podtopologyspread import NAME as SPREAD
from gangsched.core.plugins.podtopologyspread import Defaulting, SpreadArgs
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import SpreadConstraint, WhenUnsatisfiable
from gangsched.core.values.profile import ProfileConfig
from gangsched.core.values.resources import Resources

WEB = {"app": "web"}
NODES = [node("a", zone="z1"), node("b", zone="z1"), node("c", zone="z2")]
SKEW = "node(s) didn't match pod topology spread constraints"
LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


def web(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return pod(name, namespace=namespace, labels={**WEB, **labels})


def owned(obj: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """``obj`` with a controller of that kind."""
    obj["metadata"]["ownerReferences"] = [{"apiVersion": api_version, "kind": kind,
                                           "name": "owner", "uid": "uid-owner",
                                           "controller": True}]
    return obj


def incoming(*constraints: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return pod(labels=kw.pop("labels", WEB), topologySpreadConstraints=list(constraints), **kw)


ROWS = [
    pytest.param(NODES, [(web("w1"), "a")], incoming(spread(HOST, match=WEB)), {"b", "c"}, None,
                 id="hostname-skew-1"),
    pytest.param(NODES, [(web("w1"), "a")], incoming(spread(HOST, 2, match=WEB)),
                 {"a", "b", "c"}, None, id="max-skew-2-allows-one-more"),
    pytest.param(NODES, [(web("w1"), "a"), (web("w2"), "b")], incoming(spread(ZONE, match=WEB)),
                 {"c"}, None, id="zone-skew"),
    pytest.param(NODES, [(web("w1"), "a"), (web("w2"), "c")],
                 incoming(spread(ZONE, match=WEB)), {"a", "b", "c"}, None,
                 id="zones-balanced-any-zone"),
    pytest.param([node("a"), node("b")], [(web("w1"), "a"), (web("w2"), "b")],
                 incoming(spread(HOST, match=WEB)), {"a", "b"}, None, id="balanced-any-node"),
    pytest.param([node("a", zone="z1"), node("b", zone="z2")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB), labels={"other": "x"}), {"a", "b"}, None,
                 id="incoming-not-matching-its-selector-adds-nothing"),
    pytest.param(NODES, [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB, whenUnsatisfiable="ScheduleAnyway")),
                 {"a", "b", "c"}, None, id="schedule-anyway-never-filters"),
    pytest.param([node("a", zone="z1"), node("b", hostname=False)], [],
                 incoming(spread(ZONE, match=WEB)), {"a"}, None,
                 id="node-without-the-key-is-rejected"),
    pytest.param([node("b", hostname=False)], [], incoming(spread(ZONE, match=WEB)), set(),
                 f"0/1 nodes are available: 1 {LABEL}.", id="missing-label-reason"),
    pytest.param([node("a"), node("b")], [(web("w1"), "a"), (web("w2"), "a")],
                 incoming(spread(HOST, match=WEB)), {"b"}, None, id="skew-reason-setup"),
    pytest.param([node("a")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB, minDomains=2)), set(),
                 f"0/1 nodes are available: 1 {SKEW}.", id="min-domains-global-min-is-zero"),
    pytest.param([node("a"), node("b")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB, minDomains=2)), {"b"}, None,
                 id="min-domains-met-is-the-plain-rule"),
    pytest.param([node("a", labels={"pool": "x"}), node("b")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB), nodeSelector={"pool": "x"}), {"a"}, None,
                 id="node-affinity-policy-honor-ignores-excluded-domains"),
    pytest.param([node("a", labels={"pool": "x"}), node("b")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB, nodeAffinityPolicy="Ignore"),
                          nodeSelector={"pool": "x"}), set(), SKEW,
                 id="node-affinity-policy-ignore-counts-them"),
    pytest.param([node("a"), node("b", taints=[("t", "", "NoSchedule")])], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB), tolerations=[{"operator": "Exists"}]),
                 {"b"}, None, id="node-taints-policy-ignore-is-the-default"),
    pytest.param([node("a"), node("b", taints=[("t", "", "NoSchedule")])], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB, nodeTaintsPolicy="Honor")), {"a"}, None,
                 id="node-taints-policy-honor-leaves-out-tainted-domains"),
    pytest.param([node("a"), node("b")], [(web("w1", version="1"), "a")],
                 incoming(spread(HOST, match=WEB, matchLabelKeys=["version"]),
                          labels={**WEB, "version": "2"}), {"a", "b"}, None,
                 id="match-label-keys-other-versions-not-counted"),
    pytest.param([node("a"), node("b")], [(web("w1", version="2"), "a")],
                 incoming(spread(HOST, match=WEB, matchLabelKeys=["version"]),
                          labels={**WEB, "version": "2"}), {"b"}, None,
                 id="match-label-keys-same-version-counted"),
    pytest.param([node("a"), node("b")], [(web("w1", "other"), "a")],
                 incoming(spread(HOST, match=WEB)), {"a", "b"}, None,
                 id="other-namespaces-not-counted"),
    pytest.param([node("a"), node("b")], [(pod("x", labels={"app": "db"}), "a")],
                 incoming(spread(HOST, match=WEB)), {"a", "b"}, None,
                 id="pods-not-selected-not-counted"),
    pytest.param([node("a"), node("b")], [(web("w1"), "a")],
                 incoming(spread(HOST, match=WEB), spread(ZONE, match=WEB)), set(), LABEL,
                 id="every-constraint-key-required"),
    # kube-scheduler checks the constraints in order: c fails the zone skew before the
    # rack it lacks (Unschedulable, not the unresolvable missing label)
    pytest.param([node("a", zone="z1", labels={"rack": "r1"}),
                  node("b", cpu="50m", zone="z2", labels={"rack": "r2"}), node("c", zone="z1")],
                 [(web("w1"), "a"), (web("w2"), "a")],
                 incoming(spread(ZONE, match=WEB), spread("rack", match=WEB)), set(),
                 f"0/3 nodes are available: 1 Insufficient cpu, 2 {SKEW}.",
                 id="constraints-checked-in-order"),
]


@pytest.mark.parametrize(("nodes", "placed", "pod_", "expected", "reason"), ROWS)
def test_filter(nodes: Any, placed: Any, pod_: dict[str, Any], expected: set[str],
                reason: str | None) -> None:
    c = cluster(nodes, placed)
    assert feasible(c, pod_) == expected
    placed_on = chosen(c, pod_)
    assert (placed_on in expected) if expected else placed_on is None
    if reason is not None:
        assert reason in why(c, pod_)


SCORES = [
    pytest.param(NODES, [(web("w1"), "a"), (web("w2"), "b")],
                 incoming(spread(ZONE, match=WEB, whenUnsatisfiable="ScheduleAnyway")), "c",
                 id="schedule-anyway-prefers-the-emptier-domain"),
    pytest.param([node("a"), node("b")], [(web("w1"), "b"), (web("w2"), "b")],
                 owned(pod(labels=WEB), "apps/v1", "ReplicaSet"), "a",
                 id="system-default-constraints-spread-a-replicaset-pod"),
    pytest.param([node("a"), node("b")], [(web("w1"), "b"), (web("w2"), "b")],
                 owned(pod(labels=WEB), "apps/v1", "StatefulSet"), "a",
                 id="system-default-constraints-spread-a-statefulset-pod"),
    pytest.param([node("a"), node("b")], [(web("w1"), "b"), (web("w2"), "b")],
                 owned(pod(labels=WEB), "batch/v1", "Job"), "b",
                 id="system-default-constraints-not-for-a-jobs-pod"),
    pytest.param([node("a"), node("b")], [(web("w1"), "b"), (web("w2"), "b")], pod(labels=WEB),
                 "b", id="system-default-constraints-not-for-a-bare-pod"),
]


@pytest.mark.parametrize(("nodes", "placed", "pod_", "expected"), SCORES)
def test_score(nodes: Any, placed: Any, pod_: dict[str, Any], expected: str) -> None:
    assert chosen(cluster(nodes, placed), pod_, Scoring.BINPACK) == expected


def test_eight_pods_spread_two_per_node() -> None:
    """The case of #9: 8 pods, maxSkew 1 on hostname, DoNotSchedule, over 4 nodes."""
    c = cluster([node(n) for n in "abcd"])
    for i in range(8):
        obj = pod(f"s{i}", labels=WEB, topologySpreadConstraints=[spread(HOST, match=WEB)])
        assert place(c, obj, Scoring.BINPACK) is not None
    assert sorted(len(state.pods) for state in c.nodes.values()) == [2, 2, 2, 2]


def _listed_defaults(*constraints: SpreadConstraint) -> Cluster:
    """Nodes a, b, c and a profile whose ``List`` default constraints are ``constraints``."""
    args = SpreadArgs(Defaulting.LIST, constraints)
    found = Cluster(profile=ProfileConfig(args=((SPREAD, args),)))
    for n in NODES:
        found.upsert_node(n)
    return found


def _charge(c: Cluster, obj: dict[str, Any], where: str) -> None:
    p = info(obj)
    c.charge(where, p.uid, p.request, PlacedPod(p.uid, p.namespace, p.labels, p.placement, where))


def test_filtering_default_constraints_make_a_pods_fit_depend_on_its_neighbours() -> None:
    """With a ``List`` default that filters, a ReplicaSet's pod is checked again when
    matching pods come elsewhere (no capacity freed): its diagnosis and retries follow
    the placed pods, as for a pod with constraints of its own."""
    filtering = SpreadConstraint(1, HOST, WhenUnsatisfiable.DO_NOT_SCHEDULE)
    c = _listed_defaults(filtering)
    _charge(c, owned(web("w1"), "apps/v1", "ReplicaSet"), "a")
    wanted = owned(pod(labels=WEB), "apps/v1", "ReplicaSet")
    assert c.neighbour_bound(info(wanted))
    assert c.diagnose(Resources.ZERO, info(wanted).constraints, pod=info(wanted)).by_filter == {
        "Fits": 2, SPREAD: 1}
    _charge(c, owned(web("w2"), "apps/v1", "ReplicaSet"), "b")
    _charge(c, owned(web("w3"), "apps/v1", "ReplicaSet"), "c")
    assert c.diagnose(Resources.ZERO, info(wanted).constraints, pod=info(wanted)).by_filter == {
        "Fits": 3}
    assert not c.neighbour_bound(info(pod(labels=WEB)))  # a bare pod gets no defaults


@pytest.mark.parametrize("defaults", [
    pytest.param((), id="system-defaults-only-score"),
    pytest.param((SpreadConstraint(1, HOST, WhenUnsatisfiable.SCHEDULE_ANYWAY),),
                 id="listed-schedule-anyway"),
])
def test_scoring_default_constraints_leave_a_pods_fit_to_its_node(
        defaults: tuple[SpreadConstraint, ...]) -> None:
    c = cluster(NODES) if not defaults else _listed_defaults(*defaults)
    assert not c.neighbour_bound(info(owned(pod(labels=WEB), "apps/v1", "ReplicaSet")))
