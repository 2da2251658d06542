"""Victims: which running work may make room, and the smallest set that does.

Work is taken whole-gang-aware, in *units*, in three tiers:

1. ``Reservation``: the allocated placeholders and the members held in memory of a gang
   that has not started (Accepted, no real pod bound or taking a placeholder). No work
   is lost: the gang is held again and reserves later.
2. ``Gang``: every pod of a running gang (an Application with task groups that has
   started, or a satisfied PodGroup with its whole GangGroup), placeholders included.
3. ``Pod``: one pod: an ordinary pod, a pod of an Application without task groups, or
   a member of a running gang. A gang's members share a *budget* per task group (or
   PodGroup): at most the members above ``minMember`` may go, so a gang is never sliced
   below ``minMember``.

A pod is never a victim when it is not ``preemptible`` (the
``gangsched.io/preemptible: "false"`` annotation), terminating, already being evicted,
or not yet confirmed bound (its bind is in flight). A gang with one such pod is no
``Gang`` unit. Another scheduler's bound pod is a ``Pod`` unit too (kube-scheduler's
``SelectVictimsOnNode`` considers every pod on the node of lower priority); it is in
no queue of gangsched's (:attr:`Unit.foreign`): ``preempt`` may take it for work of any
queue, ``reclaim`` never does. A pod whose eviction a PodDisruptionBudget refused
lately *violates* a budget (:meth:`Unit.violates`): :func:`select` searches without
such units first and takes them only when nothing else makes room, as upstream takes a
PDB-violating victim only as a last resort.

:func:`select` finds the victims for a preemptor by simulation, on a copy of the free
capacity: units are added in order (tier, then priority, lowest first, then newest
first) until every remaining member of the preemptor fits (:func:`fit`, the same greedy
placement and scoring as allocate, in the same order) and its queue quota allows it;
then every unit that can be spared is dropped again, the most disruptive first (gangs,
then pods, then reservations; larger first). What is left is *irreducible*: without any
one victim, the preemptor would not fit. The search also runs with single pods before
whole gangs, lowest priority first, and one node's victims first (for the few nodes with
the most room to win), and the cheapest result wins (lowest highest priority, then
fewest running pods, then fewest placeholders, then the youngest), so a whole gang is
never taken where one pod above ``minMember`` would do, nor pods spread over nodes where
one node's would. Nothing changes until the caller decides.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core.gangs.podgroups import gang_of
from gangsched.core.placement import domain_search as topology
from gangsched.core.preemption.freed import Freed as Freed  # kept here: callers name it so
from gangsched.core.preemption.preemptors import (
    STARTED,
    Preemptor,
    app_key,
    app_priority,
    app_ref,
    gang_priority,
    group_key,
    group_ref,
    pod_key,
)
from gangsched.core.preemption.simulation import (
    closed_nodes,
    enough_places_of,
    fit,
    relevant_nodes,
    scoring_for,
)
from gangsched.core.state.records import PodState
from gangsched.core.values.decisions import ObjectRef
from gangsched.core.values.resources import PODS, Resources
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


class Tier(enum.IntEnum):
    RESERVATION = 1
    GANG = 2
    POD = 3


@dataclass(slots=True)
class Unit:
    """Pods that go together, or not at all."""

    tier: Tier
    key: str
    """``Application/ns/name``, ``PodGroup/ns/name`` or ``Pod/uid``."""
    owner: ObjectRef | None
    """The Application or PodGroup told about it (None for an ordinary pod)."""
    gang: str | None
    """The gang key the pods belong to, if any (a preemptor never takes its own gang)."""
    queue: str
    priority: int
    creation: float
    pods: list[PodState]
    budget: tuple[str, str] | None = None
    """For a ``Pod`` unit above minMember: (gang key, group) whose surplus it draws on."""
    foreign: bool = False
    """Another scheduler's pod: in no queue of gangsched's."""
    nominated: bool = False
    """Another scheduler's pending pod, holding the room of its nominated node: taking
    it evicts nothing, the room is no longer counted as its (``addGENominatedPods``
    counts a nominated pod only against pods of no higher priority)."""
    freed: dict[str, Resources] = field(default_factory=dict)
    """Capacity it frees, per node."""
    _asked: Resources | None = field(default=None, repr=False, compare=False)
    _orders: tuple[tuple[object, ...], ...] | None = field(default=None, repr=False,
                                                          compare=False)

    @property
    def ref(self) -> str:
        """``namespace/name`` of the pod, or the gang key: the last tie-breaker."""
        return self.pods[0].pod.ref if self.tier is Tier.POD and self.pods else self.key

    @property
    def size(self) -> Resources:
        return sum(self.freed.values(), Resources.ZERO)

    def orders(self) -> tuple[tuple[object, ...], ...]:
        """Its place in each victim order of :data:`_ORDERS` (worked out once: a search
        ranks every candidate three times, and the searches of a call share them)."""
        if self._orders is None:
            self._orders = tuple(order(self) for order in _ORDERS)
        return self._orders

    @property
    def uids(self) -> list[str]:
        return [ps.uid for ps in self.pods]

    @property
    def asked(self) -> Resources:
        """What its pods request: what their queue gives back when they go."""
        if self._asked is None:
            self._asked = sum((ps.request for ps in self.pods), Resources.ZERO)
        return self._asked

    def available(self, s: Session) -> bool:
        """Still a candidate: no pod of it is being evicted, protected or gone."""
        if self.nominated:
            return all(_nominated(ps) for ps in self.pods)
        return all(_victim_ok(s, ps) for ps in self.pods)

    def violates(self, s: Session) -> bool:
        """Would taking it break a PodDisruptionBudget? Known from the Eviction API: a
        pod of it had its eviction refused (429) lately (``eviction_backoff``)."""
        return any(not s.reached(ps.budget_refused_until) for ps in self.pods)


def _victim_ok(s: Session, ps: PodState) -> bool:
    pod = ps.pod
    return (pod.preemptible and pod.active and not pod.terminating
            and ps.node is not None and (pod.ours or pod.node_name == ps.node)
            and ps.evicting is None and ps.release_reason is None
            and s.reached(ps.evict_refused_until) and not ps.assumed)


def _nominated(ps: PodState) -> bool:
    """Another scheduler's pending pod holding the room of its nominated node."""
    pod = ps.pod
    return (not pod.ours and pod.node_name is None and ps.node is not None
            and ps.node == pod.nominated_node and pod.active and not pod.terminating)


def _unit(tier: Tier, key: str, owner: ObjectRef | None, gang: str | None, queue: str,
          priority: int, creation: float, pods: list[PodState],
          budget: tuple[str, str] | None = None, *, foreign: bool = False,
          nominated: bool = False) -> Unit:
    unit = Unit(tier, key, owner, gang, queue, priority, creation, pods, budget, foreign,
                nominated)
    for ps in pods:
        node = ps.node
        if node is not None:
            unit.freed[node] = unit.freed.get(node, Resources.ZERO) + ps.request
    return unit


@dataclass(slots=True)
class Pool:
    """Every unit in the cluster, and the surplus per (gang, group); built once a cycle."""

    units: list[Unit]
    surplus: dict[tuple[str, str], int]


def pool(s: Session, now: float, queues: Collection[str] | None = None) -> Pool:
    """All candidate units, in victim order (tier, priority, newest first, key); only
    those of ``queues``, when given."""
    units: list[Unit] = []
    surplus: dict[tuple[str, str], int] = {}
    claimed: set[str] = set()
    for key in sorted(s.apps):
        rt = s.apps[key]
        spec = rt.spec
        members = s.app_members.get(key, ())
        if queues is not None and spec.queue not in queues:
            claimed.update(members)
            continue
        uids = sorted(members)
        pods = [s.pods[u] for u in uids]
        claimed.update(uids)
        bound = [ps for ps in pods if ps.node is not None and ps.pod.active]
        if not bound:
            continue
        gang = app_key(key)
        owner = app_ref(rt)
        if not spec.gang:
            units.extend(_unit(Tier.POD, pod_key(ps.uid), owner, None, spec.queue,
                               ps.pod.priority, ps.pod.creation, [ps])
                         for ps in bound if not ps.pod.placeholder and _victim_ok(s, ps))
            continue
        priority = app_priority(s, rt)
        reals = [ps for ps in pods if not ps.pod.placeholder]
        started = rt.state in STARTED or any(
            (ps.node is not None and ps.uid not in rt.assumed) or ps.parked_on is not None
            for ps in reals)
        if rt.state is AppState.ACCEPTED and not started:
            # Its reservation: allocated placeholders, and members held in memory.
            held = [ps for ps in bound if ps.uid in rt.assumed or (
                ps.pod.placeholder and ps.release_reason is None and not ps.pod.terminating)]
            if held and all(_victim_ok(s, ps) for ps in held):
                units.append(_unit(Tier.RESERVATION, gang, owner, gang, spec.queue, priority,
                                   spec.creation, held))
            continue
        if not started or rt.state.terminal:
            continue
        busy = any(ps.assumed or ps.parked_on is not None for ps in reals)
        live = [ps for ps in bound if ps.release_reason is None and not ps.pod.terminating]
        if live and not busy and all(_victim_ok(s, ps) for ps in live):
            units.append(_unit(Tier.GANG, gang, owner, gang, spec.queue, priority,
                               spec.creation, live))
        by_group: dict[str, list[PodState]] = {}
        for ps in bound:
            if not ps.pod.placeholder:
                by_group.setdefault(ps.pod.task_group or "", []).append(ps)
        for name, group_pods in sorted(by_group.items()):
            group = spec.group(name)
            surplus[(gang, name)] = len(group_pods) - (group.min_member if group else 0)
            units.extend(_unit(Tier.POD, pod_key(ps.uid), owner, gang, spec.queue,
                               ps.pod.priority, ps.pod.creation, [ps], (gang, name))
                         for ps in group_pods if _victim_ok(s, ps))
    seen: set[str] = set()
    for gkey in sorted(s.groups):
        members = s.group_members.get(gkey, set())
        claimed.update(members)
        if gkey in seen:
            continue
        found = gang_of(s, gkey)
        if isinstance(found, str):
            continue
        seen.update(g.spec.key for g in found)
        if not all(g.satisfied and not g.timed_out for g in found):
            continue
        first = found[0]
        if queues is not None and first.spec.queue not in queues:
            continue
        gang = group_key(first.spec.key)
        priority = gang_priority(s, found)
        members_live: list[PodState] = []
        budgets: list[tuple[str, list[PodState], int]] = []
        for g in found:
            bound = sorted((s.pods[u] for u in s.group_members.get(g.spec.key, ())
                            if s.pods[u].node is not None and s.pods[u].pod.active
                            and not s.pods[u].pod.terminating and s.pods[u].pod.app is None),
                           key=lambda p: p.pod.name)
            members_live.extend(bound)
            budgets.append((g.spec.key, bound, len(bound) - g.spec.min_member))
        if members_live and all(_victim_ok(s, ps) for ps in members_live):
            units.append(_unit(Tier.GANG, gang, group_ref(first), gang, first.spec.queue,
                               priority, min(g.spec.creation for g in found), members_live))
        for name, bound, extra in budgets:
            surplus[(gang, name)] = extra
            units.extend(_unit(Tier.POD, pod_key(ps.uid), group_ref(first), gang,
                               first.spec.queue, ps.pod.priority, ps.pod.creation, [ps],
                               (gang, name))
                         for ps in bound if _victim_ok(s, ps))
    for uid in sorted(s.pods):
        if uid in claimed:
            continue
        ps = s.pods[uid]
        if queues is None and _nominated(ps):
            units.append(_unit(Tier.POD, pod_key(uid), None, None, "default",
                               ps.pod.priority, ps.pod.creation, [ps], foreign=True,
                               nominated=True))
        elif ps.node is not None and _victim_ok(s, ps):
            foreign = not ps.pod.ours
            queue = s.queue_of(ps) or "default"
            if queues is None or (queue in queues and not foreign):
                units.append(_unit(Tier.POD, pod_key(uid), None, None, queue,
                                   ps.pod.priority, ps.pod.creation, [ps],
                                   foreign=foreign))
    units.sort(key=_ranked_by(0))
    return Pool(units, surplus)


Allowed = Callable[[Unit, "Freed"], bool]
"""May this unit join the chosen ones (what they give back so far)? (Budgets, queue
shares.)"""


def select(
    s: Session,
    pre: Preemptor,
    candidates: Iterable[Unit],
    now: float,
    *,
    allowed: Allowed | None = None,
    quota_relief: bool = True,
    own_gang: bool = False,
) -> list[Unit] | None:
    """The victims that let ``pre`` fit: ``[]`` when it fits already, None when no set of
    candidates is enough. ``quota_relief``: victims in the preemptor's own queue also give
    back queue quota (within-queue preemption); otherwise the quota must allow the
    preemptor as it is. ``own_gang``: the preemptor's own gang's pods may be victims (a
    task taking a task's place); otherwise they never are.

    The greedy search runs in several orders (the tiers as listed; single pods before
    whole gangs; lowest priority first; and, for the few nodes with the most room to win,
    that node's victims first), each result is made irreducible, and the least costly
    wins: the lowest highest victim priority, then the fewest running pods, then the
    fewest placeholders, then the youngest oldest victim (ties: the first order)."""
    scoring = scoring_for(s, pre)
    total = pre.total
    known: dict[tuple[frozenset[tuple[str, Resources]], Resources, object], bool] = {}
    """Room already simulated: the orders, and the sets left when one victim is dropped
    again, meet the same room many times (a whole gang frees what its pods do)."""
    reliefs: dict[int, Resources] = {}

    def relief_of(unit: Unit) -> Resources:
        """The queue quota ``unit`` gives back to the preemptor's queue."""
        relief = reliefs.get(id(unit))
        if relief is None:
            relief = reliefs[id(unit)] = sum(
                (ps.request for ps in unit.pods if ps.charged_queue == pre.queue),
                Resources.ZERO) if quota_relief else Resources.ZERO
        return relief

    devices = any(i.info is not None and i.info.volumes.resource_claims for i in pre.items)
    """Its members have resource claims: which victims go matters, not only the room."""

    def fits(freed: Freed) -> bool:
        key = (frozenset(freed.extra.items()), freed.relief,
               frozenset(freed.pods) if devices else None)
        found = known.get(key)
        if found is None:
            quota = s.queues.fits(pre.queue, total, own_earmark=pre.earmark + freed.relief)
            found = quota.ok and _room_for_minimum(s, pre, freed) and enough_places_of(
                s, pre.shapes, freed.extra, pre.owners)
            if found is None or (found and devices):
                found = fit(s, pre.items, freed.extra, scoring, pre.owners,
                            freed.pods) is not None
            if found and pre.confined:  # each part that requires a domain fits in one
                found = topology.room_in_a_domain(
                    s.cluster, [(i.request, i.constraints) for i in pre.items], pre.confined,
                    freed.extra, closed_nodes(s, pre.owners))
            known[key] = found
        return found

    if fits(Freed(relief_of)):
        return []
    nodes = relevant_nodes(s, pre)
    usable: list[Unit] = []
    violating: list[Unit] = []
    for unit in candidates:
        own = unit.gang is not None and unit.gang in pre.gangs
        helps = any(node in nodes for node in unit.freed) or (
            quota_relief and unit.queue == pre.queue)
        if unit.available(s) and own == own_gang and helps:
            (violating if unit.violates(s) else usable).append(unit)
    found = _search(s, pre, usable, nodes, fits, relief_of, total, allowed) if usable else None
    if found is None and violating:  # a budget is broken only as a last resort
        found = _search(s, pre, usable + violating, nodes, fits, relief_of, total, allowed)
    return found


def _room_for_minimum(s: Session, pre: Preemptor, freed: Freed) -> bool:
    """Does the cluster, with what ``freed`` gives back, have the room ``pre``'s declared
    minimum asks in all (:attr:`Preemptor.minimum`; always, without one)?"""
    if not pre.minimum:
        return True
    free = s.cluster.free_capacity()[1]
    for amount in freed.extra.values():
        free = free + amount
    return pre.minimum.fits_in(free)


def _search(s: Session, pre: Preemptor, usable: list[Unit], nodes: set[str],
            fits: Callable[[Freed], bool], relief_of: Callable[[Unit], Resources],
            total: Resources, allowed: Allowed | None) -> list[Unit] | None:
    """:func:`select`'s greedy searches over ``usable``, the cheapest result."""
    room = Resources.ZERO  # free room on the relevant nodes: a cheap test before fits()
    for state in s.cluster.sorted_nodes():
        if state.node.name in nodes:
            room = room + state.free.clamp_non_negative()
    best: list[Unit] | None = None
    rankings = [sorted(usable, key=_ranked_by(i)) for i in range(len(_ORDERS))]
    for node in _promising(s, rankings[0], nodes):  # the victims of one node first
        rankings.append([u for u in rankings[0] if set(u.freed) == {node}]
                        + [u for u in rankings[0] if set(u.freed) != {node}])
    for ranked in rankings:
        found = _greedy(ranked, fits, Freed(relief_of), room, total, nodes, allowed)
        if found is None:
            continue
        chosen, freed = found
        for unit in sorted(chosen, key=_disruption, reverse=True):
            freed.remove(unit)
            if fits(freed):
                chosen = [u for u in chosen if u is not unit]
            else:
                freed.add(unit)
        if best is None or _cost(chosen) < _cost(best):
            best = chosen
    return best


def _greedy(ranked: list[Unit], fits: Callable[[Freed], bool], freed: Freed,
            room: Resources, total: Resources, nodes: set[str],
            allowed: Allowed | None) -> tuple[list[Unit], Freed] | None:
    """Add units in order until the preemptor fits (the chosen units and what they
    free). A unit that contains chosen ones (a whole gang, some of whose members were
    chosen) replaces them; one that overlaps a chosen unit otherwise is skipped."""
    chosen: list[Unit] = []
    taken: set[str] = set()
    for unit in ranked:
        uids = {ps.uid for ps in unit.pods}
        inner: list[Unit] = []
        if uids & taken:
            inner = [u for u in chosen if {ps.uid for ps in u.pods} <= uids]
            if sum(len(u.pods) for u in inner) != len(uids & taken):
                continue
        for u in inner:
            freed.remove(u)
        if allowed is not None and not allowed(unit, freed):
            for u in inner:
                freed.add(u)
            continue
        for u in inner:
            chosen.remove(u)
            room = room - sum((a for n, a in u.freed.items() if n in nodes), Resources.ZERO)
        chosen.append(unit)
        freed.add(unit)
        taken |= uids
        room = room + sum((a for n, a in unit.freed.items() if n in nodes), Resources.ZERO)
        if total.fits_in(room) and fits(freed):
            return chosen, freed
    return None


FOCUSED = 4
"""How many nodes get a search that takes their own victims first."""


def _promising(s: Session, units: list[Unit], nodes: set[str]) -> list[str]:
    """The relevant nodes with the most room (as a share of their allocatable) once their
    own candidates are gone."""
    room: dict[str, Resources] = {}
    for unit in units:
        if len(unit.freed) == 1:
            (node,) = unit.freed
            if node in nodes:
                room[node] = room.get(node, Resources.ZERO) + unit.freed[node]
    ranked = []
    for node, amount in room.items():
        state = s.cluster.nodes.get(node)
        if state is not None:
            total = amount + state.free.clamp_non_negative()
            alloc = state.node.allocatable
            share = sum(v / alloc.get(n) for n, v in total.items() if alloc.get(n) > 0)
            ranked.append((-share, node))
    return [node for _, node in sorted(ranked)[:FOCUSED]]


def _ranked_by(index: int) -> Callable[[Unit], tuple[object, ...]]:
    """The sort key of victim order ``index``, as each unit keeps it."""
    def key(unit: Unit) -> tuple[object, ...]:
        return unit.orders()[index]
    return key


_TIER_RANK = {Tier.RESERVATION: 0, Tier.POD: 1, Tier.GANG: 2}
_ORDERS: tuple[Callable[[Unit], tuple[object, ...]], ...] = (
    lambda u: (u.tier, u.priority, -u.creation, u.ref, u.key),
    lambda u: (_TIER_RANK[u.tier], u.priority, -u.creation, u.ref, u.key),
    lambda u: (u.priority, u.tier, -u.creation, u.ref, u.key),
)
"""Victim orders tried: the tiers as listed; single pods before whole gangs; lowest
priority first. Within each: lower priority first, then the newest (least work lost),
then by name."""


def _cost(units: list[Unit]) -> tuple[float, ...]:
    """What a set of victims costs: its highest priority, its running pods, its
    placeholders, and how old its oldest pod is (the newer, the less work is lost)."""
    units = [u for u in units if not u.nominated]  # taking those costs nothing
    pods = [ps for u in units for ps in u.pods]
    return (max((u.priority for u in units), default=0),
            sum(1 for ps in pods if not ps.pod.placeholder),
            sum(1 for ps in pods if ps.pod.placeholder),
            -min((ps.pod.creation for ps in pods), default=0.0))


def _disruption(unit: Unit) -> tuple[int, int, int, str]:
    """How much losing ``unit`` costs: running gangs most, then pods, then reservations."""
    rank = {Tier.GANG: 2, Tier.POD: 1, Tier.RESERVATION: 0}[unit.tier]
    return (rank, len(unit.pods), sum(a for n, a in unit.size.items() if n != PODS), unit.ref)


def within_budget(pool_: Pool, joining: Mapping[tuple[str, str], int] | None = None) -> Allowed:
    """Units above minMember may go only while their group keeps ``minMember`` members
    (``joining``: members the preemptor adds to a group, as a task taking a task's place)."""
    def allowed(unit: Unit, chosen: Freed) -> bool:
        if unit.budget is None:
            return True
        used = chosen.budgets.get(unit.budget, 0)
        extra = pool_.surplus.get(unit.budget, 0) + (joining or {}).get(unit.budget, 0)
        return used < extra
    return allowed


def names(units: Iterable[Unit], limit: int = 8) -> str:
    """``default/a, default/b (+3 more)``: the victim pods, for messages and details."""
    refs = sorted(ps.pod.ref for unit in units for ps in unit.pods)
    shown = ", ".join(refs[:limit])
    return shown + (f" (+{len(refs) - limit} more)" if len(refs) > limit else "")
