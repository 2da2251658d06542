"""The swap: a real gang member takes the place of one of its task group's placeholders.

As in YuniKorn's design (``gang-scheduling-design.txt``, "Scheduler logic changes"):

1. A real pod X of task group G, once the gang is reserved, picks an allocated,
   unreleased placeholder P of G, preferring one on a node where X fits once P is gone.
   If X is larger than P, the queue must have room for the difference, or X waits with
   ``QueueQuota`` and P stays.
2. P's deletion is asked for (reason ``PlaceholderReplaced``, "replaced by pod X") and X
   is *parked*: it holds nothing and is not scheduled until P's deletion is observed.
3. Then X is bound to P's node if it fits there: its *own* full constraints are checked
   by every filter of the profile (capacity, taints, node affinity, host ports, pod
   (anti-)affinity, spread -- X may differ from its task group's template), and the
   queue quota. Otherwise it is placed like an ordinary pod on any node that fits
   (Event ``PlaceholderReplaced``: "did not fit on node N after its placeholder left;
   placed elsewhere"); otherwise it stays pending, saying why in kube-scheduler's words.
   While P still stands, choosing a placeholder leaves P itself out of X's affinity and
   spread counts (X takes its place).

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
from gangsched.core.state.records import AppRuntime, PodState
from gangsched.core.values.decisions import DeleteReason, EventType, ObjectRef
from gangsched.core.values.model import DEFAULT_QUEUE
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


class FreePlaceholders:
    """An app's allocated, unreleased placeholders by task group, collected on first use.

    Built once per app and cycle (not once per real pod), so placing n real pods costs
    O(members + n), not O(members x n).
    """

    def __init__(self, s: Session, rt: AppRuntime) -> None:
        self._s = s
        self._rt = rt
        self._by_group: dict[str, list[PodState]] | None = None

    def _index(self) -> dict[str, list[PodState]]:
        if self._by_group is None:
            found: dict[str, list[PodState]] = {}
            s = self._s
            for uid in s.app_members.get(self._rt.spec.key, ()):
                ps = s.pods[uid]
                pod = ps.pod
                if (pod.placeholder and ps.node is not None and ps.release_reason is None
                        and not pod.terminating and pod.active):
                    found.setdefault(pod.task_group or "", []).append(ps)
            for group in found.values():
                group.sort(key=lambda p: p.pod.name)
            self._by_group = found
        return self._by_group

    def pick(self, group: str, real: PodState) -> PodState | None:
        """The placeholder ``real`` should take: first by name on a node where it fits."""
        candidates = self._index().get(group)
        if not candidates:
            return None
        cluster = self._s.cluster
        for ph in candidates:
            node = ph.node
            if node is not None and cluster.fits(node, real.request, real.constraints,
                                                 extra=ph.request, pod=real.info,
                                                 replacing=ph.uid):
                return ph
        return candidates[0]

    def remove(self, ph: PodState) -> None:
        self._index()[ph.pod.task_group or ""].remove(ph)


def place_real(
    s: Session, rt: AppRuntime, ps: PodState, free: FreePlaceholders, now: float
) -> None:
    """Place one pending real pod of a reserved (or resumed) app."""
    if ps.parked_on is not None or not s.reached(ps.backoff_until):
        return
    group = rt.spec.group(ps.pod.task_group)
    if (group is not None and not ps.swapped and not ps.pod.invalid
            and rt.state is not AppState.RESUMING and not rt.placeholders_expired):
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
    release(s, rt, placeholder, DeleteReason.PLACEHOLDER_REPLACED, f"replaced by pod {ps.pod.ref}")
    ps.parked_on, ps.parked_node, ps.parked_name = placeholder.uid, placeholder.node, ph.name
    ps.swapped = True
    s.parked[ps.uid] = None
    rt.counter(ph.task_group or "").replaced += 1
    s.mark_pending(ps, "WaitingForPlaceholder",
                   f"placeholder {ph.name} on node {placeholder.node} is being "
                   "deleted to make room for this pod")
    real_allocated(s, rt)


def complete_swaps(s: Session, now: float) -> None:
    """Bind real pods whose placeholder's deletion has been observed."""
    for uid in list(s.parked):
        ps = s.pods.get(uid)
        if ps is None or ps.parked_on is None:
            del s.parked[uid]
            continue
        if ps.parked_on in s.pods:
            continue
        del s.parked[uid]
        node, placeholder = ps.parked_node, ps.parked_name
        ps.parked_on = ps.parked_node = None
        ps.parked_name = ""
        pod = ps.pod
        if not ps.pending or pod.app is None or pod.app not in s.apps:
            continue  # bound meanwhile, or its app went away: it waits for the app
        target = ObjectRef("Pod", pod.namespace, pod.name, pod.uid)
        quota = s.queues.fits(s.queue_of(ps) or DEFAULT_QUEUE, ps.request)
        if (quota.ok and node is not None
                and s.cluster.fits(node, ps.request, ps.constraints, pod=ps.info)):
            # its own claims, on the placeholder's node
            volume_placing.reserve(s.cluster, s.volumes, ps.uid, ps.pod, node)
            s.bind(ps, node, "PlaceholderReplaced")
            s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                    f"took the place of placeholder {placeholder} on node {node}")
        elif ordinary_logic.place(s, ps, now, "PlaceholderReplacedElsewhere"):
            s.event(target, EventType.NORMAL, "PlaceholderReplaced",
                    f"did not fit on node {node} after its placeholder left; placed elsewhere")
