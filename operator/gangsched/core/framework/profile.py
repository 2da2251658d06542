"""Which plugins run where, with what weights and arguments: a scheduler profile.

The shape is ``KubeSchedulerConfiguration.profiles[0]``: ``plugins`` with ``multiPoint``
and one :class:`PluginSet` per extension point (``enabled`` with optional ``weight``,
``disabled`` with ``"*"`` meaning every default), and ``pluginConfig`` arguments by
plugin name. Reading it from a file is the edge's job
(``gangsched.translate.profile``); this module holds the validated value and resolves
it against the registry's default plugins, the way kube-scheduler merges a custom
profile into the default one:

1. start from the default ``multiPoint`` plugins, in order, with their default weights;
2. ``multiPoint.disabled`` removes plugins (``*``: all of them), ``multiPoint.enabled``
   adds plugins at the end, or sets the weight of one already there;
3. a point's ``disabled`` removes plugins from that point only, a point's ``enabled``
   adds them there (with its weight, for ``score``).

A plugin enabled at ``multiPoint`` serves every point it implements.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gangsched.core.constraints import ConstraintError

EXTENSION_POINTS = ("preEnqueue", "preFilter", "filter", "preScore", "score", "reserve",
                    "preBind")
"""The points a profile may configure, in the order a cycle visits them."""


@dataclass(frozen=True, slots=True)
class PluginSet:
    """``enabled`` (name, weight; 0 is the default weight) and ``disabled`` names."""

    enabled: tuple[tuple[str, int], ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileConfig:
    """A profile: plugin sets per point and arguments per plugin (see the module doc)."""

    multi_point: PluginSet = PluginSet()
    points: tuple[tuple[str, PluginSet], ...] = ()
    args: tuple[tuple[str, object], ...] = ()
    """Validated plugin arguments by plugin name (each plugin's own args value)."""
    percentage_of_nodes_to_score: int = 0
    """``percentageOfNodesToScore`` of the configuration (the profile's own, else the
    top level's): 0 leaves the scheduler's setting, else 1..100 (see
    :func:`gangsched.core.cluster.feasible_nodes_to_find`)."""

    def point(self, name: str) -> PluginSet:
        for point, found in self.points:
            if point == name:
                return found
        return PluginSet()

    def args_of(self, plugin: str) -> object | None:
        for name, value in self.args:
            if name == plugin:
                return value
        return None


DEFAULT_PROFILE = ProfileConfig()


@dataclass(frozen=True, slots=True)
class Resolved:
    """The outcome: for every point, the plugin names in order; weights of scorers."""

    plugins: tuple[str, ...]
    """Every plugin that serves at least one point, in order."""
    at: Mapping[str, tuple[str, ...]]
    weights: Mapping[str, int]


def resolve(
    config: ProfileConfig,
    defaults: Sequence[tuple[str, int]],
    known: Mapping[str, frozenset[str]],
) -> Resolved:
    """Resolve ``config`` against the ``defaults`` (name, weight) of ``multiPoint``.

    ``known`` maps every registered plugin name to the points it implements. A name not
    in ``known``, a point a plugin does not implement, or a weight outside 0..100 raises
    :class:`ConstraintError` naming it.
    """
    weights = dict(defaults)
    multi: list[str] = [name for name, _ in defaults]
    if "*" in config.multi_point.disabled:
        multi = []
    multi = [name for name in multi if name not in config.multi_point.disabled]
    for name, weight in config.multi_point.enabled:
        _check(name, weight, known, "multiPoint")
        if name not in multi:
            multi.append(name)
        if weight:
            weights[name] = weight
    at: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        chosen = [name for name in multi if point in known.get(name, frozenset())]
        custom = config.point(point)
        if "*" in custom.disabled:
            chosen = []
        chosen = [name for name in chosen if name not in custom.disabled]
        for name, weight in custom.enabled:
            _check(name, weight, known, point)
            if point not in known[name]:
                raise ConstraintError(f'plugin "{name}" does not implement {point}',
                                      field=f"plugins.{point}.enabled")
            if name not in chosen:
                chosen.append(name)
            if weight and point == "score":
                weights[name] = weight
        at[point] = tuple(chosen)
    for point, _ in config.points:
        if point not in EXTENSION_POINTS:
            raise ConstraintError(
                f'unknown extension point "{point}" (accepted: multiPoint, '
                f'{", ".join(EXTENSION_POINTS)})', field="plugins")
    for name, _ in config.args:
        if name not in known:
            raise ConstraintError(f'unknown plugin "{name}"', field="pluginConfig")
    serving = {name for names in at.values() for name in names}
    order = [name for name in multi if name in serving]
    for names in at.values():
        order += [name for name in names if name not in order]
    return Resolved(tuple(order), at, {name: weights.get(name, 1) or 1 for name in order})


def _check(name: str, weight: int, known: Mapping[str, frozenset[str]], point: str) -> None:
    if name not in known:
        accepted = ", ".join(sorted(known))
        raise ConstraintError(f'unknown plugin "{name}" (accepted: {accepted})',
                              field=f"plugins.{point}.enabled")
    if not 0 <= weight <= 100:
        raise ConstraintError(f"weight of {name} must be within 0..100, got {weight}",
                              field=f"plugins.{point}.enabled")
