"""Resolving a profile against the default plugins, as kube-scheduler merges a custom
profile into its default one; and the framework running what was resolved."""

from __future__ import annotations

import pytest
from gangsched.core.framework.runner import Framework
from gangsched.core.plugins.registry import DEFAULT_PLUGINS, REGISTRY
from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.profile import PluginSet, ProfileConfig

DEFAULT_FILTERS = ("NodeReady", "NodeUnschedulable", "NodeName", "TaintToleration",
                   "NodeAffinity", "NodePorts", "NodeResourcesFit", "NodeVolumeLimits",
                   "VolumeBinding", "VolumeZone", "DynamicResources", "PodTopologySpread",
                   "InterPodAffinity")


def build(config: ProfileConfig) -> Framework:
    return Framework(REGISTRY, DEFAULT_PLUGINS, config)


@pytest.mark.parametrize(
    ("config", "point", "expected"),
    [
        pytest.param(ProfileConfig(), "filter",
                     DEFAULT_FILTERS, id="default-filters-in-order"),
        pytest.param(ProfileConfig(), "score",
                     ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                      "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality"),
                     id="default-scores"),
        pytest.param(ProfileConfig(PluginSet(disabled=("InterPodAffinity",))), "filter",
                     DEFAULT_FILTERS[:-1],
                     id="multipoint-disable-removes-everywhere"),
        pytest.param(ProfileConfig(points=(("score", PluginSet(disabled=("*",))),)), "score",
                     (), id="star-disables-every-default-at-the-point"),
        pytest.param(ProfileConfig(points=(("score", PluginSet(disabled=("*",))),)), "filter",
                     DEFAULT_FILTERS, id="other-points-untouched"),
        pytest.param(ProfileConfig(PluginSet(disabled=("*",)), (
            ("filter", PluginSet((("NodeResourcesFit", 0),))),)), "filter",
                     ("NodeResourcesFit",), id="point-enable-after-star"),
    ],
)
def test_resolved_points(config: ProfileConfig, point: str, expected: tuple[str, ...]) -> None:
    assert build(config).resolved.at[point] == expected


def test_the_volume_plugins_run_at_their_points_by_default() -> None:
    at = build(ProfileConfig()).resolved.at
    assert [p for p in at["preFilter"] if p.startswith(("Volume", "NodeVolume", "Dynamic"))] \
        == ["VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone",
            "DynamicResources"]
    assert at["reserve"] == ("VolumeBinding",)
    assert at["preBind"] == ("VolumeBinding",)


@pytest.mark.parametrize(
    ("config", "weights"),
    [
        pytest.param(ProfileConfig(), {"TaintToleration": 3, "NodeAffinity": 2,
                                       "PodTopologySpread": 2, "InterPodAffinity": 2,
                                       "NodeResourcesFit": 1,
                                       "NodeResourcesBalancedAllocation": 1},
                     id="kube-scheduler-default-weights"),
        pytest.param(ProfileConfig(points=(("score", PluginSet((("NodeAffinity", 9),))),)),
                     {"NodeAffinity": 9}, id="score-weight-overrides"),
        pytest.param(ProfileConfig(PluginSet((("InterPodAffinity", 7),))),
                     {"InterPodAffinity": 7}, id="multipoint-weight-overrides"),
    ],
)
def test_weights(config: ProfileConfig, weights: dict[str, int]) -> None:
    got = dict((plugin.name, weight) for plugin, weight in build(config).scorers)
    assert {name: got[name] for name in weights} == weights


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(ProfileConfig(PluginSet((("Nope", 0),))), 'unknown plugin "Nope"',
                     id="unknown"),
        pytest.param(ProfileConfig(points=(("bind", PluginSet()),)),
                     'unknown extension point "bind"', id="unknown-point"),
        pytest.param(ProfileConfig(points=(("preEnqueue", PluginSet(
            (("NodeAffinity", 0),))),)), "does not implement preEnqueue", id="wrong-point"),
        pytest.param(ProfileConfig(args=(("Nope", None),)), 'unknown plugin "Nope"',
                     id="args-of-unknown"),
    ],
)
def test_refused(config: ProfileConfig, message: str) -> None:
    with pytest.raises(ConstraintError, match=message):
        build(config)
