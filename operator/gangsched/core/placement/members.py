"""A gang's members placed one by one in a simulation: each through the profile's whole
filter pipeline over the nodes of one domain, scored, and charged tentatively so that
the next member sees it (:func:`place_one`); every charge is undone in the end
(:class:`Trial`).

A member's DRA claims are allocated on the node it is given, with the allocator, and
the devices taken count as taken for the members after it (:func:`claimed`): the
DynamicResources filter sees only the cluster's claims, so without this every member
of a gang would count the same free devices, and a domain with devices for one member
would seem to hold them all.

Members alike (the same request, constraints and owner, no filter but capacity) share
their scan (:class:`Skip`): a member like the one before starts where that one found
room, and when their scores follow from the nodes' usage keys alone, they read the
nodes a scan would find from a :class:`Window` kept up to date with each charge, so
that a member costs the distinct usage keys among the nodes found, not a pass over its
domain. :mod:`~gangsched.core.placement.domain_search` chooses the domains.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import ChainMap
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from gangsched.core.devices.allocator import CANNOT_ALLOCATE, Allocator
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.placement.cluster import select_host
from gangsched.core.placement.diagnosis import FIT_PLUGIN
from gangsched.core.values.constraints import matches_affinity
from gangsched.core.volumes import claims

if TYPE_CHECKING:
    from gangsched.core.framework import interface as fw
    from gangsched.core.framework.nodeinfo import NodeState
    from gangsched.core.framework.podinfo import PodInfo
    from gangsched.core.framework.runner import Framework
    from gangsched.core.placement.cluster import Cluster
    from gangsched.core.values.devices import AllocationResult, DeviceID
    from gangsched.core.values.resources import Resources


@dataclass(slots=True)
class Trial:
    """Tentative charges of a simulation, undone in reverse."""

    cluster: Cluster
    done: list[tuple[NodeState, str, bool, Claimed]] = field(default_factory=list)
    taken: dict[DeviceID, str] = field(default_factory=dict)
    """Devices the members charged so far took (DRA): taken for the members after them,
    as the devices of the cluster's claims are (:func:`claimed`)."""
    allocated: dict[str, AllocationResult] = field(default_factory=dict)
    """The claims those members allocated, by key: a later member sharing one of them
    only has to reach its allocation, as a pod sharing an assumed claim does."""

    def charge(self, state: NodeState, info: PodInfo, uid: str, indexed: bool,
               devices: Claimed | None = None) -> None:
        state.add(uid, info.request)
        if info.placement.ports:
            state.ports[uid] = info.placement.ports
        if indexed:
            self.cluster.pod_index.add(PlacedPod(uid, info.namespace, info.labels,
                                                 info.placement, state.node.name))
        devices = devices or NOTHING_CLAIMED
        for device in devices.devices:
            self.taken[device] = uid
        for key, allocation in devices.allocations:
            self.allocated[key] = allocation
        self.done.append((state, uid, indexed, devices))

    def undo(self, mark: int = 0) -> None:
        while len(self.done) > mark:
            state, uid, indexed, devices = self.done.pop()
            state.remove(uid)
            state.ports.pop(uid, None)
            if indexed:
                self.cluster.pod_index.remove(uid)
            for device in devices.devices:
                self.taken.pop(device, None)
            for key, _ in devices.allocations:
                self.allocated.pop(key, None)


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a member's claims take on a node: the devices, and the claims allocated
    (by key) that the members after it may share."""

    devices: tuple[DeviceID, ...] = ()
    allocations: tuple[tuple[str, AllocationResult], ...] = ()


NOTHING_CLAIMED = Claimed()


def claimed(cluster: Cluster, trial: Trial, info: PodInfo, uid: str,
            state: NodeState) -> Claimed | None:
    """What member ``info`` (as pod ``uid``) takes when its claims are allocated on
    ``state``'s node now, the devices the members charged before it took counted as
    taken and the claims they allocated as allocated (the allocator's answer, as
    DynamicResources' Filter and Reserve give it); None when they cannot be allocated
    there. A member without claims takes nothing. A member yet to come (no uid) stands
    for a pod with claims of its own: what it is shaped after allocated is not shared
    with it."""
    volumes = info.volumes
    if not volumes.dynamic:
        return NOTHING_CLAIMED
    catalog = cluster.volumes
    plan, why = claims.prefilter(catalog, info.namespace, volumes, uid, info.owner)
    if why is not None:
        return None
    shared = trial.allocated if info.uid else {}
    reach = [a for _, a in plan.allocated] + list(plan.reach)
    to_allocate = []
    for claim in plan.to_allocate:
        found = shared.get(claim.key)
        if found is None:
            to_allocate.append(claim)
        else:
            reach.append(found)
    node = state.node
    for allocation in reach:
        selector = allocation.node_selector
        if selector is not None and not matches_affinity(selector, node.labels, node.name):
            return None
    if not to_allocate:
        return NOTHING_CLAIMED
    devices = catalog.devices
    taken = ChainMap(trial.taken, devices.taken) if trial.taken else None
    outcome = Allocator(devices, taken=taken).allocate(node, to_allocate)
    if outcome.allocations is None:
        return None
    return Claimed(tuple(result.device_id for allocation in outcome.allocations
                         for result in allocation.devices if not result.admin_access),
                   tuple((claim.key, allocation) for claim, allocation
                         in zip(to_allocate, outcome.allocations, strict=True))
                   if info.uid else ())


@dataclass(slots=True)
class Skip:
    """What the scan of one list of nodes keeps for a member like the last one scanned
    (the same request, constraints and owner, and no filter but capacity): the nodes
    before the first one that had room for it still have none, since a simulation only
    charges, and constraints and reservations do not change during it. Without it a
    gang of 2,048 members scans each block from its start 2,048 times. When their scores
    follow from usage keys alone, the members share a :class:`Window` instead."""

    alike: tuple[object, ...] | None = None
    start: int = 0
    window: Window | None = None
    shared: tuple[PodInfo, fw.CycleState] | None = None
    """The last member placed through the window and its cycle state, when the next
    one equal to it but for its name and uid may reuse that state (:func:`_twin`)."""
    best: dict[tuple[str, ...], int] = field(default_factory=dict)
    """For members twins of one another, scored by usage keys alone: which of the
    nodes found won, by the usage keys of those nodes in order. Their scores follow
    from the keys alone, so the same keys in the same order give the same winner:
    identical nodes filled one after another are scored once, not once per member."""


class Window:
    """The nodes a scan finds for members alike scored by usage keys, kept from one
    member to the next: the first ``sample`` nodes of the list that take one of them
    (allowed by their constraints, not reserved for another gang, with room), by usage
    key, in order. A member charged to one of them changes that node's key, or takes
    the node out (no room left) and lets the next node that takes one in: every other
    node keeps its verdict, since a simulation only charges. So each member costs the
    keys in the window, not a scan of the domain; the nodes found are those of a scan
    from the first node (the first of each key among the first ``sample`` that fit)."""

    __slots__ = ("allowed", "blocked", "by_key", "count", "fits", "nodes", "sample",
                 "scanned")

    def __init__(self, nodes: list[NodeState], request: Resources, allowed: frozenset[str],
                 blocked: frozenset[str] | None, sample: int) -> None:
        self.nodes = nodes
        self.fits = request.fits_in
        self.allowed = allowed
        self.blocked = blocked
        self.sample = sample
        self.scanned = 0
        """Nodes judged so far, from the first."""
        self.count = 0
        """Nodes in the window."""
        self.by_key: dict[str, list[int]] = {}
        """The window's positions in ``nodes`` by usage key, ascending."""
        self._fill()

    def _fill(self) -> None:
        nodes, allowed, blocked, fits = self.nodes, self.allowed, self.blocked, self.fits
        by_key = self.by_key
        end = len(nodes)
        while self.count < self.sample and self.scanned < end:
            state = nodes[self.scanned]
            name = state.node.name
            if (name in allowed and fits(state.free)
                    and (blocked is None or name not in blocked)):
                found = by_key.get(state.usage_key)
                if found is None:
                    by_key[state.usage_key] = [self.scanned]
                else:
                    found.append(self.scanned)
                self.count += 1
            self.scanned += 1

    def firsts(self) -> list[int]:
        """The position of the first node of each key in the window, ascending."""
        return sorted(positions[0] for positions in self.by_key.values())

    def charged(self, position: int, before: str) -> None:
        """The node at ``position`` (of usage key ``before``) took one more member."""
        positions = self.by_key[before]
        del positions[bisect_left(positions, position)]
        if not positions:
            del self.by_key[before]
        state = self.nodes[position]
        if self.fits(state.free):
            insort(self.by_key.setdefault(state.usage_key, []), position)
        else:
            self.count -= 1
            self._fill()


def place_one(cluster: Cluster, fwk: Framework, trial: Trial, info: PodInfo,
               position: int, nodes: list[NodeState],
               skip: Skip | None = None) -> tuple[str] | str:
    """Place one member on the best of ``nodes`` and charge it there tentatively:
    ``(node,)``, or why none of ``nodes`` takes it (kube-scheduler's reason counts).
    ``skip``: kept from the previous member over the same ``nodes`` in one simulation
    (see :class:`Skip`), brought up to date here."""
    if skip is not None and skip.shared is not None and skip.window is not None:
        last, kept = skip.shared
        if skip.window.nodes is nodes and _twin(last, info):
            return _place_windowed(cluster, fwk, trial, info, position, kept, skip.window,
                                   skip.best)
    if not fwk.pre_enqueue(info).ok:
        return "it is gated"
    cycle, status = fwk.pre_filter(info, cluster)
    if not status.ok:
        return "; ".join(status.reasons) or f"rejected by {status.plugin}"
    extra = [f for f in cycle.filters if f.name != FIT_PLUGIN]
    allowed = cluster.domains.allowed(info.constraints, cluster.candidates(info.constraints),
                                      cluster.node_epoch)
    blocked = cluster.reserved if (cluster.reserved
                                   and info.owner not in cluster.reserved_owners) else None
    request = info.request
    sample = cluster.sample_size
    by_usage = not extra and fwk.usage_scored(info, cluster)
    if skip is not None and by_usage:
        shared = (request, info.constraints, info.owner, True)
        window = skip.window
        if window is None or shared != skip.alike or window.nodes is not nodes:
            window = skip.window = Window(nodes, request, allowed, blocked, sample)
        skip.alike = shared
        skip.shared = (None if info.volumes.any or cluster.neighbour_bound(info)
                       else (info, cycle))
        skip.best = {}
        return _place_windowed(cluster, fwk, trial, info, position, cycle, window,
                               skip.best if skip.shared is not None else None)
    fits = request.fits_in
    uid = info.uid or f"topology-member-{position}"
    devices = bool(trial.taken or trial.allocated) and info.volumes.dynamic
    """Devices taken in the simulation may change where the member's claims fit (the
    filters saw only the cluster's)."""
    feasible: list[NodeState] = []
    keys: set[str] = set()
    found = start = 0
    if skip is not None:
        alike = None if extra else (request, info.constraints, info.owner, False)
        if alike is not None and alike == skip.alike:
            start = skip.start
        skip.alike, skip.start, skip.window, skip.shared = alike, len(nodes), None, None
    for index, state in enumerate(islice(nodes, start, None), start):
        name = state.node.name
        if name not in allowed or not fits(state.free):
            continue
        if blocked is not None and name in blocked:
            continue
        for f in extra:
            if not f.filter(cycle, info, state).ok:
                break
        else:
            if devices and claimed(cluster, trial, info, uid, state) is None:
                continue
            if not found and skip is not None:
                skip.start = index
            found += 1
            if by_usage:  # equal usage keys score alike: the first of them wins
                if state.usage_key in keys:
                    if found >= sample:
                        break
                    continue
                keys.add(state.usage_key)
            feasible.append(state)
            if found >= sample:
                break
    if not feasible:
        return why_none(cluster, fwk, cycle, info, nodes, allowed, blocked,
                        trial if devices else None, uid)
    if len(feasible) == 1:
        best = feasible[0].node.name
    else:
        fwk.pre_score(cycle, info, cluster, feasible)
        best = select_host(feasible, fwk.score(cycle, info, feasible))
    state = cluster.nodes[best]
    taken = claimed(cluster, trial, info, uid, state) if info.volumes.dynamic else None
    trial.charge(state, info, uid, cluster.neighbour_bound(info), taken)
    return (best,)


def _twin(last: PodInfo, info: PodInfo) -> bool:
    """Is ``info`` ``last`` but for its name and uid? Then its PreFilter would give what
    ``last``'s gave, in a simulation where ``last`` (with no volumes, and no pod whose
    fit depends on where it is) only charged a node: PreFilter reads the pod and the
    pods placed, not the nodes' usage, and the members' usage keys alone tell their
    scores apart."""
    return (info.request == last.request and info.constraints == last.constraints
            and info.placement == last.placement and info.namespace == last.namespace
            and info.owner == last.owner and info.labels == last.labels
            and info.volumes == last.volumes)


def _place_windowed(cluster: Cluster, fwk: Framework, trial: Trial, info: PodInfo,
                    position: int, cycle: fw.CycleState, window: Window,
                    best: dict[tuple[str, ...], int] | None) -> tuple[str] | str:
    """:func:`place_one` for a member scored by usage keys alone, the nodes found
    read from ``window`` (brought up to date with the member's charge); ``best``: the
    winners kept for its twins (see :attr:`Skip.best`)."""
    firsts = window.firsts()
    if not firsts:
        return why_none(cluster, fwk, cycle, info, window.nodes, window.allowed,
                        window.blocked)
    nodes = window.nodes
    if len(firsts) == 1:
        at = firsts[0]
    else:
        keys = tuple(nodes[at].usage_key for at in firsts) if best is not None else ()
        won = best.get(keys) if best is not None else None
        if won is None:
            feasible = [nodes[at] for at in firsts]
            fwk.pre_score(cycle, info, cluster, feasible, usage_scored=True)
            totals = fwk.score(cycle, info, feasible)
            won = totals.index(max(totals))  # select_host: the first of the best
            if best is not None:
                if len(best) >= 4096:
                    best.clear()
                best[keys] = won
        at = firsts[won]
    state = nodes[at]
    before = state.usage_key
    uid = info.uid or f"topology-member-{position}"
    trial.charge(state, info, uid, cluster.neighbour_bound(info))
    window.charged(at, before)
    return (state.node.name,)


def why_none(cluster: Cluster, fwk: Framework, cycle: fw.CycleState, info: PodInfo,
             nodes: list[NodeState], allowed: frozenset[str],
             blocked: frozenset[str] | None, trial: Trial | None = None,
             uid: str = "") -> str:
    """Why no node of ``nodes`` takes ``info``, in kube-scheduler's words: a second pass
    over them, made only for a member that fits none (the scan does not word reasons).
    ``trial``: the devices its members took count as taken."""
    if not nodes:
        return "no nodes"
    reasons: dict[str, int] = {}
    extra = [f for f in cycle.filters if f.name != FIT_PLUGIN]
    for state in nodes:
        name = state.node.name
        if name not in allowed:
            failed = fwk.static_filter(info, state)
            _count(reasons, failed.reasons or (failed.plugin,))
        elif not info.request.fits_in(state.free):
            short = info.request.shortfall(state.free.clamp_non_negative())
            _count(reasons, tuple(f"Insufficient {n}" for n, _ in short.items()))
        elif blocked is not None and name in blocked:
            _count(reasons, (f"node(s) reserved for {cluster.reserved_for}",))
        else:
            for f in extra:
                verdict = f.filter(cycle, info, state)
                if not verdict.ok:
                    _count(reasons, verdict.reasons or (f.name,))
                    break
            else:
                if trial is not None and claimed(cluster, trial, info, uid, state) is None:
                    _count(reasons, (CANNOT_ALLOCATE,))
    counted = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    return f"0/{len(nodes)} nodes are available: {counted}"


def _count(reasons: dict[str, int], found: tuple[str, ...]) -> None:
    for why in found:
        reasons[why] = reasons.get(why, 0) + 1

