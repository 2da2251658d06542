"""How placement uses the volume plugins: a small hook around ``Cluster.place``.

For a pod with volumes or resource claims, :func:`prepare` runs PreFilter and gives
either a :class:`~gangsched.core.volumes.check.Wait` (the pod is marked pending with it
and placed nowhere) or the per-node check that ``Cluster.place``/``diagnose``/``fits``
take as ``node_check``. Once a node is chosen, :func:`reserve` assumes the pod's volume
bindings there (before the next pod is placed, so that no two pods take one volume),
and :func:`writes` gives the PreBind writes its BindPod carries. A gang's members are
reserved one by one as they are assumed, and all of them before any is bound.
Assumptions are given back when the pod's placement is undone (``Scheduler.uncharge``
of a pod not yet bound) or its bind fails.

Pods without volumes pay one attribute test.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from gangsched.core.cluster import NodeCheck
from gangsched.core.decisions import VolumeWrite
from gangsched.core.volumes import binding, check

if TYPE_CHECKING:
    from gangsched.core.runtime import PodState
    from gangsched.core.scheduler import Scheduler


def prepare(s: Scheduler, ps: PodState) -> NodeCheck | check.Wait | None:
    """None for a pod without volumes; else a Wait, or the node check to place it with."""
    if not check.needed(ps.pod):
        return None
    found = check.prefilter(s.volumes, ps.pod)
    if isinstance(found, check.Wait):
        return found
    return functools.partial(check.node_failure, s.volumes, found)


def place_or_wait(s: Scheduler, ps: PodState) -> tuple[bool, NodeCheck | None]:
    """(False, None) after marking the pod pending when PreFilter says it must wait; else
    (True, the node check or None)."""
    found = prepare(s, ps)
    if isinstance(found, check.Wait):
        s.mark_pending(ps, found.plugin, found.message)
        ps.blocked_epoch = s.cluster.free_epoch
        return False, None
    return True, found


def reserve(s: Scheduler, ps: PodState, node: str) -> None:
    """Assume the pod's volume bindings on ``node`` (a no-op for a pod without claims)."""
    if not ps.pod.volumes.claims:
        return
    state = s.cluster.nodes.get(node)
    found = check.prefilter(s.volumes, ps.pod)
    if state is None or isinstance(found, check.Wait):
        return
    s.volumes.assume(ps.uid, check.plan(s.volumes, found, state.node))


def writes(s: Scheduler, ps: PodState) -> tuple[VolumeWrite, ...]:
    """The PreBind writes for the bindings pod ``ps`` assumed (none for most pods)."""
    assumed = s.volumes.by_pod.get(ps.uid)
    if not assumed:
        return ()
    return binding.writes(s.volumes, assumed)
