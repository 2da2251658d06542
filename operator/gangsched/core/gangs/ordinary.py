"""Ordinary pods: pods of ours with no gang condition, placed one by one in their queue.

Pods with neither an Application nor a PodGroup are units of their own; real pods of an
application without a placeholder to take, and members of a PodGroup that is already
satisfied, are placed the same way (:func:`place`); a member of a gang that asks for a
topology is placed inside the domain its gang's placed members share
(:func:`~gangsched.core.gangs.gangplace.fit_alone`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.best_effort as backfill_logic
from gangsched.core.gangs import gangplace
from gangsched.core.placement import volume_assumptions as volume_placing
from gangsched.core.state.records import PodState
from gangsched.core.values import naming
from gangsched.core.values.model import DEFAULT_QUEUE, Scoring, SortPolicy

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def sort_key(s: Session, queue: str, priority: int, creation: float,
             ref: str) -> tuple[object, ...]:
    """Order within a queue: ``priority`` queues by (priority desc, creation, name); the
    others (fifo, stateaware, fair) by (creation, priority desc, name). Names compare in
    natural order (:func:`~gangsched.core.values.naming.natural_key`): of two gangs submitted at
    the same instant, ``spark-2`` goes before ``spark-10``."""
    return _key(_by_priority(s, queue), priority, creation, ref)


def _by_priority(s: Session, queue: str) -> bool:
    spec = s.queues.spec(queue)
    return spec is not None and spec.sort_policy is SortPolicy.PRIORITY


def _key(by_priority: bool, priority: int, creation: float, ref: str) -> tuple[object, ...]:
    name = naming.natural_key(ref)
    return (-priority, creation, name) if by_priority else (creation, -priority, name)


def units(s: Session) -> list[tuple[str, tuple[object, ...], object]]:
    """The pending pods with neither an Application nor a PodGroup, with their queue
    (best-effort ones are the ``backfill`` action's when it runs).

    A pod that :func:`place` would pass over with nothing to say is left out: it fit
    nowhere and nothing that may let it fit changed since (:func:`dormant`). Its queue
    still has a unit, which does nothing, so that the queues served are the same. In
    the cycle that observes a wave of binds, that is the whole backlog of such pods."""
    found: list[tuple[str, tuple[object, ...], object]] = []
    backfill = backfill_logic.enabled(s)
    requestless = s.pending_shapes.requestless  # only these may be best-effort
    policies: dict[str, bool] = {}
    quiet: set[str] = set()
    for uid in s.pending_shapes.plain:
        ps = s.pods[uid]
        pod = ps.pod
        if backfill and uid in requestless and backfill_logic.is_best_effort(s, ps):
            continue
        queue = pod.queue or DEFAULT_QUEUE
        if dormant(s, ps, queue):
            quiet.add(queue)
            continue
        by_priority = policies.get(queue)
        if by_priority is None:
            by_priority = policies[queue] = _by_priority(s, queue)
        order = ps.order
        if order is None or order[0] != queue or order[1] is not by_priority:
            order = ps.order = (queue, by_priority,
                                _key(by_priority, pod.priority, pod.creation, pod.ref))
        found.append((queue, order[2], ps))
    found.extend((queue, (), None) for queue in sorted(quiet))
    return found


def dormant(s: Session, ps: PodState, queue: str) -> bool:
    """Would :func:`place` return at once, deciding nothing? The pod is valid, out of
    backoff, its queue fits whatever it asks, and it fit nowhere when nothing that may
    let it fit had changed as it has now (its retry epoch)."""
    return (ps.blocked_epoch >= 0 and not ps.pod.invalid and s.reached(ps.backoff_until)
            and s.queues.unlimited(queue)
            and ps.blocked_epoch == s.cluster.retry_epoch(ps.info))


def place(s: Session, ps: PodState, now: float, reason: str,
          scoring: Scoring | None = None) -> bool:
    """Place one pod on its own. True if a bind was asked for; else it says why it waits.

    An invalid pod waits with ``InvalidPod``; one in backoff after a failed bind waits
    silently; then the queue (``QueueNotFound``, ``QueueQuota``) and the nodes
    (``Reservation`` when only nodes reserved for a starving gang would take it,
    ``Constraints`` when filters other than capacity exclude every node, else
    ``Capacity``; the message is kube-scheduler's ``0/N nodes are available: ...``).
    Nodes are scored with ``scoring``, by default the configured ``pod_scoring``.
    """
    pod = ps.pod
    if pod.invalid:
        s.mark_pending(ps, "InvalidPod", pod.invalid)
        return False
    if not s.reached(ps.backoff_until):
        return False
    check = s.queues.fits(s.queue_of(ps) or DEFAULT_QUEUE, ps.request)
    if not check.ok:
        why = "QueueNotFound" if check.problem else "QueueQuota"
        s.mark_pending(ps, why, check.describe(ps.request, "the pod"))
        return False
    epoch = s.cluster.retry_epoch(ps.info)
    if ps.blocked_epoch == epoch:
        return False  # nothing changed since it last fit nowhere
    found = gangplace.fit_alone(s, ps, scoring or s.config.pod_scoring,
                                judged=ps.blocked_epoch >= 0)
    if not isinstance(found, str):
        ps.blocked_epoch = epoch
        s.mark_pending(ps, found.reason, found.message(ps.request))
        return False
    node = found
    volume_placing.reserve(s.cluster, s.volumes, ps.uid, ps.pod, node)
    s.bind(ps, node, reason)
    return True
