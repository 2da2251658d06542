"""The ``reclaim`` action: across queues, a queue below its deserved share takes back.

As Volcano's reclaim action (``scheduler-actions.zh.txt``): queues share the cluster by
``guaranteed`` and ``weight`` (:mod:`~gangsched.core.preemption.shares`). When a queue that is below
its deserved share has work that cannot be placed for capacity, and would stay within its
share with it, that work may take room back from *other* queues that are marked
``reclaimable`` (the default) and use more than their deserved share. Priority does not
matter across queues.

* A reclaiming preemptor (:mod:`~gangsched.core.preemption.preemptors`) must fit its own queue's
  quota as it is: reclaim frees room on nodes, not quota.
* Victims are chosen by the same whole-gang rules and the same simulation as preempt
  (:func:`gangsched.core.preemption.victims.select`): reservations of gangs that have not started,
  then whole running gangs, then single pods; never a gang sliced below ``minMember``;
  never a pod that is not preemptible; no more than needed.
* A victim queue is never pushed below its deserved share of a resource the preemptor is
  short of (the resources it asks for that the cluster has less free of than it needs;
  all it asks for, when the shortage is only fragmentation). Victims already being
  evicted count as gone, and room already promised to a queue counts as used.

Queues are served most starved first (lowest usage relative to the deserved share of
what they need), then by the preemptor's priority and age.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gangsched.core.placement.cluster import Constraints
from gangsched.core.preemption import evictions, shares, simulation, victims
from gangsched.core.preemption.preemptors import Preemptor, build, find
from gangsched.core.preemption.victims import Allowed, Freed, Pool, Unit
from gangsched.core.values.model import DEFAULT_QUEUE, QueueSpec
from gangsched.core.values.resources import PODS, Resources, format_amount

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def reclaim(s: Session, now: float) -> None:
    evictions.keep_reasons(s, evictions.RECLAIM)
    deserved = shares.deserved(s, now)
    promised, leaving = _in_flight(s, now)
    if not may_give_back(s, deserved, leaving):
        return
    found = find(s, now, refused=_refused(s, deserved, promised))
    if not found:
        return
    state = evictions.signature(s, now)
    found = [p for p in found if evictions.may_try(s, evictions.RECLAIM, p, now, state)]
    if not found:
        return
    starving: dict[tuple[str, Resources], float] = {}

    def order(p: Preemptor) -> tuple[object, ...]:
        return (_starvation(s, p, deserved, starving), -p.priority, p.creation, p.key)

    call = _Call(s, now, deserved, promised, leaving, state)
    firsts, alike = _alike(found)
    firsts.sort(key=order)
    fruitless: list[tuple[list[Preemptor], tuple[object, ...], int]] = []
    """Pods judged fruitless with the first of their kind: what their records say."""
    for index, pre in enumerate(firsts):
        others = alike.pop(pre.key, None)
        before, changes = call.state, s.changes
        if call.one(pre):
            # A plan: what follows is judged anew. The pods of a kind judged fruitless
            # before it were, in turn, recorded as they stood; those after it, and the
            # kinds not reached yet, go in turn, one by one.
            mark = order(pre)
            rest = firsts[index + 1:] + (others or [])
            for members, was, count in fruitless:
                for member in members:
                    if order(member) < mark:
                        evictions.fruitless(s, evictions.RECLAIM, member, now, was, count)
                    else:
                        rest.append(member)
            for members in alike.values():
                rest.extend(members)
            rest.sort(key=order)
            for later in rest:
                call.one(later)
            return
        if others and call.judged.get(_shape(s, pre), True) is None:
            fruitless.append((others, before, changes))
    for members, was, count in fruitless:
        for member in members:
            evictions.fruitless(s, evictions.RECLAIM, member, now, was, count)


def _alike(found: list[Preemptor]) -> tuple[list[Preemptor], dict[str, list[Preemptor]]]:
    """The preemptors to judge in turn, and per each the single pods of the same kind
    that follow it: pods of no gang alike in queue, request, constraints and priority.
    Until a plan is made, such a pod is judged as the first of its kind was (the same
    shape, see :func:`_shape`, and nothing the judgement reads changes in between):
    thousands of waiting pods of a few kinds cost a few judgements, not a sort and a
    judgement each."""
    firsts: list[Preemptor] = []
    kinds: dict[tuple[object, ...], list[Preemptor]] = {}
    for pre in found:
        if pre.pod is None or pre.gangs or pre.owners or len(pre.items) != 1:
            firsts.append(pre)
            continue
        item = pre.items[0]
        kinds.setdefault((pre.queue, item.request, item.constraints, pre.priority),
                         []).append(pre)
    alike: dict[str, list[Preemptor]] = {}
    for members in kinds.values():
        first = min(members, key=lambda p: (p.creation, p.key))
        firsts.append(first)
        if len(members) > 1:
            alike[first.key] = [p for p in members if p is not first]
    return firsts, alike


class _Call:
    """One call's judgement of the preemptors, one at a time, in order."""

    def __init__(self, s: Session, now: float, deserved: dict[str, Resources],
                 promised: dict[str, Resources], leaving: dict[str, Resources],
                 state: tuple[object, ...]) -> None:
        self.s = s
        self.now = now
        self.deserved = deserved
        self.promised = promised
        self.leaving = leaving
        self.state = state
        self.pool: Pool | None = None
        self.free: Resources | None = None
        self.room: dict[tuple[Resources, Constraints], int] | None = None
        self.by_queues: dict[tuple[str, ...], list[Unit]] = {}
        self.gangs_of: dict[tuple[str, ...], frozenset[str]] = {}
        self.searched: set[tuple[object, ...]] = set()
        """Searches that found nothing since the last plan: a preemptor of the same shape
        (members, queue, earmark, nodes, own gangs among the candidates) finds nothing
        too."""
        self.stuck: dict[tuple[object, ...], bool] = {}
        """Since the last plan, per victim queues and short resources: may no candidate
        go even alone? (The answer does not depend on the preemptor otherwise.)"""
        self.judged: dict[tuple[object, ...], bool | None] = {}
        """Since the last plan, per preemptor shape (:func:`_shape`): skipped (False) or
        fruitless (None). Everything the judgement reads is the shape's or the call's,
        and the call's changes only with a plan: pending pods of a few shapes are judged
        once."""

    def one(self, pre: Preemptor) -> bool:
        """Judge ``pre``: a plan of victims, or a record that none are enough. True if a
        plan was made."""
        s, now, deserved, leaving = self.s, self.now, self.deserved, self.leaving
        queue = pre.queue
        if pre.key in s.evictions.plans:
            return False
        shape = _shape(s, pre)
        judged = self.judged
        verdict = judged.get(shape, True)
        if verdict is None:
            evictions.fruitless(s, evictions.RECLAIM, pre, now, self.state)
        if verdict is not True:
            return False
        judged[shape] = False  # until a search says otherwise
        used = s.queues.usage(queue) + self.promised.get(queue, Resources.ZERO)
        share = deserved.get(queue, Resources.ZERO)
        if (not shares.within(used, share, pre.total)
                or not s.queues.fits(queue, pre.total, own_earmark=pre.earmark).ok):
            return False
        free = self.free = _free(s) if self.free is None else self.free
        short = _short_of(free, pre.total)
        over = [q for q in sorted(s.queues.used)  # a queue over its share uses something
                if q != queue and _over(s, q, deserved, leaving, short)]
        chosen: list[Unit] | None
        if _hopeless(s, pre.total, free, over, deserved, leaving, short):
            chosen = None
        elif not over:  # no candidate: select only asks whether it fits as it is
            chosen = self._as_it_is(pre)
        elif _stuck_pods(s, self.stuck, over, deserved, leaving, short):
            # No pod of a victim queue may go, so no unit of them: as below, without the
            # pool of candidates.
            chosen = self._as_it_is(pre)
        else:
            pool = self.pool = self.pool or victims.pool(s, now, givers(s, deserved, leaving))
            candidates = self.by_queues.get(tuple(over))
            if candidates is None:
                wanted = set(over)
                candidates = self.by_queues[tuple(over)] = [u for u in pool.units
                                                            if u.queue in wanted]
            allowed = _allowed(s, pool, deserved, leaving, short)
            held = self.gangs_of.get(tuple(over))
            if held is None:
                held = self.gangs_of[tuple(over)] = frozenset(u.gang for u in candidates
                                                              if u.gang)
            gangs = pre.gangs & held
            seen = (simulation.scoring_for(s, pre), tuple(pre.items), queue, pre.earmark,
                    simulation.closed_nodes(s, pre.owners), gangs, short)
            if _searched(self.searched, seen):
                chosen = None  # the same search, in the same state, found nothing
            elif _stuck(self.stuck, (tuple(over), short), candidates, allowed):
                # No candidate may go even alone, and more chosen only allow less: the
                # search can only tell whether it fits as it is.
                chosen = self._as_it_is(pre)
            else:
                chosen = victims.select(s, pre, candidates, now, allowed=allowed,
                                        quota_relief=False)
            if chosen is None:
                self.searched.add(seen)
        if chosen is None:
            judged[shape] = None
            evictions.fruitless(s, evictions.RECLAIM, pre, now, self.state)
            return False
        if not chosen:
            judged.pop(shape)  # it fits as things are: allocate places it, not reclaim
            return False
        why = f"in queue {queue}, below its deserved share ({_text(used, share, short)})"
        evictions.carry_out(s, pre, chosen, evictions.RECLAIM, now, why)
        self.state = evictions.signature(s, now)
        self.free = self.room = None  # the room held for it is charged on its nodes
        self.searched.clear()
        self.stuck.clear()
        judged.clear()
        self.promised[queue] = self.promised.get(queue, Resources.ZERO) + pre.total
        for unit in chosen:
            leaving[unit.queue] = leaving.get(unit.queue, Resources.ZERO) + unit.asked
        return True

    def _as_it_is(self, pre: Preemptor) -> list[Unit] | None:
        """``[]`` if ``pre`` fits as things are, else None (no victims to look at)."""
        room = self.room = {} if self.room is None else self.room
        if _too_many(self.s, room, pre):
            return None  # it does not fit as things are
        return victims.select(self.s, pre, [], self.now, quota_relief=False)


def may_give_back(s: Session, deserved: dict[str, Resources],
                  leaving: dict[str, Resources]) -> bool:
    """Is some reclaimable queue above its deserved share of some resource (the pods
    slot aside), once what is leaving it has gone? If none is, no preemptor has a victim
    queue: reclaim could only find that a preemptor fits as things are, which allocate
    does, or does not, which changes nothing."""
    return bool(_above_share(s, deserved, leaving))


def givers(s: Session, deserved: dict[str, Resources],
           leaving: dict[str, Resources]) -> frozenset[str] | None:
    """The queues victims may come from in this call (None: any): those
    :func:`may_give_back` finds above their share. What leaves a queue only grows as
    plans are made, so no other queue becomes one; the victim pool leaves the others'
    pods out."""
    return _above_share(s, deserved, leaving)


def _above_share(s: Session, deserved: dict[str, Resources],
                 leaving: dict[str, Resources]) -> frozenset[str]:
    found = []
    for queue in s.queues.used:
        if not _spec(s, queue).reclaimable:
            continue
        used = s.queues.usage(queue) - leaving.get(queue, Resources.ZERO)
        share = deserved.get(queue, Resources.ZERO)
        if any(amount > share.get(name) for name, amount in used.items() if name != PODS):
            found.append(queue)
    return frozenset(found)


def _refused(s: Session, deserved: dict[str, Resources],
             promised: dict[str, Resources]) -> Callable[[str, Resources], bool]:
    """Would a preemptor of the queue that asks at least ``need`` leave its deserved
    share (with the room promised to it)? Then reclaim passes it over (the check at
    the top of its loop): :func:`~gangsched.core.preemption.preemptors.find` need not build it.
    Asking more of a resource only fails :func:`shares.within` sooner, and ``promised``
    only grows in a call, so a need refused at the start is refused in the loop."""
    known: dict[tuple[str, Resources], bool] = {}

    def refused(queue: str, need: Resources) -> bool:
        found = known.get((queue, need))
        if found is None:
            used = s.queues.usage(queue) + promised.get(queue, Resources.ZERO)
            found = known[(queue, need)] = not shares.within(
                used, deserved.get(queue, Resources.ZERO), need)
        return found
    return refused


def _shape(s: Session, pre: Preemptor) -> tuple[object, ...]:
    """What reclaim's judgement of ``pre`` reads of it: its queue, its members' requests
    and constraints (so its total), its earmark, the gangs it belongs to and is owned by
    (its own gangs are no victims for it; nodes reserved for it are open to it) and its
    scoring."""
    return (pre.queue, tuple(pre.items), pre.earmark, pre.gangs, pre.owners,
            simulation.scoring_for(s, pre))


def _searched(searched: set[tuple[object, ...]], seen: tuple[object, ...]) -> bool:
    """Did a search of this shape find nothing since the last plan?"""
    return seen in searched


def _stuck(known: dict[tuple[object, ...], bool], key: tuple[object, ...],
           candidates: list[Unit], allowed: Allowed) -> bool:
    """:func:`_none_may_go`, once per ``key`` (victim queues, short resources)."""
    found = known.get(key)
    if found is None:
        found = known[key] = _none_may_go(candidates, allowed)
    return found


def _stuck_pods(s: Session, known: dict[tuple[object, ...], bool], over: list[str],
                deserved: dict[str, Resources], leaving: dict[str, Resources],
                short: frozenset[str]) -> bool:
    """:func:`_none_can_go`, once per victim queues and short resources."""
    key = ("pods", tuple(over), short)
    found = known.get(key)
    if found is None:
        found = known[key] = _none_can_go(s, over, deserved, leaving, short)
    return found


def _none_can_go(s: Session, over: list[str], deserved: dict[str, Resources],
                 leaving: dict[str, Resources], short: frozenset[str]) -> bool:
    """Does every pod charged to the victim queues ask, of some short resource, more
    than its queue has above its deserved share (once what is leaving has gone)? Then no
    candidate may go even alone (:func:`_none_may_go` holds): a unit asks at least what
    each of its pods does. Told from the request shapes each queue runs, without the
    pool of candidates."""
    for queue in over:
        used = s.queues.usage(queue) - leaving.get(queue, Resources.ZERO)
        share = deserved.get(queue, Resources.ZERO)
        for request in s.queues.charged.get(queue, {}):
            if all(request.get(n) <= used.get(n) - share.get(n)
                   for n in short if request.get(n) > 0):
                return False
    return True


def _none_may_go(candidates: list[Unit], allowed: Allowed) -> bool:
    """Is every candidate refused even alone (so that none can ever be chosen)?"""
    nothing = Freed()
    return not any(allowed(u, nothing) for u in candidates)


def _hopeless(s: Session, need: Resources, free: Resources, over: list[str],
              deserved: dict[str, Resources], leaving: dict[str, Resources],
              short: frozenset[str]) -> bool:
    """Can no set of victims be enough? A victim queue gives at most its usage above its
    deserved share of each short resource (:func:`_allowed`), and the preemptor's members
    fit only in free room plus what victims free: when even all of that is less than
    ``need`` of some short resource, every search fails (and ``need`` does not fit the
    free room as it is either)."""
    for name in short:
        room = free.get(name)
        for queue in over:
            above = (s.queues.usage(queue) - leaving.get(queue, Resources.ZERO)).get(name)
            room += max(0, above - deserved.get(queue, Resources.ZERO).get(name))
        if need.get(name) > room:
            return True
    return False


def _in_flight(s: Session, now: float) -> tuple[dict[str, Resources], dict[str, Resources]]:
    """Room promised to each queue by open plans, and usage leaving each queue (victims
    asked to go, not gone yet)."""
    promised: dict[str, Resources] = {}
    leaving: dict[str, Resources] = {}
    for key in sorted(s.evictions.plans):
        plan = s.evictions.plans[key]
        pre = build(s, key, now)
        if pre is not None:
            promised[pre.queue] = promised.get(pre.queue, Resources.ZERO) + pre.total
        for uid in plan.victims:
            ps = s.pods.get(uid)
            if ps is not None and ps.charged_queue is not None:
                queue = ps.charged_queue
                leaving[queue] = leaving.get(queue, Resources.ZERO) + ps.request
    return promised, leaving


def _too_many(s: Session, known: dict[tuple[Resources, Constraints], int],
              pre: Preemptor) -> bool:
    """Does ``pre`` have more members of one shape (request and constraints) than the
    nodes passing those constraints can take as they are? Then it does not fit without
    victims. Each shape's count is computed once per call: O(nodes) per shape."""
    wanted: dict[tuple[Resources, Constraints], int] = {}
    for item in pre.items:
        shape = (item.request, item.constraints)
        wanted[shape] = wanted.get(shape, 0) + 1
    for shape, count in wanted.items():
        room = known.get(shape)
        if room is None:
            room = known[shape] = _copies(s, *shape)
        if count > room:
            return True
    return False


def _copies(s: Session, request: Resources, constraints: Constraints) -> int:
    """How many pods of ``request`` the nodes passing ``constraints`` have free room for."""
    return s.cluster.room_for(request, constraints)


def _free(s: Session) -> Resources:
    """The free room of ready, schedulable nodes (overcommitted ones count as 0)."""
    return s.cluster.free_room()


def _short_of(free: Resources, need: Resources) -> frozenset[str]:
    """The resources ``need`` asks for that the cluster has less ``free`` of in total; all
    it asks for (the pods slot aside) when the shortage is only fragmentation."""
    asked = frozenset(n for n, a in need.items() if a > 0 and n != PODS)
    short = frozenset(n for n in asked if free.get(n) < need.get(n))
    return short or asked


def _spec(s: Session, queue: str) -> QueueSpec:
    return s.queues.spec(queue) or QueueSpec(queue or DEFAULT_QUEUE)


def _over(s: Session, queue: str, deserved: dict[str, Resources],
          leaving: dict[str, Resources], short: frozenset[str]) -> bool:
    """Is ``queue`` reclaimable and above its deserved share of some short resource?"""
    if not _spec(s, queue).reclaimable:
        return False
    used = s.queues.usage(queue) - leaving.get(queue, Resources.ZERO)
    share = deserved.get(queue, Resources.ZERO)
    return any(used.get(n) > share.get(n) for n in short)


def _allowed(s: Session, pool: Pool, deserved: dict[str, Resources],
             leaving: dict[str, Resources], short: frozenset[str]) -> Allowed:
    """Budgets, and no victim queue below its deserved share of a short resource.

    The more units are chosen, the fewer may join: a unit refused alone is refused with
    any others."""
    budget = victims.within_budget(pool)

    def allowed(unit: Unit, chosen: Freed) -> bool:
        if not budget(unit, chosen):
            return False
        mine = unit.asked
        queue = unit.queue
        used = s.queues.usage(queue)
        gone = leaving.get(queue, Resources.ZERO)
        going = chosen.leaving.get(queue, Resources.ZERO)
        share = deserved.get(queue, Resources.ZERO)
        for n in short:  # what would be left of each short resource it asks for
            amount = mine.get(n)
            if amount > 0 and used.get(n) - gone.get(n) - going.get(n) - amount < share.get(n):
                return False
        return True
    return allowed


def _starvation(s: Session, pre: Preemptor, deserved: dict[str, Resources],
                known: dict[tuple[str, Resources], float]) -> float:
    """The queue's usage over its deserved share, at worst among what ``pre`` asks for
    (kept in ``known`` per queue and ask for the call)."""
    found = known.get((pre.queue, pre.total))
    if found is None:
        found = known[(pre.queue, pre.total)] = _worst_ratio(s, pre, deserved)
    return found


def _worst_ratio(s: Session, pre: Preemptor, deserved: dict[str, Resources]) -> float:
    used = s.queues.usage(pre.queue)
    share = deserved.get(pre.queue, Resources.ZERO)
    worst = 0.0
    for name, amount in pre.total.items():
        if name == PODS or amount <= 0:
            continue
        have = share.get(name)
        worst = max(worst, used.get(name) / have if have > 0 else float("inf"))
    return worst


def _text(used: Resources, share: Resources, names: frozenset[str]) -> str:
    """``cpu 2 used of 8 deserved, memory 4Gi used of 16Gi deserved``."""
    return ", ".join(f"{n} {format_amount(n, used.get(n))} used of "
                     f"{format_amount(n, share.get(n))} deserved" for n in sorted(names))
