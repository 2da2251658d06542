"""A pod observed, gone, or not bound: its place in its gang, its charges, its wait.

The scheduler records each pod observation through these functions. A pod *joins* the
members of its Application and PodGroup when first seen (a pod with scheduling gates has
not arrived yet), *leaves* them when it goes or changes gang, and every move of a member
bumps its gang's members' version, so that what is kept of the members is made again.
A pod seen on a node is charged there (a nominated pod of another scheduler is charged on
its nominated node); a bind the core asked for that failed is released and backs off.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import gangsched.core.gangs.apps as app_logic
import gangsched.core.gangs.podgroups as group_logic
import gangsched.core.gangs.reservation as reservation_logic
import gangsched.core.gangs.swap as swap_logic
from gangsched.core.state.records import PodState
from gangsched.core.values.decisions import EventType, ObjectRef
from gangsched.core.values.model import Pod, PodUID
from gangsched.core.values.observations import BindFailed, PodObserved

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


def pod_observed(s: Session, obs: PodObserved) -> None:
    pod = obs.pod
    ps = s.pods.get(pod.uid)
    if ps is None:
        ps = PodState(pod)
        s.pods[pod.uid] = ps
        s.pod_by_name[pod.ref] = pod.uid
        join(s, ps)
        if pod.placeholder:
            app_logic.placeholder_observed(s, ps)
    elif _membership(ps.pod) != _membership(pod):
        if ps.node is not None and pod.requests != ps.pod.requests:
            s.uncharge(ps)
        leave(s, ps)
        ps.update(pod)
        join(s, ps)
        s.recharge((ps.uid,))
        if pod.placeholder:
            app_logic.placeholder_observed(s, ps)
    elif ps.node is not None and pod.requests != ps.pod.requests:
        held = ps.node  # charged with the old request: charge the new one, same place
        s.uncharge(ps)
        ps.update(pod)
        s.charge(ps, held)
    else:
        if ps.node is not None and pod.terminating != ps.pod.terminating:
            _terminating_changed(s, ps, pod)
        if ps.node is None and pod.volumes != ps.pod.volumes and pod.pod_group is not None:
            # A pending member's claims changed (the resourceclaim controller listed the
            # claim it made): a PodGroup that failed without it may fit now.
            group = s.groups.get(pod.pod_group)
            if group is not None:
                group.failed_epoch = -1
        ps.update(pod)
    if pod.node_name is not None and pod.active:
        if ps.node != pod.node_name:
            s.uncharge(ps)
            s.charge(ps, pod.node_name)
        if ps.assumed:
            ps.assumed = False
            app_logic.real_pod_confirmed(s, ps)
        group_logic.unassume(s, ps)
        reservation_logic.unassume(s, ps)
    elif not pod.active:
        s.uncharge(ps)
        ps.assumed = False
        group_logic.unassume(s, ps)
        reservation_logic.unassume(s, ps)
    elif not pod.ours and ps.node != pod.nominated_node:
        # Room that preemption made for another scheduler's pod is taken (as
        # kube-scheduler counts nominated pods); it moves with the nomination, unless
        # a pod of higher priority took it (``evictions``: ``PodState.displaced``).
        s.uncharge(ps)
        if pod.nominated_node != ps.displaced:
            ps.displaced = None
        if (pod.nominated_node is not None and not pod.terminating
                and ps.displaced is None):
            s.charge(ps, pod.nominated_node)
    s.refresh_pending(ps)
    s.touch_owner(ps)
    s.pressure.track(ps)
    if s.swaps or pod.placeholder:
        swap_logic.observed(s, ps)


def _terminating_changed(s: Session, ps: PodState, pod: Pod) -> None:
    """A charged pod began (or, in a stale observation, stopped) terminating: it keeps
    its node's capacity until it is gone, but topology spread no longer counts it (see
    :class:`~gangsched.core.framework.podindex.PlacedPod`), as kube-scheduler's does not.

    A placeholder is the exception: while it terminates, the real member taking its
    place is on its way to that node (the swap holds the room), so it goes on counting
    for that member. Left out, a gang spread one per node saw the nodes of the
    placeholders still leaving as empty, and turned its next member away from its own
    placeholder's node."""
    if pod.placeholder:
        return
    placed = s.cluster.pod_index.pods.get(ps.uid)
    if placed is not None:
        s.cluster.pod_index.add(dataclasses.replace(placed, terminating=pod.terminating))
        s.cluster.retry()


def pod_gone(s: Session, uid: PodUID) -> None:
    ps = s.pods.pop(uid, None)
    if ps is None:
        return
    s.pod_by_name.pop(ps.pod.ref, None)
    ps.preemptor = None  # it refers back to the pod: let reference counting free both
    s.uncharge(ps)
    # A placeholder whose place a real member is taking keeps the devices it holds for
    # its task group until the swap ends (``swap._drop``): never a moment with neither.
    s.volumes.forget_pod(uid, devices=uid not in s.swaps)
    s.pending.pop(uid, None)
    s.pending_shapes.remove(uid)
    s.waiting_for_room.pop(uid, None)
    s.parked.pop(uid, None)
    s.deleting.pop(uid, None)
    if s.swaps:
        swap_logic.observed(s, ps, gone=True)
    s.touch_owner(ps)
    leave(s, ps)
    app_logic.pod_gone(s, ps)
    group_logic.pod_gone(s, ps)
    s.pressure.forget(uid)  # last: releasing its node above counted it again

def join(s: Session, ps: PodState) -> None:
    """Count the pod as a member of its gang; a gated pod has not arrived yet."""
    pod = ps.pod
    if ps.gated:
        return
    if pod.app is not None:
        s.app_members.setdefault(pod.app, set()).add(pod.uid)
    if pod.pod_group is not None:
        s.group_members.setdefault(pod.pod_group, set()).add(pod.uid)
        group = s.groups.get(pod.pod_group)
        if group is not None:
            group.failed_epoch = -1  # a new member: the gang may be complete now
    member_moved(s, ps)

def member_moved(s: Session, ps: PodState) -> None:
    """A member of an Application or PodGroup joined, left, was observed, charged or
    released: its gang's members' version moves (what is kept of the members,
    see ``reservation.members`` and ``preemptors.for_groups``, is made again)."""
    pod = ps.pod
    if pod.app is not None:
        app = s.apps.get(pod.app)
        if app is not None:
            app.members_version += 1
    if pod.pod_group is not None:
        group = s.groups.get(pod.pod_group)
        if group is not None:
            group.members_version += 1

def leave(s: Session, ps: PodState) -> None:
    pod = ps.pod
    member_moved(s, ps)
    if pod.app is not None:
        members = s.app_members.get(pod.app)
        if members is not None:
            members.discard(pod.uid)
        app = s.apps.get(pod.app)
        if app is not None and pod.uid in app.assumed:
            reservation_logic.unassume(s, ps)
            if pod.node_name is None:
                s.uncharge(ps)
    if pod.pod_group is not None:
        group_members = s.group_members.get(pod.pod_group)
        if group_members is not None:
            group_members.discard(pod.uid)
        group = s.groups.get(pod.pod_group)
        if group is not None and pod.uid in group.assumed:
            group_logic.unassume(s, ps)
            if pod.node_name is None:
                s.uncharge(ps)

def bind_failed(s: Session, obs: BindFailed, *, volumes: bool = False) -> None:
    """A bind the core asked for did not happen: release the assumption and requeue.

    409 means the pod is bound already (an earlier attempt did succeed): no backoff,
    the observation of the bound pod follows. Any other code (404: the pod is gone,
    its deletion follows) backs off, doubling from ``bind_backoff_initial`` up to
    ``bind_backoff_max``, and the pod waits with reason ``BindFailed`` (the same
    message for the same error, so repeated failures make one Event series). A real
    gang member that took its placeholder's place keeps that room for its gang while it
    backs off (other than on a 404), and tries again sooner
    (:func:`gangsched.core.gangs.swap.bind_failed`). A failure for a pod the core did not
    ask to bind is ignored.
    """
    ps = s.pods.get(obs.uid)
    if ps is None or not ps.assumed:
        return
    ps.assumed = False
    s.uncharge(ps)
    what = "binding its volumes for node" if volumes else "binding to node"
    text = f"{what} {obs.node} failed ({obs.code}): {obs.message}".rstrip(": ")
    if obs.code == 409 and not volumes:
        s.event(ObjectRef("Pod", ps.pod.namespace, ps.pod.name, ps.uid),
                   EventType.WARNING, "BindFailed", text)
    else:
        ps.failures += 1
        delay = s.config.bind_backoff_initial * 2 ** (ps.failures - 1)
        ps.backoff_until = s.now + min(delay, s.config.bind_backoff_max)
        s.mark_pending(ps, "VolumeBindFailed" if volumes else "BindFailed", text)
        if obs.code != 404:
            swap_logic.bind_failed(s, ps, obs.node)
    s.refresh_pending(ps)
    s.touch_owner(ps)


def _membership(pod: Pod) -> tuple[object, ...]:
    return (pod.app, pod.pod_group, bool(pod.placement.gates))
