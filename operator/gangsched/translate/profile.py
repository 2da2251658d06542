"""A scheduler profile from the shape users know: ``KubeSchedulerConfiguration``.

:func:`profile_from_k8s` accepts either a whole ``KubeSchedulerConfiguration`` (its
``profiles[0]`` is used; more than one profile is an error, gangsched has one) or a
single profile object with ``plugins`` and ``pluginConfig``::

    plugins:
      multiPoint:
        disabled: [{name: NodeResourcesBalancedAllocation}]
      score:
        enabled: [{name: InterPodAffinity, weight: 5}]
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
            resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone,
               whenUnsatisfiable: ScheduleAnyway}

Arguments read: NodeResourcesFit ``scoringStrategy`` (``LeastAllocated``,
``MostAllocated``; ``resources`` with weights), NodeResourcesBalancedAllocation
``resources``, PodTopologySpread ``defaultingType`` and ``defaultConstraints``,
InterPodAffinity ``hardPodAffinityWeight`` and ``ignorePreferredTermsOfExistingPods``;
and ``percentageOfNodesToScore``, the profile's or else the configuration's.
Anything wrong raises :class:`~gangsched.translate.fields.TranslationError` or
:class:`~gangsched.core.constraints.ConstraintError` whose message starts with the path
of the field, e.g. ``plugins.score.enabled[0]: unknown plugin "Foo" (accepted: ...)``.
The result is checked against the registry (names, points, weights) before it is
returned, so an invalid profile is refused at start-up, not in the first cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gangsched.core import constraints
from gangsched.core.cluster import Cluster
from gangsched.core.framework.profile import EXTENSION_POINTS, PluginSet, ProfileConfig
from gangsched.core.plugins import (
    balancedallocation,
    interpodaffinity,
    noderesources,
    podtopologyspread,
)
from gangsched.translate import fields
from gangsched.translate.k8s_placement import spread_constraint


def _plugin_set(raw: object, path: str) -> PluginSet:
    obj = fields.mapping(raw, path)
    enabled: list[tuple[str, int]] = []
    for i, item in enumerate(fields.sequence(obj.get("enabled"), f"{path}.enabled")):
        entry = fields.mapping(item, f"{path}.enabled[{i}]")
        name = fields.string(entry.get("name"), f"{path}.enabled[{i}].name")
        weight = fields.integer(entry.get("weight"), f"{path}.enabled[{i}].weight", default=0,
                                minimum=0, maximum=100)
        enabled.append((name, weight))
    disabled = [fields.string(fields.mapping(item, f"{path}.disabled[{i}]").get("name"),
                              f"{path}.disabled[{i}].name")
                for i, item in enumerate(fields.sequence(obj.get("disabled"),
                                                         f"{path}.disabled"))]
    return PluginSet(tuple(enabled), tuple(disabled))


def _resources(raw: object, path: str,
               default: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    if raw is None:
        return default
    found = []
    for i, item in enumerate(fields.sequence(raw, path)):
        entry = fields.mapping(item, f"{path}[{i}]")
        found.append((fields.string(entry.get("name"), f"{path}[{i}].name"),
                      fields.integer(entry.get("weight"), f"{path}[{i}].weight", default=1,
                                     minimum=1, maximum=100)))
    return tuple(found)


def _args(name: str, raw: object, path: str) -> object:
    obj = fields.mapping(raw, path)
    if name == noderesources.NAME:
        strategy = fields.mapping(obj.get("scoringStrategy"), f"{path}.scoringStrategy")
        text = fields.string(strategy.get("type"), f"{path}.scoringStrategy.type",
                             default="LeastAllocated")
        try:
            kind = noderesources.Strategy.from_string(text)
        except constraints.ConstraintError as error:
            raise error.at(f"{path}.scoringStrategy.type") from None
        return noderesources.FitArgs(kind, _resources(
            strategy.get("resources"), f"{path}.scoringStrategy.resources",
            noderesources.DEFAULT_RESOURCES))
    if name == balancedallocation.NAME:
        return balancedallocation.BalancedArgs(_resources(
            obj.get("resources"), f"{path}.resources", noderesources.DEFAULT_RESOURCES))
    if name == podtopologyspread.NAME:
        text = fields.string(obj.get("defaultingType"), f"{path}.defaultingType",
                             default="System")
        try:
            defaulting = podtopologyspread.Defaulting.from_string(text)
        except constraints.ConstraintError as error:
            raise error.at(f"{path}.defaultingType") from None
        items = fields.sequence(obj.get("defaultConstraints"), f"{path}.defaultConstraints")
        defaults = []
        for i, item in enumerate(items):
            item_path = f"{path}.defaultConstraints[{i}]"
            if isinstance(item, Mapping) and item.get("labelSelector") is not None:
                raise fields.TranslationError(
                    f"{item_path}.labelSelector: not allowed in default constraints")
            defaults.append(spread_constraint(item, item_path, {}))
        try:
            return podtopologyspread.SpreadArgs(defaulting, tuple(defaults))
        except constraints.ConstraintError as error:
            raise error.at(path) from None
    if name == interpodaffinity.NAME:
        return interpodaffinity.AffinityArgs(
            fields.integer(obj.get("hardPodAffinityWeight"), f"{path}.hardPodAffinityWeight",
                           default=1, minimum=0, maximum=100),
            fields.boolean(obj.get("ignorePreferredTermsOfExistingPods"),
                           f"{path}.ignorePreferredTermsOfExistingPods", default=False))
    raise fields.TranslationError(f"{path}: {name} takes no arguments in gangsched")


def _percentage(raw: object, path: str) -> int:
    """``percentageOfNodesToScore``: absent or null is 0 (the adaptive default), else a
    whole number from 0 to 100 (kube-scheduler's validation)."""
    if raw is None:
        return 0
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 100:
        raise fields.TranslationError(f"{path}: must be a whole number from 0 to 100, got {raw!r}")
    return raw


def profile_from_k8s(raw: object) -> ProfileConfig:
    """Read and validate a profile (see the module docstring); ``None`` is the default."""
    if raw is None:
        return ProfileConfig()
    obj: Mapping[str, Any] = fields.mapping(raw, "profile")
    prefix = ""
    percentage = _percentage(obj.get("percentageOfNodesToScore"), "percentageOfNodesToScore")
    if "profiles" in obj:
        profiles = fields.sequence(obj.get("profiles"), "profiles")
        if len(profiles) != 1:
            raise fields.TranslationError(
                f"profiles: gangsched runs exactly one profile, got {len(profiles)}")
        obj = fields.mapping(profiles[0], "profiles[0]")
        prefix = "profiles[0]."
        percentage = (_percentage(obj.get("percentageOfNodesToScore"),
                                  f"{prefix}percentageOfNodesToScore") or percentage)
    plugins = fields.mapping(obj.get("plugins"), f"{prefix}plugins")
    multi = _plugin_set(plugins.get("multiPoint"), f"{prefix}plugins.multiPoint")
    points = []
    for key, value in plugins.items():
        if key == "multiPoint":
            continue
        if key not in EXTENSION_POINTS:
            if key in ("queueSort", "postFilter", "permit", "bind", "postBind"):
                continue  # points gangsched's own actions serve; nothing to configure
            accepted = ", ".join(("multiPoint", *EXTENSION_POINTS))
            raise fields.TranslationError(
                f'{prefix}plugins.{key}: unknown extension point (accepted: {accepted})')
        points.append((key, _plugin_set(value, f"{prefix}plugins.{key}")))
    args = []
    for i, item in enumerate(fields.sequence(obj.get("pluginConfig"), f"{prefix}pluginConfig")):
        path = f"{prefix}pluginConfig[{i}]"
        entry = fields.mapping(item, path)
        name = fields.string(entry.get("name"), f"{path}.name")
        args.append((name, _args(name, entry.get("args"), f"{path}.args")))
    config = ProfileConfig(multi, tuple(points), tuple(args), percentage)
    try:
        Cluster(profile=config)
    except constraints.ConstraintError as error:
        raise error.at(prefix.rstrip(".") or "profile") if not error.field else error from None
    return config
