"""The swap: a real gang member takes the place of one of its task group's placeholders.

As in YuniKorn's design (``gang-scheduling-design.txt``, "Scheduler logic changes"):

1. A real pod X of task group G, once the gang is reserved, picks an allocated,
   unreleased placeholder P of G, preferring one on a node where X fits once P is gone.
   If X is larger than P, the queue must have room for the difference, or X waits with
   ``QueueQuota`` and P stays.
2. P's deletion is asked for (reason ``PlaceholderReplaced``, "replaced by pod X") and X
   is *parked*: it is not scheduled until P's deletion is observed.
3. Then X is bound to P's node if it fits there: its *own* full constraints are checked
   by every filter of the profile (capacity, taints, node affinity, host ports, pod
   (anti-)affinity, spread -- X may differ from its task group's template), and the
   queue quota. Otherwise it is placed like an ordinary pod on any node that fits
   (Event ``PlaceholderReplaced``: "did not fit on node N after its placeholder left;
   placed elsewhere"); otherwise it stays pending, saying why in kube-scheduler's words.
   While P still stands, choosing a placeholder leaves P itself out of X's affinity and
   spread counts (X takes its place).

Devices too: P holds devices for its task group's claims (in memory,
:mod:`gangsched.core.volumes.claims`), and keeps them while it is deleted and after it
is gone, for as long as its swap lasts. X is judged on P's node with those devices free;
a real member whose claims are not made yet does not take a placeholder's place. When
the swap completes, P's devices are given back and X's own claims are allocated on P's
node in the same step (no other pod is placed in between); if they cannot be, a Warning
Event says why, P's devices are free again and X is placed like an ordinary pod.

The swap is atomic: P's room is its gang's until X is bound, or the swap is given up
and the room released on purpose. A real cluster deletes P gracefully (it keeps its node
and a ``deletionTimestamp`` for 0.5 s up to its grace period, its phase may turn
terminal meanwhile) and the watch reports it gone later still; no other pod, of any gang
or none, may be placed into its room in the meantime. So each swap (:class:`Swap`, by
placeholder) *holds* room on P's node, charged under the pseudo-pod uid ``swap:<P's
uid>``: what X needs there beyond what P itself still holds (nothing while P stands and
X is no larger; the difference at once for a larger X; X's whole request once P no
longer holds its room, terminal or gone). When X does not fit on P's node even with P
gone, the swap holds P's own room for the gang until X is placed elsewhere. So the sum
held on the node never grows during the swap, and never exceeds what was free.

If X leaves mid-swap (deleted, finished, bound by someone else) the swap keeps P's room
for the next pending member of G, which takes it over; with none by the time P is gone,
the room is released. A swap is given up, its room released, when its application goes
or is completed, killed or rejected, or its node goes.

If X's Binding fails once P is gone (not 409: X is not bound), the room stays the
gang's: a swap with no placeholder (key ``bind:<X's uid>``) holds it while X backs off
(a shorter backoff, :data:`HELD_RETRY`), and hands it to X, or another pending member of
G, on the next try; with no taker a second after the backoff, it is released. This hold
lives in memory only: a restart in between loses it.

After a restart the swaps are rebuilt from what is observed: a pending real member with
no free placeholder takes over a placeholder of its task group that is being deleted
(terminating, or asked to go) and that no swap holds yet, if it fits there once that
placeholder is gone.

A real pod takes at most one placeholder: one that did not land where its placeholder
was does not consume the gang's other placeholders one after the other. Without a free
placeholder (all used, or the gang resumed after the timeout) a real pod is placed like
an ordinary pod.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.ordinary as ordinary_logic
from gangsched.core.gangs.apps import real_allocated
from gangsched.core.gangs.placeholders import release
from gangsched.core.placement import volume_assumptions as volume_placing
from gangsched.core.state.records import AppRuntime, PodState, placement_order
from gangsched.core.state.swaps import HOLD, Swap
from gangsched.core.values.decisions import DeleteReason, EventType, ObjectRef
from gangsched.core.values.model import DEFAULT_QUEUE, PodUID
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState
from gangsched.core.volumes import claims as resource_claims

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


_OVER = (AppState.COMPLETED, AppState.KILLED, AppState.REJECTED)


def held_on(s: Session, node: str) -> Resources:
    """The room held on ``node`` for all swaps (O(swaps))."""
    total = Resources.ZERO
    for sw in s.swaps.values():
        if sw.node == node:
            total = total + sw.held
    return total


class FreePlaceholders:
    """An app's allocated, unreleased placeholders by task group, collected on first use.

    Built once per app and cycle (not once per real pod), so placing n real pods costs
    O(members + n), not O(members x n).
    """

    def __init__(self, s: Session, rt: AppRuntime) -> None:
        self._s = s
        self._rt = rt
        self._by_group: dict[str, list[PodState]] | None = None
        self._leaving: dict[str, list[PodState]] | None = None

    def _index(self) -> dict[str, list[PodState]]:
        if self._by_group is None:
            found: dict[str, list[PodState]] = {}
            leaving: dict[str, list[PodState]] = {}
            s = self._s
            for uid in s.app_members.get(self._rt.spec.key, ()):
                ps = s.pods[uid]
                pod = ps.pod
                if not pod.placeholder:
                    continue
                if (ps.node is not None and ps.release_reason is None and not pod.terminating
                        and pod.active):
                    found.setdefault(pod.task_group or "", []).append(ps)
                elif (pod.node_name is not None and _unheld(s, uid)
                      and (pod.terminating or ps.release_reason is not None)):
                    leaving.setdefault(pod.task_group or "", []).append(ps)
            for group in (*found.values(), *leaving.values()):
                group.sort(key=lambda p: p.pod.name)
            self._by_group = found
            self._leaving = leaving
        return self._by_group

    def pick(self, group: str, real: PodState) -> PodState | None:
        """The placeholder ``real`` should take: first by name on a node where it fits."""
        candidates = self._index().get(group)
        if not candidates:
            return None
        for ph in candidates:
            if _fits_there(self._s, real, ph):
                return ph
        return candidates[0]

    def leaving(self, group: str, real: PodState) -> PodState | None:
        """A placeholder of ``group`` being deleted with no swap holding its room (found
        so after a restart, or its real pod left), on a node where ``real`` fits once it
        is gone: first by name, taken out of the index; None if there is none."""
        self._index()
        candidates = (self._leaving or {}).get(group, [])
        for i, ph in enumerate(candidates):
            if _fits_there(self._s, real, ph):
                return candidates.pop(i)
        return None

    def any(self, group: str) -> bool:
        """Is there a placeholder of ``group`` to take, standing or leaving unheld?"""
        self._index()
        return bool(self._index().get(group) or (self._leaving or {}).get(group))

    def remove(self, ph: PodState) -> None:
        self._index()[ph.pod.task_group or ""].remove(ph)


def _unheld(s: Session, uid: PodUID) -> bool:
    """No real pod takes the room of placeholder ``uid``."""
    sw = s.swaps.get(uid)
    return sw is None or sw.real is None


def _fits_there(s: Session, real: PodState, ph: PodState) -> bool:
    """Does ``real`` fit on ``ph``'s node once ``ph`` (and any room held for it) is gone?"""
    node = ph.pod.node_name if ph.node is None else ph.node
    if node is None:
        return False
    extra = ph.request if ph.node == node else Resources.ZERO
    sw = s.swaps.get(ph.uid)
    if sw is not None:
        extra = extra + sw.held
    return s.cluster.fits(node, real.request, real.constraints, extra=extra, pod=real.info,
                          replacing=ph.uid)


def place_real(
    s: Session, rt: AppRuntime, ps: PodState, free: FreePlaceholders, now: float
) -> None:
    """Place one pending real pod of a reserved (or resumed) app."""
    if ps.parked_on is not None or not s.reached(ps.backoff_until):
        return
    group = rt.spec.group(ps.pod.task_group)
    if (group is not None and not ps.swapped and not ps.pod.invalid
            and rt.state is not AppState.RESUMING and not rt.placeholders_expired):
        if ps.pod.volumes.unresolved_claims and free.any(group.name):
            # Its claims must exist before it takes a placeholder's place (and devices).
            s.mark_pending(ps, "DynamicResources",
                           'waiting for the resourceclaim of pod claim '
                           f'"{ps.pod.volumes.unresolved_claims[0]}" to be created '
                           "before it takes its placeholder's place")
            return
        leaving = free.leaving(group.name, ps)
        if leaving is not None:  # its room is going: taken before a placeholder that stays
            _take_over(s, rt, ps, leaving)
            return
        placeholder = free.pick(group.name, ps)
        if placeholder is not None:
            extra = (ps.request - placeholder.request).clamp_non_negative()
            if extra:
                check = s.queues.fits(s.queue_of(ps) or DEFAULT_QUEUE, extra)
                if not check.ok:
                    s.mark_pending(ps, "QueueQuota", check.describe(ps.request, "the pod"))
                    return
            free.remove(placeholder)
            _park(s, rt, ps, placeholder)
            return
    if ordinary_logic.place(s, ps, now, "Scheduled"):
        real_allocated(s, rt)


def _park(s: Session, rt: AppRuntime, ps: PodState, placeholder: PodState) -> None:
    ph = placeholder.pod
    there = _fits_there(s, ps, placeholder)
    release(s, rt, placeholder, DeleteReason.PLACEHOLDER_REPLACED, f"replaced by pod {ps.pod.ref}")
    node = placeholder.node or ""
    s.swaps[placeholder.uid] = Swap(placeholder.uid, ph.name, node, rt.spec.key,
                                    ph.task_group or "", placeholder.request, None, there)
    rt.counter(ph.task_group or "").replaced += 1
    _join(s, rt, ps, s.swaps[placeholder.uid])


def _take_over(s: Session, rt: AppRuntime, ps: PodState, placeholder: PodState) -> None:
    """Start a swap onto a placeholder already being deleted (see the module docstring)."""
    ph = placeholder.pod
    sw = s.swaps.get(placeholder.uid)
    if sw is None:
        sw = Swap(placeholder.uid, ph.name, ph.node_name or "", rt.spec.key,
                  ph.task_group or "", placeholder.request, None)
        s.swaps[placeholder.uid] = sw
    _join(s, rt, ps, sw)


def _join(s: Session, rt: AppRuntime, ps: PodState, sw: Swap) -> None:
    """``ps`` becomes the real pod of ``sw``: parked, with the room it needs held."""
    ps.parked_on, ps.parked_node, ps.parked_name = sw.placeholder, sw.node, sw.name
    ps.swapped = True
    s.parked[ps.uid] = None
    sw.real = ps.uid
    _sync(s, sw)
    s.mark_pending(ps, "WaitingForPlaceholder",
                   f"placeholder {sw.name} on node {sw.node} is being "
                   "deleted to make room for this pod")
    real_allocated(s, rt)


def _sync(s: Session, sw: Swap) -> None:
    """Keep the room held for ``sw`` equal to what its real pod (or, with none, the
    placeholder's own request) needs on the node beyond what the placeholder still
    holds there. Nothing on a node the core no longer knows, nor for a swap with
    neither its real pod nor its placeholder left."""
    ph = s.pods.get(sw.placeholder)
    standing = _standing(s, sw)
    real = s.pods.get(sw.real) if sw.real is not None else None
    need = real.request if real is not None and sw.there else sw.request
    want = Resources.ZERO
    if sw.node in s.cluster.nodes and (real is not None or ph is not None
                                       or not s.reached(sw.keep_until)):
        want = (need - standing).clamp_non_negative()
    if want == sw.held:
        return
    uid = HOLD + sw.placeholder
    if sw.held:
        s.cluster.release(sw.node, uid, sw.held)
    sw.held = want
    if want:
        s.cluster.charge(sw.node, uid, want)
    s.stir()


def _standing(s: Session, sw: Swap) -> Resources:
    """What the placeholder of ``sw`` still holds on its node itself."""
    ph = s.pods.get(sw.placeholder)
    return ph.request if ph is not None and ph.node == sw.node else Resources.ZERO


def _drop(s: Session, sw: Swap) -> None:
    """End ``sw``: its held room is released, its real pod (if any) unparked."""
    uid = HOLD + sw.placeholder
    if sw.held:
        s.cluster.release(sw.node, uid, sw.held)
        sw.held = Resources.ZERO
    s.swaps.pop(sw.placeholder, None)
    if sw.placeholder not in s.pods:  # the devices it held for its task group, kept so far
        s.volumes.forget_pod(sw.placeholder)
    real = s.pods.get(sw.real) if sw.real is not None else None
    if real is not None:
        _unpark(s, real)
    s.stir()


def _unpark(s: Session, ps: PodState) -> None:
    ps.parked_on = ps.parked_node = None
    ps.parked_name = ""
    s.parked.pop(ps.uid, None)


def observed(s: Session, ps: PodState, *, gone: bool = False) -> None:
    """A pod was observed (``gone``: its deletion was). Bookkeeping only: no decision.

    A swapping placeholder that no longer holds its room passes it to the swap's hold.
    A placeholder seen terminating on a node, with no swap yet (after a restart, or
    deleted for another reason), gets one with no real pod: its room is kept until the
    next cycle hands it to a pending member or gives it up. A parked real pod that is
    no longer pending (deleted, finished, bound by someone else) leaves its swap, whose
    room is kept for the next member.
    """
    pod = ps.pod
    sw = s.swaps.get(ps.uid)
    if sw is None and pod.placeholder and pod.terminating and not gone and pod.app:
        node = pod.node_name
        if node is not None:
            sw = Swap(ps.uid, pod.name, node, pod.app, pod.task_group or "", ps.request, None)
            s.swaps[ps.uid] = sw
    if sw is not None:
        _sync(s, sw)
        return
    if ps.parked_on is None or (ps.pending and not gone):
        return
    sw = s.swaps.get(ps.parked_on)
    _unpark(s, ps)
    if sw is not None and sw.real == ps.uid:
        # The room kept for the next member is what is held now (with what the
        # placeholder still holds), never more: the rest may have gone to others.
        sw.request = sw.request.min(sw.held + _standing(s, sw))
        sw.real = None
        sw.there = True
        _sync(s, sw)


def complete_swaps(s: Session, now: float) -> None:
    """Bind real pods whose placeholder's deletion has been observed; hand a swap whose
    real pod left to the next member; give up the swaps nobody can use."""
    for uid in list(s.parked):
        ps = s.pods.get(uid)
        if ps is None or ps.parked_on is None or ps.parked_on not in s.swaps:
            s.parked.pop(uid, None)
            if ps is not None:
                _unpark(s, ps)
    for key in list(s.swaps):
        sw = s.swaps.get(key)
        if sw is None:
            continue
        rt = s.apps.get(sw.app)
        if rt is None or rt.state in _OVER or sw.node not in s.cluster.nodes:
            _drop(s, sw)  # given up: its pod, if any, waits as any pod of a missing app
            continue
        if sw.real is None:
            if rt.admitted and rt.state is not AppState.RESUMING and not rt.placeholders_expired:
                _hand_over(s, rt, sw)
            if sw.real is None:
                if sw.placeholder not in s.pods and s.reached(sw.keep_until):
                    _drop(s, sw)  # nobody took it: the room is released
                continue
        if sw.placeholder in s.pods:
            continue
        _complete(s, sw, now)


def _hand_over(s: Session, rt: AppRuntime, sw: Swap) -> None:
    """Give ``sw`` to the first pending real member of its task group that fits there."""
    waiting = []
    for uid in s.app_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        pod = ps.pod
        if (not pod.placeholder and pod.task_group == sw.group and uid in s.pending
                and ps.parked_on is None and not ps.swapped and not pod.invalid
                and s.reached(ps.backoff_until)):
            waiting.append(ps)
    waiting.sort(key=placement_order)
    for ps in waiting:
        extra = sw.held + _standing(s, sw)
        if s.cluster.fits(sw.node, ps.request, ps.constraints, extra=extra, pod=ps.info,
                          replacing=sw.placeholder):
            _join(s, rt, ps, sw)
            return


def _complete(s: Session, sw: Swap, now: float) -> None:
    """The placeholder is gone: the room held is released and the real pod placed."""
    node, placeholder = sw.node, sw.name
    real = s.pods.get(sw.real) if sw.real is not None else None
    _drop(s, sw)
    if real is None:
        return
    ps = real
    pod = ps.pod
    if not ps.pending or pod.app is None or pod.app not in s.apps:
        return  # bound meanwhile, or its app went away: it waits for the app
    target = ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
    quota = s.queues.fits(s.queue_of(ps) or DEFAULT_QUEUE, ps.request)
    # The placeholder's devices were given back just now (``_drop``): the member's own
    # claims get devices on that node in this same step, before any other pod is placed.
    if quota.ok and s.cluster.fits(node, ps.request, ps.constraints, pod=ps.info):
        # its own claims, on the placeholder's node
        volume_placing.reserve(s.cluster, s.volumes, ps.uid, ps.pod, node)
        s.bind(ps, node, "PlaceholderReplaced")
        s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                f"took the place of placeholder {placeholder} on node {node}")
        return
    state = s.cluster.nodes.get(node)
    why = (resource_claims.failure_on(s.volumes, pod.namespace, pod.volumes, pod.uid,
                                      state.node)
           if state is not None and pod.volumes.dynamic else None)
    if why is not None:
        s.event(target, EventType.WARNING, "PlaceholderReplaced",
                f"its resource claims cannot be allocated on node {node}, where "
                f"placeholder {placeholder} held devices for its task group: {why}; "
                "those devices are free again")
    if ordinary_logic.place(s, ps, now, "PlaceholderReplacedElsewhere"):
        s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                f"did not fit on node {node} after its placeholder left; placed elsewhere")


HELD_RETRY = 0.2
"""Seconds before a real pod whose bind failed after its swap tries again, doubling per
failure (never later than the ordinary bind backoff)."""

BOUND_AGAIN = "bind:"
"""Prefix of the key of a swap kept for a real pod whose bind failed (no placeholder)."""


def bind_failed(s: Session, ps: PodState, node: str) -> None:
    """The bind of ``ps``, a real gang member that took its placeholder's place, to
    ``node`` failed (not 409: it is not bound). Its room there stays its gang's: a swap
    with no placeholder holds it, and is handed to a pending member of the task group
    (this one, once its backoff has run) or given up a second after that backoff if none
    takes it. Without it, the room a placeholder held for the gang went to whoever
    came next, and the job ran part of its executors until some other room freed up."""
    pod = ps.pod
    if pod.app is None or pod.placeholder or not ps.swapped or node not in s.cluster.nodes:
        return
    key = PodUID(BOUND_AGAIN + ps.uid)
    sw = s.swaps.get(key)
    if sw is None:
        sw = Swap(key, pod.name, node, pod.app, pod.task_group or "", ps.request, None)
        s.swaps[key] = sw
    # The room waits for it and the rest of its gang runs already: it tries again
    # sooner than a pod with nothing held (a fifth of the backoff, doubling the same).
    ps.backoff_until = min(ps.backoff_until, s.now + HELD_RETRY * 2 ** (ps.failures - 1))
    sw.keep_until = max(ps.backoff_until, s.now) + 1.0
    _sync(s, sw)  # asks whether keep_until is reached: a cycle wakes then
