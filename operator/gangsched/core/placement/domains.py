"""Topology domains: the nodes that share a value of a node-label key, indexed once.

A *domain* of a key (``rack``, ``topology.kubernetes.io/zone``) is the set of nodes
carrying the same value of that label. A node without the label is in no domain of that
key. :class:`DomainIndex` keeps, per key asked for:

* the domains, each as its nodes in name order, and each node's domain (rebuilt only
  when the node set, or a node's labels, change: the cluster's node epoch);
* the free room summed per domain over its ready, schedulable nodes (amounts below zero
  count as 0), kept as usage changes by reading the cluster's touch log
  (:class:`~gangsched.core.placement.tally.TouchLog`): O(nodes touched) per question, not
  O(nodes). The sums are an upper bound of what a gang can use in a domain (static
  filters are not applied), which is what pruning needs: a domain whose sum cannot hold
  the gang's total request is never simulated;
* per pod shape (request and constraints), the *places* per domain: how many pods of
  the shape its nodes allowed by the constraints have room for, each node on its own,
  kept the same way. Identical members fit a domain only if it has as many places as
  members, and the places left once they are in are the capacity the gang strands
  there (the measure of a tight fit for a gang of one shape).

Also here: :func:`effective`, the topology a task group or PodGroup really asks for,
counting *self-affinity* (members with required pod affinity to one another on a key
must share a domain of that key, so the gang is placed as if it required that key).

Nothing here places a pod; :mod:`~gangsched.core.placement.domain_search` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.placement.tally import Follower, TouchLog
from gangsched.core.values.model import TopologyRequest
from gangsched.core.values.placement_terms import Placement
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.framework.podinfo import Constraints


@dataclass(frozen=True, slots=True, order=True)
class Domain:
    """One domain: the nodes labelled ``key=value``."""

    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def effective(topology: TopologyRequest, placement: Placement, namespace: str) -> TopologyRequest:
    """``topology``, or, when it requires no key and the members carry a required pod
    affinity term that selects their own labels in their own namespace, ``topology``
    requiring that term's key (the first such term): the members must share one domain
    of it, so the gang is placed whole in one. Terms with a namespace selector or other
    namespaces only count when they name the members' own namespace explicitly; a term
    with no selector selects nobody and is ignored."""
    if topology.required is not None or not placement.affinity:
        return topology
    labels = placement.label_map
    for term in placement.affinity:
        selector = term.selector
        if selector is None or not term.topology_key:
            continue
        own = (not term.namespaces and term.namespace_selector is None) or (
            namespace in term.namespaces)
        if own and selector.matches(labels):
            return replace(topology, required=term.topology_key)
    return topology


def levels(topology: TopologyRequest) -> tuple[str | None, ...]:
    """The keys to try, in order: the preferred ones up to (not including) the required
    key, then the required key; without a required key, the preferred ones then None
    (anywhere). The empty request gives ``(None,)``."""
    found: list[str | None] = []
    for key in topology.preferred:
        if key == topology.required:
            break
        if key not in found:
            found.append(key)
    found.append(topology.required)
    return tuple(found)


@dataclass(slots=True)
class _Layout:
    """The domains of one key (see :class:`DomainIndex`)."""

    epoch: int
    nodes: dict[str, list[NodeState]]
    """The nodes of each domain value, in name order."""
    of_node: dict[str, str]
    """Each labelled node's value."""


@dataclass(slots=True)
class _Sums(Follower):
    """Free room per domain value of one key, kept from the touch log."""

    counted: dict[str, Resources] = field(default_factory=dict)
    """What each node adds to its domain's sum."""
    sums: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(slots=True)
class _Places(Follower):
    """Places for one pod shape per domain value of one key, kept from the touch log."""

    asked: list[tuple[str, int]] = field(default_factory=list)
    copies: dict[str, int] = field(default_factory=dict)
    """Copies of the shape each node allowed by its constraints has room for."""
    sums: dict[str, int] = field(default_factory=dict)


def copies(free: Resources, asked: list[tuple[str, int]]) -> int:
    """How many pods asking ``asked`` (positive amounts) ``free`` has room for."""
    return max(0, min(free.get(name) // amount for name, amount in asked))


def _counted(state: NodeState) -> Resources:
    node = state.node
    if not node.ready or node.unschedulable:
        return Resources.ZERO
    return state.free.clamp_non_negative()


def _add(sums: dict[str, int], amounts: Resources, sign: int) -> None:
    for name, amount in amounts.items():
        sums[name] = sums.get(name, 0) + sign * amount


class DomainIndex:
    """Domains per key and their free room, for the cluster that owns it."""

    def __init__(self) -> None:
        self._layouts: dict[str, _Layout] = {}
        self._sums: dict[str, _Sums] = {}
        self._static: dict[Constraints, tuple[int, frozenset[str]]] = {}
        self._places: dict[tuple[str, Resources, Constraints], _Places] = {}
        self.refusals: dict[str, tuple[object, object]] = {}
        """Per gang, the last refusal and what it depended on (kept by the hooks,
        :mod:`~gangsched.core.gangs.gangplace`)."""

    def layout(self, key: str, nodes: list[NodeState], epoch: int) -> _Layout:
        """The domains of ``key`` over ``nodes`` (name order) as of node ``epoch``."""
        found = self._layouts.get(key)
        if found is None or found.epoch != epoch:
            by_value: dict[str, list[NodeState]] = {}
            of_node: dict[str, str] = {}
            for state in nodes:
                value = state.node.labels.get(key)
                if value is None:
                    continue
                by_value.setdefault(value, []).append(state)
                of_node[state.node.name] = value
            found = self._layouts[key] = _Layout(epoch, by_value, of_node)
        return found

    def free(self, key: str, nodes: list[NodeState], epoch: int,
             log: TouchLog, lookup: Mapping[str, NodeState]) -> dict[str, dict[str, int]]:
        """Free room summed per domain value of ``key`` (see the module docstring)."""
        layout = self.layout(key, nodes, epoch)
        sums = self._sums.get(key)
        if sums is not None and sums.current(epoch, log):
            for name in sums.touched(log):
                value = layout.of_node.get(name)
                state = lookup.get(name)
                if value is None or state is None:
                    continue
                here = sums.sums.setdefault(value, {})
                _add(here, sums.counted.get(name, Resources.ZERO), -1)
                now = sums.counted[name] = _counted(state)
                _add(here, now, 1)
            return sums.sums
        sums = _Sums(epoch, log.generation, len(log.names), len(nodes))
        for value, states in layout.nodes.items():
            here = sums.sums[value] = {}
            for state in states:
                counted = sums.counted[state.node.name] = _counted(state)
                _add(here, counted, 1)
        self._sums[key] = sums
        return sums.sums

    def places(self, key: str, request: Resources, constraints: Constraints,
               candidates: list[NodeState], nodes: list[NodeState], epoch: int,
               log: TouchLog, lookup: Mapping[str, NodeState]) -> dict[str, int] | None:
        """Per domain value of ``key``, how many pods of ``request`` its nodes passing
        the static filters for ``constraints`` (``candidates``) have room for, each node
        counted on its own: kept per shape as usage changes (O(nodes touched) per
        question). None for a request of nothing (room is never short)."""
        asked = [(name, amount) for name, amount in request.items() if amount > 0]
        if not asked:
            return None
        layout = self.layout(key, nodes, epoch)
        shape = (key, request, constraints)
        found = self._places.get(shape)
        if found is not None and found.current(epoch, log):
            for name in found.touched(log):
                before = found.copies.get(name)
                state = lookup.get(name)
                if before is None or state is None:
                    continue  # not allowed by the constraints, or in no domain
                now = found.copies[name] = copies(state.free, asked)
                value = layout.of_node[name]
                found.sums[value] += now - before
            return found.sums
        if len(self._places) >= 64:
            del self._places[next(iter(self._places))]  # the oldest
        found = _Places(epoch, log.generation, len(log.names), max(1, len(candidates)), asked)
        found.sums = dict.fromkeys(layout.nodes, 0)
        for state in candidates:
            name = state.node.name
            home = layout.of_node.get(name)
            if home is not None:
                here = found.copies[name] = copies(state.free, asked)
                found.sums[home] += here
        self._places[shape] = found
        return found.sums

    def allowed(self, constraints: Constraints, candidates: list[NodeState],
                epoch: int) -> frozenset[str]:
        """The names of ``candidates`` (the nodes passing the static filters for
        ``constraints``), kept per constraints until the node ``epoch`` changes."""
        found = self._static.get(constraints)
        if found is None or found[0] != epoch:
            if len(self._static) >= 256:
                self._static.clear()
            found = self._static[constraints] = (
                epoch, frozenset(state.node.name for state in candidates))
        return found[1]
