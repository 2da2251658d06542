"""A bin-packing scan kept per value of one label, for a pod that a filter admits by that
label alone (a strict spread over zones): the same nodes as a scan, without judging a
domain again when the filter turns it away or takes it back.

A strict spread constraint with ``maxSkew: 1`` over ten zones turns away the zone of each
pod placed until every zone has one more; then it takes them all back. A carried scan
(:func:`~gangsched.core.placement.scan.carry`) follows each turn: it drops the nodes of
the zone turned away, judges further to make up the sample, and when every zone comes
back it scans afresh. Yet whether such a filter passes a node follows from the node's
value of the label alone (``DomainFilterPlugin.label_verdict``). So :class:`ZonedCarry`
keeps, per value, the nodes every *other* filter passes, in order, judged from the start
up to a stop of that value's own; a placement takes the first ``sample`` of them over
the values admitted, which is what a scan judging every filter finds:

* the values admitted are judged up to a common bound (the lowest of their stops), each
  carried on a run at a time until that bound holds ``sample`` of their nodes (or the
  candidates end);
* the sample's last order is found by bisection on that count, and the nodes found are
  those of the admitted values below it;
* between two placements, only the nodes charged or released (the touch log) and the
  domains where another filter's verdicts changed (its digest) are judged again, as a
  carried scan does; the filter left out gives no digest, so turning a value away and
  back judges nothing.

When scoring needs only the first node of each usage key (``distinct``), those are taken
value by value, not the whole sample.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from itertools import chain, repeat

from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.placement.scan import (
    PAST,
    RUN,
    DomainPositions,
    Found,
    RunJudge,
    by_order,
    first_fit_from,
)


@dataclass(slots=True)
class Domain:
    """The nodes of one value of the key that every other filter passes, judged from
    the carry's start up to ``stop`` (an order; :data:`PAST`: to the last candidate)."""

    stop: int
    orders: list[int] = field(default_factory=list)
    nodes: list[NodeState] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    """Each node's usage key when it was judged (a node whose usage changes since is
    touched, and judged again)."""
    firsts: dict[str, NodeState] | None = None
    """The first node of each usage key (None: to be worked out again)."""
    counts: Counter[str] | None = None
    """How many nodes have each usage key (kept with ``firsts``)."""

    def distinct(self) -> dict[str, NodeState]:
        """The first node of each usage key, kept through small changes."""
        firsts = self.firsts
        if firsts is None or self.counts is None:
            self.counts = Counter(self.keys)
            # Backwards: the first node of a key is the value left.
            firsts = self.firsts = dict(zip(reversed(self.keys), reversed(self.nodes),
                                            strict=True))
        return firsts

    def cut(self, low: int) -> None:
        """Forget what lies before order ``low``."""
        at = bisect.bisect_left(self.orders, low)
        if at:
            gone = list(zip(self.keys[:at], self.nodes[:at], strict=True))
            del self.orders[:at]
            del self.nodes[:at]
            del self.keys[:at]
            if at > RUN:
                self.firsts = self.counts = None
            for key, state in gone if self.firsts is not None else ():
                self._gone(key, state, 0)
        if self.stop < low:
            self.stop = low

    def drop(self, order: int) -> None:
        at = bisect.bisect_left(self.orders, order)
        if at < len(self.orders) and self.orders[at] == order:
            key, state = self.keys[at], self.nodes[at]
            del self.orders[at]
            del self.nodes[at]
            del self.keys[at]
            self._gone(key, state, at)

    def _gone(self, key: str, state: NodeState, at: int) -> None:
        """``state`` (judged with ``key``) left the lists at ``at``: counted out, and
        its key's first found again from there when it was that."""
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        left = counts[key] - 1
        if not left:
            del counts[key]
            del firsts[key]
        else:
            counts[key] = left
            if firsts[key] is state:
                firsts[key] = self.nodes[self.keys.index(key, at)]

    def put(self, state: NodeState) -> None:
        at = bisect.bisect_left(self.orders, state.order)
        self.orders.insert(at, state.order)
        self.nodes.insert(at, state)
        self.keys.insert(at, state.usage_key)
        self._came(state)

    def _came(self, state: NodeState) -> None:
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        key = state.usage_key
        counts[key] = counts.get(key, 0) + 1
        first = firsts.get(key)
        if first is None or first.order > state.order:
            firsts[key] = state

    def extend(self, where: tuple[list[int], list[NodeState]], size: int,
               judge: RunJudge) -> None:
        """Judge the next ``size`` nodes of this value past ``stop``."""
        orders, states = where
        at = bisect.bisect_left(orders, self.stop)
        end = at + size
        passing = judge.all(states[at:end])
        self.orders += [state.order for state in passing]
        self.nodes += passing
        self.keys += [state.usage_key for state in passing]
        firsts, counts = self.firsts, self.counts
        if firsts is not None and counts is not None and passing:
            # After every node kept: a key's first is among them only if it had none.
            added = self.keys[len(self.keys) - len(passing):]
            counts.update(added)
            for key, state in dict(zip(reversed(added), reversed(passing),
                                       strict=True)).items():
                firsts.setdefault(key, state)
        self.stop = orders[end] if end < len(orders) else PAST


@dataclass(slots=True)
class ZonedCarry:
    """What is kept for the next pod of a shape (see the module docstring)."""

    stamp: tuple[object, ...]
    """The candidates list, the reserved nodes skipped, ``sample``, the filters run and
    the label key."""
    mark: tuple[int, int, int]
    """The touch log's position when it was last brought up to date."""
    digests: tuple[object, ...]
    """Per filter run (but the one left out), its digest (None for a node-local one)."""
    key: str
    start: int
    low: int
    """The order of the candidate at ``start``."""
    domains: dict[str, Domain] = field(default_factory=dict)


def fresh(stamp: tuple[object, ...], mark: tuple[int, int, int], digests: tuple[object, ...],
          key: str, nodes: list[NodeState], start: int) -> ZonedCarry:
    """A carry that has judged nothing yet, from candidate ``start``."""
    low = nodes[start].order if start < len(nodes) else PAST
    return ZonedCarry(stamp, mark, digests, key, start, low)


def update(kept: ZonedCarry, nodes: list[NodeState], start: int, sample: int,
           judge: RunJudge, touched: Iterable[NodeState],
           changed: Mapping[str, Set[str]], where: DomainPositions) -> bool:
    """Bring ``kept`` to the scan from ``start``: forget what lies before it, judge again
    the ``touched`` candidates and those in the ``changed`` domains of other filters.
    False when a fresh start is due (the start moved back, or much to judge again)."""
    if start < kept.start:
        return False  # room given back before the old start: nodes never judged
    low = nodes[start].order if start < len(nodes) else PAST
    domains, key = kept.domains, kept.key
    again: dict[int, NodeState] = {}
    for state in touched:
        domain = _domain_of(domains, key, state)
        if domain is not None and low <= state.order < domain.stop:
            again[state.order] = state
    for other, values in changed.items():
        for value in values:
            orders, states = where.of(other, value)
            first = bisect.bisect_left(orders, low)
            if len(orders) - first > sample:
                return False
            for state in states[first:]:
                domain = _domain_of(domains, key, state)
                if domain is not None and state.order < domain.stop:
                    again[state.order] = state
        if len(again) > sample:
            return False
    kept.start, kept.low = start, low
    for domain in domains.values():
        domain.cut(low)
    for order, state in again.items():
        domains[state.labels[key]].drop(order)
    for state in judge.all(list(again.values())):
        domains[state.labels[key]].put(state)
    return True


def select(kept: ZonedCarry, nodes: list[NodeState], sample: int, judge: RunJudge,
           refused: Set[str], where: DomainPositions, *, distinct: bool) -> Found:
    """The first ``sample`` nodes from the carry's start that every filter passes, the
    one left out admitting the values of the key not ``refused``: as :func:`scan` finds
    them (``distinct``: only the first node of each usage key among them, for scoring
    that reads usage keys alone)."""
    key, domains = kept.key, kept.domains
    by_value = where.values(key)
    admitted: list[tuple[Domain, tuple[list[int], list[NodeState]]]] = []
    for value, positions in by_value.items():
        if value in refused:
            continue
        domain = domains.get(value)
        if domain is None:
            domain = domains[value] = Domain(kept.low)
        admitted.append((domain, positions))
    first_fit = first_fit_from(nodes, kept.start, len(nodes), judge)
    if not admitted:
        return Found([], [], first_fit, len(nodes))
    lists = [domain.orders for domain, _ in admitted]
    while True:
        bound = min(domain.stop for domain, _ in admitted)
        held = sum(map(bisect.bisect_left, lists, repeat(bound)))
        if held >= sample or bound == PAST:
            break
        # Carry on the values judged least far, each by its share of what is wanted.
        want = sample - held
        size = (want + (want >> 2)) // len(admitted) + RUN
        for domain, positions in admitted:
            if domain.stop == bound:
                domain.extend(positions, size, judge)
    if held > sample:
        # The order of the sample's last node: the least with ``sample`` nodes of the
        # admitted values at or below it (at most the last order below the bound).
        low = kept.low
        high = max(orders[at - 1] for orders, at in zip(
            lists, map(bisect.bisect_left, lists, repeat(bound)), strict=True) if at)
        while low < high:
            middle = (low + high) // 2
            if sum(map(bisect.bisect_left, lists, repeat(middle + 1))) >= sample:
                high = middle
            else:
                low = middle + 1
        bound = low + 1
    stop = bisect.bisect_left(nodes, bound, key=by_order)
    if distinct:
        firsts: dict[str, NodeState] = {}
        for domain, _ in admitted:
            # A key's first node in the domain is below the bound if any of it is.
            for usage, state in domain.distinct().items():
                if state.order < bound:
                    known = firsts.get(usage)
                    if known is None or known.order > state.order:
                        firsts[usage] = state
        chosen = sorted(firsts.values(), key=by_order)
    else:
        cuts = [bisect.bisect_left(domain.orders, bound) for domain, _ in admitted]
        chosen = sorted(chain.from_iterable(
            domain.nodes[:cut] for (domain, _), cut in zip(admitted, cuts, strict=True)),
            key=by_order)
    return Found(chosen, [state.order for state in chosen], first_fit, stop,
                 [state.usage_key for state in chosen])


def _domain_of(domains: Mapping[str, Domain], key: str, state: NodeState) -> Domain | None:
    """The domain kept for ``state``'s value of ``key``, if any (none without the key)."""
    value = state.labels.get(key)
    return None if value is None else domains.get(value)
