"""Applications: observation, admission, timeouts and state progress.

The gang flow (YuniKorn's design, ``gang-scheduling-design.txt``):

1. ``New`` -> ``Accepted`` once the queue exists, is a leaf, is not ``fair``, and the
   whole placeholder ask is within every level's ``max``; otherwise ``Rejected`` (or
   ``New`` with ``QueueNotFound`` while the queue is missing: it is picked up when the
   queue appears).
2. An Accepted gang is *admitted* when its whole ask fits the queue's headroom (and, in a
   ``stateaware`` queue, no other app is starting). Until then it is held, with no
   placeholders, without blocking anything else. Admission earmarks the ask
   (:mod:`~gangsched.core.gangs.reservation`).
3. Admitted: one placeholder pod per member is created (deterministic names) and each
   is allocated like any pod. The placeholder timer starts at the first allocation.
4. Reserved (every placeholder allocated): a real pod of task group G takes an allocated
   placeholder of G (:mod:`~gangsched.core.gangs.swap`). Real pods never bind before that.
5. Timeouts: placeholder timeout before the gang starts -> Hard: ``Killed``, Soft:
   ``Resuming`` (real pods then schedule as ordinary pods); after it started, the unused
   placeholders are released. Waiting timeout -> ``Completed``, leftovers released.

Releasing placeholders, and those no longer wanted, is :mod:`~gangsched.core.gangs.placeholders`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.placeholders as ph
from gangsched.core.gangs.reservation import expected_placeholders, gang_ask, members, ref, unassume
from gangsched.core.state.records import AppRuntime, PodState
from gangsched.core.values.decisions import BlockingReason, DeleteReason, EventType, RecordEvent
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    PersistedAppStatus,
    QueueSpec,
    SortPolicy,
    Style,
)
from gangsched.core.values.observations import PlaceholderCreateFailed
from gangsched.core.values.states import AppEvent, AppState, transition

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

NOT_SCHEDULABLE = {
    AppState.KILLED: "ApplicationKilled",
    AppState.REJECTED: "ApplicationRejected",
}


ROUTINE_MOVES = frozenset({"Accepted", "Starting", "Running"})
"""Reasons of the moves of a gang getting under way: those of one cycle make one event."""


def move(s: Session, rt: AppRuntime, event: AppEvent, reason: str, message: str = "") -> None:
    """Apply a state-machine event and record it as an event on the Application; routine
    moves in one cycle make one event (reason: the last move's)."""
    old = rt.state
    rt.state = transition(old, event)
    rt.reason, rt.message = reason, message
    rt.state_since = s.now
    rt.dirty = True
    s.queues_dirty = True
    if rt.state in (AppState.RUNNING, AppState.COMPLETED, AppState.KILLED, AppState.REJECTED):
        rt.starting_since = None
    if rt.state is not AppState.WAITING:
        rt.waiting_since = None
    if rt.state.terminal or rt.state is AppState.RESUMING:
        rt.blocking.clear()  # the gang no longer waits for placeholders
    warn = rt.state in (AppState.KILLED, AppState.REJECTED)
    chain = [old.value, rt.state.value]
    notes = [message] if message else []
    target = ref(rt)
    last = rt.last_move
    index = len(s.out)
    if (last is not None and last[0] == s.cycles and last[1] < len(s.out)
            and reason in ROUTINE_MOVES):
        earlier = s.out[last[1]]
        if (isinstance(earlier, RecordEvent) and earlier.target == target
                and earlier.reason in ROUTINE_MOVES):
            # Moved again in this cycle (New -> Accepted -> Starting -> Running, as a gang
            # whose pods all exist is reserved and bound at once): one event, in the
            # first one's place, says all of it.
            _, index, chain_before, notes_before, warn_before = last
            chain = [*chain_before, rt.state.value]
            notes = [*notes_before, *notes]
            warn = warn or warn_before
    text = " -> ".join(chain) + (f": {'; '.join(notes)}" if notes else "")
    record = RecordEvent(target, EventType.WARNING if warn else EventType.NORMAL, reason, text)
    rt.last_move = (s.cycles, index, chain, notes, warn)
    if index == len(s.out):
        s.out.append(record)
    else:
        s.out.rewrite(index, record)


# --- observations -----------------------------------------------------------------------


def app_observed(s: Session, spec: AppSpec) -> None:
    """A new or changed Application. A changed uid is a new application under that name."""
    rt = s.apps.get(spec.key)
    if rt is not None and rt.spec.uid != spec.uid:
        _forget(s, rt, DeleteReason.APP_GONE, "application was re-created")
        rt = None
    if rt is None:
        rt = AppRuntime(spec=spec, state_since=s.now)
        _restore(rt, spec.persisted)
        s.apps[spec.key] = rt
        rt.index = s.app_index
        s.app_index.add(spec.key, rt)
        found = s.app_members.get(spec.key, set())
        s.recharge(found)
        rt.unchecked = sorted(u for u in found if s.pods[u].pod.placeholder)
        return
    old, rt.spec = rt.spec, spec
    rt.dirty = True
    if old.queue != spec.queue:
        if rt.earmark:
            s.queues.unearmark(old.queue, rt.earmark)
            s.queues.earmark(spec.queue, rt.earmark)
        s.recharge(s.app_members.get(spec.key, set()))
    if old.task_groups != spec.task_groups:
        rt.unchecked = [*rt.unchecked, *sorted(u for u in s.app_members.get(spec.key, ())
                                               if s.pods[u].pod.placeholder)]
    changed = (old.queue, old.task_groups, old.policy, old.invalid) != (
        spec.queue,
        spec.task_groups,
        spec.policy,
        spec.invalid,
    )
    if changed and rt.state is AppState.REJECTED:
        move(s, rt, AppEvent.RESUBMIT, "SpecChanged", "the spec changed; checking it again")
        rt.reset_run()


def _restore(rt: AppRuntime, persisted: PersistedAppStatus | None) -> None:
    """Take back the lifecycle state and timers a previous run wrote into the status.

    A missing status, or an unknown state name, starts the application afresh (``New``).
    """
    if persisted is None or not persisted.state:
        return
    try:
        rt.state = AppState.from_string(persisted.state)
    except ValueError:
        return
    rt.reason, rt.message = persisted.reason or rt.state.value, persisted.message
    if persisted.state_since is not None:
        rt.state_since = persisted.state_since
    rt.timer_start = persisted.placeholder_timer_start
    rt.waiting_since = persisted.waiting_since
    rt.starting_since = persisted.starting_since
    if persisted.reservation_expiry is not None:
        rt.restored_reservation = (persisted.reservation_expiry, persisted.reserved_nodes)


def app_gone(s: Session, key: AppKey) -> None:
    rt = s.apps.get(key)
    if rt is not None:
        _forget(s, rt, DeleteReason.APP_GONE, "application was deleted")


def _forget(s: Session, rt: AppRuntime, reason: DeleteReason, message: str) -> None:
    ph.release_all(s, rt, reason, message)
    ph.drop_earmark(s, rt)
    del s.apps[rt.spec.key]
    s.app_index.remove(rt.spec.key)
    found = s.app_members.get(rt.spec.key, set())
    for uid in found:
        s.pods[uid].pending_reason = None
    s.recharge(found)
    s.queues_dirty = True


def placeholder_create_failed(s: Session, obs: PlaceholderCreateFailed) -> None:
    """Say why a placeholder is missing: an Event, and its task group's blocking reason
    (until one of the group's placeholders is allocated). It is asked for again after
    ``placeholder_retry`` seconds."""
    rt = s.apps.get(obs.app)
    if rt is None:
        return
    failure = f"creating placeholder {obs.name} failed ({obs.code}): {obs.message}"
    s.event(ref(rt), EventType.WARNING, "PlaceholderCreateFailed",
            f"{failure}; retrying in {s.config.placeholder_retry:g}s")
    for name, group, _ in expected_placeholders(rt):
        if name == obs.name:
            rt.blocking[group] = BlockingReason("PlaceholderCreateFailed", failure, {
                "placeholder": obs.name, "code": str(obs.code)})
            rt.dirty = True
            break


def placeholder_observed(s: Session, ps: PodState) -> None:
    """A placeholder pod is seen for the first time: check next cycle it is still wanted."""
    if ps.pod.app is not None:
        rt = s.apps.get(ps.pod.app)
        if rt is not None:
            rt.unchecked.append(ps.uid)
            s.app_index.touch(rt.spec.key, rt)


def real_pod_confirmed(s: Session, ps: PodState) -> None:
    """A bind the core asked for is now seen on the pod."""
    if ps.pod.app is not None and not ps.pod.placeholder:
        rt = s.apps.get(ps.pod.app)
        if rt is not None:
            rt.dirty = True


def pod_gone(s: Session, ps: PodState) -> None:
    pod = ps.pod
    if pod.app is not None and not pod.placeholder:
        unassume(s, ps)
    if not pod.placeholder or pod.app is None:
        return
    rt = s.apps.get(pod.app)
    if rt is None:
        return
    rt.placeholders.pop(pod.name, None)
    if ps.release_reason is None:
        # Deleted by someone else: ask again at once if the gang still needs it.
        rt.create_asked.pop(pod.name, None)
    rt.dirty = True


# --- lifecycle (timers and admission) ---------------------------------------------------


def lifecycle(s: Session, now: float) -> None:
    """Admission, placeholder checks and timers, and resubmission, app by app in key
    order: those with something to do (``lifecycle`` in ``s.app_index``, and those whose
    placeholder timeout has come), not all. The earliest placeholder timeout still ahead
    is the instant asked about (those after it are asked about once it has come)."""
    due, _ = s.app_index.due("placeholder_timer", s.reached)
    for rt in s.app_index.walk("lifecycle", also=due):
        if rt.state is AppState.COMPLETED and rt.dirty and _has_pending_real(s, rt):
            move(s, rt, AppEvent.RESUBMIT, "Resubmitted", "new pods arrived for this application")
            rt.reset_run()
        if rt.state is AppState.NEW:
            _admit(s, rt, now)
        if rt.unchecked:
            ph.check_placeholders(s, rt)
            s.app_index.touch(rt.spec.key, rt)  # (its list emptied)
        _placeholder_timeout(s, rt, now)
        waited = rt.waiting_since
        if rt.state is AppState.WAITING and waited is not None:
            _complete_if_waited(s, rt, waited, now)
    ph.retry_deletes(s, now)


def _complete_if_waited(s: Session, rt: AppRuntime, since: float, now: float) -> None:
    timeout = rt.spec.policy.waiting_timeout
    if not s.reached(since + timeout):
        return
    left = ph.release_all(s, rt, DeleteReason.APP_COMPLETED, "application completed")
    ph.drop_earmark(s, rt)
    note = f"; released {left} unused placeholders" if left else ""
    move(s, rt, AppEvent.COMPLETE, "Completed", f"nothing ran for {timeout:g}s{note}")


def _has_pending_real(s: Session, rt: AppRuntime) -> bool:
    return any(
        uid in s.pending and not s.pods[uid].pod.placeholder and not s.pods[uid].pod.invalid
        for uid in s.app_members.get(rt.spec.key, ())
    )


def _admit(s: Session, rt: AppRuntime, now: float) -> None:
    spec = rt.spec
    if spec.invalid:
        move(s, rt, AppEvent.REJECT, "InvalidSpec", spec.invalid)
        return
    path = s.queues.path(spec.queue)
    if isinstance(path, str):
        if rt.reason != "QueueNotFound":
            rt.reason, rt.message, rt.dirty = "QueueNotFound", path + "; waiting for it", True
            s.event(ref(rt), EventType.WARNING, "QueueNotFound", rt.message)
        return
    queue = s.queues.spec(spec.queue)
    if queue is None:  # a resolved path starts at an existing queue
        return
    if not s.queues.is_leaf(spec.queue):
        move(s, rt, AppEvent.REJECT, "NotALeafQueue",
             f'queue "{spec.queue}" has child queues; applications go to leaf queues')
        return
    if spec.gang:
        if queue.sort_policy is SortPolicy.FAIR:
            move(s, rt, AppEvent.REJECT, "FairQueue",
                 f'queue "{spec.queue}" uses the fair policy, which cannot start one gang '
                 "at a time; use fifo, stateaware or priority")
            return
        ask = gang_ask(spec)
        over = s.queues.over_max(spec.queue, ask)
        if not over.ok:
            move(s, rt, AppEvent.REJECT, "QueueQuotaExceeded",
                 f"the gang needs {ask.format_short()}, more than queue {over.queue}'s "
                 f"max {over.max_text}")
            return
    full = _queue_full(s, path, rt)
    if full:
        if rt.reason != "MaxApplications":
            rt.reason, rt.message, rt.dirty = "MaxApplications", full, True
            s.event(ref(rt), EventType.NORMAL, "MaxApplications", full)
        return
    move(s, rt, AppEvent.ACCEPT, "Accepted", f"queue {spec.queue}")
    if not spec.gang:
        rt.starting_since = now


_LIVE = (AppState.ACCEPTED, AppState.STARTING, AppState.RUNNING, AppState.WAITING,
         AppState.RESUMING)


def _queue_full(s: Session, path: tuple[str, ...], rt: AppRuntime) -> str:
    for level in path:
        spec = s.queues.spec(level)
        if spec is None or spec.max_applications <= 0:
            continue
        count = sum(
            1 for other in s.apps.values()
            if other.state in _LIVE and level in _levels(s, other.spec.queue)
        )
        if count >= spec.max_applications:
            return f"queue {level} already runs {count} of at most {spec.max_applications} apps"
    return ""


def _levels(s: Session, queue: str) -> tuple[str, ...]:
    path = s.queues.path(queue)
    return path if isinstance(path, tuple) else ()


def _placeholder_timeout(s: Session, rt: AppRuntime, now: float) -> None:
    if rt.timer_start is None or rt.state.terminal:
        return
    timeout = rt.spec.policy.placeholder_timeout
    if not s.reached(rt.timer_start + timeout):
        return
    rt.timer_start = None
    rt.placeholders_expired = True
    placeholders, _ = members(s, rt)
    alive = [p for p in placeholders if p.release_reason is None and not p.pod.terminating]
    total = sum(g.min_member for g in rt.spec.task_groups)
    allocated = sum(1 for p in alive if p.node is not None) + len(rt.assumed)
    if rt.state is not AppState.ACCEPTED:
        if alive:
            count = ph.release_all(s, rt, DeleteReason.PLACEHOLDER_TIMEOUT,
                                         f"unused after {timeout:g}s")
            s.event(ref(rt), EventType.NORMAL, "PlaceholdersReleased",
                    f"released {count} unused placeholders after {timeout:g}s")
        return
    ph.release_all(s, rt, DeleteReason.PLACEHOLDER_TIMEOUT,
                         f"gang not started within {timeout:g}s")
    ph.drop_earmark(s, rt)
    rt.create_asked.clear()
    detail = f"{allocated}/{total} members reserved when the {timeout:g}s timeout expired"
    if rt.spec.policy.style is Style.HARD:
        move(s, rt, AppEvent.KILL, "PlaceholderTimeout",
             f"{detail}; Hard style: the application is killed and its pods will not be "
             "scheduled (delete or resubmit it)")
    else:
        move(s, rt, AppEvent.RESUME, "PlaceholderTimeout",
             f"{detail}; Soft style: real pods are scheduled as ordinary pods")


# --- progress ---------------------------------------------------------------------------


def real_allocated(s: Session, rt: AppRuntime) -> None:
    """A real pod of the app was bound or took a placeholder: the app is under way."""
    rt.bound_ever += 1
    rt.dirty = True
    if rt.state is AppState.ACCEPTED:
        move(s, rt, AppEvent.START, "Starting", "first real pod allocated")
    elif rt.state in (AppState.WAITING, AppState.RESUMING):
        move(s, rt, AppEvent.RUN, "Running", "real pods allocated")


def _starting_expired(s: Session, rt: AppRuntime, now: float) -> bool:
    """Has the app been starting for longer than its queue's state-aware timeout?"""
    if rt.state is not AppState.STARTING or rt.starting_since is None:
        return False
    queue = s.queues.spec(rt.spec.queue) or QueueSpec(rt.spec.queue)
    return s.reached(rt.starting_since + queue.state_aware_timeout)


def _stays_starting(s: Session, rt: AppRuntime) -> bool:
    """A non-gang app in a ``stateaware`` queue leaves Starting only by a second
    allocation or the timeout, even with nothing pending: a Spark driver asks for its
    executors only once it runs (``state-aware-batch-scheduling.txt``)."""
    queue = s.queues.spec(rt.spec.queue)
    return (not rt.spec.gang and queue is not None
            and queue.sort_policy is SortPolicy.STATE_AWARE)


def progress(s: Session, now: float) -> None:
    """Starting -> Running -> Waiting, and back, for apps whose pods changed.

    Starting -> Running on the second real allocation, on having nothing left to ask
    for (except non-gang apps in a ``stateaware`` queue), or once the queue's
    state-aware timeout has passed.
    """
    for rt in s.app_index.walk("progress"):  # dirty or Starting: the others do nothing
        key = rt.spec.key
        expired = _starting_expired(s, rt, now)
        if (not rt.dirty and not expired) or rt.state.terminal or rt.state is AppState.NEW:
            continue
        if rt.state is AppState.ACCEPTED and not (rt.reserved or not rt.spec.gang):
            continue
        active = pending = 0
        for uid in s.app_members.get(key, ()):
            ps = s.pods[uid]
            if ps.pod.placeholder:
                continue
            if ps.node is not None and ps.pod.active:
                active += 1
            elif (uid in s.pending and not ps.pod.invalid) or ps.parked_on is not None:
                pending += 1
        rt.bound_ever = max(rt.bound_ever, active)
        if rt.state is AppState.ACCEPTED:
            if not active:
                continue
            # Real pods run, yet the app never left Accepted: a restart lost its status.
            move(s, rt, AppEvent.START, "Starting", "real pods found running")
        if rt.state is AppState.STARTING and (
            rt.bound_ever >= 2 or expired or (pending == 0 and not _stays_starting(s, rt))
        ):
            note = "" if rt.bound_ever >= 2 or not expired else " (starting timeout)"
            move(s, rt, AppEvent.RUN, "Running",
                 ("gang started" if rt.spec.gang else "application started") + note)
        if rt.state in (AppState.STARTING, AppState.RUNNING, AppState.RESUMING):
            if active == 0 and pending == 0:
                move(s, rt, AppEvent.WAIT, "Waiting", "no pods running or pending")
                rt.waiting_since = now
        elif rt.state is AppState.WAITING and (active or pending):
            move(s, rt, AppEvent.RUN, "Running", "pods running again")
