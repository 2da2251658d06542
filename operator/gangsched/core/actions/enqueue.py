"""The ``enqueue`` action: a gang enters scheduling only once its minimum fits.

As Volcano's enqueue (``scheduler-actions.zh.txt``): when a gang's minimum cannot be met,
scheduling its pods only fills the cluster with pods that wait for the rest of their gang.
So a gang is *held* until its minimum fits both

* its queue's headroom, at every level up to the root: quota minus usage minus what the
  gangs enqueued before it still need (their *earmarks*); and
* the cluster's free capacity for new gangs: the allocatable of ready, schedulable nodes
  times ``SchedulerConfig.overcommit_factor``, minus what is used, minus what every
  enqueued gang still needs. Nodes reserved for a starving gang (``reserve``) count as
  used for every other gang; the starving gang itself skips this check, its nodes are
  its capacity, and so does a gang that preemption or reclaim holds room for.

The minimum of an Application is the sum over its task groups of ``minMember`` x
(``minResource`` + one pod slot), less what running members already hold; of a PodGroup,
its ``minResources`` plus one pod slot per ``minMember`` (a GangGroup enters as one).

Held, an Application stays ``Accepted`` with no placeholders, and each task group's
``blockingReason`` says why (``QueueQuota`` with the numbers, or ``Capacity`` with what
the gang needs and the resources short of it, see :func:`capacity_reason`); a PodGroup
stays ``Pending`` with reason ``NotEnqueued`` and its ``blockingReason``, and no member is
assumed. Cluster autoscalers scale up for pods with ``PodScheduled=False`` reason
``Unschedulable``: a held PodGroup's pending members are marked so, with the gang's
reason; a held Application's placeholders are created anyway and left pending, so marked,
when ``SchedulerConfig.demand_placeholders`` is on and it is held for capacity (more
nodes cannot lift a quota). Passing, the
Application is *admitted* (its placeholders are created in the same cycle) and the
PodGroup becomes ``Inqueue``; either earmarks what it still needs in its queue until it
holds it. A held gang blocks nothing: a later gang that fits passes (a starving gang is
what ``elect`` and ``reserve`` are for).

Gangs are considered queue by queue (by name), each queue in its sort order, as
``allocate`` does; a ``stateaware`` queue admits one starting application at a time.
A deadlock victim (:mod:`~gangsched.core.preemption.deadlock`) is not enqueued again before its
backoff ends. Without ``enqueue`` among the actions, scheduling works as it did before
the action existed: an Application is admitted (and earmarks) once its ask fits its
queue's headroom, whatever the cluster's capacity, and a PodGroup is Inqueue at once and
earmarks nothing.

Cost: O(applications + PodGroups + nodes) per cycle with a held gang; nothing otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import gangsched.core.gangs.ordinary as ordinary_logic
import gangsched.core.gangs.podgroups as group_logic
from gangsched.core.gangs import earmarks, group_devices, reservation
from gangsched.core.gangs.app_allocation import StateAwareGate
from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState
from gangsched.core.values.decisions import BlockingReason
from gangsched.core.values.model import AppKey, GroupKey, SortPolicy
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

NAME = earmarks.ENQUEUE
NOT_ENQUEUED = "NotEnqueued"
"""The reason of a PodGroup held ``Pending`` by enqueue (its message says why)."""


def _scaled(amount: Resources, factor: float) -> Resources:
    if factor == 1.0:
        return amount
    return Resources({name: int(value * factor) for name, value in amount.items()})


@dataclass(slots=True)
class Budget:
    """The cluster capacity left for gangs entering scheduling in this cycle."""

    left: Resources
    factor: float

    @classmethod
    def of(cls, s: Session) -> Budget:
        total, free = s.cluster.free_capacity()
        committed = Resources.ZERO
        for app in s.apps.values():
            committed = committed + app.earmark
        for group in s.groups.values():
            committed = committed + group.earmark
        factor = s.config.overcommit_factor
        left = free + _scaled(total, factor) - total - committed
        return cls(left, factor)

    def blocking(self, needed: Resources) -> BlockingReason | None:
        """None when ``needed`` fits what is left; else why not: what the gang needs and
        which resources fall short, not how much is left (see :func:`capacity_reason`)."""
        if needed.fits_in(self.left):
            return None
        return capacity_reason(needed, needed.shortfall(self.left.clamp_non_negative()),
                               self.factor)

    def take(self, amount: Resources) -> None:
        self.left = self.left - amount


def capacity_reason(needed: Resources, short: Resources, factor: float) -> BlockingReason:
    """Why a gang is held for the cluster's capacity: what it needs and the names of the
    resources short of it.

    How much is left, and how much the enqueued gangs still need, move with every bind
    and every pod that ends. Quoted here they would reword every held gang's status, and
    its pending members' conditions, whenever anything starts or ends: a write per held
    gang to the API server for each change of capacity, however deep the backlog. What
    the gang needs and which resources are short change only with the gang or a real
    change of the cluster's shape. The numbers behind them are the Queues' (allocated,
    pending) and the nodes'."""
    names = ", ".join(sorted(name for name, _ in short.items()))
    key = (needed, names, factor)
    found = _REASONS.get(key)
    if found is not None:
        return found
    if len(_REASONS) >= 4096:
        _REASONS.clear()
    found = _REASONS[key] = _capacity_reason(needed, names, factor)
    return found


_REASONS: dict[tuple[Resources, str, float], BlockingReason] = {}
"""Capacity reasons already worded: every held gang is asked each cycle, and most ask
the same as others."""


def _capacity_reason(needed: Resources, names: str, factor: float) -> BlockingReason:
    over = f" x {factor:g}" if factor != 1.0 else ""
    message = (f"the cluster's capacity left for new gangs (allocatable{over} - used - what "
               f"enqueued gangs still need) is short of {names}; the gang needs "
               f"{needed.format_short()}")
    return BlockingReason("Capacity", message, {
        "needed": needed.format_short(),
        "short": names,
        "overcommitFactor": f"{factor:g}",
    })


def elected(s: Session) -> frozenset[str]:
    """The keys of the starving gang that nodes are reserved for (it skips the capacity
    check: those nodes are its capacity)."""
    held = s.node_reservation
    return held.owners if held is not None else frozenset()


def enqueue(s: Session, now: float) -> None:
    """Admit the held gangs whose minimum fits (see the module docstring)."""
    apps = [rt for rt in s.app_index.members("accepted_gang") if not rt.admitted]
    groups = [rt for rt in s.group_index.members("unfinished") if _group_waits(rt)]
    if not apps and not groups:
        return
    units: list[tuple[str, tuple[object, ...], AppRuntime | list[GroupRuntime]]] = []
    for rt in apps:
        spec = rt.spec
        order = ordinary_logic.sort_key(s, spec.queue, spec.priority, spec.creation, spec.key)
        units.append((spec.queue, order, rt))
    seen: set[GroupKey] = set()
    for grt in sorted(groups, key=lambda g: g.spec.key):
        if grt.spec.key in seen:
            continue
        gang = group_logic.gang_of(s, grt.spec.key)
        if isinstance(gang, str):
            continue  # a GangGroup member is missing: allocate says so
        seen.update(g.spec.key for g in gang)
        waiting = [g for g in gang if _group_waits(g)]
        first = min(waiting, key=lambda g: ordinary_logic.sort_key(
            s, g.spec.queue, g.spec.priority, g.spec.creation, g.spec.key))
        spec_ = first.spec
        order = ordinary_logic.sort_key(s, spec_.queue, spec_.priority, spec_.creation,
                                        spec_.key)
        units.append((spec_.queue, order, waiting))
    units.sort(key=lambda unit: (unit[0], unit[1]))
    budget = Budget.of(s)
    gates: dict[str, StateAwareGate] = {}
    favoured = elected(s) | s.evictions.owners()  # room held for them: theirs
    for queue, _, unit in units:
        if isinstance(unit, AppRuntime):
            _enqueue_app(s, unit, budget, _gate(s, gates, queue, now), favoured, now)
        else:
            _enqueue_groups(s, unit, budget, favoured, now)


def _group_waits(rt: GroupRuntime) -> bool:
    return not (rt.inqueue or rt.satisfied or rt.timed_out or rt.spec.invalid)


def _gate(s: Session, gates: dict[str, StateAwareGate], queue: str,
          now: float) -> StateAwareGate | None:
    spec = s.queues.spec(queue)
    if spec is None or spec.sort_policy is not SortPolicy.STATE_AWARE:
        return None
    gate = gates.get(queue)
    if gate is None:
        with_work = {s.pods[uid].pod.app for uid in s.pending_shapes.of_apps}
        gate = gates[queue] = StateAwareGate(s, queue, now, _keys(with_work))
    return gate


def _keys(found: set[AppKey | None]) -> set[AppKey]:
    return {key for key in found if key is not None}


def _enqueue_app(s: Session, rt: AppRuntime, budget: Budget, gate: StateAwareGate | None,
                 favoured: frozenset[str], now: float) -> None:
    if not s.reached(rt.retry_after):
        return
    holder = gate.holder if gate is not None else None
    if gate is not None and not gate.allows(rt):
        return
    if gate is not None and not _admit_app(s, rt, budget, favoured):
        gate.holder = holder  # a held gang does not hold its stateaware queue
        return
    if gate is None:
        _admit_app(s, rt, budget, favoured)


def _admit_app(s: Session, rt: AppRuntime, budget: Budget, favoured: frozenset[str]) -> bool:
    """Admit the app if its minimum fits; else hold it, saying why. True if admitted."""
    spec = rt.spec
    if isinstance(s.queues.path(spec.queue), str):
        return False  # the queue went away: allocate says so
    placeholders, reals = reservation.members(s, rt)
    observed = {p.pod.name: p for p in placeholders
                if p.release_reason is None and not p.pod.terminating}
    remaining = _remaining(rt, observed, reals)
    if not reservation.found_admitted(s, observed):
        # (a gang found admitted before a restart holds its place already)
        if not reservation.quota_allows(s, rt, remaining) or not group_devices.allows(s, rt):
            return False
        blocking = None if spec.key in favoured else budget.blocking(remaining)
        if blocking is not None:
            if s.config.demand_placeholders:
                reservation.show_demand(s, rt, blocking, s.now)
            else:
                reservation.hold(s, rt, blocking)
            return False
    reservation.admit(s, rt, remaining)
    budget.take(remaining)
    return True


def _remaining(rt: AppRuntime, observed: dict[str, PodState],
               reals: list[PodState]) -> Resources:
    """What the gang still needs (``reservation.remaining_ask``). With no placeholder it
    is counted from the real members alone, so again only when one or the spec changed:
    a held gang is asked every cycle."""
    spec = rt.spec
    if observed:
        return reservation.remaining_ask(spec, observed, reservation.taken(reals))
    kept = rt.need
    if kept is None or kept[0] is not spec or kept[1] != rt.members_version:
        kept = rt.need = (spec, rt.members_version,
                          reservation.remaining_ask(spec, observed, reservation.taken(reals)))
    return kept[2]


def _enqueue_groups(s: Session, gang: list[GroupRuntime], budget: Budget,
                    favoured: frozenset[str], now: float) -> None:
    if any(not s.reached(g.retry_after) for g in gang):
        return
    needed = Resources.ZERO
    earmarked: list[tuple[GroupRuntime, Resources]] = []
    blocking: BlockingReason | None = None
    for g in gang:
        spec = g.spec
        if not s.queues.over_max(spec.queue, spec.min_resources).ok:
            blocking = BlockingReason()  # allocate reports the quota it can never fit
            break
        minimum = earmarks.group_minimum(spec)
        check = s.queues.fits(spec.queue, minimum)
        if not check.ok:
            blocking = BlockingReason("QueueQuota", check.describe(minimum, "the gang"), {
                "queue": check.queue,
                "needed": minimum.format_short(),
                "headroom": check.headroom.format_short(),
                "max": check.max_text,
            })
            break
        s.queues.earmark(spec.queue, minimum)  # the next member of the gang sees it
        earmarked.append((g, minimum))
        needed = needed + minimum
    for g, minimum in earmarked:
        s.queues.unearmark(g.spec.queue, minimum)
    if blocking is None and not any(g.spec.key in favoured for g in gang):
        blocking = budget.blocking(needed)
    if blocking is not None:
        if blocking.reason != "None":
            for g in gang:
                if g.blocking != blocking:
                    g.blocking = blocking
                    g.dirty = True
                if g.reason in ("", NOT_ENQUEUED, "DeadlockVictim"):  # its backoff is over
                    g.reason, g.message = NOT_ENQUEUED, blocking.message
        return
    for g in gang:
        g.inqueue = True
        if g.reason in (NOT_ENQUEUED, "DeadlockVictim"):
            g.reason = g.message = ""
        g.blocking = BlockingReason()
        g.failed_epoch = -1
        g.dirty = True
        earmarks.update_group_earmark(s, g)
    budget.take(needed)
