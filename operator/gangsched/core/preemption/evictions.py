"""Carrying out a preemption or reclaim: a *plan*, the room it nominates, its failures.

Once :mod:`~gangsched.core.preemption.victims` has chosen victims for a preemptor, :func:`carry_out`
records a plan and asks for them to go:

* a not-started gang's reservation: its placeholders are deleted (``DeletePod``, reason
  ``Preempted`` or ``Reclaimed``; no Eviction is needed for our own placeholders), the
  members it held in memory are given back (they stay pending), and the gang is *held*
  again: not admitted, no earmark, no placeholder timer. It is admitted and reserves
  again later, like any held gang;
* every other pod: ``EvictPod`` (the shell POSTs an Eviction, so PodDisruptionBudgets
  are respected); a running gang's unused placeholders are deleted;
* a pod whose eviction a PodDisruptionBudget refused lately, chosen again because
  nothing else made room (:meth:`~gangsched.core.preemption.victims.Unit.violates`): ``DeletePod``
  with reason ``PreemptedPastDisruptionBudget`` and the pod's own grace period, as
  kube-scheduler deletes its victims (it never asks the Eviction API).

Victims are marked (``PodState.evicting``) and never chosen twice. Events: ``Preempted``
or ``Reclaimed`` on each victim pod and its Application or PodGroup, ``Preempting`` on
the preemptor, whose blocking reason becomes ``Preempting`` with the victims named.

A single-pod preemptor whose room is on one node is nominated there
(:class:`~gangsched.core.values.decisions.NominatePod`: its ``status.nominatedNodeName``, which
other schedulers and autoscalers read); the nomination is cleared when the plan ends
without the pod placed.

Nominated room (kube-scheduler's ``nominatedNodeName``, per node): the simulation that
chose the victims placed the preemptor's members on nodes; that room, per node, is the
plan's *room*. Whatever of it is free is *held* for the preemptor at once, charged on
its node so that no other placement can take it; capacity is freed only when a victim's
deletion is observed, and at the start of every cycle (:func:`hold`) the room it freed
is held as well. Once every victim is gone, :func:`first_go` gives the holds back and
places the preemptor before any action runs, exactly as allocate would (and as the
simulation did). Until then allocate
leaves the preemptor alone. A held gang is admitted then (``enqueue`` skips its capacity
check for gangs with held room, :meth:`Evictions.owners`), and its placeholders, created
next, find their room still held.

A plan ends when its preemptor needs nothing more (or is gone), when its victims are not
all gone within ``nomination_timeout``, or when an eviction fails (``EvictionFailed``:
429 from a PodDisruptionBudget, or another error). On failure the other victims are
released from their marks, the pod that refused is not chosen again for a while, and
the preemptor backs off (``eviction_backoff``, doubling), with a ``PreemptionFailed``
event. Plans and holds live in the core only: after a restart, victims still terminating
are never chosen again, and the gang preempts afresh if it still needs to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.app_allocation as alloc_logic
import gangsched.core.gangs.ordinary as ordinary_logic
import gangsched.core.gangs.placeholders as ph
import gangsched.core.gangs.podgroups as group_logic
from gangsched.core.preemption.preemptors import Kind, Preemptor, build, pod_ref
from gangsched.core.preemption.simulation import fit, scoring_for
from gangsched.core.preemption.victims import Tier, Unit, names
from gangsched.core.state.eviction_plans import Plan
from gangsched.core.state.records import AppRuntime, PodState, placement_order
from gangsched.core.values.decisions import (
    BlockingReason,
    DeletePod,
    DeleteReason,
    EventType,
    EvictPod,
    NominatePod,
)
from gangsched.core.values.model import AppKey, GroupKey, PodUID
from gangsched.core.values.observations import EvictionFailed
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

HOLD = "nominated:"
"""Prefix of the pseudo-pod uid under which a plan's held room is charged on a node."""

PREEMPT, RECLAIM = "preempt", "reclaim"


# --- trying ---------------------------------------------------------------------------


def signature(s: Session, now: float) -> tuple[object, ...]:
    """What a fruitless search depends on: freed capacity, pods and their binds, objects,
    queue specs, plans. O(pods + queues): computed once per action and cycle, and again
    after a plan is made."""
    assumed = sum(1 for ps in s.pods.values() if ps.assumed)
    queues = tuple(sorted(s.queues.specs.items()))
    return (s.cluster.free_epoch, len(s.pods), len(s.pending), assumed, len(s.apps),
            len(s.groups), queues, s.evictions.version)


def may_try(s: Session, action: str, pre: Preemptor, now: float,
            state: tuple[object, ...]) -> bool:
    """No open plan, no backoff, and something changed since the last fruitless search:
    ``state`` (a :func:`signature`), or what the preemptor asks for; else, once
    ``placeholder_retry`` seconds have passed, anything at all (what the signature does
    not cover: a victim's priority, a node's labels...), or a refused eviction may be
    tried again. With nothing changed, a search reads what it read and finds nothing
    again: a quiet cluster does not search every ten seconds."""
    ev = s.evictions
    if pre.key in ev.plans or not s.reached(ev.backoff.get(pre.key, 0.0)):
        return False
    last = ev.tried.get((action, pre.key))
    if last is None or last[1] != (state, pre.total, pre.priority):
        return True
    if unchanged_since(s, last[0], last[2]):
        return False
    return s.reached(last[0] + s.config.placeholder_retry)


def unchanged_since(s: Session, when: float, changes: int) -> bool:
    """Has nothing changed since ``when``, when the session had counted ``changes``, and
    no refused eviction come to its end?"""
    return changes == s.changes and not any(
        when < end and s.reached(end) for end in s.evictions.refusals_end)


def fruitless(s: Session, action: str, pre: Preemptor, now: float,
              state: tuple[object, ...], changes: int | None = None) -> None:
    """No set of victims was enough: do not search again until something changes.
    ``changes``: the session's count of changes when it was so (by default, now)."""
    s.evictions.tried[(action, pre.key)] = (now, (state, pre.total, pre.priority),
                                            s.changes if changes is None else changes)


# --- carrying a plan out --------------------------------------------------------------


def carry_out(s: Session, pre: Preemptor, units: list[Unit], action: str, now: float,
              why: str, room: dict[str, Resources] | None = None) -> Plan:
    """Ask every victim to go, record the plan, and tell everyone concerned.

    ``why`` ends the victims' message (``in queue q``, or the queue shares for reclaim).
    ``room``: where the preemptor's members go once the victims are gone, per node (by
    default, where the capacity simulation places them: :func:`room_of`).
    """
    reason = "Preempted" if action == PREEMPT else "Reclaimed"
    delete_reason = DeleteReason.PREEMPTED if action == PREEMPT else DeleteReason.RECLAIMED
    text = f"evicted to make room for {pre.describe()} {why}"
    evicted = [u for u in units if not u.nominated]
    count = sum(len(u.pods) for u in evicted)
    nodes = sorted({node for u in units for node in u.freed})
    shown = names(evicted)
    going = "1 pod is" if count == 1 else f"{count} pods are"
    taken = [u for u in units if u.nominated]
    message = (f"{action}: {going} being evicted to make room ({shown}) on "
               f"{', '.join(nodes)}; the room freed is held for this {pre.kind.value} "
               "until it is placed") if evicted else (
        f"{action}: the room nominated for lower-priority pods of another scheduler "
        f"({names(taken)}) on {', '.join(nodes)} is held for this {pre.kind.value} "
        "until it is placed")
    details = {"action": action, "victims": shown, "evicting": str(count),
               "nodes": ", ".join(nodes)}
    plan = Plan(pre.key, action, pre.target, pre.queue, now, message, details, pre.owners,
                room=room if room is not None else room_of(s, pre, units))
    for unit in units:
        if unit.nominated:
            _displace(s, unit)
    for node, amount in plan.room.items():
        state = s.cluster.nodes.get(node)
        if state is not None:
            plan.claimed[node] = amount.min(state.free).clamp_non_negative()
    for unit in units:
        _take(s, plan, unit, reason, delete_reason, text)
    _rehold(s, plan)
    s.evictions.plans[pre.key] = plan
    s.evictions.version += 1
    s.event(pre.target, EventType.NORMAL, "Preempting", message)
    if pre.pod is not None and len(plan.room) == 1:
        pod = pre.pod.pod  # a single pod: nominated where its room is made, as kube does
        s.out.append(NominatePod(pod.uid, pod.namespace, pod.name, next(iter(plan.room))))
    keep_reason(s, plan)
    return plan


def _displace(s: Session, unit: Unit) -> None:
    """Another scheduler's nominated pod of lower priority: its room is the preemptor's
    now. Nothing is asked of it; it holds no room on that node while nominated there."""
    for ps in unit.pods:
        ps.displaced = ps.node
        s.uncharge(ps)


def _take(s: Session, plan: Plan, unit: Unit, reason: str, delete_reason: DeleteReason,
          text: str) -> None:
    if unit.nominated:
        return  # displaced when the plan was made
    for ps in unit.pods:
        if ps.pod.placeholder or ps.pod.node_name is not None:
            ps.evicting = plan.key  # a member held in memory is given back, not evicted
        if ps.node is not None:
            plan.victims[ps.uid] = (ps.node, ps.request)
    if unit.tier is Tier.RESERVATION:
        rt = s.apps[AppKey(unit.key.split("/", 1)[1])]
        released = _release_reservation(s, rt, delete_reason, text)
        s.event(unit.owner or plan.target, EventType.NORMAL, reason,
                f"the gang's reservation ({released} placeholders) was released: {text}; "
                "the gang is held and reserves again later")
        return
    for ps in unit.pods:
        pod = ps.pod
        if pod.placeholder:
            owner = s.apps.get(pod.app) if pod.app is not None else None
            if owner is not None:
                ph.release(s, owner, ps, delete_reason, text)
            continue
        if s.reached(ps.budget_refused_until):
            s.out.append(EvictPod(pod.uid, pod.namespace, pod.name, reason, text))
            s.event(pod_ref(ps), EventType.NORMAL, reason, text)
        else:
            past = f"{text}; deleted past its PodDisruptionBudget: nothing else made room"
            s.out.append(DeletePod(pod.uid, pod.namespace, pod.name,
                                   DeleteReason.PREEMPTED_PAST_BUDGET, past))
            s.event(pod_ref(ps), EventType.WARNING, reason, past)
    if unit.owner is not None:
        what = (f"the whole gang ({len(unit.pods)} pods) was" if unit.tier is Tier.GANG
                else f"pod {unit.pods[0].pod.ref} was")
        s.event(unit.owner, EventType.WARNING, reason, f"{what} {text}")


def _release_reservation(s: Session, rt: AppRuntime, reason: DeleteReason,
                         message: str) -> int:
    """A not-started gang gives its placeholders up and is held again, like a gang that
    was never admitted: it reserves (and its placeholder timer starts) afresh later."""
    count = ph.release_all(s, rt, reason, message)
    ph.drop_earmark(s, rt)
    rt.admitted = rt.reserved = False
    rt.timer_start = rt.starting_since = None
    rt.create_asked.clear()
    rt.blocking.clear()
    rt.dirty = True
    s.queues_dirty = True
    return count


def room_of(s: Session, pre: Preemptor, units: list[Unit]) -> dict[str, Resources]:
    """The room the preemptor's members take once ``units`` are gone, per node, as the
    simulation places them."""
    extra: dict[str, Resources] = {}
    for unit in units:
        for node, amount in unit.freed.items():
            extra[node] = extra.get(node, Resources.ZERO) + amount
    victims = [uid for unit in units for uid in unit.uids]
    placed = fit(s, pre.items, extra, scoring_for(s, pre), pre.owners, victims) or {}
    room: dict[str, Resources] = {}
    for index, node in placed.items():
        room[node] = room.get(node, Resources.ZERO) + pre.items[index].request
    return room


def keep_reason(s: Session, plan: Plan) -> None:
    """Show the preemptor as ``Preempting`` (allocate may have said otherwise since)."""
    blocking = BlockingReason("Preempting", plan.message, plan.details)
    kind, _, rest = plan.key.partition("/")
    if kind == Kind.APP.value:
        rt = s.apps.get(AppKey(rest))
        if rt is not None:
            for group in rt.spec.task_groups:
                if rt.blocking.get(group.name) != blocking:
                    rt.blocking[group.name] = blocking
                    rt.dirty = True
    elif kind == Kind.GROUP.value:
        gang = group_logic.gang_of(s, GroupKey(rest))
        for g in gang if not isinstance(gang, str) else ():
            if g.blocking != blocking:
                g.blocking = blocking
                g.dirty = True
    else:
        ps = s.pods.get(PodUID(rest))
        if ps is not None and ps.pending:
            s.mark_pending(ps, "Preempting", plan.message)


def keep_reasons(s: Session, action: str) -> None:
    """Every open plan of ``action`` shows its preemptor as ``Preempting``."""
    for key in sorted(s.evictions.plans):
        plan = s.evictions.plans[key]
        if plan.action == action and plan.key.partition("/")[0] != Kind.POD.value:
            keep_reason(s, plan)


# --- nominated room -------------------------------------------------------------------


def hold(s: Session, now: float) -> None:
    """Start of a cycle: hold the room of victims gone since, end finished plans."""
    ev = s.evictions
    for key in sorted(ev.plans):
        plan = ev.plans[key]
        for uid in sorted(plan.victims):
            ps = s.pods.get(uid)
            node, request = plan.victims[uid]
            if ps is None or ps.node != node:
                del plan.victims[uid]
                plan.freed[node] = plan.freed.get(node, Resources.ZERO) + request
        pre = build(s, key, now)
        if pre is None or not pre.items:
            _end(s, plan)
        elif s.reached(plan.started + s.config.nomination_timeout):
            _end(s, plan, release_victims=True)
            _back_off(s, key, now)
            s.event(plan.target, EventType.WARNING, "PreemptionTimedOut",
                    f"{len(plan.victims)} victims were not gone after "
                    f"{s.config.nomination_timeout:g}s; the room held for this "
                    f"{pre.kind.value} is given back")
        else:
            _rehold(s, plan)


def first_go(s: Session, now: float) -> None:
    """Before the actions: a plan whose victims are all gone places its preemptor first,
    on the room held for it. Until then allocate leaves the preemptor alone."""
    ev = s.evictions
    for key in sorted(ev.plans):
        plan = ev.plans.get(key)
        pre = build(s, key, now) if plan is not None else None
        if plan is None or pre is None:
            continue
        if plan.victims:
            _hold_back(s, pre)
            continue
        _release_holds(s, plan)
        _place(s, pre, now)
        after = build(s, key, now)
        if after is None or not after.items:
            _end(s, plan)
        elif _awaits_admission(s, after):
            _rehold(s, plan)
            _hold_back(s, after)
        else:
            # Placed differently than simulated (something changed meanwhile): give the
            # room back and let the gang wait its turn before preempting again.
            _end(s, plan)
            delay = _back_off(s, key, now)
            s.event(plan.target, EventType.WARNING, "PreemptionFailed",
                    f"the room freed by the victims did not take all of this "
                    f"{pre.kind.value}'s members (the cluster changed meanwhile); it tries "
                    f"again in {delay:g}s")


def _awaits_admission(s: Session, pre: Preemptor) -> bool:
    """A gang that ``enqueue`` has yet to admit (it will: see :meth:`Evictions.owners`),
    or whose placeholders are asked for and not seen yet."""
    if pre.kind is Kind.APP:
        rt = s.apps.get(AppKey(pre.name))
        return rt is not None and (not rt.admitted or len(pre.pods) < len(pre.items))
    if pre.kind is Kind.GROUP:
        gang = group_logic.gang_of(s, GroupKey(pre.name))
        return not isinstance(gang, str) and not all(g.inqueue for g in gang)
    return False


def _place(s: Session, pre: Preemptor, now: float) -> None:
    """Place the preemptor as allocate would, now, before anything else."""
    for ps in pre.pods:
        ps.blocked_epoch = -1
    pod = pre.pod
    if pod is None and pre.kind is Kind.APP:
        rt = s.apps.get(AppKey(pre.name))
        if rt is not None:
            pending = [s.pods[u] for u in sorted(s.app_members.get(rt.spec.key, ()))
                       if u in s.pending]
            _place_app(s, rt, pending, now)
    elif pod is None:
        _place_group(s, GroupKey(pre.name), [], now)
    elif pod.pod.app is not None:
        owner = s.apps.get(pod.pod.app)
        if owner is not None:
            _place_app(s, owner, [pod], now)
    elif pod.pod.pod_group is not None:
        _place_group(s, pod.pod.pod_group, [pod], now)
    else:
        ordinary_logic.place(s, pod, now, "Scheduled")


def _place_app(s: Session, rt: AppRuntime, pending: list[PodState], now: float) -> None:
    pending.sort(key=placement_order)
    gate = alloc_logic.StateAwareGate(s, rt.spec.queue, now, {rt.spec.key})
    alloc_logic.schedule_app(s, alloc_logic.AppUnit(rt, pending), gate, now)


def _place_group(s: Session, key: GroupKey, pending: list[PodState], now: float) -> None:
    rt = s.groups.get(key)
    if rt is None:
        return
    gang = group_logic.gang_of(s, key)
    for g in gang if not isinstance(gang, str) else ():
        g.failed_epoch = -1
    group_logic.schedule_group(s, group_logic.GroupUnit(rt, pending), set(), now)


def _hold_back(s: Session, pre: Preemptor) -> None:
    """Allocate skips the preemptor this cycle: it waits for its victims, not for room."""
    epoch = s.cluster.free_epoch
    for ps in pre.pods:
        ps.blocked_epoch = epoch
    if pre.kind is Kind.GROUP:
        gang = group_logic.gang_of(s, GroupKey(pre.name))
        for g in gang if not isinstance(gang, str) else ():
            g.failed_epoch = epoch


def _rehold(s: Session, plan: Plan) -> None:
    """Hold, on each node, the plan's room as far as it was free when the plan was made or
    its own victims have freed it since, and is free now."""
    _release_holds(s, plan)
    uid = HOLD + plan.key
    for node in sorted(plan.room):
        state = s.cluster.nodes.get(node)
        if state is None:
            continue
        mine = plan.claimed.get(node, Resources.ZERO) + plan.freed.get(node, Resources.ZERO)
        amount = plan.room[node].min(mine).min(state.free).clamp_non_negative()
        if amount:
            s.cluster.charge(node, uid, amount)
            plan.held[node] = amount


def _release_holds(s: Session, plan: Plan) -> None:
    uid = HOLD + plan.key
    for node, amount in plan.held.items():
        s.cluster.release(node, uid, amount, retry=False)
    plan.held.clear()


def _end(s: Session, plan: Plan, *, release_victims: bool = False) -> None:
    """Close a plan: give back its held room, and its ``Preempting`` reason.

    ``release_victims``: victims not yet terminating may be chosen again later (their
    eviction failed or was lost). Otherwise their evictions are under way.
    """
    ev = s.evictions
    _release_holds(s, plan)
    ev.plans.pop(plan.key, None)
    ev.version += 1
    if release_victims:
        for uid in plan.victims:
            ps = s.pods.get(uid)
            if ps is not None and ps.evicting == plan.key and not ps.pod.terminating:
                ps.evicting = None
    kind, _, rest = plan.key.partition("/")
    if kind == Kind.APP.value:
        rt = s.apps.get(AppKey(rest))
        if rt is not None:
            for name in [n for n, b in rt.blocking.items() if b.reason == "Preempting"]:
                del rt.blocking[name]
                rt.dirty = True
    elif kind == Kind.GROUP.value:
        gang = group_logic.gang_of(s, GroupKey(rest))
        for g in gang if not isinstance(gang, str) else ():
            g.failed_epoch = -1
            if g.blocking.reason == "Preempting":
                g.blocking = BlockingReason()
                g.dirty = True
    else:
        ps = s.pods.get(PodUID(rest))
        if ps is not None:
            ps.blocked_epoch = -1
            if ps.pending:  # not placed on the room made for it: the nomination is void
                pod = ps.pod
                s.out.append(NominatePod(pod.uid, pod.namespace, pod.name, None))


def _back_off(s: Session, key: str, now: float) -> float:
    ev = s.evictions
    ev.refusals[key] = ev.refusals.get(key, 0) + 1
    initial = s.config.eviction_backoff
    delay: float = min(initial * 2.0 ** (ev.refusals[key] - 1), initial * 10)
    ev.backoff[key] = now + delay
    return delay


# --- failures -------------------------------------------------------------------------


def eviction_failed(s: Session, obs: EvictionFailed) -> None:
    """An eviction was refused (429: a PodDisruptionBudget) or failed: drop its plan.

    A pod a budget refused (429) counts as violating it for the longest backoff (ten
    times ``eviction_backoff``): it is taken again only when nothing else makes room,
    and then deleted (see :func:`carry_out`). A pod whose eviction failed otherwise is
    not a victim again for the backoff. The plan's other victims that are not
    terminating may be chosen again; the preemptor backs off. A failure for a pod in no
    plan is ignored.
    """
    ev = s.evictions
    plan = next((p for p in ev.plans.values() if obs.uid in p.victims), None)
    if plan is None:
        return
    delay = _back_off(s, plan.key, s.now)
    ps = s.pods.get(obs.uid)
    if ps is not None:
        if obs.code == 429:
            ps.budget_refused_until = s.now + 10 * s.config.eviction_backoff
        else:
            ps.evict_refused_until = s.now + delay
        ps.evicting = None
        ends = ev.refusals_end
        ends.append(s.now + delay)
        if len(ends) > 256:
            del ends[:len(ends) - 256]  # a search older than these was tried again since
    _end(s, plan, release_victims=True)
    what = f"pod {ps.pod.ref}" if ps is not None else f"pod uid {obs.uid}"
    why = "a PodDisruptionBudget forbids it" if obs.code == 429 else "the request failed"
    detail = f": {obs.message}" if obs.message else ""
    s.event(plan.target, EventType.WARNING, "PreemptionFailed",
            f"evicting {what} was refused ({obs.code}, {why}){detail}; the other victims "
            f"are spared and this {plan.target.kind} tries again in {delay:g}s")
