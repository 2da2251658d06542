"""InterPodAffinity: required pod (anti-)affinity filters, preferred terms score.

PreFilter counts matching placed pods per topology pair ``(topologyKey, value)`` from
the placed-pod index (never a scan of every pod); the counts of the last pod of the
same shape are kept and brought up to date with the pods placed and gone since (the
index's change log), while no node or namespace changed:

* for the pod's required affinity: placed pods matching *all* its affinity terms;
* for the pod's required anti-affinity: placed pods matching each term;
* for the symmetric check: placed pods whose required anti-affinity term selects this
  pod (the term's namespaces are judged from the placed pod's namespace).

It skips when the pod has no required terms and no placed pod's anti-affinity selects
it. Filter is then a lookup of the node's label values, in kube-scheduler's order:

1. affinity: every term's topology key must be on the node with a matching pod in that
   domain -- unless no pod in the cluster matches and the pod matches its own terms
   (the first pod of a group that wants to be together). Else
   ``node(s) didn't match pod affinity rules`` (unresolvable);
2. anti-affinity: no matching pod in the node's domain of any term, else
   ``node(s) didn't match pod anti-affinity rules``;
3. existing pods' anti-affinity: the node is in no domain they forbid, else
   ``node(s) didn't satisfy existing pods anti-affinity rules``.

Score sums, per topology pair, the weights of the pod's preferred terms matched by
placed pods (anti-affinity negative), of placed pods' preferred terms selecting this
pod, and ``hardPodAffinityWeight`` for placed pods' required affinity selecting it;
a node scores the pairs it is in, normalized min-max to 0..100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podindex import PlacedPod, TermKind
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.placement_terms import AffinityTerm

NAME = "InterPodAffinity"
AFFINITY_REASON = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_REASON = "node(s) didn't satisfy existing pods anti-affinity rules"

Pair = tuple[str, str]
_AFFINITY = fw.unresolvable(AFFINITY_REASON)
_ANTI_AFFINITY = fw.unschedulable(ANTI_AFFINITY_REASON)
_EXISTING_ANTI_AFFINITY = fw.unschedulable(EXISTING_ANTI_AFFINITY_REASON)


@dataclass(frozen=True, slots=True)
class AffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False


@dataclass(slots=True)
class _FilterState:
    existing_anti: dict[Pair, int] = field(default_factory=dict)
    affinity: dict[Pair, int] = field(default_factory=dict)
    anti: dict[Pair, int] = field(default_factory=dict)
    matches_own_terms: bool = False
    """Does the pod match all its own required affinity terms (the first of a group)?"""
    forbidden: dict[str, set[str]] | None = None
    """The values, per topology key, of the domains the anti-affinity of the pod or of
    placed pods forbids (worked out once, for :meth:`InterPodAffinity.filter_nodes`)."""


def _selects(term: AffinityTerm, own_ns: str, pod: PlacedPod,
             ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
    return (term.selector is not None and term.selects_namespace(own_ns, pod.namespace, ns_labels)
            and term.selector.matches(pod.labels))


def _matches_own_terms(pod: PodInfo, ns_labels: Mapping[str, Mapping[str, str]]) -> bool:
    """Does ``pod`` match every one of its required affinity terms, its own namespace
    judged by each term's ``namespaces`` and ``namespaceSelector`` against the labels of
    the namespaces observed? As kube-scheduler's ``podMatchesAllAffinityTerms``
    (interpodaffinity/filtering.go), whose PreFilter first merges the namespaces a
    term's ``namespaceSelector`` selects into its ``namespaces``
    (``mergeAffinityTermNamespacesIfNotEmpty``): a term that selects the pod's own
    namespace by label lets the first pod of a self-affine group in. No terms: False."""
    terms = pod.placement.affinity
    return bool(terms) and all(
        t.selector is not None and t.selector.matches(pod.labels)
        and t.selects_namespace(pod.namespace, pod.namespace, ns_labels)
        for t in terms)


def _add(counts: dict[Pair, int], snapshot: fw.Snapshot, node: str, key: str, by: int) -> None:
    """Count ``by`` more pods in the node's domain of ``key``; a pair at 0 is dropped
    (the filter reads which pairs are counted)."""
    state = snapshot.node_state(node)
    if state is None:
        return
    value = state.labels.get(key)
    if value is not None:
        pair = (key, value)
        left = counts.get(pair, 0) + by
        if left:
            counts[pair] = left
        else:
            del counts[pair]


@dataclass(slots=True)
class _Kept:
    stamp: tuple[int, int]
    """The node and namespace epochs the counts were made under."""
    mark: tuple[int, int]
    """The placed-pod index's change log, read up to here."""
    found: _FilterState


class InterPodAffinity:
    name = NAME
    static = False
    scan_cost = 10

    def __init__(self, args: AffinityArgs) -> None:
        self.args = args
        self._kept: dict[object, _Kept] = {}
        """The counts of the last PreFilter of each pod shape (see :meth:`pre_filter`)."""

    def pre_filter(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot) -> fw.Status:
        """Count the topology pairs (see the module docstring). The counts of the last
        pod of the same shape are brought up to date with the pods placed and gone since
        (sums over pods, each added or taken away), while no node or namespace changed."""
        index = snapshot.pod_index
        p = pod.placement
        if not p.affinity and not p.anti_affinity and not index.required_anti:
            return fw.SKIP  # no term of its own, and no placed pod's anti-affinity to meet
        key = (p, pod.namespace, tuple(sorted(pod.labels.items())))
        stamp = (snapshot.node_epoch, snapshot.namespace_epoch)
        kept = self._kept.get(key)
        changes = (index.changed_since(kept.mark)
                   if kept is not None and kept.stamp == stamp else None)
        if kept is None or changes is None:
            found = self._count_all(pod, snapshot)
            if len(self._kept) >= 1024:
                self._kept.clear()
            kept = self._kept[key] = _Kept(stamp, index.mark(), found)
        else:
            for placed, delta in changes:
                self._count_one(kept.found, pod, placed, delta, snapshot)
            kept.mark = index.mark()
            found = kept.found
        if not p.affinity and not p.anti_affinity and not found.existing_anti:
            return fw.SKIP
        state.write(NAME, _FilterState(dict(found.existing_anti), dict(found.affinity),
                                       dict(found.anti), found.matches_own_terms))
        return fw.SUCCESS

    def _count_one(self, found: _FilterState, pod: PodInfo, placed: PlacedPod, delta: int,
                   snapshot: fw.Snapshot) -> None:
        """Add (``delta`` 1) or take away (-1) what placed pod ``placed`` counts for
        ``pod``: what :meth:`_count_all` counts it for."""
        ns_labels = snapshot.namespace_labels
        labels = pod.labels
        for term in placed.placement.anti_affinity:
            if (term.selector is not None and term.selector.matches(labels)
                    and term.selects_namespace(placed.namespace, pod.namespace, ns_labels)):
                _add(found.existing_anti, snapshot, placed.node, term.topology_key, delta)
        p = pod.placement
        if p.affinity and p.affinity[0].selector is not None and all(
                _selects(t, pod.namespace, placed, ns_labels) for t in p.affinity):
            for term in p.affinity:
                _add(found.affinity, snapshot, placed.node, term.topology_key, delta)
        for term in p.anti_affinity:
            if (term.selector is not None and term.selector.matches(placed.labels)
                    and term.selects_namespace(pod.namespace, placed.namespace, ns_labels)):
                _add(found.anti, snapshot, placed.node, term.topology_key, delta)

    def _count_all(self, pod: PodInfo, snapshot: fw.Snapshot) -> _FilterState:
        """The counts for ``pod`` over every placed pod."""
        index = snapshot.pod_index
        ns_labels = snapshot.namespace_labels
        found = _FilterState()
        if index.required_anti:
            for entry in index.terms_selecting(pod.labels):
                if entry.kind is TermKind.ANTI_AFFINITY and entry.term.selects_namespace(
                        entry.pod.namespace, pod.namespace, ns_labels):
                    _add(found.existing_anti, snapshot, entry.pod.node, entry.term.topology_key, 1)
        p = pod.placement
        if p.affinity:
            found.matches_own_terms = _matches_own_terms(pod, ns_labels)
            first = p.affinity[0]
            if first.selector is not None:
                for other in index.matching(first.selector):
                    if all(_selects(t, pod.namespace, other, ns_labels) for t in p.affinity):
                        for term in p.affinity:
                            _add(found.affinity, snapshot, other.node, term.topology_key, 1)
        for term in p.anti_affinity:
            if term.selector is None:
                continue
            for other in index.matching(term.selector):
                if term.selects_namespace(pod.namespace, other.namespace, ns_labels):
                    _add(found.anti, snapshot, other.node, term.topology_key, 1)
        return found

    def filter(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> fw.Status:
        found = state.data.get(NAME)
        if not isinstance(found, _FilterState):
            return fw.SUCCESS
        labels = node.labels
        p = pod.placement
        if p.affinity and not self._affinity_ok(found, pod, labels):
            return _AFFINITY
        # Filter counts only grow from 1: a pair is counted when it is a key.
        anti = found.anti
        if anti:
            for term in p.anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and (term.topology_key, value) in anti:
                    return _ANTI_AFFINITY
        existing = found.existing_anti
        if existing and not existing.keys().isdisjoint(labels.items()):
            return _EXISTING_ANTI_AFFINITY
        return fw.SUCCESS

    def filter_nodes(self, state: fw.CycleState, pod: PodInfo,
                     nodes: list[NodeState]) -> list[NodeState]:
        """:meth:`filter` over ``nodes``: each check a look-up of one label per node."""
        found = state.data.get(NAME)
        if not isinstance(found, _FilterState):
            return nodes
        p = pod.placement
        if p.affinity:
            nodes = [n for n in nodes if self._affinity_ok(found, pod, n.labels)]
        forbidden = found.forbidden
        if forbidden is None:
            # Every pair of the pod's own anti-affinity is of one of its terms' keys.
            forbidden = found.forbidden = {}
            for key, value in (*found.anti, *found.existing_anti):
                forbidden.setdefault(key, set()).add(value)
        for key, values in forbidden.items():
            nodes = [n for n in nodes if n.labels.get(key) not in values]
        return nodes

    def verdict_digest(self, state: fw.CycleState, pod: PodInfo) -> object:
        """Whether the pod matches its own terms, and the topology pairs with a matching
        pod for its affinity, its anti-affinity and placed pods' anti-affinity."""
        found = state.data.get(NAME)
        if not isinstance(found, _FilterState):
            return None
        return (found.matches_own_terms, frozenset(found.affinity), frozenset(found.anti),
                frozenset(found.existing_anti))

    def refused(self, state: fw.CycleState, pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        """None: a node without a key of an anti-affinity term is not refused for it."""
        return None

    def label_verdict(self, state: fw.CycleState,
                      pod: PodInfo) -> tuple[str, frozenset[str]] | None:
        """None: a node without a term's key is not refused for it."""
        return None

    def changed_domains(self, old: object, new: object) -> dict[str, set[str]] | None:
        """The pairs counted under one digest and not the other; None when whether any
        pod matches the affinity (the first of a group's exception) may have changed."""
        if not (isinstance(old, tuple) and isinstance(new, tuple)):
            return None
        if old[0] != new[0] or bool(old[1]) != bool(new[1]):
            return None
        changed: dict[str, set[str]] = {}
        for before, after in zip(old[1:], new[1:], strict=True):
            if before != after:
                for key, value in before ^ after:
                    changed.setdefault(key, set()).add(value)
        return changed

    @staticmethod
    def _affinity_ok(found: _FilterState, pod: PodInfo, labels: Mapping[str, str]) -> bool:
        exist = True
        for term in pod.placement.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                return False
            if found.affinity.get((term.topology_key, value), 0) <= 0:
                exist = False
        if exist:
            return True
        # No pod anywhere matches: the first of a group may go where it is alone,
        # if it matches its own terms.
        return not found.affinity and found.matches_own_terms

    # --- scoring ---------------------------------------------------------------------------

    def usage_only(self, pod: PodInfo, snapshot: fw.Snapshot) -> bool:
        """Skips a pod without preferred terms when placed pods have no term that
        scores (required anti-affinity only), as :meth:`pre_score` does."""
        index = snapshot.pod_index
        p = pod.placement
        return (not p.affinity_preferred and not p.anti_affinity_preferred
                and index.terms == index.required_anti)

    def pre_score(self, state: fw.CycleState, pod: PodInfo, snapshot: fw.Snapshot,
                  nodes: Sequence[NodeState]) -> fw.Status:
        index = snapshot.pod_index
        p = pod.placement
        if (not p.affinity_preferred and not p.anti_affinity_preferred
                and index.terms == index.required_anti):
            return fw.SKIP  # placed pods have no term that scores (required anti-affinity only)
        ns_labels = snapshot.namespace_labels
        scores: dict[Pair, int] = {}
        for weighted, sign in ([(w, 1) for w in p.affinity_preferred]
                               + [(w, -1) for w in p.anti_affinity_preferred]):
            term = weighted.term
            if term.selector is None:
                continue
            for other in index.matching(term.selector):
                if term.selects_namespace(pod.namespace, other.namespace, ns_labels):
                    _add(scores, snapshot, other.node, term.topology_key, sign * weighted.weight)
        for entry in index.terms_selecting(pod.labels):
            kind = entry.kind
            if kind is TermKind.ANTI_AFFINITY:
                continue
            if kind is TermKind.AFFINITY:
                weight = self.args.hard_pod_affinity_weight
            elif self.args.ignore_preferred_terms_of_existing_pods:
                continue
            else:
                weight = entry.weight if kind is TermKind.PREFERRED_AFFINITY else -entry.weight
            if weight and entry.term.selects_namespace(entry.pod.namespace, pod.namespace,
                                                       ns_labels):
                _add(scores, snapshot, entry.pod.node, entry.term.topology_key, weight)
        by_key: dict[str, dict[str, int]] = {}
        for (key, value), score in scores.items():
            if score:
                by_key.setdefault(key, {})[value] = score
        if not by_key:
            return fw.SKIP
        state.write(NAME + "/score", by_key)
        return fw.SUCCESS

    def score(self, state: fw.CycleState, pod: PodInfo, node: NodeState) -> int:
        by_key = state.read(NAME + "/score")
        if not isinstance(by_key, dict):
            return 0
        labels = node.labels
        total = 0
        for key, values in by_key.items():
            value = labels.get(key)
            if value is not None:
                total += values.get(value, 0)
        return total

    def normalize(self, state: fw.CycleState, pod: PodInfo, scores: list[int]) -> None:
        if not scores:
            return
        low, high = min(scores), max(scores)
        for i, value in enumerate(scores):
            scores[i] = 0 if high == low else fw.MAX_NODE_SCORE * (value - low) // (high - low)


def factory(args: object | None) -> InterPodAffinity:
    if args is None:
        return InterPodAffinity(AffinityArgs())
    if not isinstance(args, AffinityArgs):
        raise TypeError("InterPodAffinity takes AffinityArgs")
    return InterPodAffinity(args)
