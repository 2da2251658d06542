"""PodTopologySpread's PreFilter and Filter (kube-scheduler's ``filtering.go``).

PreFilter counts the matching pods per domain of each DoNotSchedule constraint and keeps,
per constraint, the domains where one more pod would exceed maxSkew; Filter looks the
node's value up in them. The batch filter (:meth:`SpreadFiltering.filter_nodes`) reads
each node's value from the key's column by its order instead, and must pass the nodes
:meth:`SpreadFiltering.filter` passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.plugins.podtopologyspread.common import (
    LABEL_REASON,
    NAME,
    REASON,
    SpreadCommon,
)
from gangsched.core.values.placement_terms import SpreadConstraint, WhenUnsatisfiable


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


_MISSING_LABEL = fw.unresolvable(LABEL_REASON)
_SKEWED = fw.unschedulable(REASON)


class SpreadFiltering(SpreadCommon):
    """PreFilter, Filter and what the cycle asks of a filter's verdict."""

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
