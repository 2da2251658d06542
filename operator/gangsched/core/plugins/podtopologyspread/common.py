"""What PodTopologySpread's PreFilter and PreScore share (kube-scheduler's ``common.go``).

The arguments and the cluster default constraints; each node's value of a label key, by
node order, kept in a column until a node changes; the nodes eligible for a constraint
(its inclusion policies) and the matching pods per domain over them, kept and brought up
to date from the placed-pod index's change log.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from gangsched.core.framework import interface as fw
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
class _Counted:
    """Domain counts kept for :meth:`SpreadCommon._count`: the eligible nodes they
    were counted over, where the pod index's change log stood, and the counts."""

    eligible: dict[str, str]
    mark: tuple[int, int]
    counts: dict[str, int]


class SpreadCommon:
    """The plugin's arguments and what it keeps between cycles; its PreFilter and Filter
    are :class:`~.filtering.SpreadFiltering`'s, its PreScore and Score
    :class:`~.scoring.SpreadScoring`'s."""

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
