"""How many feasible nodes a placement looks for: kube-scheduler's ``numFeasibleNodesToFind``
over the nodes it filters (all of them, or those NodeAffinity's PreFilter names)."""

from __future__ import annotations

import pytest
from builders import make_node, res
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.placement.cluster import ONE_POD, Cluster, Constraints
from gangsched.core.placement.sample import named_nodes
from gangsched.core.values.constraints import (
    NODE_NAME_FIELD,
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
)
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import Placement, PreferredNodeTerm
from gangsched.core.values.profile import PluginSet, ProfileConfig

NODES = frozenset(f"n{i:04}" for i in range(10))


def _names(name: str, operator: SelectorOperator = SelectorOperator.IN) -> SelectorRequirement:
    return SelectorRequirement(NODE_NAME_FIELD, operator, (name,))


def _label(key: str, value: str) -> SelectorRequirement:
    return SelectorRequirement(key, SelectorOperator.IN, (value,))


@pytest.mark.parametrize(("terms", "expected"), [
    pytest.param(None, None, id="no-affinity"),
    pytest.param((NodeSelectorTerm((_label("zone", "a"),)),), None, id="labels-only"),
    pytest.param((NodeSelectorTerm(match_fields=(_names("n0001"),)),
                  NodeSelectorTerm(match_fields=(_names("gone"),))), 1,
                 id="names-that-exist"),
    pytest.param((NodeSelectorTerm(match_fields=(_names("n0001"), _names("n0002"))),), 0,
                 id="within-a-term-intersected"),
    pytest.param((NodeSelectorTerm(match_fields=(_names("n0001"),)),
                  NodeSelectorTerm(match_fields=(_names("n0002"),))), 2,
                 id="terms-united"),
    pytest.param((NodeSelectorTerm(match_fields=(_names("n0001"),)),
                  NodeSelectorTerm((_label("zone", "a"),))), None,
                 id="a-term-without-names-lets-every-node"),
    pytest.param((NodeSelectorTerm(match_fields=(_names("n0001", operator=SelectorOperator
                                                        .NOT_IN),)),), None,
                 id="notin-names-none"),
])
def test_the_nodes_node_affinity_prefilter_names(
        terms: tuple[NodeSelectorTerm, ...] | None, expected: int | None) -> None:
    assert named_nodes(NodeAffinity(terms), NODES) == expected


def test_the_share_is_taken_of_the_nodes_the_prefilter_names() -> None:
    """2,000 nodes, a pod that may go to the first 150 by name and prefers n0120:
    kube-scheduler filters those 150 and looks for 100 feasible ones (50% less 1% per
    125 of 150 nodes, at least 100): n0120 is not among them, and packing takes n0000.
    The share of 2,000 nodes (680) would have found n0120 and chosen it."""
    cluster = Cluster()
    for i in range(2000):
        labels = {"special": "yes"} if i == 120 else {}
        cluster.upsert_node(make_node(f"n{i:04}", cpu=8, labels=labels))
    affinity = NodeAffinity(tuple(NodeSelectorTerm(match_fields=(_names(f"n{i:04}"),))
                                  for i in range(150)))
    constraints = Constraints.build({}, (), affinity)
    placement = Placement(node_preferred=(PreferredNodeTerm(100, NodeSelectorTerm((
        _label("special", "yes"),))),))
    request = res(1) + ONE_POD
    info = PodInfo.of(request, constraints, placement, namespace="default", name="p",
                      uid="p")
    assert cluster.place(request, constraints, Scoring.BINPACK, pod=info) == "n0000"
    assert cluster.sample_size == 680


def test_a_profile_without_score_plugins_looks_for_one_feasible_node() -> None:
    cluster = Cluster(profile=ProfileConfig(points=(("score", PluginSet(disabled=("*",))),)))
    for i in range(300):
        cluster.upsert_node(make_node(f"n{i:04}", cpu=8))
    fwk = cluster.framework(Scoring.BINPACK)
    assert not fwk.scorers
    assert cluster._sample_for(fwk, Constraints.build({}, (), NodeAffinity())) == 1
    assert cluster.sample_size == 300 * 48 // 100
