"""A node and what is placed on it, as the cluster keeps it and the plugins read it."""

from __future__ import annotations

from gangsched.core.model import Node
from gangsched.core.placement import HostPort
from gangsched.core.resources import Resources


class NodeState:
    """A node and what is placed on it. ``free`` is kept equal to allocatable - used.

    ``ports`` holds the host ports in use, by the uid of the pod using them (pods of
    other schedulers included).
    """

    __slots__ = ("free", "node", "pods", "ports", "used")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.used = Resources.ZERO
        self.free = node.allocatable
        self.pods: dict[str, Resources] = {}
        """The request each pod placed here holds, by pod uid."""
        self.ports: dict[str, tuple[HostPort, ...]] = {}

    def score(self, request: Resources) -> float:
        """Utilisation after placing ``request``: the sum of per-resource fractions."""
        total = 0.0
        alloc = self.node.allocatable
        for name, amount in request.items():
            capacity = alloc.get(name)
            if capacity > 0:
                total += (self.used.get(name) + amount) / capacity
        return total
