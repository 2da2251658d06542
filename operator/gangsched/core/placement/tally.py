"""Diagnoses kept node by node: "why pending" at the cost of the nodes that changed.

A diagnosis (:class:`~gangsched.core.placement.diagnosis.Diagnosis`) runs every filter of the
profile on every node: O(nodes) for one pod shape. Under churn, capacity is released in
almost every cycle, so a diagnosis cached until the next release is recomputed almost
every cycle, for every shape that waits: on 1,000 nodes that was a third of a simulated
day's cost.

For a pod whose fit does not depend on other pods (no inter-pod affinity or spread
constraints, no required anti-affinity anywhere in the cluster, no volumes), a node's
verdict depends only on that node: its labels and taints (the static filters, fixed until
the node set changes) and its usage and host ports (fixed until a pod is charged to or
released from it). A :class:`Tally` keeps each node's verdict and the counts over all
nodes; :meth:`Tally.update` re-runs the filters only on the nodes touched since, and the
result is the same diagnosis a full pass gives (the tests compare the two).

The cluster logs the nodes it touches (:class:`TouchLog`); a tally remembers how far it
has read. A log that grows past a few times the node count is cleared and its generation
bumped: every tally of the older generation starts again from a full pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.placement.diagnosis import FITS, Diagnosis
from gangsched.core.values.resources import Resources

Verdict = tuple[str, tuple[str, ...]]
"""A node's verdict: the plugin that rejected it (``Fits`` when none) and its reasons."""

Shortfall = tuple[int, tuple[int, ...], int, Resources]
"""A node short of capacity: (resources short, amounts, position in name order, the
shortfall); the least is the closest node."""

Judge = Callable[[NodeState], tuple[fw.Status, Resources | None]]
"""Runs the filters on one node: its status, and for a capacity failure the shortfall."""


class TouchLog:
    """The names of nodes whose usage or ports changed, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.generation = 0
        self.limit = 64
        """Past this length the log is forgotten: a full pass costs less than reading it."""

    def touch(self, name: str) -> None:
        self.names.append(name)
        if len(self.names) > self.limit:
            self.names.clear()
            self.generation += 1

    def size_for(self, nodes: int) -> None:
        """Set the length past which the log is forgotten, for ``nodes`` nodes."""
        self.limit = 4 * nodes + 64


@dataclass(slots=True)
class Follower:
    """Something kept node by node that follows the touch log."""

    epoch: object
    """What must not change for it to stand (the node set, for one)."""
    generation: int
    seen: int
    """How much of the touch log it has read."""
    nodes: int
    """How many nodes it covers."""

    def current(self, epoch: object, log: TouchLog) -> bool:
        """May it be brought up to date by reading the log (else a full pass is due)?"""
        return (self.epoch == epoch and self.generation == log.generation
                and len(log.names) - self.seen < self.nodes)

    def settled(self, epoch: object, log: TouchLog) -> bool:
        """Is it up to date as it is (current, and no node touched since it last read)?"""
        return (self.epoch == epoch and self.generation == log.generation
                and self.seen == len(log.names))

    def touched(self, log: TouchLog) -> list[str]:
        """The nodes touched since it last read the log, once each; marks them read."""
        names = list(dict.fromkeys(log.names[self.seen:]))
        self.seen = len(log.names)
        return names


@dataclass(slots=True)
class Tally(Follower):
    """One pod shape's verdict on every node, and the counts over them."""

    order: dict[str, int] = field(default_factory=dict)
    """Each node's position in name order: the first of equal shortfalls wins."""
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    shortfalls: dict[str, Shortfall] = field(default_factory=dict)
    """For nodes short of capacity: (resources short, amounts, position, shortfall)."""
    by_filter: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, int] = field(default_factory=dict)
    best: Shortfall | None = None
    """The least of :attr:`shortfalls` while :attr:`best_known` (kept as nodes are judged;
    forgotten when the node that held it is judged again)."""
    best_known: bool = True
    made: Diagnosis | None = None
    """The diagnosis last made, while no verdict has changed since (and for whom the
    reserved nodes were held then)."""
    made_for: str = ""

    @classmethod
    def full(cls, epoch: object, log: TouchLog, nodes: list[NodeState], judge: Judge) -> Tally:
        tally = cls(epoch, log.generation, len(log.names), len(nodes),
                    {state.node.name: i for i, state in enumerate(nodes)})
        for state in nodes:
            tally._judge(state, judge)
        return tally

    def update(self, log: TouchLog, lookup: Callable[[str], NodeState | None],
               judge: Judge) -> None:
        """Judge again the nodes touched since the tally last read the log."""
        for name in self.touched(log):
            state = lookup(name)
            if state is not None and name in self.order:
                self._forget(name)
                self._judge(state, judge)

    def diagnosis(self, reserved_for: str) -> Diagnosis:
        """The diagnosis of the verdicts as they stand: the same object while none has
        changed (so that its message is worded once)."""
        made = self.made
        if made is not None and self.made_for == reserved_for:
            return made
        if not self.best_known:
            self.best = min(self.shortfalls.values(), default=None)
            self.best_known = True
        best = self.best
        made = self.made = Diagnosis(self.nodes, dict(self.by_filter),
                                     best[3] if best is not None else Resources.ZERO,
                                     reserved_for, dict(self.reasons))
        self.made_for = reserved_for
        return made

    def _judge(self, state: NodeState, judge: Judge) -> None:
        name = state.node.name
        self.made = None
        status, short = judge(state)
        verdict: Verdict = (FITS, ()) if status.ok else (status.plugin, status.reasons)
        self.verdicts[name] = verdict
        _count(self.by_filter, (verdict[0],), 1)
        _count(self.reasons, verdict[1], 1)
        if short is not None:
            amounts = tuple(amount for _, amount in sorted(short.items()))
            entry = self.shortfalls[name] = (len(amounts), amounts, self.order[name], short)
            if self.best_known and (self.best is None or entry < self.best):
                self.best = entry

    def _forget(self, name: str) -> None:
        verdict = self.verdicts.pop(name, None)
        if verdict is None:
            return
        self.made = None
        _count(self.by_filter, (verdict[0],), -1)
        _count(self.reasons, verdict[1], -1)
        if self.shortfalls.pop(name, None) is self.best:
            self.best_known = self.best is None


def _count(counts: dict[str, int], keys: Iterable[str], step: int) -> None:
    for key in keys:
        value = counts.get(key, 0) + step
        if value:
            counts[key] = value
        else:
            del counts[key]


def copies(free: Resources, asked: list[tuple[str, int]],
           extra: Resources = Resources.ZERO) -> int:
    """How many pods asking ``asked`` (positive amounts) fit in ``free`` (and ``extra``
    more)."""
    fewest = -1
    for name, amount in asked:
        count = (free.get(name) + extra.get(name)) // amount
        if fewest < 0 or count < fewest:
            fewest = count
        if fewest <= 0:
            return 0  # no room for one here (the usual case in a full cluster)
    return max(fewest, 0)


@dataclass(slots=True)
class Room(Follower):
    """How many pods of one shape fit in the free room of the nodes passing its
    constraints, kept node by node like a :class:`Tally`."""

    per_node: dict[str, int] = field(default_factory=dict)
    total: int = 0

    @classmethod
    def full(cls, epoch: object, log: TouchLog, nodes: list[NodeState],
             asked: list[tuple[str, int]]) -> Room:
        per_node = {state.node.name: copies(state.free, asked) for state in nodes}
        return cls(epoch, log.generation, len(log.names), len(nodes), per_node,
                   sum(per_node.values()))

    def update(self, log: TouchLog, lookup: Callable[[str], NodeState | None],
               asked: list[tuple[str, int]]) -> None:
        """Count again the nodes touched since it last read the log."""
        for name in self.touched(log):
            old = self.per_node.get(name)
            state = lookup(name)
            if old is None or state is None:
                continue
            new = copies(state.free, asked)
            self.per_node[name] = new
            self.total += new - old
