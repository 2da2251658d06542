"""Reserving a gang: admission, placeholder creation, allocation.

An Accepted gang is admitted by the ``enqueue`` action (:mod:`~gangsched.core.actions.enqueue`)
only when its whole remaining placeholder ask fits the headroom of every level of its
queue (quota minus usage minus other admitted gangs' earmarks) and the cluster's free
capacity. Until then it is *held*: no placeholders exist (unless
``SchedulerConfig.demand_placeholders`` shows a gang held for capacity to cluster
autoscalers, :func:`show_demand`: then they exist but stay pending and hold nothing), and
nothing else is blocked.
Without ``enqueue`` among the actions a gang is admitted as soon as its ask fits the
queue's headroom (the admission that predates the action; the cluster's capacity is not
checked). A deadlock victim is not admitted again before its backoff ends.

Once admitted, each task group's ``minMember`` members hold room in one of two ways:

* a real member that is already pending is placed like any pod, binpacked by default,
  and *held* in the core only (``AppRuntime.assumed``): it takes capacity and queue
  quota as its placeholder would, and no bind is asked for;
* for a member whose pod does not exist yet, a placeholder is asked for (again after
  ``placeholder_retry`` seconds if it still has not appeared) and placed when it comes,
  but not before ``SchedulerConfig.gather_window`` has passed since the gang was first
  seen (:func:`gathered_at`): members created together are held and bound together,
  with no placeholder. A placeholder asked for before its member appeared is still
  used: the member takes it after the reservation (:mod:`~gangsched.core.gangs.swap`).

A task group that asks for a topology (or whose members require pod affinity to one
another) is planned whole first (:mod:`~gangsched.core.gangs.gangplace`): its held members and
placeholders go to the nodes of the one domain chosen for the whole group, or wait with
the ``Topology`` blocking reason, naming the domains tried, when none holds it.

With ``SchedulerConfig.placeholders`` = ``always`` every member gets a placeholder, as
in YuniKorn. The placeholder timer starts at the first allocation or held member (or,
after a restart that lost the persisted start, the first cycle that sees one). The gang
is *reserved* once every task group has ``minMember`` members holding room (allocated
placeholders, held members, members bound or being bound); then every held member is
bound in that cycle. Nothing is bound before.

Restarts: held members live in memory only. A new core holds them again from the
pending pods; a member bound before the restart (a crash between the gang's binds)
stands for one, so the gang is admitted at once and binds the rest when they fit.
A gang found with placeholders is admitted at once: they hold their place (with
``demand_placeholders``, only allocated ones say so: a held gang's pending ones exist
too). A held gang's pending placeholders (shown as demand, or found after a restart)
each say why the gang is held. Timeouts, deadlock breaking and preemption give held
members back with the placeholders (:func:`~gangsched.core.gangs.placeholders.release_all`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.gangs import gangplace, group_devices
from gangsched.core.placement.cluster import ONE_POD
from gangsched.core.state.records import AppRuntime, PodState, placement_order
from gangsched.core.values import naming
from gangsched.core.values.decisions import (
    BlockingReason,
    CreatePlaceholder,
    DeletePod,
    DeleteReason,
    EventType,
    ObjectRef,
)
from gangsched.core.values.model import AppSpec, PlaceholderPolicy
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def ref(rt: AppRuntime) -> ObjectRef:
    return rt.ref


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


def members(s: Session, rt: AppRuntime) -> tuple[list[PodState], list[PodState]]:
    """(placeholders, real pods) of the app, in a defined order: sorted again only after
    a member joined, left, was observed, charged or released (enqueue, allocate, reclaim
    and the status all ask, every cycle, for every waiting gang)."""
    kept = rt.members
    if kept is not None and kept[0] == rt.members_version:
        return list(kept[1]), list(kept[2])
    placeholders: list[PodState] = []
    reals: list[PodState] = []
    for uid in s.app_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        (placeholders if ps.pod.placeholder else reals).append(ps)
    placeholders.sort(key=lambda p: (p.pod.task_group or "", p.pod.member_index, p.pod.name))
    reals.sort(key=placement_order)
    rt.members = (rt.members_version, tuple(placeholders), tuple(reals))
    return placeholders, reals


def taken(reals: list[PodState]) -> dict[str, int]:
    """Real pods holding a place, by task group: each stands for a member of the gang.

    That is a member held in memory for the reservation, one whose bind is in flight, or
    one bound: before the reservation only after a restart (its last status write lost,
    or a crash between the gang's binds).
    """
    found: dict[str, int] = {}
    for ps in reals:
        if ps.node is not None and ps.pod.active and ps.pod.task_group is not None:
            found[ps.pod.task_group] = found.get(ps.pod.task_group, 0) + 1
    return found


def reserve(s: Session, rt: AppRuntime, pending: list[PodState], now: float) -> int:
    """Admit, reserve room for every member, and bind the held members once the gang is
    reserved: every task group has ``minMember`` members held (allocated placeholders,
    real members held in memory, or real members already bound). Returns how many real
    members were bound (0 until the gang is reserved).

    A pending real member holds its room in memory (:func:`_allocate` with ``direct``),
    exactly as a placeholder would; a placeholder is asked for only where no member
    exists, or where one was asked for before the member appeared (the member then takes
    it after the reservation, as in the swap).
    """
    spec = rt.spec
    placeholders, reals = members(s, rt)
    observed = {
        p.pod.name: p for p in placeholders if p.release_reason is None and not p.pod.terminating
    }
    rt.placeholders = {name: p.uid for name, p in observed.items()}
    running = taken(reals)
    if not rt.admitted:
        if not s.reached(rt.retry_after):
            return 0
        remaining = remaining_ask(spec, observed, running)
        found = found_admitted(s, observed) or bool(running)
        if not found and not group_devices.allows(s, rt):
            return 0  # a task group's claims can be had nowhere: it holds nothing
        if found:
            admit(s, rt, remaining)  # found holding part of its minimum (after a restart)
        elif spec.key in s.evictions.owners() and quota_allows(s, rt, remaining):
            admit(s, rt, remaining)  # its victims are gone: the room they left is its own
        elif "enqueue" in s.config.actions or not quota_allows(s, rt, remaining):
            return 0  # held: the enqueue action admits it when its minimum fits
        else:
            admit(s, rt, remaining)
    direct = s.config.placeholders is PlaceholderPolicy.MISSING
    waiting = waiting_members(rt, reals) if direct else {}
    gathering = (direct and s.config.gather_window > 0
                 and not s.reached(gathered_at(s, rt, reals)))
    names = {group.name: _names(rt, group.name, group.min_member) for group in spec.task_groups}
    standing: list[PodState] = []
    for group in spec.task_groups:
        group_names = names[group.name]
        present = sum(1 for name in group_names if name in observed)
        retry = s.config.placeholder_retry
        asked = sum(1 for name in group_names if name not in observed
                    and not s.reached(rt.create_asked.get(name, -1e18) + retry))
        need = group.min_member - running.get(group.name, 0) - present
        members_here = waiting.get(group.name, [])[:max(0, need - asked)]
        standing.extend(members_here)
        missing = need - len(members_here)
        if gathering:
            continue  # the members being created now come before any placeholder
        for index, name in enumerate(group_names):
            if missing <= 0:
                break
            if name in observed:
                continue
            missing -= 1
            when = rt.create_asked.get(name)
            if when is not None and not s.reached(when + s.config.placeholder_retry):
                continue
            rt.create_asked[name] = now
            s.out.append(CreatePlaceholder(spec.key, group.name, index, name, spec.namespace,
                                           group.min_resource, group.claims))
    expected_names = {name for group_names in names.values() for name in group_names}
    to_place = [ps for ps in sorted(pending, key=lambda p: (p.pod.task_group or "",
                                                             p.pod.member_index))
                if ps.pod.name in expected_names and ps.release_reason is None]
    targets = gangplace.app_targets(s, rt, standing + to_place)
    for ps in standing:
        _allocate(s, rt, ps, now, direct=True, targets=targets)
    for ps in to_place:
        _allocate(s, rt, ps, now, targets=targets)
    for name, refusal in (targets.refusals(s) if targets is not None else {}).items():
        blocking = BlockingReason(refusal.reason, refusal.message(), refusal.details())
        if rt.blocking.get(name) != blocking:
            rt.blocking[name] = blocking
            rt.dirty = True
    placed = taken(reals)
    allocated = complete = 0
    for group in spec.task_groups:
        here = sum(1 for name in names[group.name]
                   if name in observed and observed[name].node is not None)
        allocated += here
        complete += here + placed.get(group.name, 0) >= group.min_member
    if (allocated or rt.assumed) and rt.timer_start is None:
        rt.timer_start = now  # allocated before a restart that lost the persisted start
    was = rt.reserved
    rt.reserved = complete == len(spec.task_groups)
    if rt.reserved != was:
        s.stir()
    if not rt.reserved:
        return 0
    rt.blocking.clear()
    if rt.earmark:
        s.queues.unearmark(spec.queue, rt.earmark)
        rt.earmark = Resources.ZERO
    bound = len(rt.assumed)
    if not was:
        rt.dirty = True
        members_running = sum(placed.values()) - bound
        parts = [f"{allocated} placeholders allocated"] if allocated or not bound else []
        if bound:
            parts.append(f"{bound} pending members bound")
        if members_running:
            parts.append(f"{members_running} members already running")
        s.event(ref(rt), EventType.NORMAL, "GangReserved",
                f"every task group has its minMember: {', '.join(parts)}; "
                "the gang's capacity is held")
    return _bind_held(s, rt)


def release(s: Session, rt: AppRuntime, ps: PodState, reason: DeleteReason, message: str) -> None:
    """Ask for the deletion of one placeholder, and ask again until it is gone."""
    ps.release_reason = reason.value
    ps.delete_asked = s.now
    s.deleting[ps.uid] = None
    if reason is not DeleteReason.PLACEHOLDER_REPLACED:
        rt.counter(ps.pod.task_group or "").released += 1
    pod = ps.pod
    s.out.append(DeletePod(pod.uid, pod.namespace, pod.name, reason, message))
    rt.dirty = True


def gathered_at(s: Session, rt: AppRuntime, reals: list[PodState]) -> float:
    """When the gathering of ``rt``'s members ends (see the module docstring): the window
    after the core first saw the gang, but no later than the window after the creation
    of its first real member (else of the Application) and the second that creation
    times are rounded down to. So a restart gathers an old gang no more."""
    if rt.gather_seen is None:
        rt.gather_seen = s.now
    first = min((ps.pod.creation for ps in reals), default=rt.spec.creation)
    window = s.config.gather_window
    return min(rt.gather_seen, first + 1.0) + window


def waiting_members(rt: AppRuntime, reals: list[PodState]) -> dict[str, list[PodState]]:
    """Pending real members that may hold a member's room in memory, by task group, in
    the order they are placed (priority, creation, name). Invalid pods, pods that took a
    placeholder once, and pods of a group the spec does not define are not counted."""
    found: dict[str, list[PodState]] = {}
    for ps in reals:
        pod = ps.pod
        group = pod.task_group
        if (group is None or rt.spec.group(group) is None or not ps.pending or pod.invalid
                or not pod.ours or ps.swapped or ps.parked_on is not None):
            continue
        found.setdefault(group, []).append(ps)
    return found


def _bind_held(s: Session, rt: AppRuntime) -> int:
    """Bind every real member held in memory, in (task group, name) order."""
    held = sorted((s.pods[uid] for uid in rt.assumed if uid in s.pods),
                  key=lambda p: (p.pod.task_group or "", p.pod.name))
    rt.assumed.clear()
    count = 0
    for ps in held:
        if ps.node is not None:
            s.bind(ps, ps.node, "GangReserved")
            count += 1
    return count


def forget_held(s: Session, rt: AppRuntime) -> int:
    """Give back the room of every real member held in memory: they are pending again.
    Returns how many there were."""
    count = 0
    for uid in sorted(rt.assumed):
        ps = s.pods.get(uid)
        if ps is not None and ps.pod.node_name is None and not ps.assumed:
            s.uncharge(ps)
            s.refresh_pending(ps)
            count += 1
    rt.assumed.clear()
    rt.dirty = True
    return count


def unassume(s: Session, ps: PodState) -> None:
    """``ps`` is no longer held in memory for its gang: bound by someone, finished, gone
    or moved to another application (its room is given back by the caller)."""
    if ps.pod.app is not None:
        rt = s.apps.get(ps.pod.app)
        if rt is not None and ps.uid in rt.assumed:
            rt.assumed.discard(ps.uid)
            rt.dirty = True


def _create_missing(s: Session, rt: AppRuntime, observed: dict[str, PodState],
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
            if asked is not None and not s.reached(asked + s.config.placeholder_retry):
                continue
            rt.create_asked[name] = now
            s.out.append(CreatePlaceholder(spec.key, group.name, index, name, spec.namespace,
                                           group.min_resource, group.claims))
    return names


def show_demand(s: Session, rt: AppRuntime, blocking: BlockingReason, now: float) -> None:
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


def place_pending(s: Session, rt: AppRuntime, pending: list[PodState], now: float) -> None:
    """Allocate the app's pending, unreleased placeholders again (after a failed bind),
    inside their task group's domain when it asks for a topology."""
    expected_names = {name for name, _, _ in expected_placeholders(rt)}
    to_place = [ps for ps in sorted(pending, key=lambda p: (p.pod.task_group or "",
                                                             p.pod.member_index))
                if ps.pod.name in expected_names and ps.release_reason is None]
    targets = gangplace.app_targets(s, rt, to_place)
    for ps in to_place:
        _allocate(s, rt, ps, now, targets=targets)


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


def found_admitted(s: Session, observed: dict[str, PodState]) -> bool:
    """Do the placeholders ``observed`` of a gang not admitted (in this process) show it
    was admitted before a restart? Placeholders exist only for admitted gangs, so any of
    them does; with ``SchedulerConfig.demand_placeholders`` a held gang's pending ones exist
    too, so only an allocated one does. An empty ``observed`` never does."""
    if s.config.demand_placeholders:
        return any(p.node is not None for p in observed.values())
    return bool(observed)


def hold(s: Session, rt: AppRuntime, blocking: BlockingReason, demand: bool = False) -> None:
    """Keep the gang from admission, saying why on every task group and on each of its
    pending placeholders (a held gang's may exist: found after a restart, or shown as
    demand; ``demand`` says so in their message)."""
    for group in rt.spec.task_groups:
        if rt.blocking.get(group.name) != blocking:
            rt.blocking[group.name] = blocking
            rt.dirty = True
    _say_held(s, rt, blocking, demand)


def _say_held(s: Session, rt: AppRuntime, blocking: BlockingReason, demand: bool) -> None:
    """Mark every pending, unreleased placeholder of the held gang with ``blocking``."""
    message = f"application {rt.spec.key} is not admitted yet: {blocking.message}"
    if demand:
        message += "; this placeholder shows the gang's demand to cluster autoscalers"
    placeholders, _ = members(s, rt)
    for ps in placeholders:
        if ps.node is None and ps.release_reason is None and not ps.pod.terminating:
            s.mark_pending(ps, blocking.reason, message)


def quota_allows(s: Session, rt: AppRuntime, remaining: Resources) -> bool:
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


def admit(s: Session, rt: AppRuntime, remaining: Resources) -> None:
    """Admit the gang: its placeholders may be created, and what it still needs is
    earmarked in its queue until allocated."""
    spec = rt.spec
    s.stir()
    rt.admitted = True
    rt.earmark = remaining
    s.queues.earmark(spec.queue, remaining)
    rt.starting_since = rt.starting_since if rt.starting_since is not None else s.now
    if rt.reason == "DeadlockVictim":
        rt.reason, rt.message = "Accepted", f"queue {spec.queue}"
    rt.blocking.clear()
    for uid in s.app_members.get(spec.key, ()):
        s.pods[uid].blocked_epoch = -1  # admission changes what its members may do
    rt.dirty = True
    s.queues_dirty = True


def _allocate(s: Session, rt: AppRuntime, ps: PodState, now: float, *,
              direct: bool = False, targets: gangplace.Targets | None = None) -> None:
    """Place a placeholder (bound at once), or with ``direct`` a pending real member (held
    in memory only, bound with the rest of the gang). ``targets``: the nodes planned for
    the members of task groups that ask for a topology (:mod:`~gangsched.core.gangs.gangplace`);
    such a member goes to its planned node, or waits with its gang's refusal."""
    spec = rt.spec
    group = ps.pod.task_group or ""
    epoch = s.cluster.retry_epoch(ps.info)
    if not s.reached(ps.backoff_until) or ps.blocked_epoch == epoch:
        return
    check = s.queues.fits(spec.queue, ps.request, own_earmark=rt.earmark)
    if not check.ok:
        message = check.describe(ps.request, "a member" if direct else "a placeholder")
        rt.blocking[group] = BlockingReason("QueueQuota", message, {"queue": check.queue})
        if not direct:
            s.mark_pending(ps, "QueueQuota", message)
        rt.dirty = True
        return
    planned = targets.fit(s, ps, group) if targets is not None else None
    found = planned if planned is not None else s.cluster.fit(
        ps.info, s.config.gang_scoring, judged=ps.blocked_epoch >= 0)
    if not isinstance(found, str):
        ps.blocked_epoch = epoch
        diagnosis = found
        reason = diagnosis.reason
        message = diagnosis.message(ps.request)
        details = diagnosis.details()
        rt.blocking[group] = BlockingReason(reason, message, details)
        if not direct:
            s.mark_pending(ps, reason, message)
        rt.dirty = True
        return
    node = found
    if direct:
        s.charge(ps, node)
        s.refresh_pending(ps)
        rt.assumed.add(ps.uid)
        rt.dirty = True
    else:
        s.bind(ps, node, "PlaceholderAllocated")
    if rt.earmark:
        left = (rt.earmark - ps.request).clamp_non_negative()
        s.queues.unearmark(spec.queue, rt.earmark - left)
        rt.earmark = left
    if rt.timer_start is None:
        rt.timer_start = now
    rt.blocking.pop(group, None)

