"""The pod as the placement plugins see it: built once per pod version, hashable parts.

:class:`Constraints` is the *static* part: what decides whether a node fits regardless of
what else runs there (nodeSelector, required node affinity, tolerations). Static filter
results are cached per ``Constraints`` value, so pods with equal constraints share them.

:class:`PodInfo` adds the request, the pod's identity and its
:class:`~gangsched.core.values.placement_terms.Placement` (labels, pod affinity, spread, ports,
gates), which the neighbour-dependent plugins read, and its volumes, which the volume
plugins read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core.values.constraints import ANY_NODE, NodeAffinity, Toleration
from gangsched.core.values.placement_terms import NO_PLACEMENT, Placement
from gangsched.core.values.resources import Resources
from gangsched.core.values.volume_specs import NO_VOLUMES, PodVolumes

if TYPE_CHECKING:
    from gangsched.core.values.model import Pod, TaskGroup


@dataclass(frozen=True, slots=True)
class Constraints:
    """A pod's static placement constraints, hashable so placements can share caches."""

    node_selector: tuple[tuple[str, str], ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    affinity: NodeAffinity = ANY_NODE
    node_name: str = ""
    """``spec.nodeName`` of a pod that asks for one node (see the NodeName plugin)."""
    _hash: int | None = field(default=None, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        """Worked out once: constraints key the caches that every placement reads."""
        cached = self._hash
        if cached is None:
            cached = hash((self.node_selector, self.tolerations, self.affinity,
                           self.node_name))
            object.__setattr__(self, "_hash", cached)
        return cached

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


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One pod to place (or one placed): everything the plugins may read.

    ``uid`` is empty for a hypothetical pod (a diagnosis of a shape, a test). ``owner``
    is the key of its Application or PodGroup, None for a pod on its own.
    """

    request: Resources
    constraints: Constraints = NO_CONSTRAINTS
    placement: Placement = NO_PLACEMENT
    namespace: str = ""
    name: str = ""
    uid: str = ""
    owner: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    volumes: PodVolumes = NO_VOLUMES
    """Its claims, inline CSI volumes and resource claims (the volume plugins' input)."""
    nonzero: tuple[int, int] | None = None
    """(cpu, memory) as scoring counts the pod (see
    :attr:`gangsched.core.values.model.Pod.nonzero`); None: from ``request``."""

    @classmethod
    def of(
        cls,
        request: Resources,
        constraints: Constraints = NO_CONSTRAINTS,
        placement: Placement = NO_PLACEMENT,
        *,
        namespace: str = "",
        name: str = "",
        uid: str = "",
        owner: str | None = None,
    ) -> PodInfo:
        return cls(request, constraints, placement, namespace, name, uid, owner,
                   placement.label_map)
