"""What a pod asks of its neighbours and its node beyond the static node filters.

:class:`Placement` gathers the pod fields the placement plugins read, as frozen values
built once at the edge (``gangsched.translate.k8s_placement``):

* ``labels``: what other pods' affinity terms and spread constraints select;
* pod affinity and anti-affinity, required and preferred (:class:`AffinityTerm`). The
  namespaces a term selects are ``namespaces`` united with those ``namespace_selector``
  matches; with neither, the pod's own namespace. ``matchLabelKeys`` and
  ``mismatchLabelKeys`` are already merged into ``selector`` by the edge, as the API
  server does;
* topology spread constraints (:class:`SpreadConstraint`), ``matchLabelKeys`` merged;
* preferred node affinity (:class:`PreferredNodeTerm`);
* host ports (:class:`HostPort`);
* ``gates``: the names in ``spec.schedulingGates``; a gated pod is never placed.

The static node constraints (nodeSelector, required node affinity, tolerations) stay in
:class:`gangsched.core.values.model.Pod` and
:class:`gangsched.core.placement.cluster.Constraints`: they
are what the per-constraint node cache is keyed by.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Self

from gangsched.core.values.constraints import ConstraintError, NodeSelectorTerm
from gangsched.core.values.selectors import LabelSelector


class _Parsed(enum.StrEnum):
    @classmethod
    def from_string(cls, text: str) -> Self:
        """The member spelled ``text``; anything else raises :class:`ConstraintError`
        naming the accepted values."""
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ConstraintError(f'unknown value "{text}" (accepted: {accepted})')


class WhenUnsatisfiable(_Parsed):
    DO_NOT_SCHEDULE = "DoNotSchedule"
    SCHEDULE_ANYWAY = "ScheduleAnyway"


class InclusionPolicy(_Parsed):
    """``nodeAffinityPolicy`` / ``nodeTaintsPolicy`` of a spread constraint."""

    HONOR = "Honor"
    IGNORE = "Ignore"


class Protocol(_Parsed):
    TCP = "TCP"
    UDP = "UDP"
    SCTP = "SCTP"


@dataclasses.dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A ``PodAffinityTerm``: pods matching ``selector`` in the selected namespaces, on
    nodes in the same ``topology_key`` domain. ``selector=None`` matches no pod."""

    topology_key: str
    selector: LabelSelector | None = None
    namespaces: tuple[str, ...] = ()
    namespace_selector: LabelSelector | None = None

    def selects_namespace(
        self, own: str, namespace: str, namespace_labels: Mapping[str, Mapping[str, str]]
    ) -> bool:
        """Whether the term (of a pod in namespace ``own``) selects pods in ``namespace``.

        An unknown namespace has no labels (it matches only an empty selector)."""
        if not self.namespaces and self.namespace_selector is None:
            return namespace == own
        if namespace in self.namespaces:
            return True
        selector = self.namespace_selector
        if selector is None:
            return False
        return selector.empty or selector.matches(namespace_labels.get(namespace, {}))


@dataclasses.dataclass(frozen=True, slots=True)
class WeightedTerm:
    """A ``WeightedPodAffinityTerm`` (weight 1..100)."""

    weight: int
    term: AffinityTerm


@dataclasses.dataclass(frozen=True, slots=True)
class PreferredNodeTerm:
    """A ``PreferredSchedulingTerm`` of node affinity (weight 1..100)."""

    weight: int
    term: NodeSelectorTerm


@dataclasses.dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """A ``TopologySpreadConstraint``; ``min_domains`` is None when not set."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: WhenUnsatisfiable
    selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: InclusionPolicy = InclusionPolicy.HONOR
    node_taints_policy: InclusionPolicy = InclusionPolicy.IGNORE


@dataclasses.dataclass(frozen=True, slots=True)
class HostPort:
    """A container port with a ``hostPort``; ``ip`` ``""`` is ``0.0.0.0`` (all)."""

    port: int
    protocol: Protocol = Protocol.TCP
    ip: str = ""

    def conflicts(self, other: HostPort) -> bool:
        """Same port and protocol, and the same IP or either bound to every IP."""
        if self.port != other.port or self.protocol is not other.protocol:
            return False
        mine = self.ip or "0.0.0.0"
        theirs = other.ip or "0.0.0.0"
        return mine == theirs or mine == "0.0.0.0" or theirs == "0.0.0.0"


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    """A pod's labels and its neighbour-dependent constraints (see the module docstring)."""

    labels: tuple[tuple[str, str], ...] = ()
    affinity: tuple[AffinityTerm, ...] = ()
    affinity_preferred: tuple[WeightedTerm, ...] = ()
    anti_affinity: tuple[AffinityTerm, ...] = ()
    anti_affinity_preferred: tuple[WeightedTerm, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    node_preferred: tuple[PreferredNodeTerm, ...] = ()
    ports: tuple[HostPort, ...] = ()
    gates: tuple[str, ...] = ()
    images: tuple[str, ...] = ()
    """The images of the pod's init and regular containers, one per container, named as
    ImageLocality compares them (a name without a tag gets ``:latest``)."""
    default_spread: bool = False
    """The pod's controller is a ReplicaSet, ReplicationController or StatefulSet: a pod
    without spread constraints of its own gets the cluster's default ones, as
    kube-scheduler gives them to the pods those controllers (or Services) select."""

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def has_pod_terms(self) -> bool:
        """Any pod affinity or anti-affinity, required or preferred."""
        return bool(self.affinity or self.affinity_preferred or self.anti_affinity
                    or self.anti_affinity_preferred)

    @property
    def neighbour_bound(self) -> bool:
        """Whether where other pods are can change where this pod fits."""
        return bool(self.affinity or self.anti_affinity or self.spread or self.ports)


NO_PLACEMENT = Placement()


def with_labels(placement: Placement, labels: Mapping[str, str]) -> Placement:
    """``placement`` carrying ``labels`` (sorted)."""
    return dataclasses.replace(placement, labels=tuple(sorted(labels.items())))
