"""What ``gangsched explain`` says of a pod's ResourceClaims: one line per claim.

:func:`describe` reads a claim as the API serves it (translated into
:class:`~gangsched.core.values.devices.ResourceClaim`) and says whether it is allocated,
which devices (``driver/pool/device``, per request), where (the allocation's node
selector, as ``node <name>`` when it pins one node), whether it is reserved for the pod,
and how many consumers share it. A claim not allocated says ``not allocated``: why no
device fits is the pod's ``PodScheduled`` message, in kube-scheduler's words (``0/N nodes
are available: N cannot allocate all claims.``, a selector's CEL error, ``resourceclaim
in use``...), which the explanation prints next to it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangsched.core.values.constraints import NODE_NAME_FIELD
from gangsched.core.values.devices import RESERVED_FOR_MAX, ResourceClaim


@dataclass(frozen=True, slots=True)
class ClaimView:
    name: str
    allocated: bool
    devices: tuple[str, ...] = ()
    """``<request>: <driver>/<pool>/<device>`` per device (``(admin)`` for admin access)."""
    where: str = ""
    """``node <name>``, ``nodes matching <selector>``, or ``any node``; empty when not
    allocated."""
    reserved_for_pod: bool = False
    consumers: int = 0

    def line(self) -> str:
        """One line for people: ``gpu-0: allocated on node n1, reserved: req-0:
        gpu.example.com/n1/gpu-3``."""
        if not self.allocated:
            return f"{self.name}: not allocated"
        shared = (f", shared by {self.consumers}/{RESERVED_FOR_MAX} consumers"
                  if self.consumers > 1 else "")
        reserved = "reserved for the pod" if self.reserved_for_pod else "not reserved for the pod"
        return (f"{self.name}: allocated on {self.where}, {reserved}{shared}: "
                + ", ".join(self.devices))


def describe(claim: ResourceClaim, pod_uid: str = "") -> ClaimView:
    allocation = claim.allocation
    if allocation is None:
        return ClaimView(claim.name, False, consumers=len(claim.reserved_for))
    devices = tuple(f"{r.request}: {r.device_id}" + (" (admin)" if r.admin_access else "")
                    for r in allocation.devices)
    return ClaimView(claim.name, True, devices, _where(claim), claim.reserved_by(pod_uid),
                     len(claim.reserved_for))


def _where(claim: ResourceClaim) -> str:
    selector = claim.node_affinity
    terms = selector.required_terms
    if terms is None:
        return "any node"
    if len(terms) == 1 and not terms[0].match_expressions and len(terms[0].match_fields) == 1:
        field = terms[0].match_fields[0]
        if field.key == NODE_NAME_FIELD and len(field.values) == 1:
            return f"node {field.values[0]}"
    parts = []
    for term in terms:
        requirements = [*term.match_expressions, *term.match_fields]
        parts.append(" and ".join(f"{r.key} {r.operator.value} {','.join(r.values)}".strip()
                                  for r in requirements))
    return "nodes matching " + " or ".join(f"({p})" for p in parts)
