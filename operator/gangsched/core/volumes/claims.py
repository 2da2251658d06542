"""DynamicResources: a pod with ``spec.resourceClaims`` is never bound blindly.

gangsched does not allocate devices. A pod with resource claims waits, with a message
saying which and why, until every claim exists and is allocated (``status.allocation``,
by kube-scheduler's DynamicResources plugin for another profile, or a DRA controller);
then only nodes in each allocation's ``nodeSelector`` are feasible. When the
resource.k8s.io API is not served (the shell cannot watch ResourceClaims), the pod
waits with a message saying so: nothing could ever allocate its claims here.
"""

from __future__ import annotations

from gangsched.core.values.constraints import matches_affinity
from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import PodVolumes, ResourceClaim, claim_key
from gangsched.core.volumes.catalog import VolumeCatalog

NOT_ON_NODE = "node(s) cannot reach the devices allocated to the pod's resource claims"


def prefilter(catalog: VolumeCatalog, namespace: str,
              volumes: PodVolumes) -> tuple[tuple[ResourceClaim, ...], str | None]:
    """(the allocated claims, None) or ((), why the pod waits). No claims: ((), None)."""
    if not volumes.resource_claims and not volumes.unresolved_claims:
        return (), None
    if not catalog.resource_claims_served:
        return (), ("pod has spec.resourceClaims, but the resource.k8s.io API is not served: "
                    "its dynamic resources cannot be allocated, so it is not bound")
    for name in volumes.unresolved_claims:
        return (), f'waiting for the resourceclaim of pod claim "{name}" to be created'
    found: list[ResourceClaim] = []
    for name in volumes.resource_claims:
        claim = catalog.resource_claims.get(claim_key(namespace, name))
        if claim is None:
            return (), f'resourceclaim "{name}" not found'
        if not claim.allocated:
            return (), (f'resourceclaim "{name}" is not allocated; gangsched binds the pod '
                        "only once its dynamic resources are allocated")
        found.append(claim)
    return tuple(found), None


def node_failure(claims: tuple[ResourceClaim, ...], node: Node) -> str | None:
    """The reason ``node`` cannot reach an allocated claim's devices, or None."""
    for claim in claims:
        if not matches_affinity(claim.node_affinity, node.labels, node.name):
            return NOT_ON_NODE
    return None
