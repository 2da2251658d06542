"""The framework: a resolved profile's plugins, run at each extension point.

Built from a *registry* (plugin name to factory) that the caller passes in; the
framework itself never imports a plugin. Placement loops over nodes elsewhere (the
cluster and :mod:`gangsched.core.placement.scan` decide the order, the sampling and
the caches); it asks the framework, per pod, for the cycle state
(:meth:`Framework.pre_filter`, whose ``scan`` lists the dynamic filters cheapest first,
with their batch forms), the filters' verdict digests (:meth:`Framework.digests`,
:meth:`Framework.changed_domains`), per node for a verdict
(:meth:`Framework.static_filter`, :meth:`Framework.filter`: a diagnosis), and over the
feasible nodes found for weighted scores (:meth:`Framework.score`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from itertools import repeat
from operator import add, mul
from typing import Any

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values import profile as profiles

Factory = Callable[[object | None], fw.Plugin]
"""Makes a plugin from its validated arguments (None: the defaults)."""
ScoreAll = Callable[[fw.CycleState, PodInfo, Sequence[NodeState]], list[int]]
NormalizedAll = Callable[[fw.CycleState, PodInfo, Sequence[NodeState], int], list[int]]

_POINTS: tuple[tuple[str, type], ...] = (
    ("preEnqueue", fw.PreEnqueuePlugin),
    ("preFilter", fw.PreFilterPlugin),
    ("filter", fw.FilterPlugin),
    ("preScore", fw.ScorePlugin),
    ("score", fw.ScorePlugin),
    ("reserve", fw.ReservePlugin),
    ("preBind", fw.PreBindPlugin),
)


class Framework:
    """The plugins of one profile, by extension point."""

    def __init__(
        self,
        registry: Mapping[str, Factory],
        defaults: Sequence[tuple[str, int]],
        config: profiles.ProfileConfig = profiles.DEFAULT_PROFILE,
    ) -> None:
        """Instantiate every registered plugin, then resolve ``config`` against
        ``defaults``. Invalid configuration raises ``ConstraintError`` (see
        :func:`gangsched.core.values.profile.resolve`)."""
        made = {name: factory(config.args_of(name)) for name, factory in registry.items()}
        known = {name: frozenset(point for point, kind in _POINTS if isinstance(plugin, kind))
                 for name, plugin in made.items()}
        resolved = profiles.resolve(config, defaults, known)
        self.config = config
        self.resolved = resolved
        self.plugins = {name: made[name] for name in resolved.plugins}
        at = resolved.at
        self.pre_enqueuers: list[fw.PreEnqueuePlugin] = [
            _as(made[n], fw.PreEnqueuePlugin) for n in at["preEnqueue"]]
        self.pre_filters: list[fw.PreFilterPlugin] = [
            _as(made[n], fw.PreFilterPlugin) for n in at["preFilter"]]
        filters: list[fw.FilterPlugin] = [_as(made[n], fw.FilterPlugin) for n in at["filter"]]
        self.static_filters = [p for p in filters if p.static]
        self.dynamic_filters = [p for p in filters if not p.static]
        self.static_names = tuple(p.name for p in self.static_filters)
        self.scan_costs = {
            p.name: p.scan_cost if isinstance(p, fw.BatchFilterPlugin) else fw.SCAN_COST
            for p in self.dynamic_filters}
        """What judging a node costs each dynamic filter (see ``BatchFilterPlugin``)."""
        self._scan: list[fw.ScanItem] = sorted(
            ((p, p.filter_nodes if isinstance(p, fw.BatchFilterPlugin) else None)
             for p in self.dynamic_filters),
            key=lambda item: self.scan_costs[item[0].name])
        """The dynamic filters in scan order: cheapest a node first, ties in profile
        order (``sorted`` is stable)."""
        self._lists: dict[frozenset[str], tuple[list[fw.FilterPlugin], list[fw.ScanItem]]] = {}
        """The dynamic filters and the scan of a cycle, per set of PreFilters skipped."""
        self._scan_but: dict[tuple[int, str], tuple[list[fw.ScanItem], list[fw.ScanItem]]] = {}
        """A scan (by identity) and that scan without one filter, per filter left out."""
        self._domain_filters: dict[str, fw.DomainFilterPlugin] = {
            p.name: p for p in self.dynamic_filters if isinstance(p, fw.DomainFilterPlugin)}
        self._node_local = frozenset(
            p.name for p in self.dynamic_filters
            if isinstance(p, fw.NodeLocalFilterPlugin) and p.node_local)
        self.scorers: list[tuple[fw.ScorePlugin, int]] = [
            (_as(made[n], fw.ScorePlugin), resolved.weights[n]) for n in at["score"]]
        self._score_all: dict[str, ScoreAll] = {
            plugin.name: plugin.score_nodes for plugin, _ in self.scorers
            if isinstance(plugin, fw.BatchScorePlugin)}
        """The scorers that score every node in one call, by name."""
        self._normalized_all: dict[str, NormalizedAll] = {
            plugin.name: plugin.score_normalized for plugin, _ in self.scorers
            if isinstance(plugin, fw.NormalizedScorePlugin)}
        """The scorers that score and normalize every node in one call, by name."""
        self.reservers: list[fw.ReservePlugin] = [
            _as(made[n], fw.ReservePlugin) for n in at["reserve"]]
        self.pre_binders: list[fw.PreBindPlugin] = [
            _as(made[n], fw.PreBindPlugin) for n in at["preBind"]]
        self._pre_scored = frozenset(at["preScore"])
        self._usage_scorers: list[fw.UsageScorePlugin] | None = [
            plugin for plugin, _ in self.scorers if isinstance(plugin, fw.UsageScorePlugin)]
        self._by_usage = {plugin.name: plugin for plugin in self._usage_scorers}
        """The scorers that can tell when usage keys alone score a pod, by name."""
        self._by_class: list[tuple[fw.ClassScorePlugin, list[fw.UsageScorePlugin]]] = []
        """Per scorer that can score by classes, the others, when each can tell when
        usage keys alone score a pod (see :meth:`score_classes`)."""
        for plugin, _ in self.scorers:
            others = [p for p in self._usage_scorers if p is not plugin]
            if (isinstance(plugin, fw.ClassScorePlugin)
                    and len(others) == len(self.scorers) - 1):
                self._by_class.append((plugin, others))
        if len(self._usage_scorers) < len(self.scorers):
            self._usage_scorers = None  # a scorer that cannot tell: never by usage alone

    def plugin(self, name: str) -> fw.Plugin | None:
        return self.plugins.get(name)

    def pre_enqueue(self, pod: PodInfo) -> fw.Status:
        """The first refusal of a PreEnqueue plugin, else SUCCESS."""
        for plugin in self.pre_enqueuers:
            status = plugin.pre_enqueue(pod)
            if not status.ok:
                return fw.Status(status.code, status.reasons, plugin.name)
        return fw.SUCCESS

    def static_filter(self, pod: PodInfo, node: NodeState) -> fw.Status:
        """The first static filter ``node`` fails for ``pod``, else SUCCESS."""
        state = _NO_STATE
        for plugin in self.static_filters:
            status = plugin.filter(state, pod, node)
            if not status.ok:
                return fw.Status(status.code, status.reasons, plugin.name)
        return fw.SUCCESS

    def pre_filter(self, pod: PodInfo, snapshot: fw.Snapshot) -> tuple[fw.CycleState, fw.Status]:
        """Run every PreFilter; the state lists the dynamic filters not skipped.

        A rejection stops the cycle (its status names the plugin)."""
        state = fw.CycleState()
        skipped: set[str] = set()
        for plugin in self.pre_filters:
            status = plugin.pre_filter(state, pod, snapshot)
            if status.code is fw.Code.SKIP:
                skipped.add(plugin.name)
            elif not status.ok:
                return state, fw.Status(status.code, status.reasons, plugin.name)
        key = frozenset(skipped)
        lists = self._lists.get(key)
        if lists is None:
            lists = self._lists[key] = (
                [p for p in self.dynamic_filters if p.name not in skipped],
                [item for item in self._scan if item[0].name not in skipped])
        state.filters, state.scan = lists
        return state, fw.SUCCESS

    def scan_but(self, state: fw.CycleState, name: str) -> list[fw.ScanItem]:
        """``state.scan`` without the filter ``name`` (shared: not to be changed)."""
        key = (id(state.scan), name)
        found = self._scan_but.get(key)
        if found is None or found[0] is not state.scan:
            if len(self._scan_but) >= 64:
                self._scan_but.clear()
            found = self._scan_but[key] = (
                state.scan, [item for item in state.scan if item[0].name != name])
        return found[1]

    def digests(self, state: fw.CycleState, pod: PodInfo,
                skip: str = "") -> tuple[object, ...] | None:
        """Per filter of ``state.scan`` (but ``skip``), its verdict digest (None for a
        node-local one), when every one is either and can tell one (see
        :class:`~gangsched.core.framework.interface.DomainFilterPlugin`); else None."""
        found: list[object] = []
        for plugin, _ in state.scan:
            name = plugin.name
            if name == skip:
                continue
            domain = self._domain_filters.get(name)
            if domain is not None:
                digest = domain.verdict_digest(state, pod)
                if digest is fw.NO_DIGEST:
                    return None
                found.append((name, digest))
            elif name in self._node_local:
                found.append(name)
            else:
                return None
        return tuple(found)

    def refused(self, state: fw.CycleState,
                pod: PodInfo) -> tuple[str, AbstractSet[str]] | None:
        """The first label key and values a filter of ``state.scan`` refuses every node
        for (see ``DomainFilterPlugin.refused``), if any."""
        for plugin, _ in state.scan:
            domain = self._domain_filters.get(plugin.name)
            if domain is not None:
                found = domain.refused(state, pod)
                if found is not None:
                    return found
        return None

    def label_verdict(self, state: fw.CycleState,
                      pod: PodInfo) -> tuple[str, str, AbstractSet[str]] | None:
        """The first filter of ``state.scan`` that admits nodes by one label alone (see
        ``DomainFilterPlugin.label_verdict``): its name, the key and the values refused."""
        for plugin, _ in state.scan:
            domain = self._domain_filters.get(plugin.name)
            if domain is not None:
                found = domain.label_verdict(state, pod)
                if found is not None:
                    return plugin.name, found[0], found[1]
        return None

    def changed_domains(self, old: tuple[object, ...],
                        new: tuple[object, ...]) -> dict[str, set[str]] | None:
        """The domains whose nodes may be judged differently under the digests ``new``
        than under ``old`` (both from :meth:`digests` for the same filters); None: any."""
        if len(old) != len(new):
            return None
        changed: dict[str, set[str]] = {}
        for before, after in zip(old, new, strict=True):
            if before == after:
                continue
            if not (isinstance(before, tuple) and isinstance(after, tuple)
                    and before[0] == after[0]):
                return None
            domain = self._domain_filters.get(str(before[0]))
            found = None if domain is None else domain.changed_domains(before[1], after[1])
            if found is None:
                return None
            for key, values in found.items():
                changed.setdefault(key, set()).update(values)
        return changed

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        """The first dynamic filter ``node`` fails, else SUCCESS."""
        for plugin in state.filters:
            status = plugin.filter(state, pod, node)
            if not status.ok:
                return fw.Status(status.code, status.reasons, plugin.name)
        return fw.SUCCESS

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState], *, usage_scored: bool = False) -> None:
        """Choose the scorers for ``nodes``: those whose PreScore does not skip; and
        among them those that score from usage keys alone (``usage_scorers``).
        ``usage_scored``: :meth:`usage_scored` said so of ``pod`` already (every scorer
        scores by usage keys or skips), so that none is asked again."""
        state.scorers = []
        by_usage: list[str] = []
        for plugin, weight in self.scorers:
            if plugin.name in self._pre_scored:
                status = plugin.pre_score(state, pod, snapshot, nodes)
                if status.code is fw.Code.SKIP:
                    continue
            state.scorers.append((plugin, weight))
            if usage_scored:
                by_usage.append(plugin.name)
                continue
            usage = self._by_usage.get(plugin.name)
            if usage is not None and usage.usage_only(pod, snapshot):
                by_usage.append(plugin.name)
        state.usage_scorers = frozenset(by_usage)

    def usage_scored(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Do the scores of ``pod`` follow from the nodes' usage keys alone (see
        :class:`~gangsched.core.framework.interface.UsageScorePlugin`)? False when a
        scorer cannot tell."""
        scorers = self._usage_scorers
        return scorers is not None and all(p.usage_only(pod, snapshot) for p in scorers)

    def score_classes(self, state: fw.CycleState, pod: PodInfo,
                      snapshot: fw.Snapshot) -> tuple[str | None, list[int]] | None:
        """When every scorer but one scores ``pod`` by usage keys alone (or skips it)
        and that one scores by classes (see ``ClassScorePlugin``): its label key and
        the orders of the nodes to score one by one. Then the first feasible node of
        each usage key and value of that key, with those nodes, get the scores every
        feasible node would get; the best of them is the best of all, and the first of
        equals in scan order is the same. None: not so."""
        for plugin, others in self._by_class:
            if all(other.usage_only(pod, snapshot) for other in others):
                return plugin.score_classes(state, pod, snapshot)
        return None

    def score(self, state: fw.CycleState, pod: PodInfo, nodes: Sequence[NodeState]) -> list[int]:
        """The weighted sum of normalized scores per node, in the order of ``nodes``.

        A scorer in ``state.usage_scorers`` scores one node per usage key and its
        normalized scores are spread to the nodes of that key: equal keys give equal
        raw scores, and its normalization gives equal values equal scores whatever
        their number (see :class:`~gangsched.core.framework.interface.UsageScorePlugin`),
        so every node gets exactly what scoring it would give."""
        scorers = state.scorers
        if len(scorers) == 1:  # one scorer: its order is the answer, weights aside
            return self._normalized(state, pod, nodes, scorers[0][0], 1)
        totals: list[int] | None = None
        for plugin, weight in scorers:
            scores = self._normalized(state, pod, nodes, plugin, weight)
            totals = scores if totals is None else list(map(add, totals, scores))
        return totals if totals is not None else [0] * len(nodes)

    def _normalized(self, state: fw.CycleState, pod: PodInfo, nodes: Sequence[NodeState],
                    plugin: fw.ScorePlugin, weight: int) -> list[int]:
        """``plugin``'s normalized scores of ``nodes`` times ``weight``, in order (see
        :meth:`score`)."""
        batch = self._score_all.get(plugin.name)
        if plugin.name in state.usage_scorers and len(nodes) > 1:
            keys = state.usage_keys
            if keys is None or len(keys) != len(nodes):
                keys = [node.usage_key for node in nodes]
            distinct = set(keys)
            if len(distinct) < len(nodes):
                keyed = list(distinct)
                firsts = [nodes[keys.index(key)] for key in keyed]  # a node of each key
                scores = (batch(state, pod, firsts) if batch is not None
                          else [plugin.score(state, pod, node) for node in firsts])
                plugin.normalize(state, pod, scores)
                by_key = dict(zip(keyed, _weighted(scores, weight), strict=True))
                return list(map(by_key.__getitem__, keys))
        fused = self._normalized_all.get(plugin.name)
        if fused is not None:
            return fused(state, pod, nodes, weight)
        scores = (batch(state, pod, nodes) if batch is not None
                  else [plugin.score(state, pod, node) for node in nodes])
        plugin.normalize(state, pod, scores)
        return _weighted(scores, weight)

    def reserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        """Reserve in order; on a refusal, unreserve (in reverse) and return it."""
        for index, plugin in enumerate(self.reservers):
            status = plugin.reserve(state, pod, node)
            if not status.ok:
                for done in reversed(self.reservers[: index + 1]):
                    done.unreserve(state, pod, node)
                return fw.Status(status.code, status.reasons, plugin.name)
        return fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> None:
        for plugin in reversed(self.reservers):
            plugin.unreserve(state, pod, node)

    def pre_bind(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        """Run PreBind plugins; their decisions are in ``state.decisions``."""
        for plugin in self.pre_binders:
            status = plugin.pre_bind(state, pod, node)
            if not status.ok:
                return fw.Status(status.code, status.reasons, plugin.name)
        return fw.SUCCESS


_NO_STATE = fw.CycleState()


def _weighted(scores: list[int], weight: int) -> list[int]:
    return scores if weight == 1 else list(map(mul, scores, repeat(weight, len(scores))))


def _as(plugin: fw.Plugin, kind: object) -> Any:
    if not isinstance(kind, type) or not isinstance(plugin, kind):
        raise TypeError(f"plugin {plugin.name} does not implement {kind}")
    return plugin
