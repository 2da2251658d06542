"""Preemptors: the work allocate could not place, and exactly what it still needs.

A *preemptor* is a unit that waits for capacity or queue quota (its blocking reason is
``Capacity`` or ``QueueQuota``; for a single pod whose fit depends on other pods, also
``Constraints``: a host port or anti-affinity) and might be placed if other work made
room:

* an Accepted gang Application that is not reserved yet (held for quota, or with
  placeholders or pending members that found no node). Its *items* are the members of
  every task group that no allocated placeholder or real pod (held in memory, or bound)
  stands for: ``minResource`` plus a pod slot each, with the task group's constraints;
* a PodGroup, with the rest of its GangGroup, that is not satisfied yet: the first
  pending members of each group up to its ``minMember``, less the members placed;
* a single pending pod: an ordinary pod, a pod of an Application without task groups,
  a real pod of a gang that has started (or is reserved), a later member of a satisfied
  PodGroup.

Items are listed in the order allocate places them, so that the simulation of a
preemption (:mod:`~gangsched.core.preemption.victims`) places them as allocate will.

Priority: a gang's is the highest of its spec's and its pods' (in a cluster, priority
comes from ``priorityClassName``: the shell gives placeholders their Application's class,
and an Application's own ``priority`` is 0). A single pod counts with its own priority.

A gang is judged by its declared minimum, never by the members that happen to exist: a
gang whose minimum (a PodGroup's ``minResources``, an Application's task groups'
``minMember`` x ``minResource``) can never fit the nodes
(:mod:`~gangsched.core.gangs.unsatisfiable`) is no preemptor, and a PodGroup's
preemptor must find, besides a node for each member, room for the part of
``minResources`` its members do not ask (:attr:`Preemptor.minimum`).

Invalid, timed-out, killed or rejected work, and work in bind backoff, never preempts.
Nor does work that kube-scheduler's ``PodEligibleToPreemptOthers`` finds ineligible
(:func:`eligible`): a pod with ``spec.preemptionPolicy: Never`` (a gang with such a
member), and a pod nominated to a node (``status.nominatedNodeName``) on which a pod of
lower priority is still terminating: the room it preempted for is on its way, so it
waits for it rather than preempting again. :func:`find` leaves such work out;
:func:`build` does not (a plan under way keeps its preemptor while its victims go).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from gangsched.core.gangs import unsatisfiable
from gangsched.core.gangs.podgroups import gang_of
from gangsched.core.gangs.reservation import members, taken, waiting_members
from gangsched.core.placement import domain_search as topology
from gangsched.core.placement import domains
from gangsched.core.placement.cluster import ONE_POD, Constraints, PodInfo
from gangsched.core.state.pendings import FOR_ROOM
from gangsched.core.state.records import AppRuntime, GroupRuntime, PodState, placement_order
from gangsched.core.values.decisions import ObjectRef
from gangsched.core.values.model import DEFAULT_QUEUE, AppKey, GroupKey, PlaceholderPolicy, PodUID
from gangsched.core.values.resources import Resources
from gangsched.core.values.states import AppState

if TYPE_CHECKING:
    from gangsched.core.state.session import Session
    from gangsched.core.values.model import PodGroupSpec

BLOCKED = frozenset({"Capacity", "QueueQuota", "Topology"})
"""Blocking reasons of a gang that other work's room could cure (``Topology``: no
domain of the key the gang requires has room for it whole; victims are then chosen
inside one domain)."""

POD_BLOCKED = FOR_ROOM
"""Pending reasons of a single pod that other work could cure: those of a gang, and
``Constraints`` for a pod whose fit depends on other pods (:func:`neighbour_bound`)."""

STARTED = frozenset({AppState.STARTING, AppState.RUNNING, AppState.WAITING, AppState.RESUMING})
"""Application states in which a gang has started: its pods are placed one by one."""


class Kind(enum.StrEnum):
    APP = "Application"
    GROUP = "PodGroup"
    POD = "Pod"


@dataclass(frozen=True, slots=True)
class Item:
    """One member to place: its request (pod slot included) and constraints; ``info``
    (labels, pod affinity, spread, ports, volumes), for the check of every filter. Items
    are equal by request and constraints: the capacity simulation counts shapes."""

    request: Resources
    constraints: Constraints
    info: PodInfo | None = field(default=None, compare=False)


@dataclass(slots=True)
class Preemptor:
    """A unit of waiting work and what it still needs, in placement order."""

    key: str
    """``Application/ns/name``, ``PodGroup/ns/name`` (the GangGroup's first) or ``Pod/uid``."""
    kind: Kind
    target: ObjectRef
    """What events about it are recorded on."""
    queue: str
    priority: int
    creation: float
    items: list[Item]
    gangs: frozenset[str] = frozenset()
    """Gang keys it belongs to (``Application/...``, ``PodGroup/...``): never its victims."""
    earmark: Resources = Resources.ZERO
    """Queue headroom it holds already (an admitted gang's earmark)."""
    pod: PodState | None = None
    """The pod, for a single-pod preemptor."""
    pods: list[PodState] = field(default_factory=list)
    """Its pending pods (placeholders or members), which allocate places."""
    owners: frozenset[str] = frozenset()
    """The Application or PodGroup keys its placements are owned by: nodes reserved for
    a starving gang (the ``reserve`` action) take only that gang's pods."""
    confined: tuple[topology.Confined, ...] = ()
    """Its parts (task groups, PodGroups) that require one domain of a key: victims are
    chosen only where each part then fits in one domain."""
    minimum: Resources = Resources.ZERO
    """The room it needs in all, free across the nodes, when its declared minimum asks
    more than its items (a PodGroup's ``minResources`` less what its members hold):
    victims are chosen until the cluster has it too."""

    @property
    def name(self) -> str:
        return f"{self.target.namespace}/{self.target.name}"

    _total: Resources | None = field(default=None, repr=False, compare=False)
    _shapes: dict[Item, int] | None = field(default=None, repr=False, compare=False)

    @property
    def total(self) -> Resources:
        """What its items ask for together (computed once: items are not changed)."""
        if self._total is None:
            self._total = sum((item.request for item in self.items), Resources.ZERO)
        return self._total

    @property
    def shapes(self) -> dict[Item, int]:
        """How many of its items there are of each shape (request and constraints)."""
        if self._shapes is None:
            found: dict[Item, int] = {}
            for item in self.items:
                found[item] = found.get(item, 0) + 1
            self._shapes = found
        return self._shapes

    def describe(self) -> str:
        """``application default/train (priority 10)``, for messages."""
        return f"{self.kind.value.lower()} {self.name} (priority {self.priority})"


_APP, _GROUP, _POD = (f"{kind.value}/" for kind in (Kind.APP, Kind.GROUP, Kind.POD))


def app_key(key: AppKey) -> str:
    return _APP + key


def group_key(key: GroupKey) -> str:
    return _GROUP + key


def pod_key(uid: PodUID) -> str:
    return _POD + uid


def app_priority(s: Session, rt: AppRuntime) -> int:
    """The highest of the Application's priority and its pods' (placeholders included)."""
    found = rt.spec.priority
    for uid in s.app_members.get(rt.spec.key, ()):
        found = max(found, s.pods[uid].pod.priority)
    return found


def gang_priority(s: Session, gang: Iterable[GroupRuntime]) -> int:
    found: int | None = None
    for g in gang:
        found = g.spec.priority if found is None else max(found, g.spec.priority)
        for uid in s.group_members.get(g.spec.key, ()):
            found = max(found, s.pods[uid].pod.priority)
    return found or 0


def app_ref(rt: AppRuntime) -> ObjectRef:
    return rt.ref


def group_ref(rt: GroupRuntime) -> ObjectRef:
    return rt.ref


def pod_ref(ps: PodState) -> ObjectRef:
    return ObjectRef("Pod", ps.pod.namespace, ps.pod.name, ps.uid)


# --- finding the waiting work ---------------------------------------------------------


def find(s: Session, now: float, *,
         refused: Callable[[str, Resources], bool] | None = None) -> list[Preemptor]:
    """Every unit blocked for capacity or quota (a single pod whose fit depends on other
    pods also for its constraints) that may preempt (:func:`eligible`), highest priority
    first, then oldest.

    ``refused(queue, need)``: the caller passes over every preemptor of ``queue`` that
    asks at least ``need`` (in each resource ``need`` asks for). Those are left out,
    unbuilt where that is known from the unit alone: a pod asks its request, an
    Application at least what one of its task groups' members asks, and a GangGroup at
    least its missing members times the least its pending members request."""
    found: list[Preemptor] = []
    for key in sorted(s.apps):
        rt = s.apps[key]
        if any(b.reason in BLOCKED for b in rt.blocking.values()):
            if unsatisfiable.app_verdict(s, rt):
                continue  # its minimum can never fit: no victim helps
            if refused is not None and rt.spec.task_groups and all(
                    refused(rt.spec.queue, g.min_resource) for g in rt.spec.task_groups):
                continue
            pre = for_app(s, rt, now)
            if pre is not None and pre.items and eligible(s, pre):
                found.append(pre)
    seen: set[GroupKey] = set()
    for gkey in sorted(s.groups):
        grt = s.groups[gkey]
        if gkey in seen or grt.blocking.reason not in BLOCKED:
            continue
        gang = gang_of(s, gkey)
        if isinstance(gang, str):
            continue
        seen.update(g.spec.key for g in gang)
        if any(unsatisfiable.group_verdict(s, g) is not None for g in gang):
            continue  # its minimum can never fit: no victim helps
        pre = for_groups(s, gang, now, refused=refused)
        if (pre is not None and pre.items
                and not (refused is not None and refused(pre.queue, pre.total))
                and eligible(s, pre)):
            found.append(pre)
    waiting = s.waiting_for_room
    for uid in list(waiting):
        ps = s.pods.get(uid)
        if ps is None or ps.pending_reason is None or ps.pending_reason[0] not in POD_BLOCKED:
            del waiting[uid]  # it moved on
            continue
        if ps.pending_reason[0] not in BLOCKED and not neighbour_bound(s, ps):
            continue  # its static constraints exclude every node: no victim helps
        if uid in s.pending:
            if refused is not None and refused(s.queue_of(ps) or DEFAULT_QUEUE, ps.request):
                continue
            single = for_pod(s, ps, now)
            if single is not None and eligible(s, single):
                found.append(single)
    found.sort(key=lambda p: (-p.priority, p.creation, p.key))
    return found


def neighbour_bound(s: Session, ps: PodState) -> bool:
    """Does where ``ps`` fits depend on more than capacity and its static constraints:
    other pods (its pod affinity, anti-affinity, spread or host ports, or a placed pod's
    required anti-affinity) or volumes?"""
    info = ps.info
    cluster = s.cluster
    return (cluster.neighbour_bound(info) or cluster.pod_index.required_anti > 0
            or info.volumes.any)


def eligible(s: Session, pre: Preemptor) -> bool:
    """May ``pre`` preempt at all (kube-scheduler's ``PodEligibleToPreemptOthers``)? Not
    when one of its pods says ``preemptionPolicy: Never``, nor, for a single pod, while a
    pod of lower priority is terminating on the node it is nominated to. A member or
    node that is gone counts for nothing."""
    if pre.kind is Kind.POD:
        ps = pre.pod
        return ps is not None and ps.pod.preempts and not _victims_leaving(s, ps)
    if pre.kind is Kind.APP:
        uids: Iterable[PodUID] = s.app_members.get(AppKey(pre.name), ())
    else:
        uids = [u for key in pre.owners for u in s.group_members.get(GroupKey(key), ())]
    return all(s.pods[u].pod.preempts for u in uids if u in s.pods) and all(
        ps.pod.preempts for ps in pre.pods)


def _victims_leaving(s: Session, ps: PodState) -> bool:
    """Is a pod of lower priority than ``ps`` terminating on the node ``ps`` is
    nominated to?"""
    node = ps.pod.nominated_node
    state = s.cluster.nodes.get(node) if node is not None else None
    if state is None:
        return False
    priority = ps.pod.priority
    for uid in state.pods:
        other = s.pods.get(PodUID(uid))
        if (other is not None and other.pod.terminating and other.pod.priority < priority
                and other.uid != ps.uid):
            return True
    return False


def build(s: Session, key: str, now: float) -> Preemptor | None:
    """The preemptor ``key`` as it stands now, whatever its blocking reason; None once it
    is gone or can no longer be placed (invalid, timed out, terminal...)."""
    kind, _, rest = key.partition("/")
    if kind == Kind.APP.value:
        rt = s.apps.get(AppKey(rest))
        return None if rt is None else for_app(s, rt, now)
    if kind == Kind.GROUP.value:
        gang = gang_of(s, GroupKey(rest))
        return None if isinstance(gang, str) else for_groups(s, gang, now)
    ps = s.pods.get(PodUID(rest))
    return None if ps is None else for_pod(s, ps, now)


def for_app(s: Session, rt: AppRuntime, now: float) -> Preemptor | None:
    """An Accepted gang that is not reserved yet, with the members it still needs."""
    spec = rt.spec
    if (not spec.gang or spec.invalid or rt.state is not AppState.ACCEPTED or rt.reserved
            or rt.placeholders_expired):
        return None
    placeholders, reals = members(s, rt)
    running = taken(reals)
    allocated: dict[str, int] = {}
    pending: list[PodState] = []
    for ps in placeholders:
        if ps.release_reason is not None or ps.pod.terminating or not ps.pod.active:
            continue
        name = ps.pod.task_group or ""
        if ps.node is not None:
            allocated[name] = allocated.get(name, 0) + 1
        elif ps.pending:
            if not s.reached(ps.backoff_until):
                return None
            pending.append(ps)
    items: list[Item] = []
    direct = (waiting_members(rt, reals)
              if s.config.placeholders is PlaceholderPolicy.MISSING else {})
    confined: list[topology.Confined] = []
    for group in sorted(spec.task_groups, key=lambda g: g.name):
        missing = group.min_member - allocated.get(group.name, 0) - running.get(group.name, 0)
        request = group.min_resource + ONE_POD
        constraints = Constraints.of_group(group)
        item = Item(request, constraints, PodInfo.of(
            request, constraints, group.placement, namespace=spec.namespace,
            owner=spec.key))
        start = len(items)
        items.extend([item] * max(0, missing))
        required = domains.effective(group.topology, group.placement, spec.namespace).required
        if required is not None and len(items) > start:
            placed = tuple(ps.node for ps in (*placeholders, *reals)
                           if ps.node is not None and ps.pod.task_group == group.name
                           and ps.pod.active and ps.release_reason is None)
            confined.append(topology.Confined(required, start, len(items), placed))
        # Pending members stand for the rest, as their placeholders would.
        asked = sum(1 for ps in pending if ps.pod.task_group == group.name)
        pending.extend(direct.get(group.name, [])[:max(0, missing - asked)])
    return Preemptor(
        key=app_key(spec.key), kind=Kind.APP, target=app_ref(rt), queue=spec.queue,
        priority=app_priority(s, rt), creation=spec.creation, items=items,
        gangs=frozenset({app_key(spec.key)}), earmark=rt.earmark, pods=pending,
        owners=frozenset({spec.key}), confined=tuple(confined),
    )


def app_ask(s: Session, rt: AppRuntime) -> Resources | None:
    """``for_app(s, rt, now).total`` (None when that is None), without building the
    preemptor: the queue shares ask it of every waiting gang each cycle, so it counts
    members in one pass, with no sorting, and a gang without placeholders is counted
    again only when a member or the spec changed. Every pending placeholder's backoff is asked
    about (so that the cycle wakes when each ends), not only the first's."""
    spec = rt.spec
    if (not spec.gang or spec.invalid or rt.state is not AppState.ACCEPTED or rt.reserved
            or rt.placeholders_expired):
        return None
    kept = rt.ask
    if kept is not None and kept[0] is spec and kept[1] == rt.members_version:
        return kept[2]
    held: dict[str, int] = {}
    backoff = placeholders = False
    for uid in s.app_members.get(spec.key, ()):
        ps = s.pods[uid]
        pod = ps.pod
        if pod.placeholder:
            placeholders = True
            if ps.release_reason is not None or pod.terminating or not pod.active:
                continue
            if ps.node is not None:
                name = pod.task_group or ""
                held[name] = held.get(name, 0) + 1
            elif ps.pending and not s.reached(ps.backoff_until):
                backoff = True
        elif ps.node is not None and pod.active and pod.task_group is not None:
            held[pod.task_group] = held.get(pod.task_group, 0) + 1
    if backoff:
        return None
    total = Resources.ZERO
    for group in spec.task_groups:
        missing = group.min_member - held.get(group.name, 0)
        if missing > 0:
            total = total + (group.min_resource + ONE_POD).scale(missing)
    if not placeholders:
        # Counted from real members alone: it changes only with them and the spec (a
        # placeholder's release and backoff change no member version).
        rt.ask = (spec, rt.members_version, total)
    return total


@dataclass(slots=True)
class _GangMade:
    """What :func:`for_groups` found of a gang, kept on its first PodGroup while no
    group of it changes: the same specs, the same members' versions (bumped as a member
    joins, leaves, is observed, charged or released), none satisfied or timed out."""

    specs: tuple[PodGroupSpec, ...]
    versions: tuple[int, ...]
    wanted: list[tuple[list[PodState], int]] | None
    """Per group still missing members: its pending members (sorted once the preemptor
    is made) and how many are missing; None when some group cannot complete."""
    least: Resources
    made: Preemptor | None = None

    def current(self, gang: list[GroupRuntime]) -> bool:
        return (len(self.specs) == len(gang)
                and all(g.spec is spec and g.members_version == version
                        for g, spec, version in zip(gang, self.specs, self.versions,
                                                    strict=True)))


def for_groups(s: Session, gang: list[GroupRuntime], now: float, *,
               refused: Callable[[str, Resources], bool] | None = None) -> Preemptor | None:
    """A GangGroup that is not satisfied: each group's first pending members up to its
    ``minMember``. None when some group cannot complete (too few members yet), is
    invalid or timed out, or when the groups are in different queues; and, before it is
    built, when ``refused`` (see :func:`find`) refuses the least it can ask: each group's
    missing members times the least its pending members request of each resource.

    What it finds is kept while the gang does not change (:class:`_GangMade`), unless a
    member's backoff was still running: reclaim asks for every waiting gang in every
    call."""
    queues = {g.spec.queue for g in gang}
    if len(queues) != 1 or any(g.satisfied or g.timed_out or g.spec.invalid for g in gang):
        return None
    first = gang[0]
    found = _kept_gang(gang)
    if found is None:
        found = _find_gang(s, gang)
        if found is None:
            return None  # a member's backoff runs: asked again when it ends
        first.preemptor = found
    wanted = found.wanted
    if wanted is None:
        return None
    if refused is not None and wanted and refused(first.spec.queue, found.least):
        return None
    if found.made is None:
        items: list[Item] = []
        pending_all: list[PodState] = []
        confined: list[topology.Confined] = []
        for pending, need in wanted:
            pending.sort(key=placement_order)
            start = len(items)
            items.extend(Item(ps.request, ps.constraints, ps.info) for ps in pending[:need])
            pending_all.extend(pending)
            part = _confined(s, pending[:need], start)
            if part is not None:
                confined.append(part)
        made = Preemptor(
            key=group_key(first.spec.key), kind=Kind.GROUP, target=group_ref(first),
            queue=first.spec.queue, priority=gang_priority(s, gang),
            creation=min(g.spec.creation for g in gang), items=items,
            gangs=frozenset(group_key(g.spec.key) for g in gang), pods=pending_all,
            owners=frozenset(g.spec.key for g in gang), confined=tuple(confined),
        )
        declared = _declared_left(s, gang)
        if not declared.fits_in(made.total):
            made.minimum = declared
        found.made = made
    return found.made


def _declared_left(s: Session, gang: list[GroupRuntime]) -> Resources:
    """What a GangGroup's declared minimums (``minResources`` plus a pod slot per
    ``minMember``) still ask beyond what its placed members hold; zero without any."""
    left = Resources.ZERO
    for g in gang:
        if not g.spec.min_resources:
            continue
        held = Resources.ZERO
        for uid in s.group_members.get(g.spec.key, ()):
            ps = s.pods[uid]
            if ps.node is not None and ps.pod.active:
                held = held + ps.request
        left = left + (g.spec.min_resources + ONE_POD.scale(g.spec.min_member)
                       - held).clamp_non_negative()
    return left


def _confined(s: Session, pending: list[PodState], start: int) -> topology.Confined | None:
    """The part of a GangGroup's preemptor made of ``pending`` (one PodGroup's members,
    its items from ``start``), when its PodGroup requires one domain of a key."""
    if not pending or pending[0].pod.pod_group is None:
        return None
    g = s.groups.get(pending[0].pod.pod_group)
    if g is None:
        return None
    first = pending[0].pod
    required = domains.effective(g.spec.topology, first.placement, g.spec.namespace).required
    if required is None:
        return None
    placed = tuple(ps.node for uid in s.group_members.get(g.spec.key, ())
                   if (ps := s.pods[uid]).node is not None and ps.pod.active)
    return topology.Confined(required, start, start + len(pending), placed)


def _kept_gang(gang: list[GroupRuntime]) -> _GangMade | None:
    """What :func:`for_groups` last found of ``gang``, if it still stands."""
    found = cast("_GangMade | None", gang[0].preemptor)
    return found if found is not None and found.current(gang) else None


def _find_gang(s: Session, gang: list[GroupRuntime]) -> _GangMade | None:
    """Each group's pending members and how many it misses (None while a pending
    member's backoff runs)."""
    specs = tuple(g.spec for g in gang)
    versions = tuple(g.members_version for g in gang)
    wanted: list[tuple[list[PodState], int]] = []
    for g in gang:
        placed = 0
        pending: list[PodState] = []
        for uid in s.group_members.get(g.spec.key, ()):
            ps = s.pods[uid]
            if ps.node is not None and ps.pod.active:
                placed += 1
            elif ps.pending and ps.pod.ours and not ps.pod.invalid:
                pending.append(ps)
        need = g.spec.min_member - placed
        if need <= 0:
            continue
        if len(pending) < need:
            return _GangMade(specs, versions, None, Resources.ZERO)
        if any(not s.reached(ps.backoff_until) for ps in pending):
            return None
        wanted.append((pending, need))
    return _GangMade(specs, versions, wanted, _least(wanted) if wanted else Resources.ZERO)


def _least(wanted: list[tuple[list[PodState], int]]) -> Resources:
    """No more than the members chosen from ``wanted`` (pending members, how many are
    missing) ask together, in any resource."""
    least = Resources.ZERO
    for pending, need in wanted:
        requests = iter({ps.request for ps in pending})
        smallest = next(requests)
        for request in requests:
            smallest = smallest.min(request)
        least = least + smallest.scale(need)
    return least


def for_pod(s: Session, ps: PodState, now: float) -> Preemptor | None:
    """A pending pod placed on its own (no gang condition holds it back)."""
    pod = ps.pod
    if (not ps.pending or not pod.ours or pod.invalid or pod.placeholder
            or ps.parked_on is not None or not s.reached(ps.backoff_until)):
        return None
    if pod.app is None and pod.pod_group is None:
        # All of it is the pod's: made once per version of the pod.
        kept = ps.preemptor
        if kept is not None and kept[0] is pod:
            return cast(Preemptor, kept[1])
    gangs: set[str] = set()
    queue = s.queue_of(ps) or DEFAULT_QUEUE
    if pod.app is not None:
        rt = s.apps.get(pod.app)
        if rt is None or rt.spec.invalid or rt.state.terminal or rt.state is AppState.NEW:
            return None
        if rt.spec.gang and rt.state not in STARTED and not rt.reserved:
            return None  # waits for its gang's reservation, not for room
        gangs.add(app_key(pod.app))
    elif pod.pod_group is not None:
        grt = s.groups.get(pod.pod_group)
        if grt is None or not grt.satisfied or grt.timed_out or grt.spec.invalid:
            return None
        gang = gang_of(s, pod.pod_group)  # a GangGroup is named by its first PodGroup
        gangs.add(group_key(pod.pod_group if isinstance(gang, str) else gang[0].spec.key))
    made = Preemptor(
        key=pod_key(ps.uid), kind=Kind.POD, target=pod_ref(ps), queue=queue,
        priority=pod.priority, creation=pod.creation,
        items=[Item(ps.request, ps.constraints, ps.info)], gangs=frozenset(gangs), pod=ps,
        pods=[ps],
        owners=frozenset(o for o in (pod.app, pod.pod_group) if o is not None),
    )
    if pod.app is None and pod.pod_group is None:
        ps.preemptor = (pod, made)
    return made
