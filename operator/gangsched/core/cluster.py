"""Nodes, their usage, and placement: filters, scoring, and the indexes that keep it fast.

Usage counts every pod that holds capacity on a node, ours or another scheduler's,
placeholders included, and pods assumed by the core but not yet confirmed bound.

Placement runs in two stages:

1. *Static* filters depend only on the node and the pod's constraints (readiness,
   ``unschedulable``, nodeSelector, required node affinity, NoSchedule/NoExecute taints).
   Their result is cached per :class:`Constraints` value and dropped only when a node is
   added, removed, or changes labels, taints, readiness or schedulability.
2. *Dynamic* filters check free capacity. Rather than scan every node for every pod, a
   placement scores at most ``sample_size`` feasible nodes. Binpack scans from the front
   of the (name-sorted) candidates, skipping a prefix that is known to be too full for
   this request shape: the *watermark*, valid until some capacity is released. Spread
   rotates its starting point. Both keep the cost per placement roughly independent of
   the cluster size.

Nodes *reserved* for a starving gang (the ``reserve`` action, :mod:`~gangsched.core.elect`)
take no new pod of anyone else: a placement names its ``owner`` (the key of its Application
or PodGroup), and the reserved nodes are skipped unless the owner is one they are held for.
A diagnosis counts the nodes that would fit but are reserved as ``Reserved``.

Ties are broken by scan order, which is by node name: the same inputs give the same node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from gangsched.core.constraints import (
    ANY_NODE,
    NodeAffinity,
    Toleration,
    matches_affinity,
    matches_node_selector,
    untolerated_taints,
)
from gangsched.core.model import Node, Pod, Scoring, TaskGroup
from gangsched.core.resources import PODS, Resources

ONE_POD = Resources({PODS: 1})

NodeCheck = Callable[[Node], "str | None"]
"""A per-pod filter beyond the static ones and capacity (the volume plugins,
:mod:`gangsched.core.volumes.check`): the reason a node does not fit, or None."""


@dataclass(frozen=True, slots=True)
class Constraints:
    """A pod's static placement constraints, hashable so placements can share caches."""

    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    affinity: NodeAffinity = ANY_NODE

    @classmethod
    def build(
        cls,
        node_selector: Mapping[str, str],
        tolerations: tuple[Toleration, ...],
        affinity: NodeAffinity,
    ) -> Constraints:
        return cls(tuple(sorted(node_selector.items())), tolerations, affinity)

    @classmethod
    def of_pod(cls, pod: Pod) -> Constraints:
        return cls.build(pod.node_selector, pod.tolerations, pod.affinity)

    @classmethod
    def of_group(cls, group: TaskGroup) -> Constraints:
        return cls.build(group.node_selector, group.tolerations, group.affinity)


NO_CONSTRAINTS = Constraints()


def static_failure(node: Node, constraints: Constraints) -> str | None:
    """The name of the first static filter ``node`` fails for ``constraints``, or None."""
    if not node.ready:
        return "NodeNotReady"
    if node.unschedulable:
        return "NodeUnschedulable"
    if constraints.node_selector and not matches_node_selector(
        dict(constraints.node_selector), node.labels
    ):
        return "NodeSelector"
    if not matches_affinity(constraints.affinity, node.labels, node.name):
        return "NodeAffinity"
    if node.taints and untolerated_taints(constraints.tolerations, node.taints):
        return "Taints"
    return None


class NodeState:
    """A node and what is placed on it. ``free`` is kept equal to allocatable - used."""

    __slots__ = ("free", "node", "pods", "used")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.used = Resources.ZERO
        self.free = node.allocatable
        self.pods: dict[str, Resources] = {}
        """The request each pod placed here holds, by pod uid."""

    def score(self, request: Resources) -> float:
        """Utilisation after placing ``request``: the sum of per-resource fractions."""
        total = 0.0
        alloc = self.node.allocatable
        for name, amount in request.items():
            capacity = alloc.get(name)
            if capacity > 0:
                total += (self.used.get(name) + amount) / capacity
        return total


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Why no node fits: counts of nodes per failed filter, and the best shortfall."""

    nodes: int
    by_filter: Mapping[str, int]
    best_shortfall: Resources
    reserved_for: str = ""
    """The gang the ``Reserved`` nodes are held for."""

    def message(self, request: Resources) -> str:
        if self.nodes == 0:
            return "no nodes in the cluster"
        parts = [f"{count} {name}" for name, count in sorted(self.by_filter.items())]
        text = f"0/{self.nodes} nodes fit {request.format_short()}: " + ", ".join(parts)
        if self.by_filter.get("Reserved"):
            text += f"; the Reserved nodes are held for starving gang {self.reserved_for}"
        if self.best_shortfall:
            text += f"; the closest node is short of {self.best_shortfall.format_short()}"
        return text

    @property
    def reason(self) -> str:
        """``Reservation`` when a node would fit but is reserved for another gang; else
        ``Constraints`` or ``Capacity`` (see :attr:`constraint_bound`)."""
        if self.by_filter.get("Reserved"):
            return "Reservation"
        return "Constraints" if self.constraint_bound else "Capacity"

    @property
    def constraint_bound(self) -> bool:
        """True when static constraints, not capacity, exclude every node."""
        return self.by_filter.get("Insufficient", 0) == 0


class Cluster:
    """All nodes with their usage, and placement over them."""

    def __init__(self, sample_size: int = 32) -> None:
        self.nodes: dict[str, NodeState] = {}
        self.sample_size = max(1, sample_size)
        self.free_epoch = 0
        """Bumped whenever capacity is released or added: cached "does not fit" is stale."""
        self._release_epoch = 0
        """Bumped on every release, also those that need no retry: watermarks are stale."""
        self._sorted: list[NodeState] | None = None
        self._static: dict[Constraints, list[NodeState]] = {}
        self._watermarks: dict[tuple[Constraints, Resources], int] = {}
        self._watermark_epoch = -1
        self._cursor: dict[Constraints, int] = {}
        self._diagnoses: dict[tuple[Constraints, Resources, bool], Diagnosis] = {}
        self._diagnosis_epoch = (-1, -1)
        self._node_epoch = 0
        self._orphan_usage: dict[str, dict[str, Resources]] = {}
        self.reserved: frozenset[str] = frozenset()
        """Nodes held for a starving gang: only ``reserved_owners`` place pods there."""
        self.reserved_owners: frozenset[str] = frozenset()
        self.reserved_for = ""
        """The gang they are held for, for messages."""

    # --- nodes ---------------------------------------------------------------------------

    def upsert_node(self, node: Node) -> None:
        """Add or update a node. Usage already recorded for that name is kept."""
        state = self.nodes.get(node.name)
        if state is None:
            state = NodeState(node)
            self.nodes[node.name] = state
            for uid, request in self._orphan_usage.pop(node.name, {}).items():
                state.pods[uid] = request
                state.used = state.used + request
            state.free = node.allocatable - state.used
            self._nodes_changed()
            self._freed()
            return
        old = state.node
        state.node = node
        if old.allocatable != node.allocatable:
            state.free = node.allocatable - state.used
            self._freed()
        if (
            old.labels != node.labels
            or old.taints != node.taints
            or old.unschedulable != node.unschedulable
            or old.ready != node.ready
        ):
            self._nodes_changed()
            self._freed()

    def remove_node(self, name: str) -> None:
        """Forget a node. Pods still charged to it stay charged until they go.

        Their usage is kept aside under the node's name: if a node of that name comes
        back before they go, it starts with their usage (no overcommit on re-add).
        """
        state = self.nodes.pop(name, None)
        if state is None:
            return
        if state.pods:
            self._orphan_usage.setdefault(name, {}).update(state.pods)
        self._nodes_changed()

    def _nodes_changed(self) -> None:
        self._sorted = None
        self._static.clear()
        self._cursor.clear()
        self._node_epoch += 1
        self._watermarks.clear()

    def sorted_nodes(self) -> list[NodeState]:
        if self._sorted is None:
            self._sorted = [self.nodes[name] for name in sorted(self.nodes)]
        return self._sorted

    # --- usage ---------------------------------------------------------------------------

    def charge(self, node_name: str, uid: str, request: Resources) -> None:
        """Record that pod ``uid`` uses ``request`` (pods slot included) on the node."""
        state = self.nodes.get(node_name)
        if state is None:
            self._orphan_usage.setdefault(node_name, {})[uid] = request
            return
        if uid in state.pods:
            return
        state.pods[uid] = request
        state.used = state.used + request
        state.free = state.free - request

    def release(self, node_name: str, uid: str, request: Resources, *, retry: bool = True) -> None:
        """Forget pod ``uid``'s usage on the node (the amount charged, whatever ``request``).

        ``retry=False`` is for undoing a tentative placement made in the same cycle (a
        Strict gang's rollback): the capacity was free when the cycle began, so pods that
        failed to fit need not be tried again because of it.
        """
        state = self.nodes.get(node_name)
        if state is None:
            orphans = self._orphan_usage.get(node_name)
            if orphans is not None:
                orphans.pop(uid, None)
            return
        held = state.pods.pop(uid, None)
        if held is None:
            return
        state.used = state.used - held
        state.free = state.free + held
        self._freed(retry)

    def _freed(self, retry: bool = True) -> None:
        self._release_epoch += 1
        if retry:
            self.free_epoch += 1

    def reserve(self, nodes: Iterable[str], owners: Iterable[str], label: str) -> None:
        """Hold ``nodes`` for placements owned by one of ``owners`` (the gang ``label``).

        No nodes lifts the reservation. Nodes given back count as freed capacity: pods
        that fit nowhere are tried again.
        """
        held = frozenset(nodes)
        lifted = self.reserved - held
        self.reserved = held
        self.reserved_owners = frozenset(owners) if held else frozenset()
        self.reserved_for = label if held else ""
        self._diagnoses.clear()
        if lifted:
            self._freed()

    def _blocked(self, owner: str | None) -> frozenset[str] | None:
        """The reserved nodes a placement owned by ``owner`` must skip, or None."""
        if self.reserved and owner not in self.reserved_owners:
            return self.reserved
        return None

    def free_capacity(self, owner: str | None = None) -> tuple[Resources, Resources]:
        """(allocatable, free) summed over ready, schedulable nodes. O(nodes).

        Nodes reserved for a gang other than ``owner`` count with no free capacity.
        Overcommitted nodes (free below zero) count as 0 free.
        """
        blocked = self._blocked(owner)
        total = free = Resources.ZERO
        for state in self.nodes.values():
            node = state.node
            if not node.ready or node.unschedulable:
                continue
            total = total + node.allocatable
            if blocked is None or node.name not in blocked:
                free = free + state.free.clamp_non_negative()
        return total, free

    def capacity(self) -> Resources:
        total = Resources.ZERO
        for state in self.nodes.values():
            if state.node.ready and not state.node.unschedulable:
                total = total + state.node.allocatable
        return total

    def used(self) -> Resources:
        total = Resources.ZERO
        for state in self.nodes.values():
            total = total + state.used
        return total

    # --- placement -----------------------------------------------------------------------

    def candidates(self, constraints: Constraints) -> list[NodeState]:
        """Nodes passing the static filters for ``constraints`` (cached)."""
        found = self._static.get(constraints)
        if found is None:
            found = [s for s in self.sorted_nodes() if static_failure(s.node, constraints) is None]
            self._static[constraints] = found
        return found

    def fits(
        self,
        node_name: str,
        request: Resources,
        constraints: Constraints,
        *,
        extra: Resources = Resources.ZERO,
        node_check: NodeCheck | None = None,
    ) -> bool:
        """Does ``request`` fit on the node now, with ``extra`` more free? False if unknown."""
        state = self.nodes.get(node_name)
        if state is None or static_failure(state.node, constraints) is not None:
            return False
        if node_check is not None and node_check(state.node) is not None:
            return False
        return request.fits_in(state.free + extra if extra else state.free)

    def place(
        self,
        request: Resources,
        constraints: Constraints,
        scoring: Scoring,
        owner: str | None = None,
        node_check: NodeCheck | None = None,
    ) -> str | None:
        """The best node for ``request`` (pods slot included), or None if none fits.

        ``owner`` (an Application or PodGroup key) may use nodes reserved for it; no other
        placement does. ``node_check`` refuses more nodes (it does not move watermarks:
        those are about capacity only).
        """
        blocked = self._blocked(owner)
        if self._watermark_epoch != self._release_epoch:
            self._watermarks.clear()
            self._watermark_epoch = self._release_epoch
        nodes = self.candidates(constraints)
        count = len(nodes)
        if count == 0:
            return None
        if scoring is Scoring.BINPACK:
            key = (constraints, request)
            start = self._watermarks.get(key, 0)
            order = range(start, count)
        else:
            start = self._cursor.get(constraints, 0) % count
            order = range(start, start + count)
        best: NodeState | None = None
        best_score = 0.0
        first_fit = -1
        found = 0
        for i in order:
            state = nodes[i % count]
            if not request.fits_in(state.free):
                continue
            if first_fit < 0:
                first_fit = i  # reserved or not: the watermark is about capacity only
            if blocked is not None and state.node.name in blocked:
                continue
            if node_check is not None and node_check(state.node) is not None:
                continue
            score = state.score(request)
            if (
                best is None
                or (scoring is Scoring.BINPACK and score > best_score)
                or (scoring is Scoring.SPREAD and score < best_score)
            ):
                best, best_score = state, score
            found += 1
            if found >= self.sample_size:
                break
        if scoring is Scoring.BINPACK:
            self._watermarks[(constraints, request)] = first_fit if first_fit >= 0 else count
        else:
            self._cursor[constraints] = (first_fit + 1) % count if first_fit >= 0 else start
        return None if best is None else best.node.name

    def diagnose(
        self, request: Resources, constraints: Constraints, owner: str | None = None,
        node_check: NodeCheck | None = None,
    ) -> Diagnosis:
        """Why ``request`` fits no node. O(nodes), cached until nodes or capacity change.

        Nodes reserved for a gang other than ``owner`` that would fit count as ``Reserved``.
        A node that ``node_check`` refuses counts under its reason (not cached then).
        """
        epoch = (self._node_epoch, self._release_epoch)
        if self._diagnosis_epoch != epoch:
            self._diagnoses.clear()
            self._diagnosis_epoch = epoch
        blocked = self._blocked(owner)
        key = (constraints, request, blocked is not None)
        cached = self._diagnoses.get(key) if node_check is None else None
        if cached is not None:
            return cached
        by_filter: dict[str, int] = {}
        best: Resources | None = None
        best_size = 0
        for state in self.sorted_nodes():
            failure = static_failure(state.node, constraints)
            if failure is None:
                refused = node_check(state.node) if node_check is not None else None
                if refused is not None:
                    failure = refused
                elif request.fits_in(state.free):
                    failure = "Reserved" if blocked and state.node.name in blocked else "Fits"
                else:
                    failure = "Insufficient"
                    short = request.shortfall(state.free.clamp_non_negative())
                    size = sum(1 for _ in short.items())
                    if best is None or (size, _magnitude(short)) < (best_size, _magnitude(best)):
                        best, best_size = short, size
            by_filter[failure] = by_filter.get(failure, 0) + 1
        diagnosis = Diagnosis(len(self.nodes), by_filter, best or Resources.ZERO,
                              self.reserved_for if blocked else "")
        if node_check is None:
            self._diagnoses[key] = diagnosis
        return diagnosis

    def retry(self) -> None:
        """Something other than capacity changed that may let waiting pods fit (a volume
        appeared, say): pods that fit nowhere are tried again."""
        self._freed()


def _magnitude(resources: Resources) -> tuple[int, ...]:
    return tuple(amount for _, amount in sorted(resources.items()))
