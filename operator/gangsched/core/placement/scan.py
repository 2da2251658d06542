"""The scan of a placement: the first feasible nodes in scan order, judged a run at a time,
and carried over from the last scan of the same shape when little changed since.

A placement judges the static candidates from a start (the bin-packing watermark, or
the spread scoring's cursor) until it has found as many feasible nodes as
kube-scheduler's ``numFeasibleNodesToFind`` (``sample``), and scores those. :func:`scan`
judges the candidates a run at a time: capacity (asked once per usage key), the reserved
nodes, and each dynamic filter over the run, cheapest a node first (see
:attr:`~gangsched.core.framework.interface.CycleState.scan`; once the first node with
room is known, label look-ups come before the capacity check); the nodes found are the
first ``sample`` feasible ones in scan order, exactly as judged one by one.

Consecutive pods of one shape (a gang's members, a ReplicaSet's pods) would judge the
same nodes again, most of them alike: between two such placements only the nodes
charged or released since (the touch log) changed their own usage and ports, and only
the topology domains where a neighbour-dependent filter's verdict changed (its
*digest*, see :class:`~gangsched.core.framework.interface.DomainFilterPlugin`) changed
their verdicts. :class:`Carry` keeps what a bin-packing scan found and, for the next pod
of the shape, judges again only those nodes, drops what fell before the new start, and
judges further only if it then holds fewer than ``sample`` nodes: the same nodes as a
fresh scan. It stands only while the node set (and its labels), the reserved nodes and
the filters that ran are the same and every filter is either node-local or gives a
digest (VolumeBinding's when its verdicts follow from the node's hostname alone);
otherwise, or when too much changed, the scan is made afresh.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, not_

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.values.resources import Resources

RUN = 16
"""Nodes judged in a run beyond the feasible nodes still wanted (and a quarter more):
a run costs a call per filter, a node judged past the last one wanted a filter's work."""

Filters = list[tuple[fw.FilterPlugin, fw.BatchFilter | None]]


def run_of(nodes: list[NodeState], start: int, stop: int, count: int) -> list[NodeState]:
    """``nodes[i % count]`` for ``start <= i < stop`` (``stop - start <= count``)."""
    if stop <= count:
        return nodes[start:stop]
    if start >= count:
        return nodes[start - count:stop - count]
    return nodes[start:] + nodes[:stop - count]


ROOM_COST = 15
"""The scan cost of the capacity check (a look-up by usage key): filters cheaper than it
(label look-ups) run before it once the first node with room is known."""


class RunJudge:
    """One pod's verdicts over runs of nodes: capacity (once per usage key), the
    reserved nodes, and the dynamic filters in scan order."""

    __slots__ = ("blocked", "cycle", "early", "filters", "fits", "info", "late", "refused",
                 "room")

    def __init__(self, cycle: fw.CycleState, info: PodInfo, filters: Filters,
                 request: Resources, blocked: Set[str] | None,
                 costs: Mapping[str, int] | None = None,
                 refused: tuple[str, Set[str]] | None = None) -> None:
        self.cycle = cycle
        self.info = info
        self.filters = filters
        self.refused = refused
        """A label key and values of it for which a filter refuses every node (and every
        node without the key), if one says so (see ``DomainFilterPlugin.refused``)."""
        costs = costs or {}
        self.early = [item for item in filters
                      if costs.get(item[0].name, fw.SCAN_COST) < ROOM_COST]
        """The filters cheaper than the capacity check (``filters`` is in cost order)."""
        self.late = filters[len(self.early):]
        self.fits = request.fits_in
        self.blocked = blocked
        self.room: dict[str, bool] = {}
        """Whether the request fits, by usage key."""

    def without(self, name: str) -> RunJudge:
        """This judge without the filter ``name`` (nor a refusal to walk by)."""
        other = RunJudge.__new__(RunJudge)
        other.cycle, other.info, other.refused = self.cycle, self.info, None
        other.filters = [item for item in self.filters if item[0].name != name]
        other.early = [item for item in self.early if item[0].name != name]
        other.late = [item for item in self.late if item[0].name != name]
        other.fits, other.blocked, other.room = self.fits, self.blocked, self.room
        return other

    def with_room(self, run: list[NodeState]) -> list[NodeState]:
        """The nodes of ``run`` with room for the request."""
        room, fits = self.room, self.fits
        for key, state in {state.usage_key: state for state in run}.items():
            if key not in room:
                room[key] = fits(state.free)
        return [state for state in run if room[state.usage_key]]

    def has_room(self, state: NodeState) -> bool:
        found = self.room.get(state.usage_key)
        if found is None:
            found = self.room[state.usage_key] = self.fits(state.free)
        return found

    def rest(self, passing: list[NodeState]) -> list[NodeState]:
        """The nodes of ``passing`` (all with room) not reserved and passing every filter."""
        return self._filtered(self._unblocked(passing), self.filters)

    def all(self, run: list[NodeState]) -> list[NodeState]:
        """The feasible nodes of ``run``: :meth:`rest` of :meth:`with_room`, with the
        filters cheaper than the capacity check run before it (all must pass: the
        same nodes in any order)."""
        passing = self._filtered(run, self.early)
        if passing:
            passing = self._unblocked(self.with_room(passing))
        return self._filtered(passing, self.late)

    def _unblocked(self, passing: list[NodeState]) -> list[NodeState]:
        blocked = self.blocked
        if blocked is not None and passing:
            return [state for state in passing if state.node.name not in blocked]
        return passing

    def _filtered(self, passing: list[NodeState], filters: Filters) -> list[NodeState]:
        cycle, info = self.cycle, self.info
        for plugin, batch in filters:
            if not passing:
                break
            passing = (batch(cycle, info, passing) if batch is not None else
                       [state for state in passing if plugin.filter(cycle, info, state).ok])
        return passing


def _count_out(cls: object, counts: dict[object, int],
               firsts: dict[object, NodeState]) -> bool:
    """One node of class ``cls`` fewer; False when it was the class's last (the class is
    forgotten)."""
    left = counts[cls] - 1
    if not left:
        del counts[cls]
        del firsts[cls]
        return False
    counts[cls] = left
    return True


@dataclass(slots=True)
class Found:
    """What a scan found: the feasible nodes in scan order (at most ``sample``), their
    :attr:`~NodeState.order` (bin-packing only: empty otherwise), the first position
    with room for the request (-1: none), and the end of what was judged (the
    candidates in ``[start, stop)``). Positions are among the candidates; orders among
    all nodes (the candidates are in that order, so both sort alike)."""

    nodes: list[NodeState]
    orders: list[int]
    first_fit: int
    stop: int
    keys: list[str] = field(default_factory=list)
    """With ``orders``: each node's usage key when it was judged (a node whose usage
    changes since is touched, and judged again)."""
    firsts: dict[object, NodeState] | None = None
    """The first node of each usage key among ``nodes`` (see :meth:`distinct`), kept
    up to date through small changes; None: to be worked out again."""
    counts: Counter[object] | None = None
    """How many of ``nodes`` are of each class (kept with ``firsts``)."""
    label: str | None = None
    """The label key whose value splits the classes of :meth:`distinct` and
    ``firsts`` (see :meth:`classes`); None: a class is a usage key."""

    def distinct(self) -> list[NodeState]:
        """The first node of each class, in order: with no :attr:`label`, of each usage
        key, what scoring needs when only usage keys score (a later node of a key scores
        the same and loses the tie); with one, of each usage key and value of it."""
        firsts = self.firsts
        if firsts is None:
            nodes = self.nodes
            label = self.label
            classes: list[str] | list[tuple[str, str | None]] = (
                self.keys if label is None else
                list(zip(self.keys, [state.labels.get(label) for state in nodes],
                         strict=True)))
            self.counts = Counter(classes)
            # Backwards: the first node of a class is the value left.
            firsts = self.firsts = dict(zip(reversed(classes), reversed(nodes), strict=True))
        return sorted(firsts.values(), key=by_order)

    def classes(self, label: str | None, alone: list[int]) -> list[NodeState]:
        """The first node of each usage key and value of ``label`` (see
        :meth:`distinct`) that is not in ``alone``, with the nodes of ``alone`` (orders,
        ascending) among :attr:`nodes`, in order: what scoring needs when nodes of a
        class score alike but for the nodes of ``alone``, scored one by one."""
        if self.label != label:
            self.label = label
            self.firsts = self.counts = None
        chosen = self.distinct()
        firsts, counts = self.firsts, self.counts
        at, nodes, keys = self.orders, self.nodes, self.keys
        held: dict[int, NodeState] = {}
        for order in alone:
            i = bisect.bisect_left(at, order)
            if i < len(at) and at[i] == order:
                held[i] = nodes[i]
        if not held or firsts is None or counts is None:
            return chosen
        per_class: Counter[object] = Counter(self._class(keys[i], state)
                                             for i, state in held.items())
        more: list[NodeState] = list(held.values())
        for i, state in held.items():
            cls = self._class(keys[i], state)
            if firsts[cls] is not state or counts[cls] == per_class[cls]:
                continue  # its first is another node, or every node of it is alone
            key, j = keys[i], i
            while True:  # the class's first node not alone
                j = keys.index(key, j + 1)
                if j not in held and self._class(key, nodes[j]) == cls:
                    more.append(nodes[j])
                    break
        return sorted({state.order: state for state in [*chosen, *more]}.values(),
                      key=by_order)

    def _class(self, key: str, state: NodeState) -> object:
        """The class of ``state``, judged with usage key ``key``."""
        label = self.label
        return key if label is None else (key, state.labels.get(label))

    def _first_of(self, cls: object, key: str, start: int) -> NodeState:
        """The first node of class ``cls`` (whose usage key is ``key``) from ``start``
        on; there is one."""
        keys, nodes = self.keys, self.nodes
        at = keys.index(key, start)
        while self._class(key, nodes[at]) != cls:
            at = keys.index(key, at + 1)
        return nodes[at]

    def _removed(self, key: str, state: NodeState, index: int) -> None:
        """``state``, judged with usage key ``key``, left ``nodes`` at ``index``."""
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        cls = self._class(key, state)
        if _count_out(cls, counts, firsts) and firsts[cls] is state:
            firsts[cls] = self._first_of(cls, key, index)

    def _cut(self, cut: int) -> None:
        """Forget the first ``cut`` nodes (counted out, each class's first found again
        when it was one of them; worked out afresh when many)."""
        nodes, keys = self.nodes, self.keys
        gone = list(zip(keys[:cut], nodes[:cut], strict=True))
        del nodes[:cut]
        del self.orders[:cut]
        del keys[:cut]
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        if cut > RUN:
            self.firsts = self.counts = None
            return
        lost: list[tuple[object, str]] = []
        for key, state in gone:
            cls = self._class(key, state)
            if _count_out(cls, counts, firsts) and firsts[cls] is state:
                lost.append((cls, key))
        for cls, key in lost:
            if cls in counts:
                firsts[cls] = self._first_of(cls, key, 0)

    def _dropped(self, keys: list[str], nodes: list[NodeState]) -> None:
        """``nodes`` (judged with ``keys``) left the end of :attr:`nodes`: counted out
        (none of them was the first of a class that keeps nodes)."""
        counts, firsts = self.counts, self.firsts
        if counts is None or firsts is None:
            return
        for key, state in zip(keys, nodes, strict=True):
            _count_out(self._class(key, state), counts, firsts)

    def _appended(self, passing: list[NodeState]) -> None:
        """``passing`` were appended (after every node kept, their keys too): counted
        in, each the first of its class if the class had none."""
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        keys = self.keys[len(self.keys) - len(passing):]
        label = self.label
        added: list[str] | list[tuple[str, str | None]] = (
            keys if label is None else
            list(zip(keys, [state.labels.get(label) for state in passing], strict=True)))
        counts.update(added)
        for cls, state in dict(zip(reversed(added), reversed(passing), strict=True)).items():
            firsts.setdefault(cls, state)

    def _added(self, state: NodeState) -> None:
        firsts, counts = self.firsts, self.counts
        if firsts is None or counts is None:
            return
        cls = self._class(state.usage_key, state)
        counts[cls] = counts.get(cls, 0) + 1
        first = firsts.get(cls)
        if first is None or first.order > state.order:
            firsts[cls] = state


def scan(nodes: list[NodeState], start: int, end: int, sample: int, judge: RunJudge,
         found: Found | None = None, *, orders: bool = False,
         domains: DomainPositions | None = None) -> Found:
    """The first ``sample`` feasible nodes of ``nodes`` from ``start`` up to ``end`` (past
    the last index for a scan that wraps round), added to ``found`` when given (a scan
    carried on from its ``stop``). ``orders``: keep each node's order.

    ``domains`` (``nodes`` by domain; bin-packing only): when the pod's filters refuse
    most of the nodes for the value of one label (:attr:`RunJudge.refused`: a strict
    spread over zones where most zones are full), a run past the first node with room
    is made of the nodes that label does not refuse alone: the others would be judged
    only to be refused."""
    count = len(nodes)
    if found is None:
        found = Found([], [], -1, start)
    kept, where = found.nodes, found.orders
    at = found.stop
    size = 0
    share = 1
    sparse = judge.refused if domains is not None else None
    if sparse is not None and domains is not None:
        key, refused = sparse
        outside = domains.outside(key, refused)
        if 2 * outside > count:
            sparse = None  # most nodes have a value it takes: judged as they come
        else:
            share = -(-count // max(outside, 1))
    while at < end and len(kept) < sample:
        # Each filter over the run: the nodes found are the first ``sample`` feasible
        # ones in scan order, as one by one. A run is as long as the nodes still
        # wanted (a quarter more, and RUN; in a sparse walk, times the candidates per
        # one not refused); when that found too few, twice the last.
        want = sample - len(kept)
        size = max((want + (want >> 2) + RUN) * share, 2 * size)
        stop = min(end, at + size)
        if sparse is not None and domains is not None and found.first_fit >= 0:
            run = domains.between(sparse[0], sparse[1], nodes[at].order,
                                  nodes[stop].order if stop < count else PAST)
            passing = judge.all(run)
            if len(passing) > want:
                passing = passing[:want]
                stop = bisect.bisect_left(nodes, passing[-1].order + 1, key=by_order)
        else:
            run = run_of(nodes, at, stop, count)
            if found.first_fit < 0:
                passing = judge.with_room(run)
                if passing:
                    # reserved or not: the watermark is about capacity only
                    found.first_fit = at + run.index(passing[0])
                passing = judge.rest(passing)
            else:
                passing = judge.all(run)
            if len(passing) > want:
                passing = passing[:want]
                stop = at + run.index(passing[-1]) + 1
        kept += passing
        if orders:
            where += [state.order for state in passing]
            found.keys += [state.usage_key for state in passing]
            if found.firsts is not None and passing:
                found._appended(passing)
        at = stop
    found.stop = at
    return found


@dataclass(slots=True)
class Carry:
    """A bin-packing scan kept for the next pod of its shape (see the module docstring)."""

    stamp: tuple[object, ...]
    """The candidates list, the reserved nodes skipped, ``sample`` and the filters run."""
    mark: tuple[int, int, int]
    """The touch log's position when it was made or last brought up to date."""
    digests: tuple[object, ...]
    """Per filter run, its digest (None for a node-local filter)."""
    start: int
    found: Found


class DomainPositions:
    """The candidates by topology domain (label key, then value), in order, with their
    orders: where a changed domain's nodes are."""

    __slots__ = ("_by_key", "nodes")

    def __init__(self, nodes: list[NodeState]) -> None:
        self.nodes = nodes
        self._by_key: dict[str, dict[str, tuple[list[int], list[NodeState]]]] = {}

    def of(self, key: str, value: str) -> tuple[list[int], list[NodeState]]:
        return self.values(key).get(value, ([], []))

    def values(self, key: str) -> dict[str, tuple[list[int], list[NodeState]]]:
        """The candidates with ``key``, by its value: their orders and states, in order."""
        by_value = self._by_key.get(key)
        if by_value is None:
            by_value = self._by_key[key] = {}
            for state in self.nodes:
                found = state.labels.get(key)
                if found is not None:
                    orders, states = by_value.setdefault(found, ([], []))
                    orders.append(state.order)
                    states.append(state)
        return by_value

    def outside(self, key: str, refused: Set[str]) -> int:
        """How many candidates have ``key`` with a value not in ``refused``."""
        return sum(len(orders) for value, (orders, _) in self.values(key).items()
                   if value not in refused)

    def between(self, key: str, refused: Set[str], low: int, high: int) -> list[NodeState]:
        """The candidates of order ``low`` up to ``high`` whose ``key`` has a value not in
        ``refused``, in order (the others a filter refuses)."""
        parts = []
        for value, (orders, states) in self.values(key).items():
            if value in refused:
                continue
            first = bisect.bisect_left(orders, low)
            last = bisect.bisect_left(orders, high)
            if first < last:
                parts.append(states[first:last])
        if len(parts) == 1:
            return parts[0]
        return sorted([state for part in parts for state in part], key=by_order)


def carry(kept: Carry, start: int, end: int, sample: int, judge: RunJudge,
          touched: Iterable[NodeState], domains: Mapping[str, Set[str]],
          where: DomainPositions) -> Found | None:
    """The scan from ``start`` that :func:`scan` would make, from ``kept`` with the
    ``touched`` candidates and those in the changed ``domains`` judged again; None when
    a fresh scan is due (the start moved back, or about as much to judge again)."""
    found = kept.found
    if start < kept.start:
        return None  # room given back before the old start: nodes never judged
    candidates = where.nodes
    count = len(candidates)
    low = candidates[start].order if start < count else PAST
    high = candidates[found.stop].order if found.stop < count else PAST
    again: dict[int, NodeState] = {
        state.order: state for state in touched if low <= state.order < high}
    for key, values in domains.items():
        for value in values:
            orders, states = where.of(key, value)
            first = bisect.bisect_left(orders, low)
            last = bisect.bisect_left(orders, high)
            again.update(zip(orders[first:last], states[first:last], strict=True))
        if len(again) > sample:
            return None
    nodes, at, keys = found.nodes, found.orders, found.keys
    cut = bisect.bisect_left(at, low)
    if cut:
        found._cut(cut)
    if again:
        passing = judge.all(list(again.values()))
        if len(again) > RUN:
            keep = list(map(not_, map(again.__contains__, at)))
            if not all(keep):
                nodes[:] = compress(nodes, keep)
                at[:] = compress(at, keep)
                keys[:] = compress(keys, keep)
                found.firsts = found.counts = None
        else:
            for order in again:
                i = bisect.bisect_left(at, order)
                if i < len(at) and at[i] == order:
                    key, gone = keys[i], nodes[i]
                    del nodes[i]
                    del at[i]
                    del keys[i]
                    found._removed(key, gone, i)
        if len(passing) > RUN:
            merged = sorted([*nodes, *passing], key=by_order)
            nodes[:] = merged
            at[:] = [state.order for state in merged]
            keys[:] = [state.usage_key for state in merged]
            found.firsts = found.counts = None
        else:
            for state in passing:
                i = bisect.bisect_left(at, state.order)
                nodes.insert(i, state)
                at.insert(i, state.order)
                keys.insert(i, state.usage_key)
                found._added(state)
    if len(nodes) > sample:
        found._dropped(keys[sample:], nodes[sample:])
        del nodes[sample:]
        del at[sample:]
        del keys[sample:]
        found.stop = bisect.bisect_left(candidates, at[-1] + 1, key=by_order)
    found.first_fit = first_fit_from(candidates, start, end, judge)
    kept.start = start
    if len(nodes) < sample:
        scan(candidates, start, end, sample, judge, found, orders=True, domains=where)
    return found


PAST = 1 << 62
"""An order past every node's."""


by_order: Callable[[NodeState], int] = attrgetter("order")
"""A node's order (the sort key of candidates, found nodes and domain positions)."""


def first_fit_from(nodes: list[NodeState], start: int, end: int, judge: RunJudge) -> int:
    """The first position from ``start`` with room for the request, -1 if none."""
    has_room = judge.has_room
    for i in range(start, end):
        if has_room(nodes[i]):
            return i
    return -1

