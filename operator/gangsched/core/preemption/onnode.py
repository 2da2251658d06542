"""Victims on one node, chosen as kube-scheduler's ``SelectVictimsOnNode`` chooses them.

:func:`gangsched.core.preemption.victims.select` simulates capacity and the static filters only: it
is exact for a pod whose fit depends on nothing else, and fast enough to search whole
gangs over many nodes. A single pod whose fit depends on other pods (its own pod
affinity or anti-affinity, spread constraints or host ports, or a placed pod's required
anti-affinity) or on volumes is searched here instead, node by node, with every filter
of the profile run again with the victims gone, as upstream's ``DryRunPreemption`` does:

1. on each node that passes the static filters (and is not reserved for another gang),
   every candidate on that node goes: single pods (a running gang's members above its
   minMember budget, lowest priority first) and reservations held on that node alone,
   as upstream takes pods one by one (a whole running gang is no candidate here);
2. if the pod still does not fit there (every filter, capacity and its queue's quota),
   the node is no candidate;
3. else the units are given back one by one, those whose eviction a PodDisruptionBudget
   refused first, then the others, each group highest priority first (then the oldest
   first); a unit the pod cannot do without stays a victim
   (``filterPodsWithPDBViolation``, then the reprieve loop);
4. the search stops after enough candidate nodes (:data:`MIN_CANDIDATES`); among them,
   the one chosen is upstream's ``pickOneNodeForPreemption``:
   the fewest victims whose eviction a budget refused, then the lowest highest victim
   priority, then the lowest sum of priorities, then the fewest victims, then the one
   whose highest-priority victims started latest, then the first node by name.

"Gone" is simulated on the cluster itself, and undone before returning: the victims'
pods leave the placed-pod index and their node's host ports, and their requests are
added to the node's free room for the check. Nothing else changes (the index's epoch
moves, so pods that wait for their neighbours are tried again, as after any change).
The volume plugins read the claims in use from the volume catalog, which a simulated
victim does not leave: a pod that waits for a ``ReadWriteOncePod`` claim a victim holds
finds no candidate here.

Work of several members (a gang) keeps the capacity simulation, whose victims are
then checked by :func:`placed_with`: every member must find a node that passes every
filter, with the victims gone and the members before it placed. When they do not,
:func:`widened` adds more candidates one at a time until they do (then drops the ones
that can be spared); otherwise nothing is evicted for it.

The cost is O(candidate nodes x units on each x filters), each check with its own
PreFilter (upstream updates one PreFilter state as pods are removed and added). A
screen first runs one PreFilter with every candidate of every node gone
(:func:`_screen`): for the pods whose filters only gain from others going, the nodes
that fail it are no candidates, and most searches end there. It runs only for such
pods, only when the ``preempt`` action has a candidate victim of lower priority.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.placement.diagnosis import FIT_PLUGIN
from gangsched.core.preemption.freed import Freed
from gangsched.core.preemption.preemptors import Preemptor, neighbour_bound
from gangsched.core.preemption.simulation import closed_nodes, fit, relevant_nodes, scoring_for
from gangsched.core.preemption.victims import Allowed, Tier, Unit
from gangsched.core.values.model import Scoring
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session
    from gangsched.core.values.placement_terms import HostPort


def wanted(s: Session, pre: Preemptor) -> bool:
    """Must ``pre`` be searched node by node? A single pod whose fit depends on more
    than capacity and its static constraints. Work of several members: no."""
    ps = pre.pod
    return ps is not None and len(pre.items) == 1 and neighbour_bound(s, ps)


MIN_CANDIDATES = 100
MIN_CANDIDATES_PERCENT = 10
"""The search stops once it has this many candidate nodes (at least, and this share of
the nodes), as upstream's DryRunPreemption does (``minCandidateNodesAbsolute``,
``minCandidateNodesPercentage``), starting from the first node by name."""

Choice = tuple[str, list[Unit]]
"""A node and the victims that let the pod fit there."""


def select(s: Session, pre: Preemptor, candidates: Iterable[Unit], *,
           allowed: Allowed | None = None, quota_relief: bool = True,
           violates: Callable[[Unit], bool] | None = None) -> Choice | None:
    """The node and victims for the single-pod preemptor ``pre``, or None when no node
    has a set of ``candidates`` that lets it fit. ``allowed``: the gangs' budgets (as
    :func:`~gangsched.core.preemption.victims.select`); ``quota_relief``: victims of the pod's own
    queue give its quota back; ``violates``: does taking the unit break a
    PodDisruptionBudget (last resort, counted first when nodes are compared)? A
    preemptor of several members, or none, gets None."""
    ps = pre.pod
    if ps is None or len(pre.items) != 1:
        return None
    info = ps.info
    by_node: dict[str, list[Unit]] = {}
    for unit in candidates:
        # A whole gang would overlap the Pod units of its members: pods one by one.
        if unit.tier is not Tier.GANG and len(unit.freed) == 1 and unit.available(s):
            (node,) = unit.freed
            by_node.setdefault(node, []).append(unit)
    if not by_node:
        return None
    barred = closed_nodes(s, pre.owners)
    possible = _screen(s, info, by_node)
    breaks = violates or (lambda unit: False)
    found: list[tuple[tuple[object, ...], int, Choice]] = []
    enough = max(MIN_CANDIDATES, len(s.cluster.nodes) * MIN_CANDIDATES_PERCENT // 100)
    for position, state in enumerate(s.cluster.candidates(info.constraints)):
        name = state.node.name
        units = by_node.get(name)
        if not units or name in barred or (possible is not None and name not in possible):
            continue
        room = sum((u.freed[name] for u in units), state.free)
        if not info.request.fits_in(room):
            continue  # not even with every candidate gone
        chosen = _on_node(s, pre, info, name, units, allowed, quota_relief, breaks)
        if chosen is not None:
            found.append((_rank(chosen, breaks), position, (name, chosen)))
            if len(found) >= enough:
                break
    if not found:
        return None
    return min(found, key=lambda entry: (entry[0], entry[1]))[2]


def _screen(s: Session, info: PodInfo, by_node: dict[str, list[Unit]]) -> set[str] | None:
    """The nodes on which the pod passes every filter with every candidate gone from
    every node at once: one PreFilter for all nodes, instead of one per node. A node
    that fails so fails with fewer victims too when each of the pod's filters only gains
    from other pods going (capacity, host ports, anti-affinity both ways); for a pod
    with required pod affinity or spread constraints, which can lose from it, there is
    no screening (None)."""
    placement = info.placement
    if placement.affinity or placement.spread or placement.default_spread:
        return None
    cluster = s.cluster
    fwk = cluster.framework(Scoring.BINPACK)
    hidden = _Hidden(s)
    try:
        for units in by_node.values():
            for unit in units:
                hidden.hide(unit)
        cycle, status = fwk.pre_filter(info, cluster)
        if not status.ok:
            return set()
        filters = [f for f in cycle.filters if f.name != FIT_PLUGIN]
        found: set[str] = set()
        for name, units in by_node.items():
            state = cluster.nodes.get(name)
            if state is None:
                continue
            room = sum((u.freed[name] for u in units), state.free)
            if info.request.fits_in(room) and all(
                    f.filter(cycle, info, state).ok for f in filters):
                found.add(name)
        return found
    finally:
        hidden.restore()


def _on_node(s: Session, pre: Preemptor, info: PodInfo, node: str, units: list[Unit],
             allowed: Allowed | None, quota_relief: bool,
             breaks: Callable[[Unit], bool]) -> list[Unit] | None:
    """``SelectVictimsOnNode`` on ``node`` (see the module docstring)."""
    relief: Callable[[Unit], Resources] | None = None
    if quota_relief:
        def relief(unit: Unit) -> Resources:
            return sum((p.request for p in unit.pods if p.charged_queue == pre.queue),
                       Resources.ZERO)
    freed = Freed(relief)
    gone: list[Unit] = []
    passed = [u for u in units if u.nominated]  # they hold no room against this pod
    for unit in passed:
        freed.add(unit)
    for unit in sorted(units, key=lambda u: (u.priority, -u.creation, u.ref)):
        if not unit.nominated and (allowed is None or allowed(unit, freed)):
            freed.add(unit)
            gone.append(unit)
    if not gone and not passed:
        return None
    hidden = _Hidden(s)
    try:
        for unit in passed + gone:
            hidden.hide(unit)
        if not _fits(s, pre, info, node, freed):
            return None
        victims: list[Unit] = []
        order = sorted(gone, key=lambda u: (not breaks(u), -u.priority, u.creation, u.ref))
        for unit in order:
            hidden.show(unit)
            freed.remove(unit)
            if not _fits(s, pre, info, node, freed):
                hidden.hide(unit)
                freed.add(unit)
                victims.append(unit)
        if not victims and not passed:
            return None  # it fits there as things are: allocate places it
        return passed + victims
    finally:
        hidden.restore()


def placed_with(s: Session, pre: Preemptor, units: list[Unit]) -> dict[str, Resources] | None:
    """Where the members of ``pre`` go once ``units`` are gone, their requests per node;
    None when some member then fits no node. Asked of the victims the capacity
    simulation (:func:`~gangsched.core.preemption.victims.select`) chose for work of several
    members: when a member's fit depends on other pods (its own gang's included) or
    volumes, capacity alone may be wrong, and nothing is evicted for work that would not
    fit. Each member, in order, takes the first node that passes every filter (the one
    the simulation chose first, then the nodes the victims free, then every node that
    passes its static filters), with the victims out of the placed-pod index and the
    members before it charged; everything is put back. When no member's fit depends on
    more than capacity and its node, the simulation's placement is the answer (resource
    claims included: the simulation allocates their devices, the victims' given back)."""
    infos = [item.info or PodInfo(item.request, item.constraints) for item in pre.items]
    cluster = s.cluster
    freed = Freed()
    for unit in units:
        freed.add(unit)
    placed = fit(s, pre.items, freed.extra, scoring_for(s, pre), pre.owners, freed.pods)
    if placed is None:
        return None
    if not (cluster.pod_index.required_anti > 0
            or any(cluster.neighbour_bound(i) or i.volumes.claims or i.volumes.csi_inline
                   for i in infos)):
        return _room(_by_node(placed, infos))  # resource claims: the simulation allocated
    barred = closed_nodes(s, pre.owners)
    hidden = _Hidden(s)
    charged: list[tuple[str, str]] = []
    where: dict[int, str] = {}
    try:
        for unit in units:
            hidden.hide(unit)
        for index in sorted(placed):
            info = infos[index]
            prefer = [placed[index], *sorted(freed.extra)]
            node = _first_fit(s, info, freed, prefer, barred)
            if node is None:
                return None
            uid = f"{CHECK}{index}"
            cluster.charge(node, uid, info.request,
                           PlacedPod(uid, info.namespace, info.labels, info.placement, node))
            charged.append((node, uid))
            where[index] = node
        return _room(_by_node(where, infos))
    finally:
        for node, uid in charged:
            cluster.release(node, uid, Resources.ZERO, retry=False)
        hidden.restore()


WIDEN = 16
"""How many more units :func:`widened` adds, at most, to a capacity-chosen set."""


def widened(s: Session, pre: Preemptor, chosen: list[Unit], candidates: Iterable[Unit],
            allowed: Allowed | None = None) -> tuple[list[Unit], dict[str, Resources]] | None:
    """When the victims capacity chose leave a member of ``pre`` fitting nowhere (a gang
    whose members repel each other, say): more candidates, in victim order (those on
    the nodes the work may use, within the budgets, not overlapping the chosen), are
    added one at a time (at most :data:`WIDEN`) until every member finds a node by
    :func:`placed_with`; then every victim that can be spared is dropped again, the most
    disruptive first. The victims and where the members go, or None."""
    nodes = relevant_nodes(s, pre)
    ranked = sorted((u for u in candidates if u.available(s) and not (
        u.gang is not None and u.gang in pre.gangs) and any(n in nodes for n in u.freed)),
        key=lambda u: u.orders()[0])
    chosen = list(chosen)
    taken = {ps.uid for u in chosen for ps in u.pods}
    freed = Freed()
    for unit in chosen:
        freed.add(unit)
    added = 0
    for unit in ranked:
        uids = {ps.uid for ps in unit.pods}
        if uids & taken or (allowed is not None and not allowed(unit, freed)):
            continue
        chosen.append(unit)
        freed.add(unit)
        taken |= uids
        room = placed_with(s, pre, chosen)
        if room is not None:
            for spare in sorted(chosen, key=_cost_of_losing, reverse=True):
                rest = [u for u in chosen if u is not spare]
                found = placed_with(s, pre, rest) if rest else None
                if found is not None:
                    chosen, room = rest, found
            return chosen, room
        added += 1
        if added >= WIDEN:
            break
    return None


def _cost_of_losing(unit: Unit) -> tuple[int, int, str]:
    """Running gangs cost most, then single pods, then reservations; then size."""
    rank = {Tier.GANG: 2, Tier.POD: 1, Tier.RESERVATION: 0}[unit.tier]
    return (rank, len(unit.pods), unit.ref)


def _first_fit(s: Session, info: PodInfo, freed: Freed, prefer: list[str],
               barred: frozenset[str]) -> str | None:
    """The first of ``prefer``, then of the pod's static candidates, that passes every
    filter with ``freed`` given back (one PreFilter for all)."""
    cluster = s.cluster
    fwk = cluster.framework(Scoring.BINPACK)
    if not fwk.pre_enqueue(info).ok:
        return None
    cycle, status = fwk.pre_filter(info, cluster)
    if not status.ok:
        return None
    filters = [f for f in cycle.filters if f.name != FIT_PLUGIN]
    candidates = cluster.candidates(info.constraints)
    static = {state.node.name for state in candidates}
    first = [cluster.nodes[n] for n in dict.fromkeys(prefer) if n in static]
    for state in [*first, *candidates]:
        name = state.node.name
        if name in barred:
            continue
        room = state.free + freed.extra.get(name, Resources.ZERO)
        if info.request.fits_in(room) and all(f.filter(cycle, info, state).ok
                                              for f in filters):
            return name
    return None


def _by_node(where: dict[int, str], infos: list[PodInfo]) -> dict[str, list[PodInfo]]:
    found: dict[str, list[PodInfo]] = {}
    for index, node in where.items():
        found.setdefault(node, []).append(infos[index])
    return found


def _room(by_node: dict[str, list[PodInfo]]) -> dict[str, Resources]:
    return {node: sum((i.request for i in infos), Resources.ZERO)
            for node, infos in by_node.items()}


CHECK = "preemption-check:"
"""Prefix of the pseudo-pod uids a member is charged under during :func:`placed_with`."""


def _fits(s: Session, pre: Preemptor, info: PodInfo, node: str, freed: Freed) -> bool:
    """Every filter passes for the pod on ``node`` with ``freed`` given back, and its
    queue's quota allows it."""
    if not s.queues.fits(pre.queue, pre.total, own_earmark=pre.earmark + freed.relief).ok:
        return False
    extra = freed.extra.get(node, Resources.ZERO)
    return s.cluster.fits(node, info.request, info.constraints, extra=extra, pod=info)


class _Hidden:
    """Pods taken out of the placed-pod index and their node's host ports for a check,
    and put back."""

    __slots__ = ("_placed", "_ports", "_s")

    def __init__(self, s: Session) -> None:
        self._s = s
        self._placed: dict[str, PlacedPod] = {}
        self._ports: dict[str, tuple[str, tuple[HostPort, ...]]] = {}

    def hide(self, unit: Unit) -> None:
        cluster = self._s.cluster
        for ps in unit.pods:
            uid = str(ps.uid)
            placed = cluster.pod_index.pods.get(uid)
            if placed is None:
                continue
            self._placed[uid] = placed
            cluster.pod_index.remove(uid)
            state = cluster.nodes.get(placed.node)
            ports = state.ports.pop(uid, None) if state is not None else None
            if ports is not None:
                self._ports[uid] = (placed.node, ports)
                cluster.ports_changed(placed.node)

    def show(self, unit: Unit) -> None:
        cluster = self._s.cluster
        for ps in unit.pods:
            uid = str(ps.uid)
            placed = self._placed.pop(uid, None)
            if placed is None:
                continue
            cluster.pod_index.add(placed)
            kept = self._ports.pop(uid, None)
            if kept is not None:
                state = cluster.nodes.get(kept[0])
                if state is not None:
                    state.ports[uid] = kept[1]
                    cluster.ports_changed(kept[0])

    def restore(self) -> None:
        cluster = self._s.cluster
        for placed in self._placed.values():
            cluster.pod_index.add(placed)
        for uid, (node, ports) in self._ports.items():
            state = cluster.nodes.get(node)
            if state is not None:
                state.ports[uid] = ports
                cluster.ports_changed(node)
        self._placed.clear()
        self._ports.clear()


def _rank(victims: list[Unit], breaks: Callable[[Unit], bool]) -> tuple[object, ...]:
    """``pickOneNodeForPreemption``'s order, lowest first: budget violations, highest
    victim priority, sum of priorities, number of victim pods, and the earliest start
    of the highest-priority victims, latest first."""
    victims = [u for u in victims if not u.nominated]  # taking those costs nothing
    top = max((u.priority for u in victims), default=0)
    starts = [ps.pod.creation for u in victims if u.priority == top for ps in u.pods]
    return (sum(1 for u in victims if breaks(u)), top,
            sum(u.priority * len(u.pods) for u in victims),
            sum(len(u.pods) for u in victims), -min(starts, default=0.0))
