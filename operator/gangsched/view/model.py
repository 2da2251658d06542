"""The dashboard's view model: plain frozen rows built from a board's contents and the nodes.

:func:`build` is pure and cheap (one pass over the gangs, queues and nodes; no sorting
beyond names). Its inputs:

* :class:`~gangsched.view.board.Contents`: the last statuses, Events and gang times;
* :class:`Sources`: what each front end adds: the objects' ``spec`` (for the explanation
  and the queue of a gang not yet admitted), partial-gang seconds per gang, the nodes
  (:func:`node_uses` reads them from the core), and the explanation's formatter;
* the explanation: ``gangsched explain``'s own text (``format_explanation`` of
  :mod:`gangsched.shell.explain`, handed in by the front end), written from the status the
  operator writes (:mod:`gangsched.translate.statuses`) and the Events kept.

Bars: a :class:`Bar` is one resource of one row, with its segments (stacked, in units)
against a ``scale``, and marks (a quota, a guarantee) at amounts. Amounts stay integers in
the core's units; the renderer formats them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from gangsched.core.values import resources
from gangsched.core.values.decisions import SetAppStatus, SetPodGroupStatus
from gangsched.core.values.resources import Resources
from gangsched.translate import statuses, times
from gangsched.translate.topology import BLOCK, RACK, ZONE
from gangsched.view.board import APPLICATION, PODGROUP, Contents, Event, Key

Explain = Callable[..., str]
"""``format_explanation(obj, events, pods, now=...)`` of ``gangsched explain``."""

LEVELS = ((ZONE, "zone"), (BLOCK, "block"), (RACK, "rack"))
"""Topology levels shown, widest first, by node label."""
_LEVEL_LABELS = tuple(label for label, _ in LEVELS)

SHOWN = ("cpu", "memory")
"""Resources every bar row shows; other resources are shown where some row has them."""

MAX_NODES = 500
"""Nodes listed, fullest first (the domains sum all of them)."""

MAX_GANGS = 300
"""Gangs listed (and explained) once filtered, blocked first; the rest are counted."""


@dataclasses.dataclass(frozen=True, slots=True)
class Bar:
    resource: str
    scale: int
    segments: tuple[tuple[str, int], ...]
    """(kind, amount) stacked from the left: ``used``, ``placeholders``, ``pending``."""
    marks: tuple[tuple[str, int], ...] = ()
    """(kind, amount): ``guaranteed``, ``quota``."""
    capacity: int | None = None
    """What the segments are out of (a node's or a domain's allocatable), if anything."""


@dataclasses.dataclass(frozen=True, slots=True)
class QueueRow:
    name: str
    bars: tuple[Bar, ...]
    applications: Mapping[str, int]
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class GroupRow:
    """A task group of an Application, or a PodGroup as one group."""

    name: str
    min_member: int
    bound: int
    placeholders: int
    pending: int
    blocking: str
    """``Reason: message``; empty when not blocked."""


@dataclasses.dataclass(frozen=True, slots=True)
class GangRow:
    kind: str
    namespace: str
    name: str
    queue: str
    state: str
    reason: str
    message: str
    groups: tuple[GroupRow, ...]
    time_to_full: float | None
    partial_seconds: float
    events: tuple[Event, ...]
    explanation: str

    @property
    def blocked(self) -> bool:
        return any(g.blocking for g in self.groups)


@dataclasses.dataclass(frozen=True, slots=True)
class NodeUse:
    """A node as the core holds it: allocatable, used (placeholders included), and the
    part held by placeholders."""

    name: str
    allocatable: Resources
    used: Resources
    placeholders: Resources
    labels: Mapping[str, str]
    schedulable: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class NodeRow:
    name: str
    bars: tuple[Bar, ...]
    domains: tuple[tuple[str, str], ...]
    """(level, domain) of each topology level the node is labelled with."""
    schedulable: bool


@dataclasses.dataclass(frozen=True, slots=True)
class DomainRow:
    level: str
    name: str
    nodes: int
    bars: tuple[Bar, ...]
    free: Resources
    largest_free_cpu: int
    """The most cpu free on one node of the domain (what one member can get)."""


@dataclasses.dataclass(frozen=True, slots=True)
class View:
    now: float
    queues: tuple[QueueRow, ...]
    gangs: tuple[GangRow, ...]
    nodes: tuple[NodeRow, ...]
    domains: tuple[DomainRow, ...]
    node_count: int
    gang_count: int
    """Gangs that match the filters (``gangs`` lists the first :data:`MAX_GANGS`)."""
    namespaces: tuple[str, ...]
    """Every namespace, queue and state of the gangs: the filters' choices."""
    queue_names: tuple[str, ...]
    states: tuple[str, ...]
    notice: str = ""
    """Said above every page (a replica that does not lead, say)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Sources:
    """What a front end adds to the board's contents (see the module docstring)."""

    specs: Mapping[Key, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    partial_seconds: Mapping[Key, float] = dataclasses.field(default_factory=dict)
    nodes: Sequence[NodeUse] = ()
    explain: Explain | None = None
    notice: str = ""


NodeCopy = tuple[Any, Resources, dict[str, Resources]]
"""(``Node``, used, request by pod uid) of one node of the core (see :func:`copy_nodes`)."""


def copy_nodes(nodes: Iterable[Any]) -> list[NodeCopy]:
    """What the dashboard needs of the core's node states (``scheduler.cluster.nodes
    .values()``), copied: the node and its usage are immutable values, the pods' requests
    a dict copied at C speed. Run it on the core's thread, between cycles; it is the only
    part of the view that waits for the core, and the only one a cycle waits for."""
    return [(ns.node, ns.used, ns.pods.copy()) for ns in nodes]


def node_uses(nodes: Iterable[NodeCopy], placeholder: Callable[[str], bool]) -> list[NodeUse]:
    """The nodes copied by :func:`copy_nodes`, with the room held by the pods for which
    ``placeholder(uid)`` holds."""
    out = []
    for node, used, pods in nodes:
        held: dict[str, int] = {}
        for uid, request in pods.items():
            if placeholder(uid):
                _add(held, request)
        out.append(NodeUse(node.name, node.allocatable, used, Resources(held), node.labels,
                           not node.unschedulable and node.ready))
    return out


ENDED = frozenset({"Completed", "Rejected", "Killed", "Failed", "Finished", "Succeeded"})
"""States and phases of gangs that are over: listed after the others."""


def natural(text: str) -> tuple[tuple[int, str], ...]:
    """A sort key that puts ``spark-2`` before ``spark-10``."""
    return tuple((int(part), "") if part.isdigit() else (-1, part)
                 for part in re.split(r"(\d+)", text) if part)


def _order(g: GangRow) -> tuple[object, ...]:
    return (not g.blocked, g.state in ENDED, g.namespace, natural(g.name), g.kind)


def build(contents: Contents, sources: Sources) -> View:
    """The whole view, every gang listed but none explained yet (:func:`select` does
    that for the gangs it keeps); missing pieces (a gang without spec, no nodes) show as
    empty. Gangs are listed blocked first, then the ones not over, by namespace and name."""
    gangs = tuple(sorted(_gangs(contents, sources), key=_order))
    nodes = sorted(sources.nodes, key=lambda n: (-_fullness(n), n.name))
    return View(
        now=contents.now,
        queues=tuple(_queue(q) for _, q in sorted(contents.queues.items())),
        gangs=gangs,
        nodes=tuple(_node(n) for n in nodes[:MAX_NODES]),
        domains=tuple(_domains(sources.nodes)),
        node_count=len(sources.nodes),
        gang_count=len(gangs),
        namespaces=tuple(sorted({g.namespace for g in gangs})),
        queue_names=tuple(sorted({g.queue for g in gangs} | set(contents.queues))),
        states=tuple(sorted({g.state for g in gangs})),
        notice=sources.notice,
    )


def select(view: View, contents: Contents, sources: Sources, *, namespace: str = "",
           queue: str = "", state: str = "", limit: int = MAX_GANGS) -> View:
    """The view with the first ``limit`` gangs that match every filter given (empty:
    any), each explained from ``contents`` and ``sources`` (those the view was built
    from); the choices of the filters stay those of every gang."""
    matching = [g for g in view.gangs
                if (not namespace or g.namespace == namespace)
                and (not queue or g.queue == queue) and (not state or g.state == state)]
    kept = tuple(_explained(g, contents, sources) for g in matching[:max(0, limit)])
    return dataclasses.replace(view, gangs=kept, gang_count=len(matching))


# --- queues ------------------------------------------------------------------------------

def _queue(q: Any) -> QueueRow:
    bars = []
    names = _names(q.allocated, q.pending, q.guaranteed, q.max or Resources.ZERO)
    for name in names:
        allocated, held = q.allocated.get(name), q.reserved_by_placeholders.get(name)
        pending, guaranteed = q.pending.get(name), q.guaranteed.get(name)
        quota = q.max.get(name) if q.max is not None and name in q.max.names() else None
        marks = [("guaranteed", guaranteed)] if guaranteed else []
        if quota is not None:
            marks.append(("quota", quota))
        scale = max(allocated + pending, guaranteed, quota or 0, 1)
        bars.append(Bar(name, scale, (("used", max(0, allocated - held)),
                                      ("placeholders", held), ("pending", pending)),
                        tuple(marks)))
    return QueueRow(q.name, tuple(bars), dict(q.applications), q.message)


def _names(*vectors: Resources) -> list[str]:
    """cpu and memory first, then every other resource present, by name."""
    others = {n for v in vectors for n in v.names() if n not in SHOWN and n != "pods"}
    return [*SHOWN, *sorted(others)]


# --- gangs -------------------------------------------------------------------------------

def _gangs(contents: Contents, sources: Sources) -> Iterator[GangRow]:
    for key, d in contents.apps.items():
        yield _gang((APPLICATION, key), d, contents, sources)
    for key, g in contents.groups.items():
        yield _gang((PODGROUP, key), g, contents, sources)


def _gang(key: Key, d: SetAppStatus | SetPodGroupStatus, contents: Contents,
          sources: Sources) -> GangRow:
    namespace, _, name = key[1].partition("/")
    spec = sources.specs.get(key) or {}
    events = contents.events.get(key, ())
    if isinstance(d, SetAppStatus):
        state, queue = d.state, d.queue or str(spec.get("queue") or "default")
        groups = tuple(GroupRow(t.name, t.min_member, t.real_bound, t.placeholders.allocated,
                                t.real_pending + t.placeholders.pending, _blocking(t.blocking))
                       for t in d.task_groups)
    else:
        state, queue = d.phase, str(spec.get("queue") or "default")
        groups = (GroupRow("(pod group)", _int(spec.get("minMember")), d.scheduled,
                           d.assumed, max(0, d.members - d.scheduled - d.assumed),
                           _blocking(d.blocking)),)
    return GangRow(key[0], namespace, name, queue, state, d.reason, d.message, groups,
                   contents.full_gang.get(key), sources.partial_seconds.get(key, 0.0),
                   tuple(reversed(events)), "")


def _explained(g: GangRow, contents: Contents, sources: Sources) -> GangRow:
    """The row with ``gangsched explain``'s text, written from the status the operator
    writes for the gang's last status decision."""
    key = (g.kind, f"{g.namespace}/{g.name}")
    d = contents.apps.get(key[1]) if g.kind == APPLICATION else contents.groups.get(key[1])
    if sources.explain is None or d is None:
        return g
    if isinstance(d, SetAppStatus):
        status = statuses.app_status_body(d, now=contents.now, generation=1, old_status=None)
    else:
        status = statuses.podgroup_status_body(d, now=contents.now, generation=1,
                                               old_status=None)
    obj = {"kind": g.kind, "metadata": {"namespace": g.namespace, "name": g.name},
           "spec": sources.specs.get(key) or {}, "status": status}
    events = [_event_json(e) for e in reversed(g.events)]
    return dataclasses.replace(g, explanation=sources.explain(obj, events, [],
                                                              now=contents.now))


def _blocking(b: Any) -> str:
    reason = b.reason if b.reason != "None" else b.details.get("reason", "None")
    if reason == "None":
        return ""
    return f"{reason}: {b.message}" if b.message else reason


def _event_json(e: Event) -> dict[str, Any]:
    return {"eventTime": times.format_micro_time(e.at), "type": e.type, "reason": e.reason,
            "note": e.message}


def _int(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


# --- nodes and domains -------------------------------------------------------------------

def _fullness(n: NodeUse) -> float:
    cpu = n.allocatable.get(resources.CPU)
    return n.used.get(resources.CPU) / cpu if cpu > 0 else 0.0


def _usage_bars(allocatable: Resources, used: Resources, held: Resources) -> tuple[Bar, ...]:
    names = [n for n in _names(allocatable) if allocatable.get(n) or used.get(n)]
    return tuple(Bar(n, max(allocatable.get(n), used.get(n), 1),
                     (("used", max(0, used.get(n) - held.get(n))),
                      ("placeholders", held.get(n))), capacity=allocatable.get(n))
                 for n in names)


def _node(n: NodeUse) -> NodeRow:
    domains = tuple((level, n.labels[label]) for label, level in LEVELS if label in n.labels)
    return NodeRow(n.name, _usage_bars(n.allocatable, n.used, n.placeholders), domains,
                   n.schedulable)


@dataclasses.dataclass(slots=True)
class _Sum:
    nodes: int = 0
    allocatable: dict[str, int] = dataclasses.field(default_factory=dict)
    used: dict[str, int] = dataclasses.field(default_factory=dict)
    held: dict[str, int] = dataclasses.field(default_factory=dict)
    largest_free_cpu: int = 0


def _add(into: dict[str, int], vector: Resources) -> None:
    for name, amount in vector.items():
        into[name] = into.get(name, 0) + amount


def _merge(into: _Sum, other: _Sum) -> None:
    into.nodes += other.nodes
    _add_all(into.allocatable, other.allocatable)
    _add_all(into.used, other.used)
    _add_all(into.held, other.held)
    into.largest_free_cpu = max(into.largest_free_cpu, other.largest_free_cpu)


def _add_all(into: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        into[name] = into.get(name, 0) + amount


def _domains(nodes: Iterable[NodeUse]) -> Iterator[DomainRow]:
    """Each domain of each level: its nodes' sums and the most cpu free on one
    schedulable node. Nodes are summed once per set of topology labels (a rack's nodes
    share one), then those sums into each level's domains: a node is added once, not once
    per level."""
    by_labels: dict[tuple[str | None, ...], _Sum] = {}
    for n in nodes:
        place = tuple(map(n.labels.get, _LEVEL_LABELS))
        if place.count(None) == len(LEVELS):
            continue
        s = by_labels.get(place)
        if s is None:
            s = by_labels[place] = _Sum()
        s.nodes += 1
        _add(s.allocatable, n.allocatable)
        _add(s.used, n.used)
        _add(s.held, n.placeholders)
        if n.schedulable:
            free_cpu = n.allocatable.get(resources.CPU) - n.used.get(resources.CPU)
            if free_cpu > s.largest_free_cpu:
                s.largest_free_cpu = free_cpu
    sums: dict[tuple[int, str], _Sum] = {}
    for place, part in by_labels.items():
        for index, value in enumerate(place):
            if value is None:
                continue
            s = sums.get((index, value))
            if s is None:
                s = sums[(index, value)] = _Sum()
            _merge(s, part)
    for (index, value), s in sorted(sums.items()):
        allocatable, used = Resources(s.allocatable), Resources(s.used)
        free = (allocatable - used).clamp_non_negative()
        yield DomainRow(LEVELS[index][1], value, s.nodes,
                        _usage_bars(allocatable, used, Resources(s.held)), free,
                        s.largest_free_cpu)
