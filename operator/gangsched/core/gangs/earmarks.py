"""Earmarks of enqueued PodGroups: the queue headroom a gang holds until it is placed.

An Application earmarks when it is admitted (:mod:`~gangsched.core.gangs.reservation`); a
PodGroup once the ``enqueue`` action lets it in, and until its members hold its minimum.
The PodGroup lifecycle (:mod:`~gangsched.core.gangs.podgroups`), the ``enqueue`` action, elect
and deadlock breaking all keep these equal to what the gang still needs, through the
functions here (none of them depends on the others for it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gangsched.core.placement.cluster import ONE_POD
from gangsched.core.state.records import GroupRuntime
from gangsched.core.values.model import PodGroupSpec
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

ENQUEUE = "enqueue"
"""The name of the admission action."""


def enabled(s: Session) -> bool:
    """Is admission control (the ``enqueue`` action) on? Without it every gang is
    admitted at once, and nothing is earmarked for PodGroups."""
    return ENQUEUE in s.config.actions


def group_minimum(spec: PodGroupSpec) -> Resources:
    """A PodGroup's minimum: ``minResources`` and one pod slot per ``minMember``."""
    return spec.min_resources + ONE_POD.scale(spec.min_member)


def group_held(s: Session, rt: GroupRuntime) -> Resources:
    """What a PodGroup's assumed and bound members hold."""
    held = Resources.ZERO
    for uid in s.group_members.get(rt.spec.key, ()):
        ps = s.pods[uid]
        if ps.node is not None and ps.pod.active:
            held = held + ps.request
    return held


def group_claim(s: Session, rt: GroupRuntime) -> Resources:
    """What an enqueued PodGroup still needs of its minimum: the minimum less what its
    assumed and bound members hold. Zero when not enqueued, satisfied or timed out, and
    without the enqueue action (nothing is earmarked then)."""
    if not rt.inqueue or rt.satisfied or rt.timed_out or not enabled(s):
        return Resources.ZERO
    return (group_minimum(rt.spec) - group_held(s, rt)).clamp_non_negative()


def update_group_earmark(s: Session, rt: GroupRuntime) -> None:
    """Keep the queue earmark of ``rt`` equal to :func:`group_claim`."""
    wanted = group_claim(s, rt)
    if wanted != rt.earmark:
        drop_group_earmark(s, rt)
        if wanted:
            s.queues.earmark(rt.spec.queue, wanted)
            rt.earmark = wanted
            s.queues_dirty = True


def drop_group_earmark(s: Session, rt: GroupRuntime) -> None:
    """Give back the queue headroom ``rt`` earmarks; nothing when it earmarks nothing."""
    if rt.earmark:
        s.queues.unearmark(rt.spec.queue, rt.earmark)
        rt.earmark = Resources.ZERO
        s.queues_dirty = True
