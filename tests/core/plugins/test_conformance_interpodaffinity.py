"""Conformance of InterPodAffinity with kube-scheduler v1.32: one row per documented rule.

Required affinity and anti-affinity on hostname and zone, namespaces, namespaceSelector,
matchLabelKeys/mismatchLabelKeys, the first pod of a group, the symmetric check of
placed pods' anti-affinity, and the preferred terms' scoring.
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance import HOST, ZONE, affinity, anti, chosen, cluster, feasible, node, pod, term, why
from gangsched.core.values.model import Scoring

WEB = {"app": "web"}
NODES = [node("a", zone="z1"), node("b", zone="z1"), node("c", zone="z2"), node("d", zone="z2")]
ALL = {"a", "b", "c", "d"}
NOT_ANTI = "node(s) didn't match pod anti-affinity rules"
NOT_AFFINITY = "node(s) didn't match pod affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def web(name: str, namespace: str = "default", **labels: str) -> dict[str, Any]:
    return pod(name, namespace=namespace, labels={**WEB, **labels})


ROWS = [
    # required anti-affinity
    pytest.param([(web("w1"), "a")], pod(labels=WEB, affinity=anti(term(HOST, WEB))),
                 ALL - {"a"}, None, id="anti-hostname-excludes-the-node"),
    pytest.param([(web("w1"), "a")], pod(labels=WEB, affinity=anti(term(ZONE, WEB))),
                 {"c", "d"}, None, id="anti-zone-excludes-the-zone"),
    pytest.param([(web(f"w{n}"), n) for n in "abcd"],
                 pod(labels=WEB, affinity=anti(term(HOST, WEB))), set(),
                 f"0/4 nodes are available: 4 {NOT_ANTI}.", id="anti-reason"),
    pytest.param([(web("w1", "other"), "a")], pod(affinity=anti(term(HOST, WEB))), ALL, None,
                 id="anti-other-namespace-not-counted-by-default"),
    pytest.param([(web("w1", "other"), "a")],
                 pod(affinity=anti(term(HOST, WEB, namespaces=["other"]))), ALL - {"a"}, None,
                 id="anti-namespaces-list"),
    pytest.param([(web("w1", "other"), "a")],
                 pod(affinity=anti(term(HOST, WEB, namespaceSelector={}))), ALL - {"a"}, None,
                 id="anti-empty-namespace-selector-is-all-namespaces"),
    pytest.param([(web("w1", "team-a"), "a"), (web("w2", "team-b"), "b")],
                 pod(affinity=anti(term(HOST, WEB, namespaceSelector={
                     "matchLabels": {"team": "a"}}))), ALL - {"a"}, None,
                 id="anti-namespace-selector-by-labels"),
    pytest.param([(web("w1", version="1"), "a"), (web("w2", version="2"), "b")],
                 pod(labels={**WEB, "version": "2"},
                     affinity=anti(term(HOST, WEB, matchLabelKeys=["version"]))),
                 ALL - {"b"}, None, id="anti-matchlabelkeys-same-value-only"),
    pytest.param([(web("w1", version="1"), "a"), (web("w2", version="2"), "b")],
                 pod(labels={**WEB, "version": "2"},
                     affinity=anti(term(HOST, WEB, mismatchLabelKeys=["version"]))),
                 ALL - {"a"}, None, id="anti-mismatchlabelkeys-other-values-only"),
    pytest.param([(pod("x", labels={"app": "db"}), "a")],
                 pod(labels=WEB, affinity=anti(term(HOST, WEB))), ALL, None,
                 id="anti-selector-not-matching"),
    pytest.param([(web("w1"), "a")],
                 pod(affinity=anti({"topologyKey": HOST})), ALL, None,
                 id="anti-no-label-selector-selects-nothing"),
    # required affinity
    pytest.param([(web("w1"), "c")], pod(affinity=affinity(term(HOST, WEB))), {"c"}, None,
                 id="affinity-hostname-only-the-node"),
    pytest.param([(web("w1"), "c")], pod(affinity=affinity(term(ZONE, WEB))), {"c", "d"}, None,
                 id="affinity-zone-the-whole-zone"),
    pytest.param([], pod(affinity=affinity(term(HOST, WEB))), set(),
                 f"0/4 nodes are available: 4 {NOT_AFFINITY}.", id="affinity-reason"),
    pytest.param([], pod(labels=WEB, affinity=affinity(term(HOST, WEB))), ALL, None,
                 id="affinity-first-pod-of-its-group-matches-itself"),
    pytest.param([(web("w1"), "c")], pod(affinity=affinity(term("rack", WEB))), set(),
                 NOT_AFFINITY, id="affinity-node-without-the-topology-key"),
    pytest.param([(web("w1"), "a"), (pod("d1", labels={"tier": "db"}), "b")],
                 pod(affinity=affinity(term(ZONE, WEB), term(HOST, {"tier": "db"}))),
                 set(), NOT_AFFINITY, id="affinity-a-pod-must-match-every-term"),
    # the symmetric check: placed pods' required anti-affinity
    pytest.param([(pod("loner", labels={"app": "loner"}, affinity=anti(term(HOST, WEB))), "a")],
                 pod(labels=WEB), ALL - {"a"}, None, id="existing-anti-affinity-excludes-node"),
    pytest.param([(pod("loner", labels={"app": "loner"}, affinity=anti(term(ZONE, WEB))), "a")],
                 pod(labels=WEB), {"c", "d"}, None, id="existing-anti-affinity-zone"),
    pytest.param([(pod(f"l{n}", affinity=anti(term(HOST, WEB))), n) for n in "abcd"],
                 pod(labels=WEB), set(), f"0/4 nodes are available: 4 {EXISTING}.",
                 id="existing-anti-affinity-reason"),
    pytest.param([(pod("loner", affinity=anti(term(HOST, WEB))), "a")],
                 pod(labels=WEB, namespace="other"), ALL, None,
                 id="existing-anti-affinity-its-own-namespace-only"),
    pytest.param([(pod("loner", affinity=anti(term(HOST, WEB))), "a")], pod(labels={"a": "b"}),
                 ALL, None, id="existing-anti-affinity-not-selecting"),
]


@pytest.mark.parametrize(("placed", "incoming", "expected", "reason"), ROWS)
def test_filter(placed: Any, incoming: dict[str, Any], expected: set[str],
                reason: str | None) -> None:
    c = cluster(NODES, placed, {"team-a": {"team": "a"}, "team-b": {"team": "b"}})
    assert feasible(c, incoming) == expected
    placed_on = chosen(c, incoming)
    assert (placed_on in expected) if expected else placed_on is None
    if reason is not None:
        assert reason in why(c, incoming)


def preferred(kind: str, weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": weight, "podAffinityTerm": t}]}}


SCORES = [
    # Spread scoring prefers empty nodes, binpack full ones: each row scores against it.
    pytest.param([(web("w1"), "c")], pod(affinity=preferred("podAffinity", 10, term(HOST, WEB))),
                 Scoring.SPREAD, "c", id="preferred-affinity-goes-to-the-pod"),
    pytest.param([(web("w1"), "a")],
                 pod(affinity=preferred("podAntiAffinity", 10, term(ZONE, WEB))),
                 Scoring.BINPACK, "c", id="preferred-anti-affinity-avoids-the-zone"),
    pytest.param([(pod("friend", affinity=affinity(term(HOST, WEB))), "d")], pod(labels=WEB),
                 Scoring.SPREAD, "d", id="existing-required-affinity-attracts"),
    pytest.param([(pod("friend", affinity=preferred("podAffinity", 50, term(HOST, WEB))), "b")],
                 pod(labels=WEB), Scoring.SPREAD, "b", id="existing-preferred-affinity-attracts"),
    pytest.param([(pod("foe", affinity=preferred("podAntiAffinity", 50, term(ZONE, WEB))),
                   "a")], pod(labels=WEB), Scoring.BINPACK, "c",
                 id="existing-preferred-anti-affinity-repels"),
]


@pytest.mark.parametrize(("placed", "incoming", "scoring", "expected"), SCORES)
def test_score(placed: Any, incoming: dict[str, Any], scoring: Scoring, expected: str) -> None:
    assert chosen(cluster(NODES, placed), incoming, scoring) == expected
