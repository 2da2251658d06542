"""What the queues are charged for their pods: moved pod by pod, or recounted whole.

A pod of ours on a node is charged to its leaf queue (its Application's, else its
PodGroup's, else its own; ``Session.queue_of``). When an application or pod group
appears, goes or changes queue, :func:`recharge` moves the charge of its pods alone; when
the queues themselves change, :func:`rebuild` recounts every queue from the pods.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gangsched.core.state.session import Session
    from gangsched.core.values.model import PodUID


def recharge(s: Session, uids: Iterable[PodUID]) -> None:
    """Move the queue charge of these pods to the queue they belong to now: O(those
    pods), not a recount of every pod."""
    for uid in uids:
        ps = s.pods.get(uid)
        if ps is None or ps.node is None:
            continue
        queue = s.queue_of(ps)
        if queue == ps.charged_queue:
            continue
        if ps.charged_queue is not None:
            s.queues.release(ps.charged_queue, ps.request, placeholder=ps.pod.placeholder)
        if queue is not None:
            s.queues.charge(queue, ps.request, placeholder=ps.pod.placeholder)
        ps.charged_queue = queue
        s.queues_dirty = True


def rebuild(s: Session) -> None:
    """Recount every queue's usage from the pods (queue specs or membership changed)."""
    queues = s.queues
    queues.used.clear()
    queues.placeholder_used.clear()
    queues.charged.clear()
    for ps in s.pods.values():
        ps.charged_queue = None
        if ps.node is not None:
            queue = s.queue_of(ps)
            if queue is not None:
                queues.charge(queue, ps.request, placeholder=ps.pod.placeholder)
                ps.charged_queue = queue
    queues.earmarked.clear()
    for app in s.apps.values():
        if app.earmark:
            queues.earmark(app.spec.queue, app.earmark)
    for group in s.groups.values():
        if group.earmark:
            queues.earmark(group.spec.queue, group.earmark)
    s.queues_dirty = True
