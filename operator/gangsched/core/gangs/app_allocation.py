"""Allocation for applications: which apps have work, the state-aware gate, and the order.

Each cycle, every application with a pending pod (and every Accepted gang, which may
have placeholders to create) becomes one *unit*; the scheduler sorts the units of each
queue by the queue's policy and calls :func:`schedule_app` on each in turn:

* ``New``/``Completed``: its pods wait, and say why (the queue is missing, the queue is
  at ``maxApplications``...). ``Killed``/``Rejected``: its pods are never scheduled.
* a ``stateaware`` queue lets one *starting* application at a time get allocations
  (:class:`StateAwareGate`); running applications are never held back.
* an Accepted gang reserves (:mod:`~gangsched.core.gangs.reservation`); only once every
  placeholder is allocated are its real pods placed (:mod:`~gangsched.core.gangs.swap`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import gangsched.core.gangs.best_effort as backfill_logic
import gangsched.core.gangs.ordinary as ordinary_logic
from gangsched.core.gangs import reservation, swap
from gangsched.core.gangs.apps import NOT_SCHEDULABLE, real_allocated
from gangsched.core.gangs.reservation import ref
from gangsched.core.state.records import AppRuntime, PodState, in_order
from gangsched.core.values import naming
from gangsched.core.values.decisions import BlockingReason, EventType
from gangsched.core.values.model import AppKey, SortPolicy
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


@dataclass(slots=True)
class AppUnit:
    rt: AppRuntime
    pending: list[PodState] = field(default_factory=list)


def units(s: Session, now: float) -> list[tuple[str, tuple[object, ...], object]]:
    """The apps with work this cycle, and what to say to pods of missing apps."""
    by_app: dict[AppKey, AppUnit] = {}
    backfill = backfill_logic.enabled(s)
    requestless = s.pending_shapes.requestless  # only these may be best-effort
    for uid in s.pending_shapes.of_apps:
        ps = s.pods[uid]
        key = ps.pod.app
        if key is None:
            continue  # (not kept among these)
        if backfill and uid in requestless and backfill_logic.is_best_effort(s, ps):
            continue  # the backfill action's
        if ps.pod.invalid:  # never scheduled, and no part of its app's work
            s.mark_pending(ps, "InvalidPod", ps.pod.invalid)
            continue
        rt = s.apps.get(key)
        if rt is None:
            s.mark_pending(ps, "ApplicationNotFound",
                           f"application {key} does not exist yet; waiting for it")
            continue
        unit = by_app.get(key)
        if unit is None:
            unit = by_app[key] = AppUnit(rt)
        unit.pending.append(ps)
    for rt in s.app_index.members("accepted_gang"):
        if rt.spec.key not in by_app:
            by_app[rt.spec.key] = AppUnit(rt)
    result: list[tuple[str, tuple[object, ...], object]] = []
    for key, unit in by_app.items():
        spec = unit.rt.spec
        unit.pending = in_order(unit.rt, unit.pending)
        order = ordinary_logic.sort_key(s, spec.queue, spec.priority, spec.creation, key)
        result.append((spec.queue, order, unit))
    return result


def starting(rt: AppRuntime, with_work: Collection[AppKey] | None = None) -> bool:
    """Is the app in a starting state, as state-aware scheduling counts them?

    ``Starting`` apps count. A gang counts from admission until its reservation is
    complete. A non-gang Accepted app counts only while it asks for something (it is in
    ``with_work``, when given): one with no pods yet does not hold the queue back.
    """
    if rt.state is AppState.STARTING:
        return True
    if rt.state is not AppState.ACCEPTED:
        return False
    if rt.spec.gang:
        return rt.admitted and not rt.reserved
    return with_work is None or rt.spec.key in with_work


class StateAwareGate:
    """In a ``stateaware`` queue, one starting app at a time gets allocations.

    An app leaves the starting state as soon as it progresses (its gang is reserved, or
    it gets a further allocation, or it has nothing left to ask for), so start-up is not
    serialised to one app per timeout. An app starting for longer than the queue's
    ``stateAwareTimeoutSeconds`` stops holding the others back.
    """

    def __init__(
        self,
        s: Session,
        queue: str,
        now: float,
        with_work: Collection[AppKey] | None = None,
    ) -> None:
        spec = s.queues.spec(queue)
        self.active = spec is not None and spec.sort_policy is SortPolicy.STATE_AWARE
        self.timeout = spec.state_aware_timeout if spec is not None else 0.0
        self.session = s
        self.holder: AppKey | None = None
        if not self.active:
            return
        ordered = sorted(
            (rt for rt in s.apps.values()
             if rt.spec.queue == queue and starting(rt, with_work)),
            key=lambda rt: (rt.spec.creation, naming.natural_key(rt.spec.key)),
        )
        for rt in ordered:
            if not self._expired(rt):
                self.holder = rt.spec.key
                break

    def _expired(self, rt: AppRuntime) -> bool:
        since = rt.starting_since
        return since is not None and self.session.reached(since + self.timeout)

    def allows(self, rt: AppRuntime) -> bool:
        """May ``rt`` get allocations (or be admitted) now?"""
        if not self.active or rt.state in (AppState.RUNNING, AppState.WAITING,
                                           AppState.RESUMING):
            return True
        if rt.spec.gang and rt.state is AppState.ACCEPTED and rt.reserved:
            return True
        if self._expired(rt):
            return True
        if self.holder is None:
            self.holder = rt.spec.key
        return self.holder == rt.spec.key


def schedule_app(s: Session, unit: AppUnit, gate: StateAwareGate, now: float) -> None:
    rt = unit.rt
    spec = rt.spec
    reals = [p for p in unit.pending if not p.pod.placeholder]
    check_sizes(s, rt, reals)
    held = still_held(s, rt, gate, unit.pending)
    if held is not None and held == rt.held:
        return  # as it was when its pods last said they wait for the gang
    if rt.state in (AppState.NEW, AppState.COMPLETED):
        for ps in reals:
            s.mark_pending(ps, rt.reason, rt.message or "the application is not accepted yet")
        return
    if rt.state in NOT_SCHEDULABLE:
        for ps in reals:
            s.mark_pending(ps, NOT_SCHEDULABLE[rt.state], rt.message)
        return
    if not gate.allows(rt):
        message = (f"queue {spec.queue} starts one application at a time; "
                   f"waiting for {gate.holder}")
        for group in spec.task_groups:
            rt.blocking[group.name] = BlockingReason(
                "StateAwareGate", message, {"startingApplication": str(gate.holder)})
        rt.dirty = True
        for ps in reals:
            s.mark_pending(ps, "StateAwareGate", message)
        return
    placeholders = [p for p in unit.pending if p.pod.placeholder]
    if spec.gang and rt.state is AppState.ACCEPTED:
        bound = reservation.reserve(s, rt, placeholders, now)
        for _ in range(bound):
            real_allocated(s, rt)
        if not rt.reserved:
            _waiting_for_gang(s, rt, reals, now)
            rt.held = still_held(s, rt, gate, unit.pending)
            return
    elif placeholders and rt.state is not AppState.RESUMING and not rt.placeholders_expired:
        # A placeholder whose bind failed after the gang was reserved: hold its place again.
        reservation.place_pending(s, rt, placeholders, now)
    free = swap.FreePlaceholders(s, rt)
    for ps in reals:
        if ps.pending:
            swap.place_real(s, rt, ps, free, now)


def still_held(s: Session, rt: AppRuntime, gate: StateAwareGate,
               pending: list[PodState]) -> tuple[object, ...] | None:
    """What a visit of a gang that ``enqueue`` holds reads, when it has no placeholder,
    no backoff and no stateaware gate: all the visit does is say that its pods wait for
    the gang. While this stands (its spec, its members, the plans of evictions, what its
    pods were last told), a visit would say it again, to the same effect: nothing.
    None for any other gang."""
    if (not rt.spec.gang or rt.state is not AppState.ACCEPTED or rt.admitted or rt.assumed
            or gate.active or "enqueue" not in s.config.actions
            or any(p.pod.placeholder for p in pending) or not s.reached(rt.retry_after)):
        return None
    return (rt.spec, rt.members_version, s.evictions.version,
            tuple(p.pending_reason for p in pending))


def _waiting_for_gang(s: Session, rt: AppRuntime, reals: list[PodState], now: float) -> None:
    """Say why the real members of a gang that is not reserved yet wait. The message does
    not change as the reservation grows (the Application's status counts it), so a pod's
    condition is written once, not once per member reserved. The pods get no event each:
    one ``WaitingForGang`` event on the Application says it for those newly waiting."""
    newly = 0
    for ps in reals:
        if not s.reached(rt.retry_after):
            s.mark_pending(ps, "DeadlockBackoff", rt.message)
            continue
        before = ps.pending_reason
        if ps.uid in rt.assumed:
            message = (f"held on node {ps.node} until every task group of the gang has its "
                       "minMember")
        else:
            message = "waiting until every task group of the gang has its minMember"
        changed = s.mark_pending(ps, "WaitingForGang", message, event=False)
        newly += changed and (before is None or before[0] != "WaitingForGang")
    if newly:
        s.event(ref(rt), EventType.NORMAL, "WaitingForGang",
                f"{newly} pods wait until every task group of the gang has its minMember "
                "(reserved so far: see status.reserved)")


def check_sizes(s: Session, rt: AppRuntime, reals: list[PodState]) -> None:
    """Report, once, a real pod larger than its task group's minResource, or in no group."""
    for ps in reals:
        if ps.uid in rt.warned:
            continue
        rt.warned.add(ps.uid)
        group = rt.spec.group(ps.pod.task_group)
        if rt.spec.gang and group is None:
            s.event(ref(rt), EventType.WARNING, "UnknownTaskGroup",
                    f"pod {ps.pod.ref} names task group {ps.pod.task_group!r}, which the "
                    "application does not define; it is scheduled without a placeholder")
        elif group is not None and not ps.pod.requests.fits_in(group.min_resource):
            excess = ps.pod.requests.shortfall(group.min_resource)
            s.event(ref(rt), EventType.WARNING, "PodLargerThanTaskGroup",
                    f"pod {ps.pod.ref} requests {ps.pod.requests.format_short()}, more than "
                    f"task group {group.name}'s minResource {group.min_resource.format_short()}"
                    f" (by {excess.format_short()}); it may not fit in its placeholder's place")


def _reservation(s: Session, rt: AppRuntime) -> tuple[int, int]:
    total = sum(g.min_member for g in rt.spec.task_groups)
    allocated = 0
    for uid in rt.placeholders.values():
        ps = s.pods.get(uid)
        if ps is not None and ps.node is not None:
            allocated += 1
    return allocated, total
