"""PodGroups: gangs without placeholders (Koordinator and coscheduling design).

Members are *assumed* onto nodes inside the core: they take capacity, but no bind is
asked for until every PodGroup of the GangGroup has ``minMember`` members assumed or
bound. Then all assumed members of the whole GangGroup are bound in the same cycle.

* ``Strict``: assumptions live for one attempt only. An attempt that ends without the
  gang condition rolls back, and the gang is tried again only when capacity is freed.
* ``NonStrict``: assumptions accumulate across cycles until the condition holds.
* ``scheduleTimeoutSeconds`` counts from the first assumption (persisted in status as
  ``scheduleStartTime``); on expiry every assumption is released, and then, as the
  group's ``on_timeout`` says: ``Fail``, the group is ``TimedOut``: its pods are no
  longer scheduled, and say so; ``Requeue`` (coscheduling, Koordinator), its pending
  members go back to the queue with a backoff (1 s doubling to 10 s, kube-scheduler's
  pod backoff) and the group is tried again with a fresh timer.
* A GangGroup with a PodGroup whose ``minResources`` exceed the nodes as they are
  (:func:`~gangsched.core.gangs.unsatisfiable.declared_verdict`) has no member assumed,
  with or without ``enqueue``: its pods wait with ``Unsatisfiable`` and the numbers.
* ``wait_for_min_member``: no member is assumed before ``minMember`` pods of the group
  exist (coscheduling's PreFilter), so the timer starts only once they do.
* Once satisfied, later members are scheduled as ordinary pods ("after gang"). A group
  that has a bound member when the operator starts counts as satisfied.
* Phases: ``Pending`` until the ``enqueue`` action lets the gang in (at once without
  it), ``Inqueue`` then, ``Scheduling`` while members are assumed, then ``Scheduled``,
  ``Running``, ``Finished``; or ``TimedOut``, ``Failed`` (an invalid spec, or
  ``minResources`` above the queue's max: ``QueueQuotaExceeded``). Only Inqueue groups get members
  assumed. An enqueued group earmarks in its queue what it still needs of its minimum.
* A deadlock victim (:mod:`~gangsched.core.preemption.deadlock`) gives back what it assumed and
  goes back to ``Pending`` until its backoff ends.
* A PodGroup that asks for a topology (or whose members require pod affinity to one
  another) has its members assumed on the nodes of the one domain planned for the whole
  group (:mod:`~gangsched.core.gangs.gangplace`), or none assumed, with the ``Topology``
  blocking reason, when no domain holds it; members placed after the gang is satisfied
  stay in its domain.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gangsched.core.gangs.earmarks as earmarks
import gangsched.core.gangs.ordinary as ordinary_logic
from gangsched.core.gangs import gangplace, unsatisfiable
from gangsched.core.placement import volume_assumptions as volume_placing
from gangsched.core.state.records import GroupRuntime, PodState, in_order, placement_order
from gangsched.core.values.decisions import BlockingReason, EventType, ObjectRef
from gangsched.core.values.model import GangMode, GroupKey, PodGroupSpec, TimeoutAction

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

SATISFIED_PHASES = ("Scheduled", "Running", "Finished")
QUOTA_EXCEEDED = "QueueQuotaExceeded"
"""A PodGroup whose minResources exceed its queue's max: ``Failed``, as an Application
larger than its queue is ``Rejected``. Unlike a rejected Application it is checked again
when the PodGroup or the queue changes, and waits again once it fits the max."""
ENQUEUED_PHASES = ("Inqueue", "Scheduling")
REQUEUE_BACKOFF = 1.0
"""The first backoff of a requeued group's members, doubling with each timeout in a row
(kube-scheduler's ``podInitialBackoffSeconds``)."""
REQUEUE_BACKOFF_MAX = 10.0
"""kube-scheduler's ``podMaxBackoffSeconds``."""


def ref(rt: GroupRuntime) -> ObjectRef:
    return rt.ref


def group_observed(s: Session, spec: PodGroupSpec) -> None:
    rt = s.groups.get(spec.key)
    if rt is not None and rt.spec.uid != spec.uid:
        _release_assumed(s, rt)
        earmarks.drop_group_earmark(s, rt)
        rt = None
    if rt is None:
        rt = GroupRuntime(spec=spec, schedule_start=spec.persisted_start)
        rt.timed_out = (spec.persisted_phase == "TimedOut"
                        and spec.on_timeout is TimeoutAction.FAIL)
        rt.satisfied = spec.persisted_phase in SATISFIED_PHASES
        rt.inqueue = spec.persisted_phase in ENQUEUED_PHASES  # enqueued before a restart
        if spec.persisted_reservation_expiry is not None:
            rt.restored_reservation = (spec.persisted_reservation_expiry,
                                       spec.persisted_reserved_nodes)
        s.groups[spec.key] = rt
        rt.index = s.group_index
        s.group_index.add(spec.key, rt)
        s.recharge(s.group_members.get(spec.key, set()))
        _retry_gang(s, spec)
        return
    old, rt.spec = rt.spec, spec
    rt.dirty = True
    if rt.timed_out and spec.on_timeout is TimeoutAction.REQUEUE:
        rt.timed_out = False  # a group that requeues is never timed out for good
    if old != spec:
        _retry_gang(s, spec)
    if old.queue != spec.queue:
        s.recharge(s.group_members.get(spec.key, set()))
        if rt.earmark:
            s.queues.unearmark(old.queue, rt.earmark)
            s.queues.earmark(spec.queue, rt.earmark)


def _retry_gang(s: Session, spec: PodGroupSpec) -> None:
    """Something the gang condition depends on changed: let the GangGroup try again."""
    for key in spec.members_of_gang_group:
        member = s.groups.get(key)
        if member is not None:
            member.failed_epoch = -1
    for other in s.groups.values():
        if spec.key in other.spec.gang_group:
            other.failed_epoch = -1


def group_gone(s: Session, key: GroupKey) -> None:
    rt = s.groups.pop(key, None)
    if rt is None:
        return
    s.group_index.remove(key)
    _release_assumed(s, rt)
    earmarks.drop_group_earmark(s, rt)
    found = s.group_members.get(key, set())
    for uid in found:
        s.pods[uid].pending_reason = None
    s.recharge(found)
    s.queues_dirty = True


def pod_gone(s: Session, ps: PodState) -> None:
    unassume(s, ps)


def unassume(s: Session, ps: PodState) -> None:
    """The pod is no longer an assumed member of its group: gone, bound, finished, moved.

    A member bound by someone else, or that finished, must not be bound (or released)
    with the rest of the gang later.
    """
    if ps.pod.pod_group is not None:
        rt = s.groups.get(ps.pod.pod_group)
        if rt is not None and ps.uid in rt.assumed:
            rt.assumed.discard(ps.uid)
            rt.dirty = True


def _release_assumed(s: Session, rt: GroupRuntime, *, rollback: bool = False) -> None:
    """Give back every assumed member's place. A Strict rollback, undoing this very
    attempt, frees nothing that was not free when the cycle began: it retries no one."""
    for uid in sorted(rt.assumed):
        ps = s.pods.get(uid)
        if ps is not None and ps.pod.node_name is None:
            s.uncharge(ps, retry=not rollback)
            s.refresh_pending(ps)
    rt.assumed.clear()
    rt.dirty = True


def timeouts(s: Session, now: float) -> None:
    for rt in s.group_index.walk("unfinished"):
        start = rt.schedule_start
        if rt.satisfied or rt.timed_out or start is None:
            continue
        if not s.reached(start + rt.spec.schedule_timeout):
            continue
        placed = len(rt.assumed) + _bound(s, rt)
        _release_assumed(s, rt)
        if rt.spec.on_timeout is TimeoutAction.REQUEUE:
            _requeue(s, rt, placed, now)
            continue
        rt.timed_out = True
        rt.reason = "ScheduleTimeout"
        rt.message = (f"{placed}/{rt.spec.min_member} members placed when the "
                      f"{rt.spec.schedule_timeout:g}s schedule timeout expired; its pods are "
                      "no longer scheduled (delete and re-create the PodGroup to retry)")
        s.event(ref(rt), EventType.WARNING, "ScheduleTimeout", rt.message)


def _requeue(s: Session, rt: GroupRuntime, placed: int, now: float) -> None:
    """The timeout of a group that requeues (coscheduling's Permit timeout rejects every
    waiting member, and they go back to the queue): its timer stops, and its pending
    members are tried again after a backoff that doubles with each timeout in a row."""
    rt.schedule_start = None
    rt.requeues += 1
    delay = min(REQUEUE_BACKOFF * 2 ** (rt.requeues - 1), REQUEUE_BACKOFF_MAX)
    rt.requeue_until = now + delay
    rt.reason = "ScheduleTimeout"
    rt.message = (f"{placed}/{rt.spec.min_member} members placed when the "
                  f"{rt.spec.schedule_timeout:g}s schedule timeout expired; the waiting "
                  f"members went back to the queue and are tried again in {delay:g}s")
    rt.dirty = True
    s.event(ref(rt), EventType.WARNING, "ScheduleTimeout", rt.message)


def _quorum_missing(s: Session, gang: list[GroupRuntime]) -> tuple[GroupRuntime, int] | None:
    """The first PodGroup of ``gang`` that waits for ``minMember`` of its pods to exist
    before any is placed, with how many exist; ``None`` when none waits."""
    for g in gang:
        if not g.spec.wait_for_min_member or g.satisfied:
            continue
        found = sum(1 for uid in s.group_members.get(g.spec.key, ())
                    if s.pods[uid].pod.active and not s.pods[uid].pod.terminating)
        if found < g.spec.min_member:
            return g, found
    return None


def _bound(s: Session, rt: GroupRuntime) -> int:
    count = 0
    for uid in s.group_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        if ps.node is not None and ps.pod.active and uid not in rt.assumed:
            count += 1
    return count


@dataclass(slots=True)
class GroupUnit:
    rt: GroupRuntime
    pending: list[PodState] = field(default_factory=list)


def units(s: Session) -> list[tuple[str, tuple[object, ...], object]]:
    by_group: dict[GroupKey, GroupUnit] = {}
    for uid in s.pending_shapes.of_groups:
        ps = s.pods[uid]
        key = ps.pod.pod_group
        if key is None:
            continue  # (not kept among these)
        if ps.pod.invalid:
            s.mark_pending(ps, "InvalidPod", ps.pod.invalid)
            continue
        rt = s.groups.get(key)
        if rt is None:
            s.mark_pending(ps, "PodGroupNotFound",
                           f"pod group {key} does not exist yet; waiting for it")
            continue
        unit = by_group.get(key)
        if unit is None:
            unit = by_group[key] = GroupUnit(rt)
        unit.pending.append(ps)
    result: list[tuple[str, tuple[object, ...], object]] = []
    for key, unit in by_group.items():
        spec = unit.rt.spec
        unit.pending = in_order(unit.rt, unit.pending)
        sort_key = ordinary_logic.sort_key(s, spec.queue, spec.priority, spec.creation, key)
        result.append((spec.queue, sort_key, unit))
    return result


def _mark_all(s: Session, pending: list[PodState], reason: str, message: str) -> None:
    for ps in pending:
        s.mark_pending(ps, reason, message)


def schedule_group(s: Session, unit: GroupUnit, done: set[GroupKey], now: float) -> None:
    rt = unit.rt
    spec = rt.spec
    if spec.key in done:
        return
    if spec.invalid:
        _mark_all(s, unit.pending, "InvalidPodGroup", spec.invalid)
        return
    if rt.timed_out:
        _mark_all(s, unit.pending, "GangTimedOut", rt.message)
        return
    if rt.satisfied:
        for ps in unit.pending:
            ordinary_logic.place(s, ps, now, "Scheduled")
        return
    over = s.queues.over_max(spec.queue, spec.min_resources)
    if not over.ok:
        if over.problem:
            reason, rt.message = "QueueNotFound", over.problem
        else:
            reason = QUOTA_EXCEEDED
            rt.message = (f"minResources {spec.min_resources.format_short()} exceed queue "
                          f"{over.queue}'s max {over.max_text}")
            _warn_once(s, rt, reason, rt.message)
        rt.reason = reason
        rt.blocking = BlockingReason(reason, rt.message, {"queue": over.queue})
        rt.dirty = True
        _mark_all(s, unit.pending, reason, rt.message)
        return
    if rt.reason in (QUOTA_EXCEEDED, "QueueNotFound"):
        rt.reason, rt.message, rt.dirty = "", "", True
    gang = gang_of(s, spec.key)
    if isinstance(gang, str):
        message = f"GangGroup member PodGroup {gang} does not exist yet"
        rt.blocking = BlockingReason("WaitingForGang", message, {"missing": gang})
        rt.dirty = True
        _mark_all(s, unit.pending, "WaitingForGangGroup", message)
        return
    done.update(g.spec.key for g in gang)
    verdict = next((v for g in gang
                    if (v := unsatisfiable.declared_verdict(s, g)) is not None), None)
    if verdict is not None:  # minResources can never fit: place nothing
        _mark_all(s, _all_pending(s, gang), unsatisfiable.REASON, verdict.message)
        return
    if not _enqueued(s, gang, now):
        return
    short = _quorum_missing(s, gang)
    if short is not None:
        g, found = short
        message = (f"PodGroup {g.spec.key} has {found} of its minMember {g.spec.min_member} "
                   "pods; none is placed before all of them exist")
        for member in gang:  # not attempted: no blocking reason (the pods say why)
            if member.blocking != BlockingReason():
                member.blocking, member.dirty = BlockingReason(), True
        _mark_all(s, _all_pending(s, gang),
                  "WaitingForGang", message)
        return
    waiting = next((g for g in gang if not s.reached(g.requeue_until)), None)
    if waiting is not None:
        _mark_all(s, _all_pending(s, gang),
                  "GangTimedOut", waiting.message)
        return
    if all(g.failed_epoch == s.cluster.free_epoch for g in gang):
        return
    pending = _pending_by_group(s, gang)
    ended = next((g for g in gang if g.timed_out or g.spec.invalid), None)
    if ended is not None:  # the GangGroup can never bind: hold nothing for it
        for g in gang:
            if g.assumed and g.spec.mode is GangMode.NON_STRICT:
                _release_assumed(s, g)
            _mark_all(s, pending.get(g.spec.key, []), "GangTimedOut",
                      f"PodGroup {ended.spec.key} of the GangGroup ended: "
                      f"{ended.message or ended.spec.invalid}")
        return
    for g in gang:
        _assume(s, g, pending.get(g.spec.key, []), now)
    placed = {g.spec.key: len(g.assumed) + _bound(s, g) for g in gang}
    if all(placed[g.spec.key] >= g.spec.min_member for g in gang) and not any(
        g.timed_out or g.spec.invalid for g in gang
    ):
        with s.binding_together():  # members' volumes are all written before any binds
            for g in gang:
                for uid in sorted(g.assumed, key=lambda u: s.pods[u].pod.name):
                    ps = s.pods[uid]
                    if ps.node is not None:  # always: assumed members hold a node
                        s.bind(ps, ps.node, "GangSatisfied")
        for g in gang:
            count = len(g.assumed)
            g.assumed.clear()
            g.satisfied = True
            g.requeues = 0
            if g.reason == "ScheduleTimeout":
                g.reason = g.message = ""
            g.blocking = BlockingReason()
            g.dirty = True
            s.event(ref(g), EventType.NORMAL, "GangScheduled",
                    f"all {len(gang)} PodGroups of the gang have their minimum; "
                    f"binding {count} members")
        return
    summary = ", ".join(f"{g.spec.key} {placed[g.spec.key]}/{g.spec.min_member}" for g in gang)
    for g in gang:
        if g.spec.mode is GangMode.STRICT and g.assumed:
            _release_assumed(s, g, rollback=True)
    for g in gang:
        # After every rollback: the gang is tried again only once capacity is freed
        # (or a member, a spec or a quota changes), not in every cycle.
        g.failed_epoch = s.cluster.free_epoch
        for ps in pending.get(g.spec.key, []):
            if ps.pod.invalid:
                s.mark_pending(ps, "InvalidPod", ps.pod.invalid)
            elif ps.node is None:
                s.mark_pending(ps, "WaitingForGang", f"gang members placed: {summary}")
            else:
                s.mark_pending(ps, "WaitingForGang", f"held on node {ps.node} until the gang "
                               f"is complete; gang members placed: {summary}")
        g.dirty = True


def _enqueued(s: Session, gang: list[GroupRuntime], now: float) -> bool:
    """May the gang's members be assumed? Not while a member is a deadlock victim in
    backoff, nor, with the enqueue action, before every member is Inqueue."""
    if all(g.inqueue and s.reached(g.retry_after) for g in gang):
        return True
    pending = [ps for found in _pending_by_group(s, gang).values() for ps in found]
    for g in gang:
        if not s.reached(g.retry_after):
            _mark_all(s, pending, "DeadlockBackoff", g.message)
            return False
    if "enqueue" not in s.config.actions:
        for g in gang:
            if not g.inqueue:
                g.inqueue = g.dirty = True
                if g.reason == "DeadlockVictim":
                    g.reason = g.message = ""
        return True
    waiting = [g for g in gang if not g.inqueue]
    if not waiting:
        return True
    blocking = waiting[0].blocking
    why = blocking.message or "its minimum does not fit yet"
    _mark_all(s, pending, blocking.reason if blocking.reason != "None" else "NotEnqueued",
              f"PodGroup {waiting[0].spec.key} is not enqueued: {why}")
    return False


def gang_of(s: Session, key: GroupKey) -> list[GroupRuntime] | GroupKey:
    """Every PodGroup that must be satisfied with ``key``, in key order; or the first
    missing one.

    GangGroups are joined transitively: if A names B and B names C, all three bind
    together, even when the PodGroups do not list each other the same way.
    """
    found: dict[GroupKey, GroupRuntime] = {}
    todo = [key]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        member = s.groups.get(current)
        if member is None:
            return current
        found[current] = member
        todo.extend(k for k in member.spec.members_of_gang_group if k not in found)
    return [found[k] for k in sorted(found)]


def _all_pending(s: Session, gang: list[GroupRuntime]) -> list[PodState]:
    return [ps for found in _pending_by_group(s, gang).values() for ps in found]


def _pending_by_group(s: Session, gang: list[GroupRuntime]) -> dict[GroupKey, list[PodState]]:
    found: dict[GroupKey, list[PodState]] = {}
    for g in gang:
        members = [s.pods[uid] for uid in s.group_members.get(g.spec.key, ())]
        waiting = [ps for ps in members if ps.pending and ps.pod.ours]
        waiting.sort(key=placement_order)
        found[g.spec.key] = waiting
    return found


def _assume(s: Session, g: GroupRuntime, pending: list[PodState], now: float) -> None:
    """Assume pending members until one does not fit (Strict stops; NonStrict too)."""
    queue = g.spec.queue
    targets = gangplace.group_targets(s, g, [ps for ps in pending if not ps.pod.invalid
                                             and s.reached(ps.backoff_until)])
    for ps in pending:
        if ps.pod.invalid or not s.reached(ps.backoff_until):
            continue
        check = s.queues.fits(queue, ps.request, own_earmark=g.earmark)
        if not check.ok:
            g.blocking = BlockingReason("QueueQuota", check.describe(ps.request, "a member"),
                                        {"queue": check.queue})
            return
        # A member that fits nowhere (as most of a waiting gang's do, cycle after cycle)
        # is told so from the verdicts kept node by node, without a pass over the nodes.
        planned = targets.fit(s, ps, str(g.spec.key)) if targets is not None else None
        node = planned if planned is not None else s.cluster.fit(ps.info,
                                                                 s.config.gang_scoring)
        if not isinstance(node, str):
            g.blocking = BlockingReason(node.reason, node.message(ps.request),
                                        node.details())
            return
        volume_placing.reserve(s.cluster, s.volumes, ps.uid, ps.pod, node)
        s.charge(ps, node)
        s.refresh_pending(ps)
        g.assumed.add(ps.uid)
        if g.schedule_start is None:
            g.schedule_start = now
        g.dirty = True


def progress(s: Session, now: float) -> None:
    """Derive each changed PodGroup's phase from its members; report an invalid spec."""
    for rt in s.group_index.walk("dirty"):
        if not rt.dirty:
            continue
        invalid = rt.spec.invalid
        if invalid and f"invalid:{invalid}" not in rt.warned:
            rt.warned.add(f"invalid:{invalid}")
            s.event(ref(rt), EventType.WARNING, "InvalidSpec", invalid)
        if not rt.satisfied and not rt.timed_out and _bound(s, rt) > 0 and not rt.assumed:
            rt.satisfied = True  # bound members survive restarts: the gang was satisfied
        earmarks.update_group_earmark(s, rt)
        rt.phase = _phase(s, rt)


def _warn_once(s: Session, rt: GroupRuntime, reason: str, message: str) -> None:
    if f"{reason}:{message}" not in rt.warned:
        rt.warned.add(f"{reason}:{message}")
        s.event(ref(rt), EventType.WARNING, reason, message)


def _phase(s: Session, rt: GroupRuntime) -> str:
    if rt.spec.invalid or (rt.reason == QUOTA_EXCEEDED and not rt.satisfied):
        return "Failed"
    if rt.timed_out:
        return "TimedOut"
    if not rt.satisfied:
        return "Scheduling" if rt.assumed else "Inqueue" if rt.inqueue else "Pending"
    running = succeeded = active = 0
    for uid in s.group_members.get(rt.spec.key, ()):
        pod = s.pods[uid].pod
        if pod.phase.value == "Running":
            running += 1
        elif pod.phase.value == "Succeeded":
            succeeded += 1
        if pod.active:
            active += 1
    if active == 0 and succeeded >= rt.spec.min_member:
        return "Finished"
    if running + succeeded >= rt.spec.min_member:
        return "Running"
    return "Scheduled"
