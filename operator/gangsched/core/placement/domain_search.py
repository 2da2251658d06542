"""Topology-aware gang placement: a gang simulated whole in each domain, the tightest kept.

Placing a gang member by member cannot keep it in one rack: the first member's best node
may lie in a rack too small for the rest (bin-packing makes that the usual case: the
fullest rack is scored first). :func:`plan` decides for the gang's members together:

1. The *levels* are the keys to try (:func:`~gangsched.core.placement.domains.levels`): the
   preferred keys smallest first, then the required one; without a required key the last
   level is *anywhere*.
2. At each level the candidate domains are every domain of the key, or, when members
   already hold room (placed before, bound before a restart), only the one domain they
   all share: the domain is derived from the cluster, so a restart or a recreated member
   finds it again. Members spanning two domains of a level rule the level out.
3. Domains whose summed free room (:class:`~gangsched.core.placement.domains.DomainIndex`) is
   below the members' total request are pruned without a simulation. The rest are
   taken tightest first: least room left once the gang is in, measured on the
   resource the domain has least of relative to the gang's ask (its bottleneck: room
   for the gang once more is 1, however much memory or pod slots stay free), ties by
   domain value. For a gang whose members are all of one shape, a domain's *places*
   (:meth:`~gangsched.core.placement.domains.DomainIndex.places`: pods of the shape its nodes have
   room for, each node on its own) prune it first when fewer than the members, and
   the places left once the gang is in rank it before that measure: the fewest places
   stranded first. Since the whole gang goes into the domain, the first whose
   simulation succeeds is the tightest that fits, and no other is simulated.
4. The simulation places the members in order, each with the profile's whole filter
   pipeline (static filters, capacity, host ports, pod (anti-)affinity, spread...) over
   the domain's nodes only, scored as :meth:`~gangsched.core.placement.cluster.Cluster.place`
   scores (as many feasible nodes as ``sample_size``; nodes of equal usage scored once
   when only their usage tells them apart), each member charged tentatively so
   that the next one sees it; every tentative charge is undone before returning. Nodes
   reserved for another gang are skipped. Members' DRA claims are allocated
   with the allocator on the node each is given, and the devices they take are taken
   for the members after them (:mod:`~gangsched.core.placement.members`), so a domain
   is chosen only if it has the devices of every member; other volumes are checked
   per member, not the members' claims against one another.
5. *Slices*: with ``slice_key``, members are taken ``slice_size`` at a time and each
   slice is simulated in the tightest domain of ``slice_key`` inside the gang's domain
   where it fits whole. Members already placed count: a slice domain holding a partial
   slice is filled up first.

The result is a :class:`Plan` (the domain and, per member, the node the simulation gave
it, which the caller checks again and uses), or a :class:`Refusal` naming the domains
tried and why each failed, in words the status and ``gangsched explain`` show.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gangsched.core.placement.domains import Domain, levels
from gangsched.core.placement.members import Skip, Trial, place_one
from gangsched.core.values.model import Scoring, TopologyRequest
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.framework.nodeinfo import NodeState
    from gangsched.core.framework.podinfo import Constraints, PodInfo
    from gangsched.core.framework.runner import Framework
    from gangsched.core.placement.cluster import Cluster

REASON = "Topology"
"""The blocking reason of a gang that fits no domain."""

SHOWN = 6
"""Domains named in a refusal's message (all are counted; details keep a few more)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """Where a gang goes: its ``domain`` (None: anywhere) and, per member in the order
    given to :func:`plan`, the node the simulation chose (None: no simulation was needed,
    place it as usual)."""

    domain: Domain | None
    nodes: tuple[str | None, ...]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A gang that fits no domain it may use: read like a diagnosis (``reason``,
    :meth:`message`, :meth:`details`)."""

    text: str
    tried: tuple[tuple[str, str], ...] = ()
    """(domain, why it failed), tightest first."""
    reason: str = REASON

    def message(self, request: Resources | None = None) -> str:
        """The message (``request`` is accepted as a diagnosis's is, unused)."""
        return self.text

    def details(self) -> dict[str, str]:
        """The domains tried, each with why it failed (at most 16)."""
        found = {f"domain {name}": why for name, why in self.tried[:16]}
        if len(self.tried) > 16:
            found["domains not shown"] = str(len(self.tried) - 16)
        return found


CARRY_SKIPS = True
"""Members alike share their scan (:class:`Skip`); False scans every member from the
first node (tests compare both)."""


def plan(cluster: Cluster, topology: TopologyRequest, members: Sequence[PodInfo],
         placed: Sequence[str], scoring: Scoring) -> Plan | Refusal:
    """Where ``members`` (the gang's members still to place, in placement order) go so
    that the gang, with its members already on the nodes ``placed``, honours
    ``topology``. The empty request gives a plan of no domain and no node. Names in
    ``placed`` of nodes the cluster does not know are ignored; no members gives a plan
    with no node (the domain derived from ``placed`` when there is one). Nothing in the
    cluster changes."""
    if topology.empty:
        return Plan(None, (None,) * len(members))
    total = Resources.ZERO
    for info in members:
        total = total + info.request
    tried: list[tuple[str, str]] = []
    pruned = 0
    known = [name for name in placed if name in cluster.nodes]
    for key in levels(topology):
        if key is None:
            if topology.slice_key is None:
                return Plan(None, (None,) * len(members))
            found = _simulate(cluster, topology, members, cluster.sorted_nodes(), known,
                              scoring)
            if isinstance(found, tuple):
                return Plan(None, found)
            tried.append(("anywhere", found))
            break
        index = cluster.domains
        layout = index.layout(key, cluster.sorted_nodes(), cluster.node_epoch)
        if known:
            values = {layout.of_node.get(name) for name in known}
            if len(values) != 1 or None in values:
                shown = sorted(v or "(unlabelled)" for v in values)
                tried.append((key, f"members already placed span {', '.join(shown)}"))
                continue
            candidates = [v for v in values if v is not None]
        else:
            candidates = list(layout.nodes)
        sums = index.free(key, cluster.sorted_nodes(), cluster.node_epoch,
                          cluster.touches, cluster.nodes)
        shape = _one_shape(members)
        places = None if shape is None else index.places(
            key, shape.request, shape.constraints, cluster.candidates(shape.constraints),
            cluster.sorted_nodes(), cluster.node_epoch, cluster.touches, cluster.nodes)
        asked = [(name, amount) for name, amount in total.items() if amount > 0]
        ranked: list[tuple[float, float, str]] = []
        need = len(members)
        for value in candidates:
            free = sums.get(value, {})
            if places is not None:
                here = places.get(value, 0)
                if here >= need:
                    ranked.append((here - need, _left(free, asked), value))
                else:
                    pruned += 1
                    if len(tried) < 64:
                        tried.append((f"{key}={value}",
                                      f"room for {here} of its {need} members of "
                                      f"{members[0].request.format_short()} on the nodes "
                                      "their constraints allow"))
            elif all(free.get(name, 0) >= amount for name, amount in asked):
                ranked.append((0, _left(free, asked), value))
            else:
                pruned += 1
                if len(tried) < 64:
                    short = Resources({n: a - free.get(n, 0) for n, a in asked
                                       if free.get(n, 0) < a})
                    tried.append((f"{key}={value}",
                                  f"free room short of the gang's {total.format_short()} "
                                  f"by {short.format_short()}"))
        ranked.sort()
        for _, _, value in ranked:
            found = _simulate(cluster, topology, members, layout.nodes[value], known, scoring,
                              counted=places is not None)
            if isinstance(found, tuple):
                return Plan(Domain(key, value), found)
            tried.append((f"{key}={value}", found))
        if not candidates:
            tried.append((key, "no node carries this label"))
    return _refuse(topology, len(members), tried, pruned)


def _left(free: Mapping[str, int], asked: list[tuple[str, int]]) -> float:
    """The room a domain would have left once the gang is in, in units of the gang's
    ask, on the resource that is shortest (its bottleneck): a domain with room for
    the gang once more scores 1, whatever plenty it has of other resources. A gang
    that asks for nothing leaves every domain as it is: 0."""
    if not asked:
        return 0.0
    return min(free.get(name, 0) / amount for name, amount in asked) - 1


def _refuse(topology: TopologyRequest, count: int, tried: list[tuple[str, str]],
            pruned: int) -> Refusal:
    keys = " or ".join(str(k) for k in levels(topology) if k is not None) or "anywhere"
    text = f"the gang's {count} members fit in no single domain of {keys}"
    if topology.slice_key is not None:
        text += (f" with slices of {topology.slice_size} in one {topology.slice_key} "
                 "domain each")
    shown = [f"{name}: {why}" for name, why in tried[:SHOWN]]
    if shown:
        text += "; tried " + "; ".join(shown)
    if len(tried) > SHOWN:
        text += f"; and {len(tried) - SHOWN} more"
    if pruned:
        text += f" ({pruned} domains had too little free room to be simulated)"
    return Refusal(text, tuple(tried))


def _one_shape(members: Sequence[PodInfo]) -> PodInfo | None:
    """The first member when every member has its request and constraints, else None."""
    if not members:
        return None
    first = members[0]
    for info in members:
        if info.request != first.request or info.constraints != first.constraints:
            return None
    return first


def _simulate(cluster: Cluster, topology: TopologyRequest, members: Sequence[PodInfo],
              nodes: list[NodeState], placed: Sequence[str],
              scoring: Scoring, *, counted: bool = False) -> tuple[str | None, ...] | str:
    """Each member's node inside ``nodes`` (with slices, inside one slice domain per
    slice), or why one of them fits nowhere there. ``counted``: the domain's places
    for the members' one shape are known to be enough. Nothing changes in the end."""
    trial = Trial(cluster)
    fwk = cluster.framework(scoring)
    try:
        if topology.slice_key is None or topology.slice_size <= 0:
            short = (None if counted and (not members or _apart(members[0]) is None)
                     else _too_few_places(cluster, members, nodes))
            if short is not None:
                return short
            chosen: list[str | None] = []
            skip = Skip() if CARRY_SKIPS else None
            for position, info in enumerate(members):
                found = place_one(cluster, fwk, trial, info, position, nodes, skip)
                if not isinstance(found, tuple):
                    return f"member {position + 1} of {len(members)}: {found}"
                chosen.append(found[0])
            return tuple(chosen)
        return _slices(cluster, fwk, trial, topology, members, nodes, placed)
    finally:
        trial.undo()


def _too_few_places(cluster: Cluster, members: Sequence[PodInfo],
                    nodes: list[NodeState]) -> str | None:
    """Why members all of one request and constraints cannot fit ``nodes``, told by
    counting: identical members fit wherever one more fits, so they fit only if the
    nodes passing their static filters have room for as many copies as there are
    members, each node counted on its own. None when they may fit (or are not all
    alike: only the simulation tells). O(nodes), against O(members x nodes) for a
    simulation that would fail."""
    if not members:
        return None
    first = members[0]
    request, constraints = first.request, first.constraints
    for info in members:
        if info.request != request or info.constraints != constraints:
            return None
    asked = [(name, amount) for name, amount in request.items() if amount > 0]
    if not asked:
        return None
    allowed = cluster.domains.allowed(constraints, cluster.candidates(constraints),
                                      cluster.node_epoch)
    apart = _apart(first)
    need = len(members)
    places = 0
    seen: set[str] = set()
    copies: dict[str, int] = {}
    """Copies by usage key: nodes of equal usage have equal room."""
    for state in nodes:
        if state.node.name not in allowed:
            continue
        here = copies.get(state.usage_key)
        if here is None:
            free = state.free
            here = copies[state.usage_key] = min(free.get(name) // amount
                                                 for name, amount in asked)
        if here > 0:
            if apart is not None:
                value = state.node.labels.get(apart)
                if value is None or value in seen:
                    continue
                seen.add(value)
                here = 1
            places += here
            if places >= need:
                return None
    if apart is not None:
        return (f"room for {places} of its {need} members, one per {apart} domain "
                "(their required anti-affinity to one another)")
    return (f"room for {places} of its {need} members of "
            f"{request.format_short()} on the nodes their constraints allow")


def _apart(info: PodInfo) -> str | None:
    """The topology key of a required anti-affinity term of ``info`` that selects its
    own labels in its own namespace (members of the gang then take one domain of that
    key each), or None."""
    labels = info.labels
    for term in info.placement.anti_affinity:
        own = (not term.namespaces and term.namespace_selector is None) or (
            info.namespace in term.namespaces)
        if own and term.selector is not None and term.selector.matches(labels):
            return term.topology_key
    return None


def _slices(cluster: Cluster, fwk: Framework, trial: Trial, topology: TopologyRequest,
            members: Sequence[PodInfo], nodes: list[NodeState],
            placed: Sequence[str]) -> tuple[str | None, ...] | str:
    key, size = topology.slice_key or "", topology.slice_size
    layout = cluster.domains.layout(key, cluster.sorted_nodes(), cluster.node_epoch)
    inside: dict[str, list[NodeState]] = {}
    for state in nodes:
        value = layout.of_node.get(state.node.name)
        if value is not None:
            inside.setdefault(value, []).append(state)
    counts: dict[str, int] = {}
    for name in placed:
        value = layout.of_node.get(name)
        if value is not None:
            counts[value] = counts.get(value, 0) + 1
    chunks: list[tuple[str | None, int]] = []  # (slice domain or None: choose, members)
    left = len(members)
    for value in sorted(counts):
        room = -counts[value] % size
        if room and left:
            chunks.append((value, min(room, left)))
            left -= min(room, left)
    while left > 0:
        chunks.append((None, min(size, left)))
        left -= size
    chosen: list[str | None] = []
    start = 0
    for value, count in chunks:
        part = members[start:start + count]
        options = [value] if value is not None else _tightest(inside, part)
        why = f"no {key} domain inside it has room for a slice of {count}"
        for option in options:
            mark = len(trial.done)
            got: list[str | None] = []
            for offset, info in enumerate(part):
                found = place_one(cluster, fwk, trial, info, start + offset,
                                   inside.get(option, []))
                if not isinstance(found, tuple):
                    why = (f"slice member {start + offset + 1} in {key}={option}: {found}"
                           if value is not None else why)
                    break
                got.append(found[0])
            else:
                chosen.extend(got)
                break
            trial.undo(mark)
        else:
            return why
        start += count
    return tuple(chosen)


def _tightest(inside: Mapping[str, list[NodeState]], part: Sequence[PodInfo]) -> list[str]:
    """Slice domains with room for ``part`` in total, least room left first."""
    total = Resources.ZERO
    for info in part:
        total = total + info.request
    asked = [(name, amount) for name, amount in total.items() if amount > 0]
    ranked: list[tuple[float, str]] = []
    for value, states in inside.items():
        free = {name: sum(max(0, s.free.get(name)) for s in states) for name, _ in asked}
        if all(free[name] >= amount for name, amount in asked):
            ranked.append((_left(free, asked), value))
    ranked.sort()
    return [value for _, value in ranked]


@dataclass(frozen=True, slots=True)
class Confined:
    """Part of a preemptor that must land in one domain of ``key``: its items
    ``start:stop``, with its members already on the nodes ``placed``."""

    key: str
    start: int
    stop: int
    placed: tuple[str, ...] = ()


def room_in_a_domain(cluster: Cluster, items: Sequence[tuple[Resources, Constraints]],
                     confined: Sequence[Confined], extra: Mapping[str, Resources],
                     barred: Collection[str]) -> bool:
    """Does each confined part of ``items`` (request, constraints) fit in one domain of
    its key, with ``extra`` more free on some nodes (what victims would give back) and
    the ``barred`` nodes left out? Capacity and static filters only, first fit in name
    order, as preemption's own simulation. Each part is checked on its own; a part
    whose members already span two domains never fits. No parts: True."""
    for part in confined:
        wanted = items[part.start:part.stop]
        if not wanted:
            continue
        layout = cluster.domains.layout(part.key, cluster.sorted_nodes(), cluster.node_epoch)
        values = {layout.of_node.get(name) for name in part.placed if name in cluster.nodes}
        if values and (len(values) != 1 or None in values):
            return False
        candidates = [v for v in values if v is not None] or list(layout.nodes)
        if not any(_first_fit(cluster, wanted, layout.nodes[value], extra, barred)
                   for value in candidates):
            return False
    return True


def _first_fit(cluster: Cluster, items: Sequence[tuple[Resources, Constraints]],
               nodes: list[NodeState], extra: Mapping[str, Resources],
               barred: Collection[str]) -> bool:
    taken: dict[str, Resources] = {}
    for request, constraints in items:
        allowed = cluster.domains.allowed(constraints, cluster.candidates(constraints),
                                          cluster.node_epoch)
        for state in nodes:
            name = state.node.name
            if name not in allowed or name in barred:
                continue
            free = state.free
            more = extra.get(name)
            if more is not None:
                free = free + more
            less = taken.get(name)
            if less is not None:
                free = free - less
            if request.fits_in(free):
                taken[name] = (less or Resources.ZERO) + request
                break
        else:
            return False
    return True
