"""Applications: admission, placeholders, the swap, timeouts and state progress.

The gang flow (YuniKorn's design, ``gang-scheduling-design.txt``):

1. ``New`` -> ``Accepted`` once the queue exists, is a leaf, is not ``fair``, and the
   whole placeholder ask is within every level's ``max``; otherwise ``Rejected`` (or
   ``New`` with ``QueueNotFound`` while the queue is missing: it is picked up when the
   queue appears).
2. An Accepted gang is *admitted* when its whole ask fits the queue's headroom (and, in a
   ``stateaware`` queue, no other app is starting). Until then it is held, with no
   placeholders, without blocking anything else. Admission earmarks the ask.
3. Admitted: one placeholder pod per member is created (deterministic names) and each
   is allocated like any pod. The placeholder timer starts at the first allocation.
4. Reserved (every placeholder allocated): a real pod of task group G takes an allocated
   placeholder of G: the placeholder is deleted ("replaced by pod X") and X is parked
   until the deletion is observed, then bound to the placeholder's node (or any node
   that fits). Real pods never bind before the reservation.
5. Timeouts: placeholder timeout before the gang starts -> Hard: ``Killed``, Soft:
   ``Resuming`` (real pods then schedule as ordinary pods); after it started, the unused
   placeholders are released. Waiting timeout -> ``Completed``, leftovers released.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core import reservation
from gangsched.core.decisions import (
    BlockingReason,
    DeletePod,
    DeleteReason,
    EventType,
    ObjectRef,
)
from gangsched.core.model import AppKey, AppSpec, PersistedAppStatus, SortPolicy, Style
from gangsched.core.observations import PlaceholderCreateFailed
from gangsched.core.reservation import gang_ask, members, ref
from gangsched.core.resources import Resources
from gangsched.core.runtime import AppRuntime, PodState
from gangsched.core.states import AppEvent, AppState, transition

if TYPE_CHECKING:
    from gangsched.core.scheduler import Scheduler

NOT_SCHEDULABLE = {
    AppState.KILLED: "ApplicationKilled",
    AppState.REJECTED: "ApplicationRejected",
}


def move(s: Scheduler, rt: AppRuntime, event: AppEvent, reason: str, message: str = "") -> None:
    """Apply a state-machine event and record it as an event on the Application."""
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
    warn = rt.state in (AppState.KILLED, AppState.REJECTED)
    text = f"{old.value} -> {rt.state.value}" + (f": {message}" if message else "")
    s.event(ref(rt), EventType.WARNING if warn else EventType.NORMAL, reason, text)


# --- observations -----------------------------------------------------------------------


def app_observed(s: Scheduler, spec: AppSpec) -> None:
    rt = s.apps.get(spec.key)
    if rt is not None and rt.spec.uid != spec.uid:
        _forget(s, rt, DeleteReason.APP_GONE, "application was re-created")
        rt = None
    if rt is None:
        rt = AppRuntime(spec=spec, state_since=s.now)
        _restore(rt, spec.persisted)
        s.apps[spec.key] = rt
        s.rebuild_queue_usage()
        return
    old, rt.spec = rt.spec, spec
    rt.dirty = True
    if old.queue != spec.queue:
        s.rebuild_queue_usage()
    changed = (old.queue, old.task_groups, old.policy, old.invalid) != (
        spec.queue,
        spec.task_groups,
        spec.policy,
        spec.invalid,
    )
    if changed and rt.state is AppState.REJECTED:
        move(s, rt, AppEvent.RESUBMIT, "SpecChanged", "the spec changed; checking it again")


def _restore(rt: AppRuntime, persisted: PersistedAppStatus | None) -> None:
    """Take back the lifecycle state and timers a previous run wrote into the status."""
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


def app_gone(s: Scheduler, key: AppKey) -> None:
    rt = s.apps.get(key)
    if rt is not None:
        _forget(s, rt, DeleteReason.APP_GONE, "application was deleted")


def _forget(s: Scheduler, rt: AppRuntime, reason: DeleteReason, message: str) -> None:
    release_placeholders(s, rt, reason, message)
    _drop_earmark(s, rt)
    del s.apps[rt.spec.key]
    for uid in s.app_members.get(rt.spec.key, ()):
        s.pods[uid].pending_reason = None
    s.rebuild_queue_usage()


def placeholder_create_failed(s: Scheduler, obs: PlaceholderCreateFailed) -> None:
    rt = s.apps.get(obs.app)
    if rt is None:
        return
    s.event(
        ref(rt),
        EventType.WARNING,
        "PlaceholderCreateFailed",
        f"creating placeholder {obs.name} failed ({obs.code}): {obs.message}; "
        f"retrying in {s.config.placeholder_retry:g}s",
    )


def real_pod_confirmed(s: Scheduler, ps: PodState) -> None:
    """A bind the core asked for is now seen on the pod."""
    if ps.pod.app is not None and not ps.pod.placeholder:
        rt = s.apps.get(ps.pod.app)
        if rt is not None:
            rt.dirty = True


def pod_gone(s: Scheduler, ps: PodState) -> None:
    pod = ps.pod
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


# --- releasing --------------------------------------------------------------------------


def release_placeholders(
    s: Scheduler, rt: AppRuntime, reason: DeleteReason, message: str, *, unbound_only: bool = False
) -> int:
    """Ask for the deletion of every placeholder not yet released. Returns how many."""
    count = 0
    placeholders, _ = members(s, rt)
    for ps in placeholders:
        if ps.release_reason is not None or ps.pod.terminating:
            continue
        if unbound_only and ps.node is not None:
            continue
        ps.release_reason = reason.value
        ps.delete_asked = s.now
        if reason is not DeleteReason.PLACEHOLDER_REPLACED:
            rt.counter(ps.pod.task_group or "").released += 1
        pod = ps.pod
        s.out.append(DeletePod(pod.uid, pod.namespace, pod.name, reason, message))
        count += 1
    rt.dirty = True
    return count


def _drop_earmark(s: Scheduler, rt: AppRuntime) -> None:
    if rt.earmark:
        s.queues.unearmark(rt.spec.queue, rt.earmark)
        rt.earmark = Resources.ZERO
        s.queues_dirty = True


# --- lifecycle (timers and admission) ---------------------------------------------------


def lifecycle(s: Scheduler, now: float) -> None:
    for key in sorted(s.apps):
        rt = s.apps[key]
        if rt.state is AppState.COMPLETED and _has_pending_real(s, rt):
            move(s, rt, AppEvent.RESUBMIT, "Resubmitted", "new pods arrived for this application")
            rt.bound_ever, rt.timer_start, rt.counters = 0, None, {}
            rt.create_asked.clear()
        if rt.state is AppState.NEW:
            _admit(s, rt, now)
        _placeholder_timeout(s, rt, now)
        waited = rt.waiting_since
        if rt.state is AppState.WAITING and waited is not None:
            _complete_if_waited(s, rt, waited, now)
        _retry_deletes(s, rt, now)


def _complete_if_waited(s: Scheduler, rt: AppRuntime, since: float, now: float) -> None:
    timeout = rt.spec.policy.waiting_timeout
    if now < since + timeout:
        return
    left = release_placeholders(s, rt, DeleteReason.APP_COMPLETED, "application completed")
    _drop_earmark(s, rt)
    note = f"; released {left} unused placeholders" if left else ""
    move(s, rt, AppEvent.COMPLETE, "Completed", f"nothing ran for {timeout:g}s{note}")


def _has_pending_real(s: Scheduler, rt: AppRuntime) -> bool:
    return any(
        uid in s.pending and not s.pods[uid].pod.placeholder
        for uid in s.app_members.get(rt.spec.key, ())
    )


def _retry_deletes(s: Scheduler, rt: AppRuntime, now: float) -> None:
    placeholders, _ = members(s, rt) if rt.placeholders or rt.state.terminal else ([], [])
    for ps in placeholders:
        if ps.release_reason and now - ps.delete_asked >= s.config.placeholder_retry:
            ps.delete_asked = now
            pod = ps.pod
            s.out.append(
                DeletePod(pod.uid, pod.namespace, pod.name, DeleteReason(ps.release_reason),
                          "deletion asked for again")
            )


def _admit(s: Scheduler, rt: AppRuntime, now: float) -> None:
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
    assert queue is not None  # a resolved path starts at an existing queue
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
                 f"max {over.max.format_short()}")
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


def _queue_full(s: Scheduler, path: tuple[str, ...], rt: AppRuntime) -> str:
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


def _levels(s: Scheduler, queue: str) -> tuple[str, ...]:
    path = s.queues.path(queue)
    return path if isinstance(path, tuple) else ()


def _placeholder_timeout(s: Scheduler, rt: AppRuntime, now: float) -> None:
    if rt.timer_start is None or rt.state.terminal:
        return
    timeout = rt.spec.policy.placeholder_timeout
    if now < rt.timer_start + timeout:
        return
    rt.timer_start = None
    placeholders, _ = members(s, rt)
    alive = [p for p in placeholders if p.release_reason is None and not p.pod.terminating]
    total = sum(g.min_member for g in rt.spec.task_groups)
    allocated = sum(1 for p in alive if p.node is not None)
    if rt.state is not AppState.ACCEPTED:
        if alive:
            count = release_placeholders(s, rt, DeleteReason.PLACEHOLDER_TIMEOUT,
                                         f"unused after {timeout:g}s")
            s.event(ref(rt), EventType.NORMAL, "PlaceholdersReleased",
                    f"released {count} unused placeholders after {timeout:g}s")
        return
    release_placeholders(s, rt, DeleteReason.PLACEHOLDER_TIMEOUT,
                         f"gang not started within {timeout:g}s")
    _drop_earmark(s, rt)
    rt.create_asked.clear()
    detail = f"{allocated}/{total} placeholders allocated when the {timeout:g}s timeout expired"
    if rt.spec.policy.style is Style.HARD:
        move(s, rt, AppEvent.KILL, "PlaceholderTimeout",
             f"{detail}; Hard style: the application is killed and its pods will not be "
             "scheduled (delete or resubmit it)")
    else:
        move(s, rt, AppEvent.RESUME, "PlaceholderTimeout",
             f"{detail}; Soft style: real pods are scheduled as ordinary pods")


# --- allocation -------------------------------------------------------------------------


@dataclass(slots=True)
class AppUnit:
    rt: AppRuntime
    pending: list[PodState] = field(default_factory=list)


def units(s: Scheduler, now: float) -> list[tuple[str, tuple[object, ...], object]]:
    """The apps with work this cycle, and what to say to pods of missing apps."""
    by_app: dict[AppKey, AppUnit] = {}
    for uid in s.pending:
        ps = s.pods[uid]
        key = ps.pod.app
        if key is None:
            continue
        rt = s.apps.get(key)
        if rt is None:
            if ps.pod.pod_group is None:
                s.mark_pending(ps, "ApplicationNotFound",
                               f"application {key} does not exist yet; waiting for it")
            continue
        unit = by_app.get(key)
        if unit is None:
            unit = by_app[key] = AppUnit(rt)
        unit.pending.append(ps)
    for key, rt in s.apps.items():
        if key not in by_app and rt.spec.gang and rt.state is AppState.ACCEPTED:
            by_app[key] = AppUnit(rt)
    result: list[tuple[str, tuple[object, ...], object]] = []
    for key, unit in by_app.items():
        spec = unit.rt.spec
        unit.pending.sort(key=lambda p: (-p.pod.priority, p.pod.creation, p.pod.name))
        result.append((spec.queue, s.sort_key(spec.queue, spec.priority, spec.creation, key), unit))
    return result


def starting(rt: AppRuntime) -> bool:
    """Is the app in a starting state, as state-aware scheduling counts them?"""
    if rt.state is AppState.STARTING:
        return True
    if rt.state is not AppState.ACCEPTED:
        return False
    return (rt.admitted and not rt.reserved) if rt.spec.gang else True


class StateAwareGate:
    """In a ``stateaware`` queue, one starting app at a time gets allocations.

    An app leaves the starting state as soon as it progresses (its gang is reserved, or
    it gets a further allocation, or it has nothing left to ask for), so start-up is not
    serialised to one app per timeout. An app starting for longer than the queue's
    ``stateAwareTimeoutSeconds`` stops holding the others back.
    """

    def __init__(self, s: Scheduler, queue: str, now: float) -> None:
        spec = s.queues.spec(queue)
        self.active = spec is not None and spec.sort_policy is SortPolicy.STATE_AWARE
        self.timeout = spec.state_aware_timeout if spec is not None else 0.0
        self.now = now
        self.holder: AppKey | None = None
        if not self.active:
            return
        ordered = sorted(
            (rt for rt in s.apps.values() if rt.spec.queue == queue and starting(rt)),
            key=lambda rt: (rt.spec.creation, rt.spec.key),
        )
        for rt in ordered:
            if not self._expired(rt):
                self.holder = rt.spec.key
                break

    def _expired(self, rt: AppRuntime) -> bool:
        since = rt.starting_since
        return since is not None and self.now - since >= self.timeout

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


def schedule_app(s: Scheduler, unit: AppUnit, gate: StateAwareGate, now: float) -> None:
    rt = unit.rt
    spec = rt.spec
    reals = [p for p in unit.pending if not p.pod.placeholder]
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
    _check_sizes(s, rt, reals)
    if spec.gang and rt.state is AppState.ACCEPTED:
        placeholders = [p for p in unit.pending if p.pod.placeholder]
        reservation.reserve(s, rt, placeholders, now)
        if not rt.reserved:
            allocated, total = _reservation(s, rt)
            for ps in reals:
                s.mark_pending(ps, "WaitingForGang",
                               f"{allocated}/{total} placeholders of the gang allocated")
            return
    for ps in reals:
        _place_real(s, rt, ps, now)
        if rt.state in NOT_SCHEDULABLE:
            return


def _check_sizes(s: Scheduler, rt: AppRuntime, reals: list[PodState]) -> None:
    """Report a real pod larger than its task group's minResource when it arrives."""
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


def _reservation(s: Scheduler, rt: AppRuntime) -> tuple[int, int]:
    total = sum(g.min_member for g in rt.spec.task_groups)
    allocated = 0
    for name in rt.placeholders.values():
        ps = s.pods.get(name)
        if ps is not None and ps.node is not None:
            allocated += 1
    return allocated, total


def _place_real(s: Scheduler, rt: AppRuntime, ps: PodState, now: float) -> None:
    if ps.parked_on is not None or ps.backoff_until > now:
        return
    group = rt.spec.group(ps.pod.task_group)
    if group is not None and rt.state is not AppState.RESUMING and not ps.pod.invalid:
        placeholder = _free_placeholder(s, rt, group.name, ps)
        if placeholder is not None:
            placeholder.release_reason = DeleteReason.PLACEHOLDER_REPLACED.value
            placeholder.delete_asked = now
            ps.parked_on, ps.parked_node = placeholder.uid, placeholder.node
            ps.parked_name = placeholder.pod.name
            rt.counter(group.name).replaced += 1
            ph = placeholder.pod
            s.out.append(DeletePod(ph.uid, ph.namespace, ph.name,
                                   DeleteReason.PLACEHOLDER_REPLACED,
                                   f"replaced by pod {ps.pod.ref}"))
            s.mark_pending(ps, "WaitingForPlaceholder",
                           f"placeholder {ph.name} on node {placeholder.node} is being "
                           "deleted to make room for this pod")
            real_allocated(s, rt)
            return
    if s.schedule_ordinary(ps, now):
        real_allocated(s, rt)


def _free_placeholder(s: Scheduler, rt: AppRuntime, group: str, real: PodState) -> PodState | None:
    """An allocated, unreleased placeholder of ``group``; one whose node fits preferred."""
    fallback: PodState | None = None
    for uid in sorted(s.app_members.get(rt.spec.key, ()), key=lambda u: s.pods[u].pod.name):
        ps = s.pods[uid]
        pod = ps.pod
        if (not pod.placeholder or pod.task_group != group or ps.node is None
                or ps.release_reason is not None or pod.terminating):
            continue
        state = s.cluster.nodes.get(ps.node)
        if state is not None and real.request.fits_in(state.free + ps.request):
            return ps
        fallback = fallback or ps
    return fallback


def real_allocated(s: Scheduler, rt: AppRuntime) -> None:
    rt.bound_ever += 1
    rt.dirty = True
    if rt.state is AppState.ACCEPTED:
        move(s, rt, AppEvent.START, "Starting", "first real pod allocated")
    elif rt.state in (AppState.WAITING, AppState.RESUMING):
        move(s, rt, AppEvent.RUN, "Running", "real pods allocated")


def complete_swaps(s: Scheduler, now: float) -> None:
    """Bind real pods whose placeholder's deletion has been observed."""
    for uid in list(s.pending):
        ps = s.pods[uid]
        if ps.parked_on is None or ps.parked_on in s.pods:
            continue
        node, placeholder = ps.parked_node, ps.parked_name
        ps.parked_on = ps.parked_node = None
        pod = ps.pod
        target = ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
        if node is not None and s.cluster.fits(node, ps.request, ps.constraints):
            s.bind(ps, node, "PlaceholderReplaced")
            s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                    f"took the place of placeholder {placeholder} on node {node}")
        elif s.schedule_ordinary(ps, now, "PlaceholderReplacedElsewhere"):
            s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                    f"did not fit on node {node} after its placeholder left; placed elsewhere")


# --- progress ---------------------------------------------------------------------------


def progress(s: Scheduler, now: float) -> None:
    """Starting -> Running -> Waiting, and back, for apps whose pods changed."""
    for key in sorted(s.apps):
        rt = s.apps[key]
        if not rt.dirty or rt.state.terminal or rt.state in (AppState.NEW, AppState.ACCEPTED):
            continue
        active = pending = 0
        for uid in s.app_members.get(key, ()):
            ps = s.pods[uid]
            if ps.pod.placeholder:
                continue
            if ps.node is not None and ps.pod.active:
                active += 1
            elif uid in s.pending or ps.parked_on is not None:
                pending += 1
        rt.bound_ever = max(rt.bound_ever, active)
        if rt.state is AppState.STARTING and (rt.bound_ever >= 2 or pending == 0):
            move(s, rt, AppEvent.RUN, "Running",
                 "gang started" if rt.spec.gang else "application started")
        if rt.state in (AppState.STARTING, AppState.RUNNING, AppState.RESUMING):
            if active == 0 and pending == 0:
                rt.waiting_since = now
                move(s, rt, AppEvent.WAIT, "Waiting", "no pods running or pending")
                rt.waiting_since = now
        elif rt.state is AppState.WAITING and (active or pending):
            move(s, rt, AppEvent.RUN, "Running", "pods running again")
