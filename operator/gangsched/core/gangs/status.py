"""Status decisions: what Applications, PodGroups and Queues report, sent only on change.

Counts are derived from the pods the core sees, so they are right after a restart too;
a gang's ``reserved`` counts, per task group up to ``minMember``, its allocated
placeholders, the pending members held in memory for it, and its bound members;
only the replaced/released counters are the core's own (they count deletions it asked
for) and start again from zero after a restart.

The gang that nodes are reserved for (``elect``/``reserve``) reports them and when they
are given back; a deadlock victim reports when it may be admitted again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from gangsched.core.state.records import AppRuntime, GroupRuntime
from gangsched.core.values.decisions import (
    BlockingReason,
    PlaceholderCounts,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
    TaskGroupStatus,
)
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState

_NO_RESERVATION: tuple[tuple[str, ...], float | None] = ((), None)

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def emit(s: Session, now: float) -> None:
    """The statuses that changed. One that tells of more than new numbers (see
    :func:`renumbered`) stirs the cycle: a later cycle may act on what changed."""
    for rt in s.app_index.walk("dirty"):
        if rt.dirty:
            rt.dirty = False
            status = app_status(s, rt)
            if status != rt.last_status:
                if rt.last_status is None or not renumbered(rt.last_status, status):
                    s.stir()
                rt.last_status = status
                s.out.append(status)
    for grt in s.group_index.walk("dirty"):
        if grt.dirty:
            grt.dirty = False
            gstatus = group_status(s, grt)
            if gstatus != grt.last_status:
                if grt.last_status is None or not renumbered(grt.last_status, gstatus):
                    s.stir()
                grt.last_status = gstatus
                s.out.append(gstatus)
    if s.queues_dirty:
        s.queues_dirty = False
        for queue in queue_statuses(s):
            if s.queue_status.get(queue.name) != queue:
                s.queue_status[queue.name] = queue
                s.out.append(queue)


SATISFIED_PHASES = frozenset({"Scheduled", "Running", "Finished"})
"""PodGroup phases told apart only by what its members' pods report."""


def renumbered(old: SetAppStatus | SetPodGroupStatus,
               new: SetAppStatus | SetPodGroupStatus) -> bool:
    """Does ``new`` differ from ``old`` only in what is counted or measured from the pods
    and the nodes (member counts, the numbers in a blocking message, a satisfied
    PodGroup's phase among Scheduled, Running and Finished)? Then it reports the state
    the cycle's actions saw, not a change of it: the gang's state, reasons, timers and
    reservations are the same."""
    if isinstance(old, SetAppStatus) and isinstance(new, SetAppStatus):
        return (
            (old.state, old.reason, old.message, old.queue, old.reserved_nodes,
             old.reservation_expiry, old.retry_after, old.state_since,
             old.placeholder_timer_start, old.waiting_since, old.starting_since)
            == (new.state, new.reason, new.message, new.queue, new.reserved_nodes,
                new.reservation_expiry, new.retry_after, new.state_since,
                new.placeholder_timer_start, new.waiting_since, new.starting_since)
            and [(g.name, g.blocking.reason) for g in old.task_groups]
            == [(g.name, g.blocking.reason) for g in new.task_groups])
    if isinstance(old, SetPodGroupStatus) and isinstance(new, SetPodGroupStatus):
        return (
            (old.phase == new.phase
             or (old.phase in SATISFIED_PHASES and new.phase in SATISFIED_PHASES))
            and (old.reason, old.blocking.reason, old.schedule_start, old.reserved_nodes,
                 old.reservation_expiry, old.retry_after)
            == (new.reason, new.blocking.reason, new.schedule_start, new.reserved_nodes,
                new.reservation_expiry, new.retry_after))
    return False


def app_status(s: Session, rt: AppRuntime) -> SetAppStatus:
    spec = rt.spec
    groups: dict[str, dict[str, int]] = {
        g.name: {"alive": 0, "allocated": 0, "pending": 0, "bound": 0, "real_pending": 0,
                 "held": 0}
        for g in spec.task_groups
    }
    running = 0
    for uid in s.app_members.get(spec.key, ()):
        ps = s.pods[uid]
        pod = ps.pod
        counts = groups.get(pod.task_group or "")
        if pod.placeholder:
            if counts is None or ps.release_reason is not None or pod.terminating:
                continue
            counts["alive"] += 1
            counts["allocated" if ps.node is not None else "pending"] += 1
            continue
        bound = ps.node is not None and pod.active and uid not in rt.assumed
        running += bound
        if counts is not None:
            if uid in rt.assumed:  # held in memory for the reservation: still pending
                counts["held"] += 1
                counts["real_pending"] += 1
            elif bound:
                counts["bound"] += 1
            elif ps.pending or ps.parked_on is not None:
                counts["real_pending"] += 1
    statuses = []
    reserved = total = 0
    expired = rt.placeholders_expired or rt.state is AppState.RESUMING
    for group in spec.task_groups:
        counts = groups[group.name]
        counter = rt.counter(group.name)
        statuses.append(TaskGroupStatus(
            name=group.name,
            min_member=group.min_member,
            placeholders=PlaceholderCounts(
                created=counts["alive"] + counter.replaced + counter.released,
                allocated=counts["allocated"],
                replaced=counter.replaced,
                released=counter.released,
                pending=counts["pending"],
            ),
            real_bound=counts["bound"],
            real_pending=counts["real_pending"],
            blocking=(s.unsatisfiable.app_blocking(spec.key, group.name)
                      or rt.blocking.get(group.name, BlockingReason())),
        ))
        total += group.min_member
        bound_here = 0 if expired else counts["bound"]  # a timed-out gang reserved nothing
        reserved += min(group.min_member, counts["allocated"] + counts["held"]
                        + max(counter.replaced, bound_here))
    nodes, expiry = _reservation(s, spec.key)
    return SetAppStatus(
        key=spec.key,
        state=rt.state.value,
        reason=rt.reason,
        message=rt.message,
        queue=spec.queue,
        reserved=f"{reserved}/{total}",
        running=running,
        task_groups=tuple(statuses),
        state_since=rt.state_since,
        placeholder_timer_start=rt.timer_start,
        waiting_since=rt.waiting_since,
        starting_since=rt.starting_since,
        reserved_nodes=nodes,
        reservation_expiry=expiry,
        retry_after=None if s.reached(rt.retry_after) else rt.retry_after,
    )


def _reservation(s: Session, key: str) -> tuple[tuple[str, ...], float | None]:
    """The nodes reserved for the gang ``key`` belongs to, and until when."""
    held = s.node_reservation
    if held is None or key not in held.owners:
        return _NO_RESERVATION
    return held.nodes, held.expiry


def group_status(s: Session, rt: GroupRuntime) -> SetPodGroupStatus:
    members = scheduled = running = succeeded = failed = 0
    for uid in s.group_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        pod = ps.pod
        members += 1
        if (ps.node is not None and uid not in rt.assumed) or pod.node_name is not None:
            scheduled += 1
        phase = pod.phase.value
        running += phase == "Running"
        succeeded += phase == "Succeeded"
        failed += phase == "Failed"
    if rt.spec.invalid:
        reason, message = "InvalidSpec", rt.spec.invalid
    else:
        reason, message = rt.reason, rt.message
    nodes, expiry = _reservation(s, rt.spec.key)
    return SetPodGroupStatus(
        key=rt.spec.key,
        phase=rt.phase,
        reason=reason,
        message=message,
        members=members,
        assumed=len(rt.assumed),
        scheduled=scheduled,
        running=running,
        succeeded=succeeded,
        failed=failed,
        schedule_start=rt.schedule_start,
        blocking=(BlockingReason() if rt.satisfied
                  else s.unsatisfiable.groups.get(rt.spec.key) or rt.blocking),
        reserved_nodes=nodes,
        reservation_expiry=expiry,
        retry_after=None if s.reached(rt.retry_after) else rt.retry_after,
    )


def queue_statuses(s: Session) -> list[SetQueueStatus]:
    asked: dict[str, dict[str, int]] = {}
    """Per queue, the pending pods' requests: summed as integers, added up the path once."""
    pods: dict[tuple[str, Resources], int] = {}
    """Pending pods by queue and request: most share a few shapes, added up once each."""
    for shape, count in s.pending_shapes.counts.items():
        key = (s.queue_for(shape.app, shape.group, shape.queue), shape.request)
        pods[key] = pods.get(key, 0) + count
    for (queue, request), count in pods.items():
        sums = asked.setdefault(queue, {})
        for name, amount in request.items():
            sums[name] = sums.get(name, 0) + amount * count
    pending: dict[str, Resources] = {}
    for queue in sorted(asked):
        path = s.queues.path(queue)
        total = Resources(asked[queue])
        for level in path if isinstance(path, tuple) else (queue,):
            pending[level] = pending.get(level, Resources.ZERO) + total
    leaves = cast(dict[tuple[str, AppState], int], s.app_index.tally("queue_state"))
    """Applications by leaf queue and state: added up each queue's path once each."""
    apps: dict[str, dict[str, int]] = {}
    for (leaf, state), count in leaves.items():
        path = s.queues.path(leaf)
        for level in path if isinstance(path, tuple) else (leaf,):
            by_state = apps.setdefault(level, {})
            by_state[state.value] = by_state.get(state.value, 0) + count
    result = []
    for name in s.queues.names():
        spec = s.queues.spec(name)
        if spec is None:
            continue
        path = s.queues.path(name)
        result.append(SetQueueStatus(
            name=name,
            allocated=s.queues.usage(name),
            pending=pending.get(name, Resources.ZERO),
            reserved_by_placeholders=s.queues.placeholder_used.get(name, Resources.ZERO),
            max=spec.max,
            guaranteed=spec.guaranteed,
            applications=dict(sorted(apps.get(name, {}).items())),
            message=path if isinstance(path, str) else "",
        ))
    return result
