"""A node and what is placed on it, as the cluster keeps it and the plugins read it."""

from __future__ import annotations

from gangsched.core.values.model import Node
from gangsched.core.values.placement_terms import HostPort
from gangsched.core.values.resources import CPU, MEMORY, Resources

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024


def nonzero(request: Resources) -> tuple[int, int]:
    """(cpu, memory) for scoring: kube-scheduler counts a pod without a cpu or memory
    request as 100m cpu and 200Mi memory, so best-effort pods still spread out."""
    return (request.get(CPU) or DEFAULT_MILLI_CPU, request.get(MEMORY) or DEFAULT_MEMORY)



def _canonical(amounts: Resources) -> str:
    """``amounts`` as text, the same for equal vectors whatever their order."""
    return ",".join(f"{name}={amount}" for name, amount in sorted(amounts.items()))


class NodeState:
    """A node and what is placed on it. ``free`` is kept equal to allocatable - used.

    ``ports`` holds the host ports in use, by the uid of the pod using them (pods of
    other schedulers included).
    """

    __slots__ = ("_alloc_text", "_nonzero_of", "alloc_cpu", "alloc_memory", "free", "labels",
                 "node", "nonzero_cpu", "nonzero_memory", "order", "pods", "ports", "usage_key",
                 "used")

    def __init__(self, node: Node) -> None:
        self.node = node
        self.labels = node.labels
        """The node's labels (``node.labels``, one attribute look-up nearer: filters and
        scorers read them once per node judged)."""
        self.order = -1
        """Its position among all nodes by name (set when that order is made): every
        list of candidates is in this order."""
        self.alloc_cpu = node.allocatable.get(CPU)
        self.alloc_memory = node.allocatable.get(MEMORY)
        """Allocatable cpu and memory, read on every score (see :meth:`set_node`)."""
        self.used = Resources.ZERO
        self.free = node.allocatable
        self.pods: dict[str, Resources] = {}
        """The request each pod placed here holds, by pod uid."""
        self.ports: dict[str, tuple[HostPort, ...]] = {}
        self.nonzero_cpu = 0
        self.nonzero_memory = 0
        """cpu and memory requested, a pod without a request counting as
        kube-scheduler's scoring defaults (see :func:`nonzero`)."""
        self._nonzero_of: dict[str, tuple[int, int]] = {}
        """The pairs given to :meth:`add`, by pod uid, to take away again."""
        self.usage_key = ""
        """What capacity and the resource scorers read of the node (allocatable, what
        is used and requested there), as one string: nodes with equal keys have the
        same room and score alike for those scorers (see ``Cluster.place``). A string,
        whose hash is kept, so that a look-up by it costs less than the fit it spares.
        Kept as usage moves."""
        self._rekey(allocatable=True)

    def set_node(self, node: Node) -> None:
        """Take a newer version of the node (usage is kept)."""
        self.node = node
        self.labels = node.labels
        self.alloc_cpu = node.allocatable.get(CPU)
        self.alloc_memory = node.allocatable.get(MEMORY)
        self._rekey(allocatable=True)

    def _rekey(self, allocatable: bool = False) -> None:
        """Make the usage key again (``allocatable``: the node's allocatable changed)."""
        if allocatable:
            self._alloc_text = _canonical(self.node.allocatable)
        self.usage_key = (f"{self._alloc_text}|{_canonical(self.used)}"
                          f"|{self.nonzero_cpu}|{self.nonzero_memory}")

    def add(self, uid: str, request: Resources,
            counted: tuple[int, int] | None = None) -> None:
        """Charge ``request`` for pod ``uid`` (once per uid); ``counted`` is the pod's
        (cpu, memory) as scoring counts it, else worked out from ``request``."""
        if uid in self.pods:
            return
        self.pods[uid] = request
        self.used = self.used + request
        self.free = self.free - request
        if counted is not None:
            self._nonzero_of[uid] = counted
        cpu, memory = counted or nonzero(request)
        self.nonzero_cpu += cpu
        self.nonzero_memory += memory
        self._rekey()

    def remove(self, uid: str) -> Resources | None:
        """Release what pod ``uid`` holds; None if it holds nothing here."""
        held = self.pods.pop(uid, None)
        if held is None:
            return None
        self.used = self.used - held
        self.free = self.free + held
        counted = self._nonzero_of.pop(uid, None)
        cpu, memory = counted or nonzero(held)
        self.nonzero_cpu -= cpu
        self.nonzero_memory -= memory
        self._rekey()
        return held

    def score(self, request: Resources) -> float:
        """Utilisation after placing ``request``: the sum of per-resource fractions."""
        total = 0.0
        alloc = self.node.allocatable
        for name, amount in request.items():
            capacity = alloc.get(name)
            if capacity > 0:
                total += (self.used.get(name) + amount) / capacity
        return total
