"""PodTopologySpread's PreScore, Score and NormalizeScore (kube-scheduler's ``scoring.go``).

The plain path sums each node's terms from its labels (:meth:`SpreadScoring.score_nodes`,
:meth:`SpreadScoring._sums`). Beside it, two paths that must give the same scores: when
the cycle knows the nodes' orders (a carried bin-packing scan's), each node's values are
read from the columns kept per key (:class:`_Picked`); and with a hostname and one other
constraint, every node whose hostname holds no matching pod scores as its value of the
other key does, so that score is worked out once per value (a zone's, say) and the few
nodes with matching pods one by one (:meth:`SpreadScoring._by_value`).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from operator import add, itemgetter

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.plugins.podtopologyspread.common import (
    HOSTNAME,
    NAME,
    Defaulting,
    SpreadCommon,
)
from gangsched.core.values.placement_terms import SpreadConstraint, WhenUnsatisfiable

BY_VALUE_RATIO = 8
"""Scoring sums per value of a key (see ``SpreadScoring._by_value``) pays when there
are at least this many nodes per sum to work out; below, the per-node lists are faster."""


class SpreadScoring(SpreadCommon):
    """PreScore, Score and NormalizeScore, the plain path and the two kept beside it."""

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Skips a pod without ScheduleAnyway constraints (its own or the defaults)."""
        return not self.constraints_of(pod, WhenUnsatisfiable.SCHEDULE_ANYWAY)

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        constraints = self.constraints_of(pod, WhenUnsatisfiable.SCHEDULE_ANYWAY)
        if not constraints:
            return fw.SKIP
        # System defaults do not require a node to carry every key (kube-scheduler's
        # requireAllTopologies): a node scores the constraints whose key it has.
        all_keys = bool(pod.placement.spread) or self.args.defaulting is not Defaulting.SYSTEM
        keys = tuple(sorted({c.topology_key for c in constraints})) if all_keys else ()
        found = [self._count(snapshot, pod, c, self._eligible_nodes(
            snapshot, pod, c, keys or (c.topology_key,))[0]) for c in constraints]
        every = tuple(sorted({c.topology_key for c in constraints}))
        values = self._gathered(state, snapshot, nodes, keys)
        if not any(found):
            # No matching pod anywhere: every node that has every key scores the same
            # (the sum of maxSkew - 1), which adds the same to every node's total.
            if values is not None:
                if all(not self._column(snapshot, key)[1] or None not in values[key]
                       for key in every):
                    return fw.SKIP
            elif all(set(every) <= n.labels.keys() for n in nodes):
                return fw.SKIP
        labels: list[Mapping[str, str]] = []
        if values is None:
            labels = [n.labels for n in nodes]
            if keys:
                labels = [lb for lb in labels if all(k in lb for k in keys)]
        tables: list[tuple[SpreadConstraint, dict[str, int], float]] = []
        for c, counts in zip(constraints, found, strict=True):
            # The domains of the nodes to score weigh the counts, as initPreScoreState
            # counts them: for the hostname, the nodes scored; for another key, its
            # values among them, a node without the key counting as the value "".
            key = c.topology_key
            if key == HOSTNAME:
                size = (len(labels) if values is None
                        else state.represented or len(nodes))
            elif values is not None:
                seen: set[str | None] = set(values.distinct(key))
                if None in seen:
                    seen.discard(None)
                    seen.add("")
                size = len(seen)
            else:
                # Counted until every value the nodes have is seen (zones are few).
                limit = self._values_of(snapshot, key)
                seen = set()
                for lb in labels:
                    seen.add(lb.get(key, ""))
                    if len(seen) >= limit:
                        break
                size = len(seen)
            tables.append((c, counts, math.log(size + 2)))
        state.write(NAME + "/score", (keys, tables))
        state.write(NAME + "/labels", (nodes, labels, values))
        if values is not None:
            state.write(NAME + "/sparse",
                        (nodes, self._sparse(state, snapshot, constraints, found, values)))
        return fw.SUCCESS

    def score_classes(self, state: fw.CycleState, pod: PodInfo,
                      snapshot: fw.Snapshot) -> tuple[str | None, list[int]] | None:
        """With a hostname constraint and at most one other key, every node of the
        cluster having each key: a node whose hostname holds no matching pod sums the
        empty hostname domain's term and its value's of the other key, so nodes of one
        value score alike; the nodes whose hostname holds matching pods are scored one
        by one (their orders). PreScore reads the hostname's weight from
        ``state.represented``, the other key's from the values of the nodes scored:
        one of each class has every value the feasible nodes have."""
        constraints = self.constraints_of(pod, WhenUnsatisfiable.SCHEDULE_ANYWAY)
        every = {c.topology_key for c in constraints}
        others = every - {HOSTNAME}
        if not constraints or len(others) > 1:
            return None
        if any(self._column(snapshot, key)[1] for key in every):
            return None  # a node without a key: ignored, or its term is 0.0
        all_keys = bool(pod.placement.spread) or self.args.defaulting is not Defaulting.SYSTEM
        keys = tuple(sorted(every)) if all_keys else ()
        holders = self._holders_of(snapshot, HOSTNAME) if HOSTNAME in every else {}
        orders: set[int] = set()
        for c in constraints:
            if c.topology_key == HOSTNAME:
                eligible = self._eligible_nodes(snapshot, pod, c, keys or (HOSTNAME,))[0]
                for host in self._count(snapshot, pod, c, eligible):
                    orders.update(holders.get(host, ()))
        return next(iter(others), None), sorted(orders)

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        return self.score_nodes(state, pod, (node,))[0]

    def score_normalized(self, state: fw.CycleState, pod: PodInfo,
                         nodes: Sequence[NodeState], weight: int = 1) -> list[int]:
        """:meth:`score_nodes` then :meth:`normalize`, times ``weight``, each distinct
        sum rounded, normalized and weighted once."""
        by_value = self._by_value(state, nodes, weight)
        if by_value is not None:
            return by_value
        raw, labels, keys = self._sums(state, nodes)
        if not raw:
            return [0] * len(nodes)
        rounded = {value: go_round(value) for value in set(raw)}
        if keys:  # a node lacking a key every node must have is ignored: 0
            scores = [rounded[total] if all(k in lb for k in keys) else -1
                      for total, lb in zip(raw, labels, strict=True)]
            self.normalize(state, pod, scores)
            return scores if weight == 1 else [score * weight for score in scores]
        final = _normalized(rounded, weight)
        return list(map(final.__getitem__, raw))

    def _by_value(self, state: fw.CycleState, nodes: Sequence[NodeState],
                  weight: int) -> list[int] | None:
        """:meth:`score_normalized` when PreScore found where the nodes are whose
        hostname has matching pods (see :meth:`_sparse`) and there are at most two
        constraints, one on the hostname and one on another key: every other node sums
        the empty hostname domain's term and its value's of the other key, so its score
        is worked out once per value, and those nodes' one by one. (Two terms add up
        the same in either order.) None: not so, or about as many values as nodes."""
        sparse, found, kept = (state.read(NAME + suffix)
                               for suffix in ("/sparse", "/score", "/labels"))
        if not (isinstance(sparse, tuple) and sparse[0] is nodes and sparse[1] is not None
                and isinstance(found, tuple) and isinstance(kept, tuple) and nodes):
            return None
        positions: list[int] = sparse[1]
        tables: list[tuple[SpreadConstraint, dict[str, int], float]] = found[1]
        host_terms: dict[str, float] | None = None
        host_empty = 0.0
        other: str | None = None
        other_terms: dict[str, float] = {}
        other_empty = 0.0
        for c, counts, log in tables:
            # scoreForCount: float64(cnt)*weight + float64(maxSkew-1)
            skew = float(c.max_skew - 1)
            by_domain = {value: count * log + skew for value, count in counts.items()}
            if c.topology_key == HOSTNAME and host_terms is None:
                host_terms, host_empty = by_domain, 0 * log + skew
            elif c.topology_key != HOSTNAME and other is None:
                other, other_terms, other_empty = c.topology_key, by_domain, 0 * log + skew
            else:
                return None
        values: Sequence[str | None] = kept[2][other] if other is not None else ()
        distinct = kept[2].distinct(other) if other is not None else {None}
        if (len(distinct) + len(positions)) * BY_VALUE_RATIO > len(nodes):
            return None  # about as many sums to work out as nodes: the lists are faster
        # A node without the other key adds nothing for it (0.0 + a term is the term).
        term = {value: 0.0 if value is None else other_terms.get(value, other_empty)
                for value in distinct}
        base = term if host_terms is None else {
            value: host_empty + found_term for value, found_term in term.items()}
        patched: dict[int, float] = {}
        if host_terms is not None:
            for at in positions:  # every node has a hostname (see _sparse)
                value = values[at] if other is not None else None
                patched[at] = (host_terms.get(nodes[at].labels[HOSTNAME], host_empty)
                               + term[value])
        sums = {base[value] for value in distinct
                if not patched or self._unpatched(values, value, patched, len(nodes))}
        rounded = {raw: go_round(raw) for raw in {*sums, *patched.values()}}
        final = _normalized(rounded, weight)
        by_value = {value: final.get(raw, 0) for value, raw in base.items()}
        scores = (list(map(by_value.__getitem__, values)) if other is not None
                  else [by_value[None]] * len(nodes))
        for at, raw in patched.items():
            scores[at] = final[raw]
        return scores

    @staticmethod
    def _unpatched(values: Sequence[str | None], value: str | None, patched: Mapping[int, float],
                   count: int) -> bool:
        """Has a node not in ``patched`` the value ``value`` (``values`` empty: any)?"""
        if not values:
            return len(patched) < count
        at = -1
        while True:
            try:
                at = values.index(value, at + 1)
            except ValueError:
                return False
            if at not in patched:
                return True

    def score_nodes(self, state: fw.CycleState, pod: PodInfo,
                    nodes: Sequence[NodeState]) -> list[int]:
        """Per node, the sum over constraints of ``count * weight + maxSkew - 1`` (each
        domain's term worked out once, then looked up), rounded as Go rounds; -1 for a
        node lacking a key every node must have."""
        raw, labels, keys = self._sums(state, nodes)
        if raw is None:
            return [-1] * len(nodes)
        rounded = {value: go_round(value) for value in set(raw)}
        if keys:
            return [rounded[total] if all(k in lb for k in keys) else -1
                    for total, lb in zip(raw, labels, strict=True)]
        return list(map(rounded.__getitem__, raw))

    @staticmethod
    def _sums(state: fw.CycleState, nodes: Sequence[NodeState]
              ) -> tuple[list[float] | None, Sequence[Mapping[str, str]], tuple[str, ...]]:
        """Per node, the sum of its constraints' terms (None without a PreScore state),
        the nodes' labels, and the keys every node must have (none when PreScore found
        that every node has them)."""
        found = state.read(NAME + "/score")
        if not isinstance(found, tuple):
            return None, [], ()
        keys, tables = found
        # Per constraint, each domain's term worked out once: the same float operations
        # as term by term per node. A node without the key adds 0.0, which leaves a
        # sum as it was (the terms are never negative: maxSkew is at least 1).
        parts: list[tuple[str, dict[str | None, float], float]] = []
        for c, counts, weight in tables:
            # scoreForCount: float64(cnt)*weight + float64(maxSkew-1)
            skew = float(c.max_skew - 1)
            terms: dict[str | None, float] = {
                value: count * weight + skew for value, count in counts.items()}
            terms[None] = 0.0
            parts.append((c.topology_key, terms, 0 * weight + skew))
        kept = state.read(NAME + "/labels")
        columns: Mapping[str, Sequence[str | None]] | None = None
        labels: Sequence[Mapping[str, str]] = ()
        if isinstance(kept, tuple) and kept[0] is nodes:  # PreScore's, of these very nodes
            columns = kept[2]
            if columns is not None:
                keys = ()  # every node has them
            elif not keys:
                labels = kept[1]
        if columns is None and not labels:
            labels = [n.labels for n in nodes]
        count = len(nodes)
        raw: list[float] | None = None
        for key, terms, empty in parts:
            # Each node's term: its value's, the empty domain's, or 0.0 without the key.
            values = columns[key] if columns is not None else [lb.get(key) for lb in labels]
            added = map(terms.get, values, repeat(empty, count))
            raw = list(added) if raw is None else list(map(add, raw, added))
        return (raw if raw is not None else [0.0] * count), labels, keys

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        values = set(scores)
        kept = [value for value in values if value >= 0]
        if not kept:
            scores[:] = [0] * len(scores)
            return
        low, high = min(kept), max(kept)
        top = fw.MAX_NODE_SCORE
        # Each distinct score worked out once; an ignored node (below 0) scores 0.
        scaled = {value: 0 if value < 0 else top if high == 0
                  else top * (high + low - value) // high for value in values}
        scores[:] = [scaled[value] for value in scores]

    def _sparse(self, state: fw.CycleState, snapshot: fw.Snapshot,
                constraints: list[SpreadConstraint], counts: list[dict[str, int]],
                values: Mapping[str, Sequence[str | None]]) -> list[int] | None:
        """Where the nodes (known by their orders, ascending) are whose hostname has
        matching pods, when the other constraints share one key and every node has a
        hostname: every other node's hostname terms are the empty domain's, and its
        sum follows from its value of that one key (see :meth:`score_normalized`).
        None: not so."""
        orders = state.orders
        if orders is None or len({c.topology_key for c in constraints} - {HOSTNAME}) > 1:
            return None
        positions: list[int] = []
        if any(c.topology_key == HOSTNAME for c in constraints):
            if self._column(snapshot, HOSTNAME)[1] and None in values[HOSTNAME]:
                return None  # a node without a hostname: its term is 0.0, not the empty one
            holders = self._holders_of(snapshot, HOSTNAME)
            count = len(orders)
            hosts = {value for c, found in zip(constraints, counts, strict=True)
                     if c.topology_key == HOSTNAME for value in found}
            for host in hosts:
                for order in holders.get(host, ()):
                    at = bisect.bisect_left(orders, order)
                    if at < count and orders[at] == order:
                        positions.append(at)
        return positions

    def _gathered(self, state: fw.CycleState, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState], every: tuple[str, ...]) -> _Picked | None:
        """Each node's value of a key (in the nodes' order), read from the key's column
        by the nodes' orders when first asked, when the cycle knows the orders and each
        of ``nodes`` has each of ``every`` (the keys a node must have to be scored);
        else None."""
        orders = state.orders
        if orders is None or len(orders) != len(nodes) or not orders:
            return None
        found = _Picked(orders, lambda key: self._column(snapshot, key)[0])
        if any(self._column(snapshot, key)[1] and None in found[key] for key in every):
            return None
        return found


class _Picked(dict[str, Sequence[str | None]]):
    """Each scored node's value of a label key, in the nodes' order, read from the key's
    column (every node's value by order) by the nodes' orders when first asked."""

    __slots__ = ("_column", "_distinct", "_pick")

    def __init__(self, orders: Sequence[int],
                 column: Callable[[str], list[str | None]]) -> None:
        super().__init__()
        self._column = column
        self._pick: Callable[[list[str | None]], Sequence[str | None]]
        if len(orders) > 1:
            self._pick = itemgetter(*orders)
        else:
            at = orders[0]

            def one(values: list[str | None]) -> Sequence[str | None]:
                return (values[at],)

            self._pick = one
        self._distinct: dict[str, frozenset[str | None]] = {}

    def __missing__(self, key: str) -> Sequence[str | None]:
        found = self[key] = self._pick(self._column(key))
        return found

    def distinct(self, key: str) -> frozenset[str | None]:
        """The values of ``key`` among the nodes (None: a node without it)."""
        found = self._distinct.get(key)
        if found is None:
            found = self._distinct[key] = frozenset(self[key])
        return found


def _normalized(rounded: Mapping[float, int], weight: int) -> dict[float, int]:
    """Each sum's score, times ``weight``, from the sums rounded: reversed min-max to
    0..100 (fewer matching pods is better), as :meth:`SpreadScoring.normalize`."""
    low, high = min(rounded.values()), max(rounded.values())
    top = fw.MAX_NODE_SCORE
    return {value: weight * (top if high == 0 else top * (high + low - score) // high)
            for value, score in rounded.items()}


def go_round(value: float) -> int:
    """``value`` rounded half away from zero, as Go's ``math.Round`` (kube-scheduler's
    ``PodTopologySpread.Score`` returns ``int64(math.Round(score))``); Python's ``round``
    rounds half to even (2.5 gives 2, Go gives 3)."""
    if value >= 0:
        return math.floor(value + 0.5)
    return -math.floor(-value + 0.5)
