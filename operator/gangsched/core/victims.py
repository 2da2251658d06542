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

A pod is never a victim when it is another scheduler's, not ``preemptible`` (the
``gangsched.io/preemptible: "false"`` annotation), terminating, already being evicted,
recently protected by a PodDisruptionBudget, or not yet confirmed bound (its bind is in
flight). A gang with one such pod is no ``Gang`` unit.

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

from gangsched.core import topology
from gangsched.core.cluster import NodeState
from gangsched.core.decisions import ObjectRef
from gangsched.core.model import Scoring
from gangsched.core.podgroups import gang_of
from gangsched.core.preemptors import (
    STARTED,
    Item,
    Preemptor,
    app_key,
    app_priority,
    app_ref,
    gang_priority,
    group_key,
    group_ref,
    pod_key,
)
from gangsched.core.resources import PODS, Resources
from gangsched.core.runtime import PodState
from gangsched.core.states import AppState

if TYPE_CHECKING:
    from gangsched.core.session import Session


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
    def asked(self) -> Resources:
        """What its pods request: what their queue gives back when they go."""
        if self._asked is None:
            self._asked = sum((ps.request for ps in self.pods), Resources.ZERO)
        return self._asked

    def available(self, s: Session) -> bool:
        """Still a candidate: no pod of it is being evicted, protected or gone."""
        return all(_victim_ok(s, ps) for ps in self.pods)


def _victim_ok(s: Session, ps: PodState) -> bool:
    pod = ps.pod
    return (pod.ours and pod.preemptible and pod.active and not pod.terminating
            and ps.node is not None and ps.evicting is None and ps.release_reason is None
            and s.reached(ps.evict_refused_until) and not ps.assumed)


def _unit(tier: Tier, key: str, owner: ObjectRef | None, gang: str | None, queue: str,
          priority: int, creation: float, pods: list[PodState],
          budget: tuple[str, str] | None = None) -> Unit:
    unit = Unit(tier, key, owner, gang, queue, priority, creation, pods, budget)
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
        if ps.node is not None and _victim_ok(s, ps):
            queue = s.queue_of(ps) or "default"
            if queues is None or queue in queues:
                units.append(_unit(Tier.POD, pod_key(uid), None, None, queue,
                                   ps.pod.priority, ps.pod.creation, [ps]))
    units.sort(key=_ranked_by(0))
    return Pool(units, surplus)


# --- the simulation ---------------------------------------------------------------------


def fit(
    s: Session,
    items: Iterable[Item],
    extra: Mapping[str, Resources],
    scoring: Scoring,
    owners: frozenset[str] = frozenset(),
) -> dict[int, str] | None:
    """Where each item would go with ``extra`` more free per node, or None if one fits
    nowhere. Greedy in the given order, scoring as allocate does (binpack: the fullest
    node it fits; spread: the emptiest), among the first ``sample_size`` nodes that fit,
    skipping nodes reserved for a gang other than ``owners``. Nothing in the cluster
    changes."""
    taken: dict[str, Resources] = {}
    placed: dict[int, str] = {}
    sample = s.cluster.sample_size
    barred = closed_nodes(s, owners)
    skip: dict[Item, int] = {}
    """Per item shape, the nodes before the first one it fitted: room only shrinks
    during the call, so a later item of the same shape fits none of them either."""
    for index, item in enumerate(items):
        best: NodeState | None = None
        best_score = 0.0
        found = 0
        nodes = s.cluster.candidates(item.constraints)
        first = skip.get(item, 0)
        for position in range(first, len(nodes)):
            state = nodes[position]
            name = state.node.name
            if name in barred:
                continue
            free = state.free
            more = extra.get(name)
            if more is not None:
                free = free + more
            less = taken.get(name)
            if less is not None:
                free = free - less
            if not item.request.fits_in(free):
                continue
            if not found:
                skip[item] = position
            score = _score(state, item.request, free)
            if (best is None or (scoring is Scoring.BINPACK and score > best_score)
                    or (scoring is Scoring.SPREAD and score < best_score)):
                best, best_score = state, score
            found += 1
            if found >= sample:
                break
        if best is None:
            return None
        name = best.node.name
        taken[name] = taken.get(name, Resources.ZERO) + item.request
        placed[index] = name
    return placed


def enough_places(s: Session, items: Iterable[Item], extra: Mapping[str, Resources],
                  owners: frozenset[str] = frozenset()) -> bool | None:
    """Would :func:`fit` place every item, told by counting? Each shape of item (request
    and constraints) needs as many places as it has members, a place being room for one
    more on a node it may use: False when some shape has fewer (the simulation would
    fail), True when all items are of one shape and it has enough (identical members fit
    wherever one more fits, so the greedy placement cannot fail), None otherwise (the
    shapes compete for the same room: only the simulation tells). The places are the
    cluster's kept count per shape (:meth:`~gangsched.core.cluster.Cluster.room_with`),
    corrected on the nodes with extra room or barred: O(shapes x those nodes) instead of
    O(items x nodes)."""
    shapes: dict[Item, int] = {}
    for item in items:
        shapes[item] = shapes.get(item, 0) + 1
    return enough_places_of(s, shapes, extra, owners)


def enough_places_of(s: Session, shapes: Mapping[Item, int], extra: Mapping[str, Resources],
                     owners: frozenset[str] = frozenset()) -> bool | None:
    """:func:`enough_places` of items counted by shape (a preemptor's, counted once)."""
    barred = closed_nodes(s, owners)
    for item, count in shapes.items():
        if s.cluster.room_with(item.request, item.constraints, extra, barred) < count:
            return False
    return True if len(shapes) <= 1 else None


def _score(state: NodeState, request: Resources, free: Resources) -> float:
    alloc = state.node.allocatable
    total = 0.0
    for name, amount in request.items():
        capacity = alloc.get(name)
        if capacity > 0:
            total += (capacity - free.get(name) + amount) / capacity
    return total


def scoring_for(s: Session, pre: Preemptor) -> Scoring:
    """Placeholders and PodGroup members use the gang scoring; single pods the pod one."""
    return s.config.pod_scoring if pre.pod is not None else s.config.gang_scoring


def closed_nodes(s: Session, owners: frozenset[str]) -> frozenset[str]:
    """Nodes reserved for a starving gang that is not one of ``owners``."""
    cluster = s.cluster
    if cluster.reserved and not owners & cluster.reserved_owners:
        return cluster.reserved
    return frozenset()


def relevant_nodes(s: Session, pre: Preemptor) -> set[str]:
    """Nodes that pass the static filters for at least one item, and are not reserved
    for another gang."""
    found: set[str] = set()
    for constraints in {item.constraints for item in pre.items}:
        found.update(state.node.name for state in s.cluster.candidates(constraints))
    return found - closed_nodes(s, pre.owners)


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
    known: dict[tuple[frozenset[tuple[str, Resources]], Resources], bool] = {}
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

    def fits(freed: Freed) -> bool:
        key = (frozenset(freed.extra.items()), freed.relief)
        found = known.get(key)
        if found is None:
            quota = s.queues.fits(pre.queue, total, own_earmark=pre.earmark + freed.relief)
            found = quota.ok and enough_places_of(s, pre.shapes, freed.extra, pre.owners)
            if found is None:
                found = fit(s, pre.items, freed.extra, scoring, pre.owners) is not None
            if found and pre.confined:  # each part that requires a domain fits in one
                found = topology.room_in_a_domain(
                    s.cluster, [(i.request, i.constraints) for i in pre.items], pre.confined,
                    freed.extra, closed_nodes(s, pre.owners))
            known[key] = found
        return found

    if fits(Freed(relief_of)):
        return []
    nodes = relevant_nodes(s, pre)
    usable = []
    for unit in candidates:
        own = unit.gang is not None and unit.gang in pre.gangs
        helps = any(node in nodes for node in unit.freed) or (
            quota_relief and unit.queue == pre.queue)
        if unit.available(s) and own == own_gang and helps:
            usable.append(unit)
    if not usable:
        return None
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


class Freed:
    """What a set of victims gives back, kept as victims join and leave it: the room
    per node, the queue quota, what leaves each queue (the victims' requests) and how
    many victims draw on each group's surplus (so that each question costs what the
    change does, not the size of the set)."""

    __slots__ = ("_relief_of", "budgets", "extra", "leaving", "relief")

    def __init__(self, relief_of: Callable[[Unit], Resources] | None = None) -> None:
        self._relief_of = relief_of
        self.extra: dict[str, Resources] = {}
        self.relief = Resources.ZERO
        self.leaving: dict[str, Resources] = {}
        self.budgets: dict[tuple[str, str], int] = {}

    def add(self, unit: Unit) -> None:
        extra = self.extra
        for node, amount in unit.freed.items():
            extra[node] = extra.get(node, Resources.ZERO) + amount
        if self._relief_of is not None:
            self.relief = self.relief + self._relief_of(unit)
        self.leaving[unit.queue] = self.leaving.get(unit.queue, Resources.ZERO) + unit.asked
        if unit.budget is not None:
            self.budgets[unit.budget] = self.budgets.get(unit.budget, 0) + 1

    def remove(self, unit: Unit) -> None:
        extra = self.extra
        for node, amount in unit.freed.items():
            left = extra[node] - amount
            if left:
                extra[node] = left
            else:
                del extra[node]
        if self._relief_of is not None:
            self.relief = self.relief - self._relief_of(unit)
        left = self.leaving[unit.queue] - unit.asked
        if left:
            self.leaving[unit.queue] = left
        else:
            del self.leaving[unit.queue]
        if unit.budget is not None:
            count = self.budgets[unit.budget] - 1
            if count:
                self.budgets[unit.budget] = count
            else:
                del self.budgets[unit.budget]


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
