"""Releasing placeholders: asking for their deletion, again until it is seen, and
dropping those no longer wanted.

A placeholder is released when its gang no longer needs it: replaced by a real pod
(``PlaceholderReplaced``), expired (``PlaceholderTimeout``), its application completed,
killed or deleted, or it is not one the current spec asks for (``PlaceholderOrphaned``),
or its gang was released to break a deadlock (``DeadlockVictim``).
A placeholder can turn up after its application stopped wanting it: created late, left
from an older spec, or found after a restart. Each placeholder seen for the first time
is checked in the next cycle and released at once if unwanted.

A deletion that is not seen within ``placeholder_retry`` seconds is asked for again.
Placeholders asked for in the same cycle as their gang is released are not asked for
after all: the creation is taken back before it is sent, rather than sent and then
undone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.gangs.reservation import expected_placeholders, forget_held, members
from gangsched.core.gangs.reservation import release as release
from gangsched.core.state.records import AppRuntime
from gangsched.core.values.decisions import CreatePlaceholder, DeletePod, DeleteReason
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def release_all(s: Session, rt: AppRuntime, reason: DeleteReason, message: str) -> int:
    """Ask for the deletion of every placeholder not yet released, and give back the room
    of the real members held in memory (they are pending again). Returns how many
    placeholders."""
    forget_held(s, rt)
    _take_back_creations(s, rt)
    count = 0
    placeholders, _ = members(s, rt)
    for ps in placeholders:
        if ps.release_reason is not None or ps.pod.terminating:
            continue
        release(s, rt, ps, reason, message)
        count += 1
    rt.dirty = True
    return count


def _take_back_creations(s: Session, rt: AppRuntime) -> None:
    """Drop the placeholder creations of ``rt`` asked for in this cycle (not sent yet),
    and forget that they were asked for."""
    key = rt.spec.key
    mine = [d for d in s.out if isinstance(d, CreatePlaceholder) and d.app == key]
    if not mine:
        return
    for d in mine:
        rt.create_asked.pop(d.name, None)
    taken = {id(d) for d in mine}
    s.out.retract(lambda d: id(d) in taken)


def drop_earmark(s: Session, rt: AppRuntime) -> None:
    """Give back the queue headroom an admitted gang still holds for its placeholders."""
    if rt.earmark:
        s.queues.unearmark(rt.spec.queue, rt.earmark)
        rt.earmark = Resources.ZERO
        s.queues_dirty = True


def _unwanted(s: Session, rt: AppRuntime, expected: bool) -> tuple[DeleteReason, str] | None:
    """Why a live placeholder of ``rt`` should go, or None while the gang may use it."""
    if rt.state is AppState.ACCEPTED and not rt.admitted and not s.reached(rt.retry_after):
        return DeleteReason.DEADLOCK_VICTIM, "the gang was released to break a deadlock"
    if rt.state is AppState.COMPLETED:
        return DeleteReason.APP_COMPLETED, "application completed"
    if rt.state is AppState.KILLED:
        return DeleteReason.APP_KILLED, "application was killed"
    if rt.state is AppState.REJECTED:
        return DeleteReason.ORPHANED, "application was rejected"
    if rt.state is AppState.RESUMING or rt.placeholders_expired:
        return DeleteReason.PLACEHOLDER_TIMEOUT, "the placeholder timeout has expired"
    if not expected:
        return DeleteReason.ORPHANED, "not a member of the application's task groups"
    return None


def check_placeholders(s: Session, rt: AppRuntime) -> None:
    """Release the placeholders seen since the last cycle that ``rt`` does not want.

    While the app is ``New`` (not yet checked against its queue, as after a restart
    without status) nothing is decided: they are checked again once it moves on.
    """
    if rt.state is AppState.NEW:
        return
    expected = {name for name, _, _ in expected_placeholders(rt)}
    for uid in rt.unchecked:
        ps = s.pods.get(uid)
        if (ps is None or not ps.pod.placeholder or ps.pod.app != rt.spec.key
                or ps.release_reason is not None or ps.pod.terminating):
            continue
        unwanted = _unwanted(s, rt, ps.pod.name in expected)
        if unwanted is not None:
            release(s, rt, ps, *unwanted)
    rt.unchecked.clear()


def retry_deletes(s: Session, now: float) -> None:
    """Ask again for deletions not seen after ``placeholder_retry`` seconds."""
    for uid in list(s.deleting):
        ps = s.pods.get(uid)
        if ps is None or ps.release_reason is None:
            del s.deleting[uid]
            continue
        if ps.pod.terminating or not s.reached(ps.delete_asked + s.config.placeholder_retry):
            continue
        ps.delete_asked = now
        pod = ps.pod
        s.out.append(DeletePod(pod.uid, pod.namespace, pod.name,
                               DeleteReason(ps.release_reason), "deletion asked for again"))
