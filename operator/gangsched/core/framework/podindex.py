"""Placed pods indexed by label, so that affinity and spread count without scanning.

Every pod that holds a node (ours, other schedulers', placeholders, assumed ones) is
recorded with its namespace, labels and :class:`~gangsched.core.values.placement_terms.Placement`.

* :meth:`PodIndex.matching` finds the pods a label selector selects. A selector that
  names ``key=value`` pairs (``matchLabels``, single-value ``In``) starts from the
  smallest set of pods carrying one of them; only a selector with none scans every pod.
* :meth:`PodIndex.per_node` counts, per node, the pods of one namespace a selector
  selects: computed once, then kept up to date as pods come and go (the spread
  plugin's per-domain counts add these up by the nodes' topology values, so a pod's
  cost follows the nodes its peers are on, not their number).
* :meth:`PodIndex.terms_selecting` finds the affinity terms of placed pods that select
  an incoming pod (the symmetric checks: existing pods' required anti-affinity, and the
  terms scoring counts both ways). Terms are indexed by one pair of their selector, so a
  pod looks up only the terms that could select it.

``epoch`` changes whenever a pod is added or removed: pods whose fit depends on their
neighbours are retried when it moves.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from gangsched.core.values.placement_terms import AffinityTerm, Placement
from gangsched.core.values.selectors import LabelSelector


class TermKind(enum.Enum):
    AFFINITY = "affinity"
    ANTI_AFFINITY = "anti-affinity"
    PREFERRED_AFFINITY = "preferred affinity"
    PREFERRED_ANTI_AFFINITY = "preferred anti-affinity"


@dataclass(frozen=True, slots=True)
class PlacedPod:
    uid: str
    namespace: str
    labels: Mapping[str, str]
    placement: Placement
    node: str
    terminating: bool = False
    """Being deleted (``deletionTimestamp`` set): it still holds its node and counts for
    pod (anti-)affinity, but not in :meth:`PodIndex.per_node` (topology spread), as
    kube-scheduler's ``countPodsMatchSelector`` bypasses terminating pods
    (podtopologyspread/common.go, kubernetes#87621)."""
    nonzero: tuple[int, int] | None = None
    """(cpu, memory) as scoring counts it (see :attr:`gangsched.core.values.model.Pod.nonzero`)."""


@dataclass(frozen=True, slots=True)
class PlacedTerm:
    """One affinity term of a placed pod."""

    pod: PlacedPod
    kind: TermKind
    term: AffinityTerm
    weight: int = 1


class PodIndex:
    """Placed pods by uid, by label pair, and their affinity terms by selector pair."""

    def __init__(self) -> None:
        self.pods: dict[str, PlacedPod] = {}
        self._by_pair: dict[tuple[str, str], dict[str, None]] = {}
        self._terms_by_pair: dict[tuple[str, str], dict[tuple[str, int], PlacedTerm]] = {}
        self._terms_any: dict[tuple[str, int], PlacedTerm] = {}
        self.required_anti = 0
        """How many required anti-affinity terms placed pods have."""
        self.terms = 0
        self.epoch = 0
        self._counts: dict[tuple[LabelSelector, str], dict[str, int]] = {}
        """Per (selector, namespace) asked for: matching pods per node."""
        self._counted_by_pair: dict[tuple[str, str], list[tuple[LabelSelector, str]]] = {}
        """Those keys by one ``key=value`` pair of their selector (as terms are)."""
        self._counted_any: list[tuple[LabelSelector, str]] = []
        self.changes: list[tuple[PlacedPod, int]] = []
        """The pods added (1) and removed (-1), in order, for those who keep counts of
        their own (see :meth:`changed_since`); forgotten past a length."""
        self.generation = 0
        """Moves when ``changes`` is forgotten."""

    def add(self, pod: PlacedPod) -> None:
        """Record ``pod`` (replacing an entry of the same uid)."""
        if pod.uid in self.pods:
            self.remove(pod.uid)
        self.pods[pod.uid] = pod
        for pair in pod.labels.items():
            self._by_pair.setdefault(pair, {})[pod.uid] = None
        for index, entry in enumerate(_terms(pod)):
            self._index_term((pod.uid, index), entry, add=True)
        if self._counts:
            self._count(pod, 1)
        self._changed(pod, 1)
        self.epoch += 1

    def remove(self, uid: str) -> None:
        """Forget the pod ``uid``; unknown uids are ignored."""
        pod = self.pods.pop(uid, None)
        if pod is None:
            return
        for pair in pod.labels.items():
            holders = self._by_pair.get(pair)
            if holders is not None:
                holders.pop(uid, None)
                if not holders:
                    del self._by_pair[pair]
        for index, entry in enumerate(_terms(pod)):
            self._index_term((uid, index), entry, add=False)
        if self._counts:
            self._count(pod, -1)
        self._changed(pod, -1)
        self.epoch += 1

    def _changed(self, pod: PlacedPod, delta: int) -> None:
        changes = self.changes
        changes.append((pod, delta))
        if len(changes) > 4 * len(self.pods) + 1024:
            changes.clear()
            self.generation += 1

    def mark(self) -> tuple[int, int]:
        """Where the change log stands now."""
        return (self.generation, len(self.changes))

    def changed_since(self, mark: tuple[int, int]) -> list[tuple[PlacedPod, int]] | None:
        """The pods added and removed since ``mark``, in order; None when no longer known."""
        generation, seen = mark
        if generation != self.generation or seen > len(self.changes):
            return None
        return self.changes[seen:]

    MAX_COUNTED = 4096
    """Selectors counted per node at most; beyond, the counts start afresh (on demand)."""

    def per_node(self, selector: LabelSelector, namespace: str) -> Mapping[str, int]:
        """How many placed pods of ``namespace`` ``selector`` matches, per node name (nodes
        without any left out), terminating pods left out (see :class:`PlacedPod`).
        Read-only; valid until the next add or remove."""
        key = (selector, namespace)
        found = self._counts.get(key)
        if found is not None:
            return found
        if len(self._counts) >= self.MAX_COUNTED:
            self._counts.clear()
            self._counted_by_pair.clear()
            self._counted_any.clear()
        found = {}
        for pod in self.matching(selector):
            if pod.namespace == namespace and not pod.terminating:
                found[pod.node] = found.get(pod.node, 0) + 1
        self._counts[key] = found
        pairs = selector.equalities()
        if pairs:
            self._counted_by_pair.setdefault(pairs[0], []).append(key)
        else:
            self._counted_any.append(key)
        return found

    def _count(self, pod: PlacedPod, delta: int) -> None:
        """Keep :meth:`per_node` counts up to date for ``pod`` coming (1) or going (-1)."""
        if pod.terminating:
            return
        labels = pod.labels
        keys = [key for pair in labels.items() for key in self._counted_by_pair.get(pair, ())]
        keys += self._counted_any
        for key in keys:
            selector, namespace = key
            if namespace != pod.namespace or not selector.matches(labels):
                continue
            counts = self._counts[key]
            left = counts.get(pod.node, 0) + delta
            if left > 0:
                counts[pod.node] = left
            else:
                counts.pop(pod.node, None)

    def _index_term(self, key: tuple[str, int], entry: PlacedTerm, *, add: bool) -> None:
        selector = entry.term.selector
        if selector is None:
            return  # selects nothing
        pairs = selector.equalities()
        bucket = (self._terms_by_pair.setdefault(pairs[0], {}) if pairs else self._terms_any)
        delta = 1 if add else -1
        if add:
            bucket[key] = entry
        else:
            bucket.pop(key, None)
            if pairs and not bucket:
                del self._terms_by_pair[pairs[0]]
        self.terms += delta
        if entry.kind is TermKind.ANTI_AFFINITY:
            self.required_anti += delta

    def matching(self, selector: LabelSelector) -> Iterator[PlacedPod]:
        """The placed pods whose labels ``selector`` matches (namespaces not checked)."""
        pairs = selector.equalities()
        if pairs:
            smallest = min((self._by_pair.get(pair, {}) for pair in pairs), key=len)
            for uid in list(smallest):
                pod = self.pods[uid]
                if selector.matches(pod.labels):
                    yield pod
            return
        for pod in list(self.pods.values()):
            if selector.matches(pod.labels):
                yield pod

    def terms_selecting(self, labels: Mapping[str, str]) -> Iterator[PlacedTerm]:
        """Placed pods' terms whose selector matches ``labels`` (namespaces not checked)."""
        if not self.terms:
            return
        for pair in labels.items():
            bucket = self._terms_by_pair.get(pair)
            if bucket:
                for entry in list(bucket.values()):
                    if entry.term.selector is not None and entry.term.selector.matches(labels):
                        yield entry
        for entry in list(self._terms_any.values()):
            if entry.term.selector is not None and entry.term.selector.matches(labels):
                yield entry


def _terms(pod: PlacedPod) -> list[PlacedTerm]:
    p = pod.placement
    found = [PlacedTerm(pod, TermKind.ANTI_AFFINITY, t) for t in p.anti_affinity]
    found += [PlacedTerm(pod, TermKind.AFFINITY, t) for t in p.affinity]
    found += [PlacedTerm(pod, TermKind.PREFERRED_AFFINITY, w.term, w.weight)
              for w in p.affinity_preferred]
    found += [PlacedTerm(pod, TermKind.PREFERRED_ANTI_AFFINITY, w.term, w.weight)
              for w in p.anti_affinity_preferred]
    return found
