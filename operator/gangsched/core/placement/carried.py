"""The bin-packing scans kept from one placement to the next of the same pod shape.

:class:`Carried` holds, per pod shape, the last scan (a
:class:`~gangsched.core.placement.scan.Carry`, or a
:class:`~gangsched.core.placement.zoned.ZonedCarry` when a filter admits nodes by one
label alone), and per constraint set the candidates' positions by topology domain. For
the next pod of a shape it judges again only what changed since (the node book's touch
log, the filters' digests), or scans afresh; either way the nodes found are those a
fresh scan finds (see the two modules).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Protocol

from gangsched.core.framework import interface as fw
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.framework.runner import Framework
from gangsched.core.placement import zoned
from gangsched.core.placement.scan import Carry, DomainPositions, Found, RunJudge, carry, scan

MAX_SHAPES = 64
"""Pod shapes (and constraint sets) kept at most; beyond, they are forgotten at once."""
MAX_DOMAINS = 64
"""Values of a label a scan is kept per at most (a placement walks them all: zones and
racks, not hostnames); beyond, the scan is carried as a whole."""


class TouchLog(Protocol):
    """What the carry reads of the node book."""

    @property
    def nodes(self) -> dict[str, NodeState]: ...

    def touch_mark(self) -> tuple[int, int, int]: ...

    def touched_since(self, mark: tuple[int, int, int]) -> list[str] | None: ...

    def positions_of(self, constraints: Constraints) -> dict[str, int]: ...


class Carried:
    """The scans kept per pod shape (see the module docstring)."""

    def __init__(self, skip: str) -> None:
        self.skip = skip
        """The filter a scan leaves to the capacity check (NodeResourcesFit): no digest."""
        self._carried: dict[object, Carry] = {}
        self._zoned: dict[object, zoned.ZonedCarry] = {}
        self._where: dict[Constraints, DomainPositions] = {}
        """The candidates' positions by topology domain, per constraint set."""

    def binpack_scan(self, book: TouchLog, fwk: Framework, cycle: fw.CycleState,
                     info: PodInfo, nodes: list[NodeState], start: int, sample: int,
                     judge: RunJudge, *, distinct: bool = False) -> Found:
        """The bin-packing scan from ``start``: carried over from the last pod of the
        same shape when it can be, else afresh. ``distinct``: scoring reads usage keys
        alone, so that of a zoned scan only the first node of each key is needed."""
        digests = fwk.digests(cycle, info, skip=self.skip)
        if digests is None:
            return scan(nodes, start, len(nodes), sample, judge)
        shape = (info.request, info.constraints, info.placement, info.namespace,
                 tuple(sorted(info.labels.items())) if info.labels else ())
        where = self._where.get(info.constraints)
        if where is None or where.nodes is not nodes:
            if len(self._where) >= MAX_SHAPES:
                self._where.clear()
            where = self._where[info.constraints] = DomainPositions(nodes)
        verdict = fwk.label_verdict(cycle, info)
        if verdict is not None and len(where.values(verdict[1])) <= MAX_DOMAINS:
            name, key, refused = verdict
            return self._zoned_scan(book, fwk, info, shape, digests, nodes, start, sample,
                                    judge.without(name), name, key, refused, where,
                                    distinct)
        stamp = (nodes, judge.blocked, sample,
                 tuple(plugin.name for plugin, _ in judge.filters))
        kept = self._carried.get(shape)
        since = None if kept is None else _since(book, fwk, info, kept, stamp, digests)
        if kept is not None and since is not None:
            found = carry(kept, start, len(nodes), sample, judge, *since, where)
            if found is not None:
                kept.mark = book.touch_mark()
                kept.digests = digests
                return found
        found = scan(nodes, start, len(nodes), sample, judge, orders=True, domains=where)
        if len(self._carried) >= MAX_SHAPES:
            self._carried.clear()
        self._carried[shape] = Carry(stamp, book.touch_mark(), digests, start, found)
        return found

    def _zoned_scan(self, book: TouchLog, fwk: Framework, info: PodInfo, shape: object,
                    digests: tuple[object, ...], nodes: list[NodeState], start: int,
                    sample: int, judge: RunJudge, name: str, key: str, refused: Set[str],
                    where: DomainPositions, distinct: bool) -> Found:
        """The scan kept per value of ``key`` (see :mod:`~gangsched.core.placement.zoned`),
        ``judge`` without the filter ``name`` that admits by ``key`` alone."""
        digests = tuple(d for d in digests if not (isinstance(d, tuple) and d[0] == name))
        stamp = (nodes, judge.blocked, sample,
                 tuple(plugin.name for plugin, _ in judge.filters), key)
        kept = self._zoned.get(shape)
        since = None if kept is None else _since(book, fwk, info, kept, stamp, digests)
        if (kept is None or since is None
                or not zoned.update(kept, nodes, start, sample, judge, *since, where)):
            if len(self._zoned) >= MAX_SHAPES:
                self._zoned.clear()
            kept = self._zoned[shape] = zoned.fresh(stamp, book.touch_mark(), digests, key,
                                                    nodes, start)
        kept.mark = book.touch_mark()
        kept.digests = digests
        return zoned.select(kept, nodes, sample, judge, refused, where, distinct=distinct)


class _Kept(Protocol):
    """What :func:`_since` reads of a kept scan (a ``Carry`` or a ``ZonedCarry``)."""

    stamp: tuple[object, ...]
    mark: tuple[int, int, int]
    digests: tuple[object, ...]


def _since(book: TouchLog, fwk: Framework, info: PodInfo, kept: _Kept,
           stamp: tuple[object, ...], digests: tuple[object, ...]
           ) -> tuple[list[NodeState], dict[str, set[str]]] | None:
    """What changed since ``kept`` was brought up to date: the candidates touched, and
    the domains whose verdicts may differ under ``digests``; None when it cannot be
    carried over (another candidates list, reserved nodes, sample or filters, or the
    touch log or a digest cannot tell)."""
    if kept.stamp[0] is not stamp[0] or kept.stamp[1:] != stamp[1:]:
        return None
    touched = book.touched_since(kept.mark)
    if touched is None:
        return None
    domains = fwk.changed_domains(kept.digests, digests)
    if domains is None:
        return None
    positions = book.positions_of(info.constraints)
    return [book.nodes[name] for name in touched if name in positions], domains
