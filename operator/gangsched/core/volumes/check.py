"""The volume plugins run for one pod: PreFilter once, then a Filter per node, then Reserve.

:func:`prefilter` runs DynamicResources, VolumeRestrictions and VolumeBinding's PreFilter
(in kube-scheduler's order for the default profile); a :class:`Wait` names the plugin
and its message, and the pod goes to no node. Otherwise :func:`node_failure` is the
Filter for one node (VolumeBinding, VolumeZone, NodeVolumeLimits, DynamicResources'
allocation node selectors), in kube-scheduler's words, and :func:`plan` the bindings to
assume when the pod is placed there. Pods without volumes or resource claims are never
looked at (:func:`needed`), so they pay nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.model import Node, Pod
from gangsched.core.volumes import binding, claims, limits, restrictions, zone
from gangsched.core.volumes.catalog import Assumption, VolumeCatalog
from gangsched.core.volumes.model import PodVolumes, ResourceClaim


@dataclass(frozen=True, slots=True)
class Wait:
    """The pod fits no node now: ``plugin`` is the reason users see, ``message`` why."""

    plugin: str
    message: str


@dataclass(frozen=True, slots=True)
class PodCheck:
    """What PreFilter found, for the per-node Filter."""

    namespace: str
    volumes: PodVolumes
    claims: binding.Claims
    resource_claims: tuple[ResourceClaim, ...] = ()


def needed(pod: Pod) -> bool:
    """Does the pod use claims, inline CSI volumes or resource claims?"""
    return pod.volumes.any


def prefilter(catalog: VolumeCatalog, pod: Pod) -> PodCheck | Wait:
    """PreFilter for ``pod`` (see the module docstring)."""
    allocated, why = claims.prefilter(catalog, pod.namespace, pod.volumes)
    if why is not None:
        return Wait("DynamicResources", why)
    rwop = restrictions.conflict(catalog, pod.uid, pod.namespace, pod.volumes)
    if rwop is not None:
        return Wait("VolumeRestrictions", rwop)
    sorted_claims = binding.prefilter(catalog, pod.namespace, pod.volumes)
    if isinstance(sorted_claims, binding.Blocked):
        return Wait("VolumeBinding", sorted_claims.message)
    return PodCheck(pod.namespace, pod.volumes, sorted_claims, allocated)


def node_failure(catalog: VolumeCatalog, check: PodCheck, node: Node) -> str | None:
    """Filter: the first volume plugin's reason ``node`` does not fit the pod, or None."""
    reason, _ = binding.match(catalog, check.claims, node)
    if reason is not None:
        return reason
    reason = zone.conflict(check.claims.bound, node)
    if reason is not None:
        return reason
    reason = limits.exceeded(catalog, check.namespace, check.volumes, node.name)
    if reason is not None:
        return reason
    return claims.node_failure(check.resource_claims, node)


def plan(catalog: VolumeCatalog, check: PodCheck, node: Node) -> tuple[Assumption, ...]:
    """Reserve: the bindings to assume for the pod on ``node`` (which passed Filter)."""
    _, found = binding.match(catalog, check.claims, node)
    return found
