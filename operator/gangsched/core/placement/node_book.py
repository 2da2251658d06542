"""The book of the nodes: each node's usage, the namespaces, the reserved nodes, the sums.

:class:`NodeBook` keeps what placement reads and never decides anything: the nodes with
the pods charged to each (ours, another scheduler's, placeholders, pods assumed but not
yet confirmed bound, room held for a preemptor), usage charged to a node not seen yet or
gone (kept aside under its name, so that a node re-added starts with it), the labels of
the namespaces, the nodes held for a starving gang, and the allocatable and free room
summed over the ready, schedulable nodes, kept as usage changes.

It also owns the caches that placement (:class:`~gangsched.core.placement.cluster.Cluster`,
which is a ``NodeBook``) keeps per pod shape, because every change to the book must drop
or outdate them: a node added, removed or relabelled clears them; capacity released bumps
``free_epoch`` and logs the node below the watermarks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podindex import PlacedPod, PodIndex
from gangsched.core.framework.podinfo import Constraints
from gangsched.core.placement.diagnosis import Diagnosis
from gangsched.core.placement.tally import Room, Tally, TouchLog
from gangsched.core.values.model import Node
from gangsched.core.values.resources import Resources
from gangsched.core.volumes.catalog import VolumeCatalog


class NodeBook:
    """All nodes with their usage, and the caches that usage outdates."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeState] = {}
        self.pod_index = PodIndex()
        """Every pod holding a node, for affinity and spread."""
        self.volumes = VolumeCatalog()
        """Volume objects and assumed bindings, for the volume plugins."""
        self.image_nodes: dict[str, int] = {}
        """How many nodes have each image, by name (ImageLocality's spread)."""
        self.namespace_labels: dict[str, Mapping[str, str]] = {}
        """Labels of the namespaces observed (for namespaceSelector)."""
        self.pre_bound: dict[str, list[object]] = {}
        """Decisions PreBind plugins asked for, by pod uid, emitted before its Binding."""
        self.free_epoch = 0
        """Bumped whenever capacity is released or added: cached "does not fit" is stale."""
        self._release_epoch = 0
        """Bumped on every release, also those that need no retry."""
        self._sorted: list[NodeState] | None = None
        self._static: dict[Constraints, list[NodeState]] = {}
        self._positions: dict[Constraints, dict[str, int]] = {}
        """Each node's position among :meth:`candidates` (cached with them)."""
        self._watermarks: dict[tuple[Constraints, Resources], tuple[int, int]] = {}
        """Per pod shape, below which position no candidate had room for it, and how much
        of :attr:`_released` had been read then."""
        self._released: list[str] = []
        """Nodes that had room given back, in order: the only nodes below a watermark
        that may have room for its shape now (charges only take room)."""
        self._cursor: dict[Constraints, int] = {}
        self._diagnoses: dict[object, tuple[object, Diagnosis]] = {}
        self._refusals: dict[object, tuple[object, Diagnosis]] = {}
        """Per pod shape whose fit depends on its node alone, the last diagnosis of one
        that fit nowhere, and the state of the nodes then (see :meth:`fit`)."""
        self._tallies: dict[object, Tally] = {}
        """Diagnoses kept node by node, for pods whose fit depends on their node alone."""
        self._touches = TouchLog()
        """Nodes whose usage or ports changed, for the tallies."""
        self._sums: Sums | None = None
        """Allocatable and free room of ready, schedulable nodes, kept as usage changes."""
        self._rooms: dict[tuple[Resources, Constraints], Room] = {}
        """Per pod shape, how many copies the nodes have room for (see :meth:`room_for`)."""
        self._node_epoch = 0
        self._namespace_epoch = 0
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
        self._count_images(state.node.images if state is not None else {}, node.images)
        if state is None:
            state = NodeState(node)
            self.nodes[node.name] = state
            for uid, request in self._orphan_usage.pop(node.name, {}).items():
                placed = self.pod_index.pods.get(uid)
                state.add(uid, request, placed.nonzero if placed is not None else None)
                if placed is not None and placed.placement.ports:
                    state.ports[uid] = placed.placement.ports
            state.free = node.allocatable - state.used
            self._nodes_changed()
            self._freed()
            return
        old = state.node
        state.set_node(node)
        self._touches.touch(node.name)
        if old.allocatable != node.allocatable:
            state.free = node.allocatable - state.used
            self._sums = None
            self._freed()
            self._released.append(node.name)  # it may have more room: below a watermark
        if (
            old.labels != node.labels
            or old.taints != node.taints
            or old.unschedulable != node.unschedulable
            or old.ready != node.ready
            or old.unreachable != node.unreachable
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
        self._count_images(state.node.images, {})
        if state.pods:
            self._orphan_usage.setdefault(name, {}).update(state.pods)
        self._nodes_changed()

    def _count_images(self, old: Mapping[str, int], new: Mapping[str, int]) -> None:
        """Keep :attr:`image_nodes` as a node's images go from ``old`` to ``new``."""
        if old == new:
            return
        counts = self.image_nodes
        for name in old:
            left = counts.get(name, 0) - 1
            if left > 0:
                counts[name] = left
            else:
                counts.pop(name, None)
        for name in new:
            counts[name] = counts.get(name, 0) + 1

    def _nodes_changed(self) -> None:
        self._touches.size_for(len(self.nodes))
        self._sorted = None
        self._tallies.clear()
        self._rooms.clear()
        self._sums = None
        self._static.clear()
        self._positions.clear()
        self._cursor.clear()
        self._node_epoch += 1
        self._watermarks.clear()
        self._released.clear()

    def sorted_nodes(self) -> list[NodeState]:
        if self._sorted is None:
            self._sorted = [self.nodes[name] for name in sorted(self.nodes)]
            for order, state in enumerate(self._sorted):
                state.order = order
        return self._sorted

    # --- usage ---------------------------------------------------------------------------

    @property
    def namespace_epoch(self) -> int:
        return self._namespace_epoch

    @property
    def node_epoch(self) -> int:
        return self._node_epoch

    @property
    def touches(self) -> TouchLog:
        """The nodes whose usage changed, in order (for what is kept node by node)."""
        return self._touches

    def ports_changed(self, name: str) -> None:
        """Host ports on node ``name`` changed outside :meth:`charge` and :meth:`release`
        (a preemption search hiding its candidates): what follows the touch log judges
        the node again."""
        self._touches.touch(name)

    def touch_mark(self) -> tuple[int, int, int]:
        """Where the log of nodes whose usage changed stands now (see :meth:`touched_since`)."""
        log = self._touches
        return (self._node_epoch, log.generation, len(log.names))

    def touched_since(self, mark: tuple[int, int, int]) -> list[str] | None:
        """The nodes whose usage or allocatable changed since ``mark`` (a
        :meth:`touch_mark`), once each; None when that is no longer known (nodes were
        added or removed, or the log was forgotten since): every node may have."""
        log = self._touches
        epoch, generation, seen = mark
        if epoch != self._node_epoch or generation != log.generation or seen > len(log.names):
            return None
        return list(dict.fromkeys(log.names[seen:]))

    def node_state(self, name: str) -> NodeState | None:
        return self.nodes.get(name)

    # --- namespaces ----------------------------------------------------------------------

    def upsert_namespace(self, name: str, labels: Mapping[str, str]) -> None:
        """Record a namespace's labels; a change retries pods that fit nowhere."""
        if self.namespace_labels.get(name) != labels:
            self.namespace_labels[name] = dict(labels)
            self._namespace_epoch += 1
            self._freed()

    def remove_namespace(self, name: str) -> None:
        if self.namespace_labels.pop(name, None) is not None:
            self._namespace_epoch += 1
            self._freed()

    # --- usage ---------------------------------------------------------------------------

    def charge(self, node_name: str, uid: str, request: Resources,
               placed: PlacedPod | None = None) -> None:
        """Record that pod ``uid`` uses ``request`` (pods slot included) on the node.

        ``placed`` (its labels, affinity terms, host ports) makes it count for the
        neighbour-dependent plugins; a hold without it (room kept for a preemptor) only
        uses capacity.
        """
        if placed is not None:
            self.pod_index.add(placed)
        state = self.nodes.get(node_name)
        if state is None:
            self._orphan_usage.setdefault(node_name, {})[uid] = request
            return
        if placed is not None and placed.placement.ports:
            state.ports[uid] = placed.placement.ports
        before = state.free
        state.add(uid, request, placed.nonzero if placed is not None else None)
        self._touches.touch(node_name)
        if self._sums is not None:
            self._sums.moved(state, before)

    def release(self, node_name: str, uid: str, request: Resources, *, retry: bool = True) -> None:
        """Forget pod ``uid``'s usage on the node (the amount charged, whatever ``request``).

        ``retry=False`` is for undoing a tentative placement made in the same cycle (a
        Strict gang's rollback): the capacity was free when the cycle began, so pods that
        failed to fit need not be tried again because of it.
        """
        self.pod_index.remove(uid)
        state = self.nodes.get(node_name)
        if state is None:
            orphans = self._orphan_usage.get(node_name)
            if orphans is not None:
                orphans.pop(uid, None)
            return
        state.ports.pop(uid, None)
        self._touches.touch(node_name)
        before = state.free
        if state.remove(uid) is not None:
            if self._sums is not None:
                self._sums.moved(state, before)
            self._freed(retry)
            self._released.append(node_name)
            if len(self._released) > 4 * len(self.nodes) + 64:
                self._watermarks.clear()  # a fresh scan costs less than reading the log
                self._released.clear()

    def retry(self) -> None:
        """Something other than capacity changed that may let waiting pods fit (a
        StorageClass appeared, say): pods that fit nowhere are tried again."""
        self._freed()

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
        self._tallies.clear()
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
        sums = self._current_sums()
        free = sums.free()
        for name in blocked or ():
            state = self.nodes.get(name)
            if state is not None and counted(state):
                free = free - state.free.clamp_non_negative()
        return sums.allocatable, free

    def capacity(self) -> Resources:
        """Allocatable summed over ready, schedulable nodes (kept, not recounted)."""
        return self._current_sums().allocatable

    def free_room(self) -> Resources:
        """Free room summed over ready, schedulable nodes, reserved ones included
        (overcommitted nodes count as 0 free). Kept, not recounted."""
        return self._current_sums().free()

    def _current_sums(self) -> Sums:
        if self._sums is None:
            self._sums = Sums.of(self.nodes.values())
        return self._sums

    def used(self) -> Resources:
        total = Resources.ZERO
        for state in self.nodes.values():
            total = total + state.used
        return total


class Sums:
    """Allocatable and free room (negative amounts as 0) summed over the ready,
    schedulable nodes, kept up to date as pods are charged and released: O(resources)
    per change instead of O(nodes) per question."""

    __slots__ = ("_free", "_made", "allocatable")

    def __init__(self, allocatable: Resources, free: dict[str, int]) -> None:
        self.allocatable = allocatable
        self._free = free
        self._made: Resources | None = None

    @classmethod
    def of(cls, states: Iterable[NodeState]) -> Sums:
        total: dict[str, int] = {}
        free: dict[str, int] = {}
        for state in states:
            if counted(state):
                add(total, state.node.allocatable, 1)
                add(free, state.free, 1)
        return cls(Resources(total), free)

    def moved(self, state: NodeState, before: Resources) -> None:
        """``state``'s free room changed from ``before``."""
        if counted(state):
            add(self._free, before, -1)
            add(self._free, state.free, 1)
            self._made = None

    def free(self) -> Resources:
        if self._made is None:
            self._made = Resources(self._free)
        return self._made


def counted(state: NodeState) -> bool:
    return state.node.ready and not state.node.unschedulable


def add(sums: dict[str, int], amounts: Resources, sign: int) -> None:
    """Add (``sign`` 1) or take away (-1) the positive amounts of ``amounts``."""
    for name, amount in amounts.items():
        if amount > 0:
            sums[name] = sums.get(name, 0) + sign * amount
