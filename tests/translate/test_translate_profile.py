"""Scheduler profiles read from the KubeSchedulerConfiguration shape, and what they do."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.placement.cluster import Cluster, PodInfo
from gangsched.core.plugins import noderesources, podtopologyspread
from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.model import Node, Scoring
from gangsched.core.values.placement_terms import AffinityTerm, Placement
from gangsched.core.values.profile import PluginSet, ProfileConfig
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from gangsched.translate.fields import TranslationError
from gangsched.translate.profile import profile_from_k8s

FIT_MOST = {"name": "NodeResourcesFit",
            "args": {"scoringStrategy": {"type": "MostAllocated",
                                         "resources": [{"name": "cpu", "weight": 2}]}}}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, ProfileConfig(), id="none-is-the-default"),
        pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}},
                     ProfileConfig(PluginSet((), ("InterPodAffinity",))), id="multipoint"),
        pytest.param({"plugins": {"score": {"enabled": [{"name": "NodeAffinity",
                                                         "weight": 7}]}}},
                     ProfileConfig(points=(("score", PluginSet((("NodeAffinity", 7),))),)),
                     id="score-weight"),
        pytest.param({"apiVersion": "kubescheduler.config.k8s.io/v1",
                      "kind": "KubeSchedulerConfiguration",
                      "profiles": [{"schedulerName": "gangsched", "pluginConfig": [FIT_MOST]}]},
                     ProfileConfig(args=(("NodeResourcesFit", noderesources.FitArgs(
                         noderesources.Strategy.MOST_ALLOCATED, (("cpu", 2),))),)),
                     id="whole-configuration"),
        pytest.param({"pluginConfig": [{"name": "PodTopologySpread", "args": {
            "defaultingType": "List", "defaultConstraints": []}}]},
                     ProfileConfig(args=(("PodTopologySpread", podtopologyspread.SpreadArgs(
                         podtopologyspread.Defaulting.LIST)),)), id="no-default-constraints"),
        pytest.param({"plugins": {"queueSort": {"enabled": [{"name": "PrioritySort"}]}}},
                     ProfileConfig(), id="points-gangsched-serves-itself-are-ignored"),
    ],
)
def test_reads(raw: Any, expected: ProfileConfig) -> None:
    assert profile_from_k8s(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param({"plugins": {"score": {"enabled": [{"name": "Nope"}]}}},
                     'plugins.score.enabled: unknown plugin "Nope"', id="unknown-plugin"),
        pytest.param({"plugins": {"filter": {"enabled": [{"name": "AzureDiskLimits"}]}}},
                     'unknown plugin "AzureDiskLimits"', id="unimplemented-plugin"),
        pytest.param({"plugins": {"filter": {"enabled": [
            {"name": "NodeResourcesBalancedAllocation"}]}}},
                     "does not implement filter", id="plugin-not-at-that-point"),
        pytest.param({"plugins": {"score": {"enabled": [{"name": "NodeAffinity",
                                                         "weight": 101}]}}},
                     "plugins.score.enabled[0].weight: must be at most 100", id="weight"),
        pytest.param({"plugins": {"sort": {}}}, "plugins.sort: unknown extension point",
                     id="unknown-point"),
        pytest.param({"profiles": [{}, {}]}, "exactly one profile", id="two-profiles"),
        pytest.param({"pluginConfig": [{"name": "NodeResourcesFit", "args": {
            "scoringStrategy": {"type": "RequestedToCapacityRatio"}}}]},
                     'pluginConfig[0].args.scoringStrategy.type: unsupported scoring strategy',
                     id="unsupported-strategy"),
        pytest.param({"pluginConfig": [{"name": "PodTopologySpread", "args": {
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                    "whenUnsatisfiable": "ScheduleAnyway"}]}}]},
                     "defaultConstraints must be empty when defaultingType is System",
                     id="system-defaults-with-constraints"),
        pytest.param({"pluginConfig": [{"name": "PodTopologySpread", "args": {
            "defaultingType": "List", "defaultConstraints": [{"maxSkew": 0,
                                                              "topologyKey": "zone",
                                                              "whenUnsatisfiable": "x"}]}}]},
                     "defaultConstraints[0].maxSkew: must be at least 1", id="bad-default"),
        pytest.param({"pluginConfig": [{"name": "NodePorts", "args": {}}]},
                     "NodePorts takes no arguments", id="args-of-a-plugin-without-any"),
    ],
)
def test_refuses(raw: Any, message: str) -> None:
    with pytest.raises((TranslationError, ConstraintError)) as error:
        profile_from_k8s(raw)
    assert message in str(error.value)


@pytest.mark.parametrize(("raw", "stacked"), [
    pytest.param(None, False, id="default-anti-affinity-holds"),
    pytest.param({"plugins": {"multiPoint": {"disabled": [{"name": "InterPodAffinity"}]}}},
                 True, id="disabled-it-does-not"),
])
def test_a_disabled_plugin_does_not_filter(raw: Any, stacked: bool) -> None:
    cluster = Cluster(profile=profile_from_k8s(raw))
    labels = {"app": "web"}
    placement = Placement(labels=tuple(labels.items()), anti_affinity=(
        AffinityTerm("kubernetes.io/hostname", LabelSelector.build(labels)),))
    cluster.upsert_node(Node("n", Resources({"cpu": 4000, "pods": 10}),
                             {"kubernetes.io/hostname": "n"}))
    first = PodInfo.of(Resources({"cpu": 1, "pods": 1}), placement=placement, namespace="d",
                       uid="a")
    cluster.charge("n", "a", first.request, PlacedPod("a", "d", labels, placement, "n"))
    second = PodInfo.of(Resources({"cpu": 1, "pods": 1}), placement=placement, namespace="d",
                        uid="b")
    assert (cluster.place(second.request, second.constraints, Scoring.BINPACK, pod=second)
            == "n") is stacked


def test_a_profile_strategy_overrides_the_scoring_setting() -> None:
    cluster = Cluster(profile=profile_from_k8s({"pluginConfig": [FIT_MOST]}))
    cluster.upsert_node(Node("a", Resources({"cpu": 4000, "pods": 10})))
    cluster.upsert_node(Node("b", Resources({"cpu": 4000, "pods": 10})))
    cluster.charge("b", "x", Resources({"cpu": 2000, "pods": 1}))
    request = Resources({"cpu": 100, "pods": 1})
    pod = PodInfo.of(request)
    assert cluster.place(request, pod.constraints, Scoring.SPREAD, pod=pod) == "b"
