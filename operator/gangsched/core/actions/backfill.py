"""The ``backfill`` action: best-effort pods on any feasible node, after the gangs.

As Volcano's backfill (``scheduler-actions.zh.txt``): pods that request nothing (best
effort) are cheap to place and should not wait behind the big work, nor get in its way.
With ``backfill`` among the actions, ``allocate`` leaves them alone and this action, run
after it, places each on a feasible node: one that passes the static filters (node
selector, affinity, taints, readiness), has a free pod slot, and is not reserved for a
starving gang. Among those it takes the one with the fewest pods (spread, sampled like
any placement): the free pod slots that gangs need are the last to go.

Only pods outside any gang in progress are backfilled: pods with neither an Application
nor a PodGroup, and pods of Applications without task groups. Gang members are always
``allocate``'s, whatever they request, so the gang condition is never bypassed. A pod
still counts one ``pods`` slot against its queue's quota. Best-effort pods of an
application move it along (``Accepted`` -> ``Starting`` -> ``Running``) as any real pod
does; a ``stateaware`` queue's gate does not hold them back, since they take no capacity.
They are bound with reason ``Backfilled``.

Without ``backfill`` among the actions, ``allocate`` places best-effort pods like any
other pod, in queue order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.ordinary as ordinary_logic
from gangsched.core.gangs.apps import NOT_SCHEDULABLE, real_allocated
from gangsched.core.gangs.best_effort import is_best_effort
from gangsched.core.values.model import Scoring
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

def backfill(s: Session, now: float) -> None:
    """Place every pending best-effort pod that can be placed, in priority order."""
    found = [s.pods[uid] for uid in s.pending_shapes.requestless
             if is_best_effort(s, s.pods[uid])]  # (only these may be)
    found.sort(key=lambda p: (-p.pod.priority, p.pod.creation, p.pod.namespace, p.pod.name))
    for ps in found:
        if not ps.pending:
            continue
        pod = ps.pod
        rt = s.apps.get(pod.app) if pod.app is not None else None
        if rt is not None:
            if rt.state in (AppState.NEW, AppState.COMPLETED):
                s.mark_pending(ps, rt.reason,
                               rt.message or "the application is not accepted yet")
                continue
            if rt.state in NOT_SCHEDULABLE:
                s.mark_pending(ps, NOT_SCHEDULABLE[rt.state], rt.message)
                continue
        placed = ordinary_logic.place(s, ps, now, "Backfilled", scoring=Scoring.SPREAD)
        if placed and rt is not None:
            real_allocated(s, rt)
