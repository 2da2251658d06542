"""The ``elect`` and ``reserve`` actions: nodes held for a starving gang, for a while.

As Volcano's elect and reserve (``scheduler-actions.zh.txt``): a held or half-placed big
gang can starve for ever while smaller or later work keeps taking the capacity that frees
up. So:

* ``elect`` picks one *target*: among the gangs that wait for capacity (an Accepted
  Application not yet reserved, a PodGroup not yet scheduled) and have waited at least
  ``starvation_threshold`` seconds, the highest priority one, then the one waiting
  longest, then by key. A gang waits from its acceptance (an Application) or its
  creation (a PodGroup). A gang whose queue quota is what holds it back is not elected:
  nodes would not help it. One target at a time.
* ``reserve`` locks a set of nodes for it: the nodes whose free capacity, together with
  what is draining from them (pods being deleted: released placeholders, terminating
  pods), fits the members it still lacks, packed first-fit-decreasing over the nodes that
  have the most of that; members that fit no such node are packed by allocatable (the
  node drains as its pods finish, since nothing new lands there). From then on no new pod
  of any other gang, nor any other pod, is placed on those nodes (``Cluster.place``
  skips them); pods kept off them for that reason wait with ``Reservation``. The target
  itself may still be placed anywhere.

The reservation ends when the target fits (an Application is reserved, a PodGroup is
scheduled), goes away, times out, or becomes a deadlock victim, and at the latest
``reservation_timeout`` seconds after it began. Then the nodes are given back at once and
its wait counts again from that moment: another starving gang gets its turn, so neither
do ordinary pods starve a big gang for ever, nor does a big gang hold nodes idle for ever.

Effects people can see: the target's status carries ``reservedNodes`` and
``reservationExpiry``; each node has the annotation ``gangsched.io/reserved-for:
<namespace>/<name>`` while held (removed when released); events on the target:
``NodesReserved`` (Normal) and ``ReservationReleased`` (Normal, with why). After an
operator restart the reservation is taken back from the target's status, with its
original expiry, and stale node annotations are removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import gangsched.core.gangs.earmarks as earmarks
import gangsched.core.gangs.podgroups as group_logic
from gangsched.core.gangs.reservation import members, ref, remaining_ask, taken
from gangsched.core.placement.cluster import (
    NO_CONSTRAINTS,
    ONE_POD,
    Constraints,
    NodeState,
    static_failure,
)
from gangsched.core.state.node_reservation import NodeReservation
from gangsched.core.state.records import AppRuntime, GroupRuntime, placement_order
from gangsched.core.values.decisions import AnnotateNode, EventType, ObjectRef
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

ANNOTATION = "gangsched.io/reserved-for"
"""The node annotation naming the gang a node is reserved for."""

APPLICATION = "Application"
POD_GROUP = "PodGroup"


# --- elect -------------------------------------------------------------------------------


def elect(s: Session, now: float) -> None:
    """End the current reservation if it is over; elect a target when there is none."""
    _restore(s, now)
    held = s.node_reservation
    if held is not None:
        ended = _ended(s, held, now)
        if ended is None:
            return
        release(s, *ended)
    _elect(s, now)


def _ended(s: Session, held: NodeReservation, now: float) -> tuple[str, str] | None:
    """Why the reservation is over, or None while it holds."""
    if held.kind == APPLICATION:
        rt = s.apps.get(AppKey(held.key))
        if rt is None or rt.state is not AppState.ACCEPTED or rt.placeholders_expired:
            return "TargetDone", "the gang left Accepted"
        if rt.reserved:
            return "GangFits", "every placeholder of the gang is allocated"
        if not s.reached(rt.retry_after):
            return "DeadlockVictim", "the gang was released to break a deadlock"
    else:
        groups = [s.groups.get(GroupKey(key)) for key in sorted(held.owners)]
        if any(g is None or g.timed_out or g.spec.invalid for g in groups):
            return "TargetDone", "the gang timed out, failed or was deleted"
        if all(g is not None and g.satisfied for g in groups):
            return "GangFits", "the gang is scheduled"
        if any(g is not None and not s.reached(g.retry_after) for g in groups):
            return "DeadlockVictim", "the gang was released to break a deadlock"
    if s.reached(held.expiry):
        for rt_ in _runtimes(s, held):
            rt_.starving_since = now
        return "ReservationExpired", (f"the gang did not fit within "
                                      f"{s.config.reservation_timeout:g}s; its wait counts "
                                      "again from now, so other gangs get their turn")
    return None


def _wait_start(rt: AppRuntime | GroupRuntime) -> float:
    base = rt.state_since if isinstance(rt, AppRuntime) else rt.spec.creation
    return base if rt.starving_since is None else max(base, rt.starving_since)


def _elect(s: Session, now: float) -> None:
    threshold = s.config.starvation_threshold
    found: list[tuple[tuple[object, ...], NodeReservation]] = []
    for key in sorted(s.apps):
        rt = s.apps[key]
        if (not rt.spec.gang or rt.state is not AppState.ACCEPTED or rt.reserved
                or rt.placeholders_expired or not s.reached(rt.retry_after)):
            continue
        since = _wait_start(rt)
        if not s.reached(since + threshold) or not _quota_allows(s, rt):
            continue
        found.append(((-rt.spec.priority, since, key),
                      NodeReservation(APPLICATION, key, frozenset({key}), now,
                                      now + s.config.reservation_timeout, now - since)))
    seen: set[str] = set()
    for gkey in sorted(s.groups):
        if gkey in seen:
            continue
        gang = group_logic.gang_of(s, s.groups[gkey].spec.key)
        if isinstance(gang, str):
            continue
        seen.update(g.spec.key for g in gang)
        if any(g.satisfied or g.timed_out or g.spec.invalid or not s.reached(g.retry_after)
               for g in gang):
            continue
        since = max(_wait_start(g) for g in gang)
        priority = max(g.spec.priority for g in gang)
        if not s.reached(since + threshold) or not all(_group_quota_allows(s, g) for g in gang):
            continue
        first = gang[0].spec.key
        found.append(((-priority, since, first),
                      NodeReservation(POD_GROUP, first, frozenset(g.spec.key for g in gang),
                                      now, now + s.config.reservation_timeout, now - since)))
    if found:
        found.sort(key=lambda item: item[0])
        s.node_reservation = found[0][1]
        s.stir()


def _quota_allows(s: Session, rt: AppRuntime) -> bool:
    placeholders, reals = members(s, rt)
    observed = {p.pod.name: p for p in placeholders
                if p.release_reason is None and not p.pod.terminating}
    need = remaining_ask(rt.spec, observed, taken(reals))
    return s.queues.fits(rt.spec.queue, need, own_earmark=rt.earmark).ok


def _group_quota_allows(s: Session, rt: GroupRuntime) -> bool:
    need = earmarks.group_minimum(rt.spec) - earmarks.group_held(s, rt)
    return s.queues.fits(rt.spec.queue, need.clamp_non_negative(), own_earmark=rt.earmark).ok


def _runtimes(s: Session, held: NodeReservation) -> list[AppRuntime | GroupRuntime]:
    found: list[AppRuntime | GroupRuntime] = []
    if held.kind == APPLICATION:
        app = s.apps.get(AppKey(held.key))
        if app is not None:
            found.append(app)
    else:
        for key in sorted(held.owners):
            group = s.groups.get(GroupKey(key))
            if group is not None:
                found.append(group)
    return found


def _targets(s: Session, held: NodeReservation) -> list[ObjectRef]:
    return [ref(rt) if isinstance(rt, AppRuntime) else group_logic.ref(rt)
            for rt in _runtimes(s, held)]


def release(s: Session, reason: str, message: str) -> None:
    """End the current reservation: the nodes are given back and unannotated."""
    held = s.node_reservation
    if held is None:
        return
    s.node_reservation = None
    s.stir()  # another gang may be elected next, even when this one held no nodes yet
    s.cluster.reserve((), (), "")
    for node in held.annotated:
        s.out.append(AnnotateNode(node, ANNOTATION, None))
    if held.nodes:
        text = f"nodes {', '.join(held.nodes)} given back: {message}"
        for target in _targets(s, held):
            s.event(target, EventType.NORMAL, "ReservationReleased", f"{reason}: {text}")
    for rt in _runtimes(s, held):
        rt.dirty = True


# --- restart -----------------------------------------------------------------------------


def _restore(s: Session, now: float) -> None:
    """Take back a reservation written into a gang's status before a restart (its original
    expiry, its nodes), and remove the annotations of any other one."""
    found: list[AppRuntime | GroupRuntime] = [*s.apps.values(), *s.groups.values()]
    for rt in found:
        restored = rt.restored_reservation
        if restored is None:
            continue
        rt.restored_reservation = None
        expiry, nodes = restored
        held = s.node_reservation
        if held is None and not s.reached(expiry) and _waiting(rt):
            kind, key, owners = _identity(s, rt)
            since = expiry - s.config.reservation_timeout
            kept = tuple(n for n in nodes if n in s.cluster.nodes)
            s.node_reservation = NodeReservation(kind, key, owners, since, expiry,
                                                 now - _wait_start(rt), kept, kept)
            s.cluster.reserve(kept, owners, key)
            for node in kept:  # idempotent: in case the annotation was lost meanwhile
                s.out.append(AnnotateNode(node, ANNOTATION, key))
            rt.dirty = True
            continue
        keep = set(held.annotated) if held is not None else set()
        for node in nodes:
            if node not in keep:
                s.out.append(AnnotateNode(node, ANNOTATION, None))


def _waiting(rt: AppRuntime | GroupRuntime) -> bool:
    if isinstance(rt, AppRuntime):
        return rt.state in (AppState.NEW, AppState.ACCEPTED) and not rt.reserved
    return not (rt.satisfied or rt.timed_out)


def _identity(s: Session, rt: AppRuntime | GroupRuntime) -> tuple[str, str, frozenset[str]]:
    if isinstance(rt, AppRuntime):
        return APPLICATION, rt.spec.key, frozenset({rt.spec.key})
    gang = group_logic.gang_of(s, rt.spec.key)
    if isinstance(gang, str):
        return POD_GROUP, rt.spec.key, frozenset({rt.spec.key})
    return POD_GROUP, gang[0].spec.key, frozenset(g.spec.key for g in gang)


# --- reserve -----------------------------------------------------------------------------


def reserve(s: Session, now: float) -> None:
    """Lock nodes for the elected gang (again if one of its nodes went away)."""
    held = s.node_reservation
    if held is None:
        return
    if held.nodes and all(node in s.cluster.nodes for node in held.nodes):
        return
    demand = _demand(s, held)
    if not demand:
        return  # nothing missing: elect ends the reservation once the gang fits
    nodes = pick_nodes(s, demand)
    if nodes is None:
        for rt in _runtimes(s, held):
            rt.starving_since = now
        release(s, "NoNodesFit", "no set of nodes can take the gang's missing members")
        return
    held.nodes = nodes
    s.cluster.reserve(nodes, held.owners, held.key)
    for node in held.annotated:
        if node not in nodes:
            s.out.append(AnnotateNode(node, ANNOTATION, None))
    for node in nodes:
        if node not in held.annotated:
            s.out.append(AnnotateNode(node, ANNOTATION, held.key))
    held.annotated = nodes
    message = (f"waited {held.waited:g}s for capacity: nodes {', '.join(nodes)} are reserved "
               f"for this gang until it fits, for at most {held.expiry - now:g}s; no other "
               "pod is placed there meanwhile")
    for target in _targets(s, held):
        s.event(target, EventType.NORMAL, "NodesReserved", message)
    for rt in _runtimes(s, held):
        rt.dirty = True


def _demand(s: Session, held: NodeReservation) -> list[tuple[Resources, Constraints]]:
    """The requests (and constraints) of the members the target still lacks."""
    found: list[tuple[Resources, Constraints]] = []
    for rt in _runtimes(s, held):
        if isinstance(rt, AppRuntime):
            placeholders, reals = members(s, rt)
            running = taken(reals)
            allocated: dict[str, int] = {}
            for ps in placeholders:
                if ps.node is not None and ps.release_reason is None:
                    group = ps.pod.task_group or ""
                    allocated[group] = allocated.get(group, 0) + 1
            for tg in rt.spec.task_groups:
                missing = tg.min_member - allocated.get(tg.name, 0) - running.get(tg.name, 0)
                found.extend([(tg.min_resource + ONE_POD, Constraints.of_group(tg))]
                             * max(0, missing))
            continue
        pods = [s.pods[uid] for uid in s.group_members.get(rt.spec.key, ())]
        have = sum(1 for ps in pods if ps.node is not None and ps.pod.active)
        waiting = sorted((ps for ps in pods if ps.pending and ps.pod.ours and not ps.pod.invalid),
                         key=placement_order)
        missing = max(0, rt.spec.min_member - have)
        found.extend((ps.request, ps.constraints) for ps in waiting[:missing])
        unseen = missing - min(missing, len(waiting))
        if unseen:
            share = ONE_POD
            if rt.spec.min_resources:
                share = Resources({name: -(-amount // max(1, rt.spec.min_member))
                                   for name, amount in rt.spec.min_resources.items()}) + ONE_POD
            found.extend([(share, NO_CONSTRAINTS)] * unseen)
    return found


def pick_nodes(
    s: Session, demand: list[tuple[Resources, Constraints]]
) -> tuple[str, ...] | None:
    """The nodes to hold for ``demand``, in name order; None if it fits no set of nodes.

    Nodes are ranked by how much of the demand their free capacity plus what is draining
    from them covers (ties by name). Members, largest first, go to the first chosen node
    with room, else the next ranked node with room: first by free plus draining, then,
    for members that fit nowhere that way, by allocatable. O(nodes x R + pods) to rank,
    O(members x nodes) at most to pack; run once per reservation.
    """
    draining: dict[str, Resources] = {}
    for ps in s.pods.values():
        if ps.node is not None and (ps.pod.terminating or ps.release_reason is not None):
            draining[ps.node] = draining.get(ps.node, Resources.ZERO) + ps.request
    total = Resources.ZERO
    for request, _ in demand:
        total = total + request
    ranked: list[tuple[float, str, NodeState]] = []
    for state in s.cluster.sorted_nodes():
        node = state.node
        if not node.ready or node.unschedulable:
            continue
        now_room = (state.free + draining.get(node.name, Resources.ZERO)).clamp_non_negative()
        cover = sum((min(now_room.get(name), amount) / amount for name, amount in total.items()
                     if amount > 0), 0.0)
        ranked.append((-cover, node.name, state))
    ranked.sort(key=lambda item: (item[0], item[1]))
    room_now = {name: (st.free + draining.get(name, Resources.ZERO)).clamp_non_negative()
                for _, name, st in ranked}
    room_ever = {name: st.node.allocatable for _, name, st in ranked}
    chosen: list[str] = []
    order = sorted(demand, key=lambda item: tuple(-amount for _, amount in
                                                  sorted(item[0].items())))
    later: list[tuple[Resources, Constraints]] = []
    failed: set[tuple[Resources, Constraints]] = set()
    for request, constraints in order:
        if (request, constraints) in failed or not _put(s, ranked, chosen, room_now, room_ever,
                                                        request, constraints, True):
            failed.add((request, constraints))
            later.append((request, constraints))
    for request, constraints in later:
        if not _put(s, ranked, chosen, room_ever, room_ever, request, constraints, False):
            return None
    return tuple(sorted(chosen))


def _put(s: Session, ranked: list[tuple[float, str, NodeState]], chosen: list[str],
         room: dict[str, Resources], ever: dict[str, Resources], request: Resources,
         constraints: Constraints, now: bool) -> bool:
    """Place one member in the first chosen node with ``room``, else the next ranked one."""
    nodes = s.cluster.nodes
    for name in [*chosen, *(name for _, name, _ in ranked if name not in chosen)]:
        if request.fits_in(room[name]) and static_failure(nodes[name].node, constraints) is None:
            room[name] = room[name] - request
            if now:
                ever[name] = ever[name] - request
            if name not in chosen:
                chosen.append(name)
            return True
    return False
