"""Deadlock breaking: gangs that each hold part of their minimum and can never all complete.

Koordinator's gang design names the case and leaves it open
(``podgroup-strict-nonstrict-ganggroup.txt``): a queue of 10 slots, three NonStrict gangs
of 5 that accumulate 3, 3 and 4 members. The queue is full, none can complete, and each
holds what the others need until a timeout. The same happens to Applications admitted
without the ``enqueue`` action, after a quota was lowered, or when other pods took the
cluster's free capacity while two gangs were half placed.

Detection is the safety test of the Banker's algorithm, with gangs as the processes, run
after the cycle's actions (when ``allocate`` is one of them: a deadlock can only come from
placements) in every cycle that has two or more *partial* gangs:

* a partial gang holds part of its minimum and is still collecting the rest: an admitted
  Application, not yet reserved, with some placeholder (or running member) allocated; a
  PodGroup (a whole GangGroup) with members assumed across cycles (NonStrict);
* it *holds* what its allocated placeholders, or its assumed members, take; it *needs*
  what its missing members ask for (placeholders: their task group's ``minResource``;
  PodGroup members: the pending members' requests, an unseen member as
  ``minResources / minMember``, or as large as the largest member);
* what is *available* is what no one else holds: the cluster's free capacity (summed
  over ready, schedulable nodes), and, at each level of every queue that has a ``max``,
  ``max`` minus usage minus the earmarks of gangs that are not partial; placeholders
  whose deletion was asked for (an earlier victim's) count as available already;
* a gang can complete when its need fits every dimension; once complete it eventually
  gives back what it holds, so the others may use that. Repeat until no gang can.

If two or more gangs are left, no order lets them all complete with what they hold and
what is free: a deadlock. One victim is released, chosen deterministically: lowest
priority, then least progress (held / minimum members), then youngest, then key; the
starving gang that nodes are reserved for goes last. Only a victim whose release lets one
of the others complete is taken: gangs that wait for capacity other pods hold are
starving, not deadlocked, and releasing one of them would help no one. The test is run
again on the rest until it passes or no release helps.

The victim gives back everything it holds at once: an Application's placeholders are
deleted (reason ``DeadlockVictim``), a PodGroup's assumed members are released in the core,
so the capacity goes to the others in the same cycle. The victim drops its earmark and goes
back to the queue (an Application stays ``Accepted`` but no longer admitted, a PodGroup
goes back to ``Pending``), and is not admitted again for ``deadlock_backoff`` seconds. It
reports ``reason: DeadlockVictim`` with a message naming the others, a ``Deadlock``
blocking reason, and a ``DeadlockBroken`` Warning event; each of the others gets a
``DeadlockResolved`` Normal event naming the victim.

Cost: O(G^2 x R x D) for the test, G partial gangs, R resource names, D queue depth, and
O(G) tests when looking for a victim: O(G^3 x R x D) in a cycle that breaks a deadlock,
plus O(nodes + members of the partial gangs) to measure. Nothing when fewer than two
gangs are partial. The capacity test sums free capacity over nodes, so fragmentation and
node constraints are not seen: it may miss a deadlock that they cause (a timeout ends
that one), but never takes a victim where an order to complete exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING

import gangsched.core.gangs.earmarks as earmarks
import gangsched.core.gangs.placeholders as ph
import gangsched.core.gangs.podgroups as group_logic
from gangsched.core.gangs.reservation import members, ref, taken
from gangsched.core.placement.cluster import ONE_POD
from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState, placement_order
from gangsched.core.values.decisions import BlockingReason, DeleteReason, EventType, ObjectRef
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


@dataclass(slots=True)
class Gang:
    """A partial gang as the test sees it: what it holds and needs, by leaf queue."""

    key: str
    app: AppRuntime | None
    groups: list[GroupRuntime]
    held: dict[str, Resources]
    need: dict[str, Resources]
    held_members: int
    min_members: int
    priority: int
    creation: float
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def progress(self) -> Fraction:
        return Fraction(self.held_members, max(1, self.min_members))

    def total(self, amounts: dict[str, Resources]) -> Resources:
        out = Resources.ZERO
        for amount in amounts.values():
            out = out + amount
        return out

    def describe(self) -> str:
        return f"{self.key} ({self.held_members}/{self.min_members})"


class Pool:
    """What is available to the partial gangs: free capacity and queue headroom."""

    def __init__(self, s: Session, gangs: list[Gang]) -> None:
        self.s = s
        self.free = s.cluster.free_room()
        draining: dict[str, Resources] = {}
        for uid in s.deleting:  # placeholders on their way out (an earlier victim's)
            ps = s.pods.get(uid)
            if ps is not None and ps.node is not None:
                self.free = self.free + ps.request
                if ps.charged_queue is not None:
                    for level in _path(s, ps.charged_queue) or ():
                        draining[level] = draining.get(level, Resources.ZERO) + ps.request
        own: dict[str, Resources] = {}
        for gang in gangs:
            for queue in gang.paths:
                for level in gang.paths[queue]:
                    own[level] = own.get(level, Resources.ZERO) + _earmark(gang, queue)
        self.taken: dict[str, Resources] = {}
        queues = s.queues
        for level in own:
            spec = queues.specs.get(level)
            if spec is None or (spec.max is None and not spec.limited):
                continue
            self.taken[level] = (queues.used.get(level, Resources.ZERO)
                                 + queues.earmarked.get(level, Resources.ZERO) - own[level]
                                 - draining.get(level, Resources.ZERO))

    def copy(self) -> Pool:
        other = object.__new__(Pool)
        other.s, other.free, other.taken = self.s, self.free, dict(self.taken)
        return other

    def blocker(self, gang: Gang) -> str | None:
        """What keeps ``gang`` from completing now (a queue, or the cluster); None if
        nothing does."""
        need = gang.total(gang.need)
        if not need.fits_in(self.free):
            return "the cluster's free capacity"
        by_level: dict[str, Resources] = {}
        for queue, amount in gang.need.items():
            for level in gang.paths[queue]:
                by_level[level] = by_level.get(level, Resources.ZERO) + amount
        specs = self.s.queues.specs
        for level, amount in by_level.items():
            taken = self.taken.get(level)
            if taken is not None and not specs[level].within_max(taken + amount):
                return f"queue {level}"
        return None

    def give_back(self, gang: Gang) -> None:
        """``gang`` completed (and will finish) or was released: what it holds is free."""
        self.free = self.free + gang.total(gang.held)
        for queue, amount in gang.held.items():
            for level in gang.paths[queue]:
                if level in self.taken:
                    self.taken[level] = self.taken[level] - amount

    def run(self, gangs: list[Gang]) -> list[Gang]:
        """Complete every gang that can, in some order; return those that cannot."""
        left = list(gangs)
        progress = True
        while left and progress:
            progress = False
            for gang in list(left):
                if self.blocker(gang) is None:
                    self.give_back(gang)
                    left.remove(gang)
                    progress = True
        return left


def _earmark(gang: Gang, queue: str) -> Resources:
    if gang.app is not None:
        return gang.app.earmark
    total = Resources.ZERO
    for g in gang.groups:
        if g.spec.queue == queue:
            total = total + g.earmark
    return total


# --- the partial gangs -------------------------------------------------------------------


def partial_gangs(s: Session) -> list[Gang]:
    """Every gang holding part of its minimum and collecting the rest, in key order."""
    found: list[Gang] = []
    apps = [rt.spec.key for rt in s.app_index.members("accepted_gang")
            if rt.admitted and not rt.reserved and not rt.placeholders_expired
            and rt.timer_start is not None]
    for key in sorted(apps):
        gang = _app_gang(s, s.apps[key])
        if gang is not None:
            found.append(gang)
    seen: set[str] = set()
    groups = [grt.spec.key for grt in s.group_index.members("unfinished")
              if grt.assumed and not grt.satisfied and not grt.timed_out]
    for gkey in sorted(groups):
        if gkey in seen:
            continue
        unit = group_logic.gang_of(s, gkey)
        if isinstance(unit, str):
            continue
        seen.update(g.spec.key for g in unit)
        gang = _group_gang(s, unit)
        if gang is not None:
            found.append(gang)
    return found


def _path(s: Session, queue: str) -> tuple[str, ...] | None:
    path = s.queues.path(queue)
    return path if isinstance(path, tuple) else None


def _app_gang(s: Session, rt: AppRuntime) -> Gang | None:
    spec = rt.spec
    path = _path(s, spec.queue)
    if path is None:
        return None
    placeholders, reals = members(s, rt)
    running = taken(reals)
    held = Resources.ZERO
    allocated: dict[str, int] = {}
    for ps in placeholders:
        if ps.node is not None and ps.release_reason is None and not ps.pod.terminating:
            name = ps.pod.task_group or ""
            allocated[name] = allocated.get(name, 0) + 1
            held = held + ps.request
    for ps in reals:
        if ps.node is not None and ps.pod.active and ps.pod.task_group is not None:
            held = held + ps.request
    need = Resources.ZERO
    held_members = total = 0
    for group in spec.task_groups:
        have = min(group.min_member, allocated.get(group.name, 0) + running.get(group.name, 0))
        held_members += have
        total += group.min_member
        need = need + (group.min_resource + ONE_POD).scale(group.min_member - have)
    if held_members == 0 or not need:
        return None
    return Gang(spec.key, rt, [], {spec.queue: held}, {spec.queue: need}, held_members, total,
                spec.priority, spec.creation, {spec.queue: path})


def _group_gang(s: Session, unit: list[GroupRuntime]) -> Gang | None:
    held: dict[str, Resources] = {}
    need: dict[str, Resources] = {}
    paths: dict[str, tuple[str, ...]] = {}
    held_members = total = 0
    for g in unit:
        spec = g.spec
        path = _path(s, spec.queue)
        if path is None:
            return None
        paths[spec.queue] = path
        member_pods = [s.pods[uid] for uid in s.group_members.get(spec.key, ())]
        have = [ps for ps in member_pods if ps.uid in g.assumed]
        waiting = sorted((ps for ps in member_pods
                          if ps.pending and ps.pod.ours and not ps.pod.invalid),
                         key=placement_order)
        missing = max(0, spec.min_member - len(have))
        amount = Resources.ZERO
        for ps in waiting[:missing]:
            amount = amount + ps.request
        unseen = missing - min(missing, len(waiting))
        if unseen:
            amount = amount + _member_estimate(g, member_pods).scale(unseen)
        holding = Resources.ZERO
        for ps in have:
            holding = holding + ps.request
        held[spec.queue] = held.get(spec.queue, Resources.ZERO) + holding
        need[spec.queue] = need.get(spec.queue, Resources.ZERO) + amount
        held_members += min(len(have), spec.min_member)
        total += spec.min_member
    if held_members == 0 or held_members >= total:
        return None
    first = unit[0].spec
    return Gang(first.key, None, unit, held, need, held_members, total,
                max(g.spec.priority for g in unit), max(g.spec.creation for g in unit), paths)


def _member_estimate(g: GroupRuntime, member_pods: list[PodState]) -> Resources:
    """The request of a member not seen yet: ``minResources / minMember`` rounded up, or
    the largest member's request; one pod slot at least."""
    spec = g.spec
    if spec.min_resources:
        share = {name: -(-amount // max(1, spec.min_member))
                 for name, amount in spec.min_resources.items()}
        return Resources(share) + ONE_POD
    largest = ONE_POD
    for ps in member_pods:
        largest = largest.max(ps.request)
    return largest


# --- detection and release ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deadlock:
    """Gangs that cannot all complete, and what blocks them."""

    gangs: tuple[Gang, ...]
    blockers: tuple[str, ...]


def find(s: Session) -> tuple[Deadlock, Pool] | None:
    """The deadlocked gangs, or None when some order lets every partial gang complete
    (or fewer than two are left). Changes nothing."""
    gangs = partial_gangs(s)
    if len(gangs) < 2:
        return None
    pool = Pool(s, gangs)
    stuck = pool.run(gangs)
    if len(stuck) < 2:
        return None
    blockers = sorted({pool.blocker(g) or "" for g in stuck} - {""})
    return Deadlock(tuple(stuck), tuple(blockers)), pool


def _victim_order(s: Session, gang: Gang) -> tuple[object, ...]:
    held = s.node_reservation
    favoured = held is not None and gang.key in held.owners
    return (favoured, gang.priority, gang.progress, -gang.creation, gang.key)


def choose(s: Session, deadlock: Deadlock, pool: Pool) -> list[Gang]:
    """The victims: one at a time, in victim order, each one whose release lets another
    stuck gang complete, until the rest can all complete or no release helps."""
    stuck = list(deadlock.gangs)
    victims: list[Gang] = []
    while len(stuck) >= 2:
        for candidate in sorted(stuck, key=lambda g: _victim_order(s, g)):
            trial = pool.copy()
            trial.give_back(candidate)
            rest = [g for g in stuck if g is not candidate]
            left = trial.run(rest)
            if len(left) < len(rest):
                victims.append(candidate)
                pool, stuck = trial, left
                break
        else:
            break
    return victims


def break_deadlocks(s: Session, now: float) -> bool:
    """Find a deadlock and release its victims. True when capacity was freed in the core
    at once (PodGroup victims): another allocation pass can use it in this cycle."""
    found = find(s)
    if found is None:
        return False
    deadlock, pool = found
    victims = choose(s, deadlock, pool)
    freed = False
    for victim in victims:
        others = [g for g in deadlock.gangs if g is not victim]
        freed |= _release(s, victim, others, deadlock.blockers, now)
    return freed


def _release(s: Session, victim: Gang, others: list[Gang], blockers: tuple[str, ...],
             now: float) -> bool:
    until = now + s.config.deadlock_backoff
    names = ", ".join(g.describe() for g in others)
    scope = " and ".join(blockers) or "capacity"
    amount = victim.total(victim.held).format_short()
    why = (f"deadlock with {names}: each holds part of its minimum and, with what is free "
           f"({scope}), no order lets them all complete")
    details = {"gangs": ", ".join(g.key for g in others), "held": amount,
               "progress": f"{victim.held_members}/{victim.min_members}",
               "blockedBy": scope, "retryAfterSeconds": f"{s.config.deadlock_backoff:g}"}
    for other in others:
        for target in _targets(other):
            s.event(target, EventType.NORMAL, "DeadlockResolved",
                    f"{victim.describe()} was released to break a deadlock with this gang; "
                    f"its {amount} goes to the others")
    if victim.app is not None:
        return _release_app(s, victim.app, why, details, until)
    message = (f"released to break a {why}; gave back {victim.held_members} assumed members "
               f"({amount}); back in the queue after {s.config.deadlock_backoff:g}s")
    blocking = BlockingReason("Deadlock", message, details)
    for g in victim.groups:
        requeue(s, g, until, message, blocking)
        s.event(group_logic.ref(g), EventType.WARNING, "DeadlockBroken", message)
    return True


def _targets(gang: Gang) -> list[ObjectRef]:
    if gang.app is not None:
        return [ref(gang.app)]
    return [group_logic.ref(g) for g in gang.groups]


def _release_app(s: Session, rt: AppRuntime, why: str, details: dict[str, str],
                 until: float) -> bool:
    message = f"released to break a {why}"
    count = ph.release_all(s, rt, DeleteReason.DEADLOCK_VICTIM, message)
    ph.drop_earmark(s, rt)
    rt.admitted = rt.reserved = False
    rt.timer_start = None
    rt.create_asked.clear()
    rt.retry_after = until
    rt.reason = "DeadlockVictim"
    rt.message = (f"{message}; released {count} placeholders; admitted again no sooner than "
                  f"{s.config.deadlock_backoff:g}s from now")
    blocking = BlockingReason("Deadlock", rt.message, details)
    for group in rt.spec.task_groups:
        rt.blocking[group.name] = blocking
    rt.dirty = True
    s.queues_dirty = True
    s.event(ref(rt), EventType.WARNING, "DeadlockBroken", rt.message)
    return False


def requeue(s: Session, rt: GroupRuntime, until: float, message: str,
            blocking: BlockingReason) -> None:
    """Send a PodGroup back to ``Pending`` until ``until``: its assumed members are given
    back at once (they are held in the core only) and its earmark is dropped."""
    for uid in sorted(rt.assumed):
        ps = s.pods.get(uid)
        if ps is not None and ps.pod.node_name is None:
            s.uncharge(ps)
            s.refresh_pending(ps)
    rt.assumed.clear()
    earmarks.drop_group_earmark(s, rt)
    rt.inqueue = False
    rt.retry_after = until
    rt.schedule_start = None
    rt.failed_epoch = -1
    rt.reason, rt.message = "DeadlockVictim", message
    rt.blocking = blocking
    rt.dirty = True
    s.queues_dirty = True
