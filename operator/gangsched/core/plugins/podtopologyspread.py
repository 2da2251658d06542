"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score.

PreFilter, per DoNotSchedule constraint: the *eligible* nodes carry every constraint's
topology key and pass the constraint's inclusion policies (``nodeAffinityPolicy: Honor``,
the default: the pod's nodeSelector and required affinity; ``nodeTaintsPolicy: Honor``:
its tolerations of NoSchedule/NoExecute taints; ``Ignore``: any node). Their values are
the domains; matching pods (the constraint's selector, in the pod's namespace, with
``matchLabelKeys`` merged at the edge) are counted per domain from the placed-pod index,
and those counts kept and brought up to date from its change log.
The minimum over domains is 0 when there are fewer domains than ``minDomains``. Eligible
nodes are cached per (keys, policies, constraints) until a node changes.

Filter: a node without every key fails ``node(s) didn't match pod topology spread
constraints (missing required label)`` (unresolvable); one where
``count(domain) + self-match - min > maxSkew`` for some constraint fails
``node(s) didn't match pod topology spread constraints``.

Score (ScheduleAnyway): for each node to score, ``count * log(domains + 2) + (maxSkew - 1)``
summed over constraints (``scoreForCount``), then reversed min-max to 0..100 (fewer
matching pods is better); nodes lacking a key score 0. ``domains`` is, as
``initPreScoreState`` counts it, the number of nodes scored for the hostname, and for
another key its values among them, a node without the key counting as the value ``""``
(only the system defaults score such nodes). PreScore skips when no pod matches and
every node to score has every key: all would score alike. When the cycle knows the
nodes' orders (a bin-packing scan's), their label values are read from columns kept per
key, and with a hostname and one other constraint each node's score is worked out once
per value of the other key (the nodes whose hostname holds matching pods one by one);
the strict filter reads the same columns.

Cluster default constraints apply to a pod with none of its own (``defaultingType``
``System``: hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway; ``List``: the
profile's ``defaultConstraints``) whose controller is a ReplicaSet, ReplicationController
or StatefulSet (:attr:`~gangsched.core.values.placement_terms.Placement.default_spread`), as in
kube-scheduler, which selects with the selectors of that controller and of the Services
selecting the pod: a Job's pods, bare pods and gang members get none. gangsched does not
watch those objects and selects with the pod's own labels (without the per-pod keys a
StatefulSet adds, such as ``statefulset.kubernetes.io/pod-name``) instead; Services
alone give no default constraints. A pod without labels gets none.
"""

from __future__ import annotations

import bisect
import enum
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import add, itemgetter

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.constraints import (
    ConstraintError,
    matches_affinity,
    matches_node_selector,
    untolerated_taints,
)
from gangsched.core.values.placement_terms import (
    InclusionPolicy,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.selectors import LabelSelector

NAME = "PodTopologySpread"
REASON = "node(s) didn't match pod topology spread constraints"
LABEL_REASON = "node(s) didn't match pod topology spread constraints (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
PER_POD_KEYS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                          "controller-revision-hash"})
"""Labels a StatefulSet's pods carry that its selector does not (a ReplicaSet's selector
does include ``pod-template-hash``)."""
BY_VALUE_RATIO = 8
"""Scoring sums per value of a key (see ``PodTopologySpread._by_value``) pays when there
are at least this many nodes per sum to work out; below, the per-node lists are faster."""


class Defaulting(enum.StrEnum):
    SYSTEM = "System"
    LIST = "List"

    @classmethod
    def from_string(cls, text: str) -> Defaulting:
        for member in cls:
            if member.value == text:
                return member
        raise ConstraintError(f'unknown defaultingType "{text}" (accepted: System, List)')


SYSTEM_DEFAULTS = (
    SpreadConstraint(3, HOSTNAME, WhenUnsatisfiable.SCHEDULE_ANYWAY),
    SpreadConstraint(5, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY),
)


@dataclass(frozen=True, slots=True)
class SpreadArgs:
    defaulting: Defaulting = Defaulting.SYSTEM
    default_constraints: tuple[SpreadConstraint, ...] = ()

    def __post_init__(self) -> None:
        if self.defaulting is Defaulting.SYSTEM and self.default_constraints:
            raise ConstraintError("defaultConstraints must be empty when defaultingType is "
                                  "System", field="defaultConstraints")


@dataclass(slots=True)
class _Counts:
    constraints: list[SpreadConstraint]
    keys: tuple[str, ...]
    counts: list[dict[str, int]]
    minimum: list[int]
    self_match: list[int]
    too_many: list[tuple[str, frozenset[str] | None]]
    """Per constraint, its key and the domains where one more pod would exceed maxSkew
    (``count + self-match - min > maxSkew``), None when every domain would: Filter's
    lookup."""
    allowed: list[tuple[list[str | None], frozenset[str | None]]] = field(
        default_factory=list)
    """Per constraint (but one refusing every domain), the key's column (every node's
    value by order) and the values no node is refused for: the batch filter's lookup."""


@dataclass(slots=True)
class _Counted:
    """Domain counts kept for :meth:`PodTopologySpread._count`: the eligible nodes they
    were counted over, where the pod index's change log stood, and the counts."""

    eligible: dict[str, str]
    mark: tuple[int, int]
    counts: dict[str, int]


_MISSING_LABEL = fw.unresolvable(LABEL_REASON)
_SKEWED = fw.unschedulable(REASON)


class PodTopologySpread:
    name = NAME
    static = False
    scan_cost = 10

    def __init__(self, args: SpreadArgs) -> None:
        self.args = args
        self._eligible: dict[object, tuple[dict[str, str], int]] = {}
        self._epoch = -1
        self._values: dict[str, int] = {}
        self._values_epoch = -1
        self._columns: dict[str, tuple[list[str | None], bool]] = {}
        """Per label key, every node's value by order (see :meth:`_column`)."""
        self._columns_epoch = -1
        self._holders: dict[str, dict[str | None, list[int]]] = {}
        """Per label key, the orders of the nodes with each value (kept with the columns)."""
        self._domains: dict[str, frozenset[str | None]] = {}
        """Per label key, the values its column has (kept with the columns)."""
        self._counted: dict[tuple[LabelSelector, str, int], _Counted] = {}
        """Matching pods per domain, per selector, namespace and eligible nodes (see
        :meth:`_count`)."""
        self._defaults: dict[tuple[tuple[str, str], ...], list[SpreadConstraint]] = {}
        """The default constraints of pods with these labels (built once per label set)."""

    @property
    def defaults_filter(self) -> bool:
        """Do the default constraints filter nodes (a ``List`` with a DoNotSchedule one)?
        The System defaults only score."""
        return (self.args.defaulting is Defaulting.LIST
                and any(c.when_unsatisfiable is WhenUnsatisfiable.DO_NOT_SCHEDULE
                        for c in self.args.default_constraints))

    def constraints_of(self, pod: PodInfo, kind: WhenUnsatisfiable) -> list[SpreadConstraint]:
        own = pod.placement.spread
        if own:
            return [c for c in own if c.when_unsatisfiable is kind]
        if not pod.placement.default_spread or not pod.labels:
            return []
        key = tuple(pod.labels.items())
        found = self._defaults.get(key)
        if found is None:
            if len(self._defaults) >= 4096:
                self._defaults.clear()
            found = self._defaults[key] = self._defaults_for(pod)
        return [c for c in found if c.when_unsatisfiable is kind]

    def _defaults_for(self, pod: PodInfo) -> list[SpreadConstraint]:
        defaults = (SYSTEM_DEFAULTS if self.args.defaulting is Defaulting.SYSTEM
                    else self.args.default_constraints)
        labels = {k: v for k, v in pod.labels.items() if k not in PER_POD_KEYS}
        if not defaults or not labels:
            return []
        selector = LabelSelector.build(labels)
        return [SpreadConstraint(c.max_skew, c.topology_key, c.when_unsatisfiable, selector,
                                 c.min_domains, c.node_affinity_policy, c.node_taints_policy)
                for c in defaults]

    def _values_of(self, snapshot: fw.Snapshot, key: str) -> int:
        """How many values ``key`` has over all nodes, a node without it counting as
        ``""`` (kept until a node changes)."""
        if snapshot.node_epoch != self._values_epoch:
            self._values.clear()
            self._values_epoch = snapshot.node_epoch
        found = self._values.get(key)
        if found is None:
            found = self._values[key] = len(
                {state.labels.get(key, "") for state in snapshot.sorted_nodes()})
        return found

    def _column(self, snapshot: fw.Snapshot, key: str) -> tuple[list[str | None], bool]:
        """Every node's value of ``key`` by :attr:`~NodeState.order` (None: no such
        label), and whether some node lacks it (kept until a node changes)."""
        if snapshot.node_epoch != self._columns_epoch:
            self._columns.clear()
            self._holders.clear()
            self._domains.clear()
            self._columns_epoch = snapshot.node_epoch
        found = self._columns.get(key)
        if found is None:
            column = [state.labels.get(key) for state in snapshot.sorted_nodes()]
            found = self._columns[key] = (column, None in column)
        return found

    def _domains_of(self, snapshot: fw.Snapshot,
                    key: str) -> tuple[list[str | None], frozenset[str | None]]:
        """The column of ``key`` and the values it has (without None)."""
        column = self._column(snapshot, key)[0]
        values = self._domains.get(key)
        if values is None:
            values = self._domains[key] = frozenset(column) - {None}
        return column, values

    def _holders_of(self, snapshot: fw.Snapshot, key: str) -> dict[str | None, list[int]]:
        """The orders of the nodes with each value of ``key``, ascending."""
        column = self._column(snapshot, key)[0]
        found = self._holders.get(key)
        if found is None:
            found = self._holders[key] = {}
            for order, value in enumerate(column):
                found.setdefault(value, []).append(order)
        return found

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

    def _eligible_nodes(self, snapshot: fw.Snapshot, pod: PodInfo, c: SpreadConstraint,
                        keys: tuple[str, ...]) -> tuple[dict[str, str], int]:
        """Eligible node names with their value of ``c.topology_key``, and the number of
        domains (cached until a node changes)."""
        if snapshot.node_epoch != self._epoch:
            self._eligible.clear()
            self._counted.clear()  # counted over the eligible nodes of before
            self._epoch = snapshot.node_epoch
        pc = pod.constraints
        honor_affinity = c.node_affinity_policy is InclusionPolicy.HONOR
        honor_taints = c.node_taints_policy is InclusionPolicy.HONOR
        cache_key = (keys, c.topology_key,
                     (pc.node_selector, pc.affinity) if honor_affinity else None,
                     pc.tolerations if honor_taints else None)
        cached = self._eligible.get(cache_key)
        if cached is None:
            found: dict[str, str] = {}
            for state in snapshot.sorted_nodes():
                node = state.node
                labels = node.labels
                if not all(key in labels for key in keys):
                    continue
                if honor_affinity and not (
                        matches_node_selector(dict(pc.node_selector), labels)
                        and matches_affinity(pc.affinity, labels, node.name)):
                    continue
                if honor_taints and node.taints and untolerated_taints(pc.tolerations,
                                                                        node.taints):
                    continue
                found[node.name] = labels[c.topology_key]
            cached = self._eligible[cache_key] = (found, len(set(found.values())))
        return cached

    def _count(self, snapshot: fw.Snapshot, pod: PodInfo, c: SpreadConstraint,
               eligible: dict[str, str]) -> dict[str, int]:
        """Matching pods per domain, for the domains that have any (a copy of its own).

        Kept per selector, namespace and eligible nodes, and brought up to date from the
        pod index's change log (``PodIndex.changed_since``): the pods added and removed
        since, a terminating one left out as ``PodIndex.per_node`` leaves it out.
        Afresh (the index's per-node counts added up by domain) when the log was
        forgotten or holds more than the counts."""
        selector = c.selector
        if selector is None:
            return {}
        index = snapshot.pod_index
        key = (selector, pod.namespace, id(eligible))
        kept = self._counted.get(key)
        if kept is not None and kept.eligible is eligible:
            changes = index.changed_since(kept.mark)
            if changes is not None and len(changes) <= 2 * len(kept.counts) + 32:
                counts = kept.counts
                for placed, delta in changes:
                    if placed.terminating or placed.namespace != pod.namespace:
                        continue
                    value = eligible.get(placed.node)
                    if value is None or not selector.matches(placed.labels):
                        continue
                    left = counts.get(value, 0) + delta
                    if left > 0:
                        counts[value] = left
                    else:
                        counts.pop(value, None)
                kept.mark = index.mark()
                return dict(counts)
        counts = {}
        for node, number in index.per_node(selector, pod.namespace).items():
            value = eligible.get(node)
            if value is not None:
                counts[value] = counts.get(value, 0) + number
        if len(self._counted) >= 4096:
            self._counted.clear()
        self._counted[key] = _Counted(eligible, index.mark(), counts)
        return dict(counts)

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        constraints = self.constraints_of(pod, WhenUnsatisfiable.DO_NOT_SCHEDULE)
        if not constraints:
            return fw.SKIP
        keys = tuple(sorted({c.topology_key for c in constraints}))
        found = _Counts(constraints, keys, [], [], [], [])
        for c in constraints:
            eligible, domains = self._eligible_nodes(snapshot, pod, c, keys)
            counts = self._count(snapshot, pod, c, eligible)
            found.counts.append(counts)
            few = c.min_domains is not None and domains < c.min_domains
            empty = len(counts) < domains  # some domain has no matching pod
            minimum = 0 if few or empty or not counts else min(counts.values())
            found.minimum.append(minimum)
            self_match = 1 if c.selector is not None and c.selector.matches(pod.labels) else 0
            found.self_match.append(self_match)
            limit = c.max_skew + minimum - self_match
            too_many = None if limit < 0 else frozenset(
                value for value, count in counts.items() if count > limit)
            found.too_many.append((c.topology_key, too_many))
            if too_many is not None:
                column, values = self._domains_of(snapshot, c.topology_key)
                found.allowed.append((column, values - too_many))
        state.write(NAME, found)
        return fw.SUCCESS

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        """In constraint order, as kube-scheduler: a missing key is unresolvable, a domain
        one more pod would skew too much unschedulable."""
        found = state.data.get(NAME)
        if not isinstance(found, _Counts):
            return fw.SUCCESS
        labels = node.labels
        for key, too_many in found.too_many:
            value = labels.get(key)
            if value is None:
                return _MISSING_LABEL
            if too_many is None or value in too_many:
                return _SKEWED
        return fw.SUCCESS

    def filter_nodes(self, state: fw.CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        """:meth:`filter` over ``nodes``: a node passes when it has every key with a
        value outside the constraint's skewed domains."""
        found = state.data.get(NAME)
        if not isinstance(found, _Counts):
            return nodes
        if len(found.allowed) < len(found.too_many):
            return []  # a constraint refuses every domain
        for column, allowed in found.allowed:
            # Each node's value by its order (None: no such label, never allowed).
            nodes = [n for n in nodes if column[n.order] in allowed]
        return nodes

    def verdict_digest(self, state: fw.CycleState, pod: PodInfo) -> object:
        """Per constraint, its key and the domains it refuses (None: every domain)."""
        found = state.data.get(NAME)
        return tuple(found.too_many) if isinstance(found, _Counts) else None

    def refused(self, state: fw.CycleState, pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        """The first constraint's key and the domains where one more pod would skew it
        too much (a node without the key is refused as well)."""
        found = state.data.get(NAME)
        if not isinstance(found, _Counts) or not found.too_many:
            return None
        key, too_many = found.too_many[0]
        return None if too_many is None else (key, too_many)

    def label_verdict(self, state: fw.CycleState,
                      pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        """With one DoNotSchedule constraint: its key and the domains it refuses (a
        node passes when it has the key with another value)."""
        found = state.data.get(NAME)
        if not isinstance(found, _Counts) or len(found.too_many) != 1:
            return None
        key, too_many = found.too_many[0]
        return None if too_many is None else (key, too_many)

    def changed_domains(self, old: object, new: object) -> dict[str, set[str]] | None:
        """The domains refused under one digest and not the other; None when the
        constraints differ, or one refuses every domain and the other not."""
        if not (isinstance(old, tuple) and isinstance(new, tuple)) or len(old) != len(new):
            return None
        changed: dict[str, set[str]] = {}
        for (key, before), (key_after, after) in zip(old, new, strict=True):
            if key != key_after:
                return None
            if before is None or after is None:
                if before is after:
                    continue
                return None
            if before != after:
                changed.setdefault(key, set()).update(before ^ after)
        return changed

    # --- scoring ---------------------------------------------------------------------------

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
                size = len(labels) if values is None else len(nodes)
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
    0..100 (fewer matching pods is better), as :meth:`PodTopologySpread.normalize`."""
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


def factory(args: object | None) -> PodTopologySpread:
    if args is None:
        return PodTopologySpread(SpreadArgs())
    if not isinstance(args, SpreadArgs):
        raise TypeError("PodTopologySpread takes SpreadArgs")
    return PodTopologySpread(args)
