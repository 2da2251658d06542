"""The ``preempt`` action: higher-priority work takes from lower, within a queue.

As Volcano's preempt action (``scheduler-actions.zh.txt``), in two cases:

* **between gangs**: a preemptor (:mod:`~gangsched.core.preemption.preemptors`: a gang, or a pod,
  that allocate could not place for capacity or quota) may take the room of work of
  *lower priority in the same leaf queue*: the reservations of gangs that have not
  started, whole running gangs, single pods (:mod:`~gangsched.core.preemption.victims`). Victims in
  the same queue give back its quota too, so a gang held for quota can preempt as well;
* **within a gang**: a pending pod of a gang that has started (an Application's real
  pod, a later PodGroup member) may take the place of a lower-priority running member of
  the same gang, as long as each task group keeps ``minMember`` members (the newcomer
  counting for its own group). This is tried first: no one else loses anything.

Scope, against kube-scheduler's DefaultPreemption:

* *queues*: gangsched's own fairness concept, which upstream has not. Priority
  preemption takes only from the preemptor's queue, on purpose; room held by other
  queues comes back by ``reclaim``, which follows the queue shares (a queue's work never
  evicts another's on priority alone, or the shares would not hold). ``explain`` says so;
* *other schedulers' pods* are in no queue: any preemptor may take one of lower
  priority, as upstream considers every pod on the node;
* *what it waits for*: capacity or quota, and, for a single pod whose fit depends on
  other pods (host ports, pod anti-affinity, spread), its constraints: such a pod is
  searched node by node with every filter run again with the victims gone
  (:mod:`~gangsched.core.preemption.onnode`, upstream's ``SelectVictimsOnNode``). A gang's
  victims, chosen by capacity, are checked with every filter too, and widened when a
  member would fit nowhere; a gang waiting for its constraints does not preempt;
* *another scheduler's nominated pod* of lower priority holds no room against the
  preemptor: its room is taken without an eviction (upstream's ``addGENominatedPods``);
* *PodDisruptionBudgets*: evictions go through the Eviction API; a pod whose eviction
  a budget refused is taken again only when nothing else makes room, and then deleted
  (:mod:`~gangsched.core.preemption.evictions`), as upstream prefers non-violating victims and
  violates a budget only as a last resort. gangsched reads no PodDisruptionBudget
  objects: it learns of a budget from the Eviction API's 429, pod by pod;
* *who preempts*: not work whose pods say ``preemptionPolicy: Never``, nor a pod whose
  lower-priority victims are still terminating on its nominated node
  (:func:`~gangsched.core.preemption.preemptors.eligible`).

Preemptors are taken highest priority first, then oldest. The victims are the smallest
set found by simulation (see :func:`gangsched.core.preemption.victims.select`); only once the
preemptor is known to fit are they asked to go (:mod:`~gangsched.core.preemption.evictions`), and
the room they free is held for the preemptor. A preemptor with a plan under way, in
backoff after a refused eviction, or whose last search found nothing and nothing has
changed since, is skipped. Priority comes from pods (``priorityClassName``).

Cost: when no waiting work outranks running work (:mod:`~gangsched.core.state.pressure`),
there is no candidate victim for anyone and the action stops at once, whatever the size
of the backlog.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, cast

from gangsched.core.preemption import evictions, onnode, victims
from gangsched.core.preemption.preemptors import Kind, Preemptor, app_key, find
from gangsched.core.preemption.victims import Pool, Tier, Unit
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def preempt(s: Session, now: float) -> None:
    evictions.keep_reasons(s, evictions.PREEMPT)
    if not may_matter(s):
        return
    found = find(s, now)
    if not found:
        return
    pool: Pool | None = None
    state = evictions.signature(s, now)
    for pre in found:
        if not evictions.may_try(s, evictions.PREEMPT, pre, now, state):
            continue
        pool = pool or victims.pool(s, now)
        chosen = within_gang(s, pre, pool, now)
        room: dict[str, Resources] | None = None
        if chosen is None:
            chosen, room = between_gangs(s, pre, pool, now)
        if chosen:
            evictions.carry_out(s, pre, chosen, evictions.PREEMPT, now,
                                f"in queue {pre.queue}", room)
            state = evictions.signature(s, now)
        elif chosen is None:
            evictions.fruitless(s, evictions.PREEMPT, pre, now, state)


def may_matter(s: Session) -> bool:
    """Might some waiting work outrank some running work (the only work it may take)?
    False means every search would find no candidate victim at all."""
    return s.pressure.outranked(_spec_priorities(s))


def _spec_priorities(s: Session) -> Iterator[int]:
    yield from cast(dict[int, int], s.app_index.tally("priority"))
    yield from cast(dict[int, int], s.group_index.tally("priority"))


def between_gangs(s: Session, pre: Preemptor, pool: Pool,
                  now: float) -> tuple[list[Unit] | None, dict[str, Resources] | None]:
    """Lower-priority work of the preemptor's queue (not its own gang), or of another
    scheduler, that makes room; and where the preemptor goes then, when the search
    knows it (node by node), else None (the capacity simulation's place)."""
    candidates = [u for u in pool.units if (u.queue == pre.queue or u.foreign)
                  and u.priority < pre.priority]
    allowed = victims.within_budget(pool)
    if onnode.wanted(s, pre):
        choice = onnode.select(s, pre, candidates, allowed=allowed,
                               violates=lambda unit: unit.violates(s))
        if choice is None:
            return None, None
        node, chosen = choice
        return chosen, {node: pre.total}
    found = victims.select(s, pre, candidates, now, allowed=allowed)
    if not found:
        return found, None
    room = onnode.placed_with(s, pre, found)
    if room is not None:
        return found, room
    wider = onnode.widened(s, pre, found, candidates, allowed)
    if wider is None:
        return None, None  # capacity alone would evict for work that still does not fit
    return wider


def within_gang(s: Session, pre: Preemptor, pool: Pool, now: float) -> list[Unit] | None:
    """Lower-priority members of the pending pod's own started gang, above minMember once
    the pod has joined its group. None when ``pre`` is not such a pod or nothing helps."""
    ps = pre.pod
    if ps is None or not pre.gangs:
        return None
    gang = next(iter(pre.gangs))
    on_app = gang.startswith(Kind.APP.value)
    group = (ps.pod.task_group or "") if on_app else str(ps.pod.pod_group)
    if ps.pod.app is not None and gang != app_key(ps.pod.app):
        return None
    candidates = [u for u in pool.units if u.tier is Tier.POD and u.gang == gang
                  and u.priority < pre.priority]
    if not candidates:
        return None
    allowed = victims.within_budget(pool, {(gang, group): 1})
    chosen = victims.select(s, pre, candidates, now, allowed=allowed, own_gang=True)
    return chosen if chosen and onnode.placed_with(s, pre, chosen) is not None else None
