"""Reserving a gang: admission, placeholder creation, allocation.

An Accepted gang is admitted by the ``enqueue`` action (:mod:`~gangsched.core.enqueue`)
only when its whole remaining placeholder ask fits the headroom of every level of its
queue (quota minus usage minus other admitted gangs' earmarks) and the cluster's free
capacity. Until then it is *held*: no placeholders exist (unless
``SchedulerConfig.demand_placeholders`` shows a gang held for capacity to cluster
autoscalers, :func:`show_demand`: then they exist but stay pending and hold nothing), and
nothing else is blocked.
Without ``enqueue`` among the actions a gang is admitted as soon as its ask fits the
queue's headroom (the admission that predates the action; the cluster's capacity is not
checked). A deadlock victim is not admitted again before its backoff ends.

Once admitted, every missing placeholder is asked for (again after
``placeholder_retry`` seconds if it still has not appeared), and every pending
placeholder is placed like any pod, binpacked by default. The placeholder timer starts
at the first allocation (or, after a restart that lost the persisted start, the first
cycle that sees one allocated). A gang found with placeholders (after a restart) is
admitted at once: they hold their place (with ``demand_placeholders``, only allocated
ones say so: a held gang's pending ones exist too). A held gang's pending placeholders
(shown as demand, or found after a restart) each say why the gang is held. The gang is
*reserved* once every task group has ``minMember`` placeholders allocated; a real member
already running (found after such a restart) stands for one, and its placeholder is not
made again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core import naming
from gangsched.core.cluster import ONE_POD
from gangsched.core.decisions import BlockingReason, CreatePlaceholder, EventType, ObjectRef
from gangsched.core.model import AppSpec
from gangsched.core.resources import Resources
from gangsched.core.runtime import AppRuntime, PodState

if TYPE_CHECKING:
    from gangsched.core.scheduler import Scheduler


def ref(rt: AppRuntime) -> ObjectRef:
    return ObjectRef("Application", rt.spec.namespace, rt.spec.name, rt.spec.uid)


def gang_ask(spec: AppSpec) -> Resources:
    """The whole placeholder ask, with one pod slot per member."""
    total = Resources.ZERO
    for group in spec.task_groups:
        total = total + (group.min_resource + ONE_POD).scale(group.min_member)
    return total


def expected_placeholders(rt: AppRuntime) -> list[tuple[str, str, int]]:
    """(name, task group, member index) of every placeholder the gang needs."""
    spec = rt.spec
    return [
        (naming.placeholder_name(spec.name, spec.uid, group.name, index), group.name, index)
        for group in spec.task_groups
        for index in range(group.min_member)
    ]


def members(s: Scheduler, rt: AppRuntime) -> tuple[list[PodState], list[PodState]]:
    """(placeholders, real pods) of the app, in a defined order."""
    placeholders: list[PodState] = []
    reals: list[PodState] = []
    for uid in s.app_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        (placeholders if ps.pod.placeholder else reals).append(ps)
    placeholders.sort(key=lambda p: (p.pod.task_group or "", p.pod.member_index, p.pod.name))
    reals.sort(key=lambda p: (-p.pod.priority, p.pod.creation, p.pod.name))
    return placeholders, reals


def taken(reals: list[PodState]) -> dict[str, int]:
    """Real pods holding a place, by task group: each stands for a member of the gang.

    Normally no real pod runs before the reservation; after a restart whose last status
    write was lost, some may already have taken their placeholder's place.
    """
    found: dict[str, int] = {}
    for ps in reals:
        if ps.node is not None and ps.pod.active and ps.pod.task_group is not None:
            found[ps.pod.task_group] = found.get(ps.pod.task_group, 0) + 1
    return found


def reserve(s: Scheduler, rt: AppRuntime, pending: list[PodState], now: float) -> None:
    """Admit, create the missing placeholders, allocate the pending ones, and say whether
    the gang is reserved: every task group has ``minMember`` allocated placeholders or
    real pods."""
    spec = rt.spec
    placeholders, reals = members(s, rt)
    observed = {
        p.pod.name: p for p in placeholders if p.release_reason is None and not p.pod.terminating
    }
    rt.placeholders = {name: p.uid for name, p in observed.items()}
    running = taken(reals)
    if not rt.admitted:
        if rt.retry_after > now:
            return
        remaining = remaining_ask(spec, observed, running)
        if found_admitted(s, observed):
            admit(s, rt, remaining)  # found holding placeholders (after a restart)
        elif "enqueue" in s.config.actions or not quota_allows(s, rt, remaining):
            return  # held: the enqueue action admits it when its minimum fits
        else:
            admit(s, rt, remaining)
    names = _create_missing(s, rt, observed, running, now)
    expected_names = {name for group_names in names.values() for name in group_names}
    for ps in sorted(pending, key=lambda p: (p.pod.task_group or "", p.pod.member_index)):
        if ps.pod.name in expected_names and ps.release_reason is None:
            _allocate(s, rt, ps, now)
    allocated = complete = 0
    for group in spec.task_groups:
        held = sum(1 for name in names[group.name]
                   if name in observed and observed[name].node is not None)
        allocated += held
        complete += held + running.get(group.name, 0) >= group.min_member
    if allocated and rt.timer_start is None:
        rt.timer_start = now  # allocated before a restart that lost the persisted start
    was = rt.reserved
    rt.reserved = complete == len(spec.task_groups)
    if rt.reserved:
        rt.blocking.clear()
        if rt.earmark:
            s.queues.unearmark(spec.queue, rt.earmark)
            rt.earmark = Resources.ZERO
        if not was:
            rt.dirty = True
            members_running = sum(running.values())
            note = f" and {members_running} members already running" if members_running else ""
            s.event(ref(rt), EventType.NORMAL, "GangReserved",
                    f"all {allocated} placeholders allocated{note}; the gang's capacity is held")


def _create_missing(s: Scheduler, rt: AppRuntime, observed: dict[str, PodState],
                    running: dict[str, int], now: float) -> dict[str, list[str]]:
    """Ask for the placeholders neither observed nor stood for by a running member (again
    after ``placeholder_retry``). Returns the placeholder names by task group."""
    spec = rt.spec
    names = {group.name: _names(rt, group.name, group.min_member) for group in spec.task_groups}
    for group in spec.task_groups:
        group_names = names[group.name]
        missing = group.min_member - running.get(group.name, 0)
        missing -= sum(1 for name in group_names if name in observed)
        for index, name in enumerate(group_names):
            if missing <= 0:
                break
            if name in observed:
                continue
            missing -= 1
            asked = rt.create_asked.get(name)
            if asked is not None and now - asked < s.config.placeholder_retry:
                continue
            rt.create_asked[name] = now
            s.out.append(CreatePlaceholder(spec.key, group.name, index, name, spec.namespace,
                                           group.min_resource))
    return names


def show_demand(s: Scheduler, rt: AppRuntime, blocking: BlockingReason, now: float) -> None:
    """Hold a gang held for the cluster's capacity, with ``demand_placeholders`` on, and
    create its placeholders anyway: they stay pending, each saying why
    (``PodScheduled=False``, reason ``Unschedulable``): what cluster-autoscaler and
    Karpenter scale up for. They are placed only once enqueue admits the gang, and hold
    nothing until then."""
    placeholders, reals = members(s, rt)
    observed = {p.pod.name: p for p in placeholders
                if p.release_reason is None and not p.pod.terminating}
    hold(s, rt, blocking, demand=True)
    _create_missing(s, rt, observed, taken(reals), now)


def _names(rt: AppRuntime, group: str, count: int) -> list[str]:
    """The placeholder names of a task group, computed once per spec (they are hashes)."""
    cached = rt.names.get(group)
    if cached is None or cached[0] is not rt.spec:
        spec = rt.spec
        names = [naming.placeholder_name(spec.name, spec.uid, group, i) for i in range(count)]
        cached = rt.names[group] = (spec, names)
    return cached[1]


def place_pending(s: Scheduler, rt: AppRuntime, pending: list[PodState], now: float) -> None:
    """Allocate the app's pending, unreleased placeholders again (after a failed bind)."""
    expected_names = {name for name, _, _ in expected_placeholders(rt)}
    for ps in sorted(pending, key=lambda p: (p.pod.task_group or "", p.pod.member_index)):
        if ps.pod.name in expected_names and ps.release_reason is None:
            _allocate(s, rt, ps, now)


def remaining_ask(spec: AppSpec, observed: dict[str, PodState],
                  running: dict[str, int]) -> Resources:
    """What the gang still needs: placeholder requests for the members that neither an
    allocated placeholder in ``observed`` nor a running real pod stands for."""
    allocated: dict[str, int] = {}
    for ps in observed.values():
        if ps.node is not None:
            group_name = ps.pod.task_group or ""
            allocated[group_name] = allocated.get(group_name, 0) + 1
    remaining = Resources.ZERO
    for group in spec.task_groups:
        short = group.min_member - allocated.get(group.name, 0) - running.get(group.name, 0)
        if short > 0:
            remaining = remaining + (group.min_resource + ONE_POD).scale(short)
    return remaining


def found_admitted(s: Scheduler, observed: dict[str, PodState]) -> bool:
    """Do the placeholders ``observed`` of a gang not admitted (in this process) show it
    was admitted before a restart? Placeholders exist only for admitted gangs, so any of
    them does; with ``SchedulerConfig.demand_placeholders`` a held gang's pending ones exist
    too, so only an allocated one does. An empty ``observed`` never does."""
    if s.config.demand_placeholders:
        return any(p.node is not None for p in observed.values())
    return bool(observed)


def hold(s: Scheduler, rt: AppRuntime, blocking: BlockingReason, demand: bool = False) -> None:
    """Keep the gang from admission, saying why on every task group and on each of its
    pending placeholders (a held gang's may exist: found after a restart, or shown as
    demand; ``demand`` says so in their message)."""
    for group in rt.spec.task_groups:
        if rt.blocking.get(group.name) != blocking:
            rt.blocking[group.name] = blocking
            rt.dirty = True
    _say_held(s, rt, blocking, demand)


def _say_held(s: Scheduler, rt: AppRuntime, blocking: BlockingReason, demand: bool) -> None:
    """Mark every pending, unreleased placeholder of the held gang with ``blocking``."""
    message = f"application {rt.spec.key} is not admitted yet: {blocking.message}"
    if demand:
        message += "; this placeholder shows the gang's demand to cluster autoscalers"
    placeholders, _ = members(s, rt)
    for ps in placeholders:
        if ps.node is None and ps.release_reason is None and not ps.pod.terminating:
            s.mark_pending(ps, blocking.reason, message)


def quota_allows(s: Scheduler, rt: AppRuntime, remaining: Resources) -> bool:
    """Does ``remaining`` fit the headroom of every level of the gang's queue? If not, the
    gang is held with a ``QueueQuota`` blocking reason."""
    check = s.queues.fits(rt.spec.queue, remaining)
    if check.ok:
        return True
    hold(s, rt, BlockingReason("QueueQuota", check.describe(remaining, "the gang"), {
        "queue": check.queue,
        "needed": remaining.format_short(),
        "headroom": check.headroom.format_short(),
        "max": check.max_text,
    }))
    return False


def admit(s: Scheduler, rt: AppRuntime, remaining: Resources) -> None:
    """Admit the gang: its placeholders may be created, and what it still needs is
    earmarked in its queue until allocated."""
    spec = rt.spec
    rt.admitted = True
    rt.earmark = remaining
    s.queues.earmark(spec.queue, remaining)
    rt.starting_since = rt.starting_since if rt.starting_since is not None else s.now
    if rt.reason == "DeadlockVictim":
        rt.reason, rt.message = "Accepted", f"queue {spec.queue}"
    rt.blocking.clear()
    rt.dirty = True
    s.queues_dirty = True


def _allocate(s: Scheduler, rt: AppRuntime, ps: PodState, now: float) -> None:
    spec = rt.spec
    group = ps.pod.task_group or ""
    epoch = s.cluster.retry_epoch(ps.info)
    if ps.backoff_until > now or ps.blocked_epoch == epoch:
        return
    check = s.queues.fits(spec.queue, ps.request, own_earmark=rt.earmark)
    if not check.ok:
        message = check.describe(ps.request, "a placeholder")
        rt.blocking[group] = BlockingReason("QueueQuota", message, {"queue": check.queue})
        s.mark_pending(ps, "QueueQuota", message)
        rt.dirty = True
        return
    node = s.cluster.place(ps.request, ps.constraints, s.config.gang_scoring, spec.key,
                           pod=ps.info)
    if node is None:
        ps.blocked_epoch = epoch
        diagnosis = s.cluster.diagnose(ps.request, ps.constraints, spec.key, pod=ps.info)
        reason = diagnosis.reason
        message = diagnosis.message(ps.request)
        details = diagnosis.details()
        rt.blocking[group] = BlockingReason(reason, message, details)
        s.mark_pending(ps, reason, message)
        rt.dirty = True
        return
    s.bind(ps, node, "PlaceholderAllocated")
    if rt.earmark:
        left = (rt.earmark - ps.request).clamp_non_negative()
        s.queues.unearmark(spec.queue, rt.earmark - left)
        rt.earmark = left
    if rt.timer_start is None:
        rt.timer_start = now
    rt.blocking.pop(group, None)

