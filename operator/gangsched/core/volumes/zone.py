"""VolumeZone: a bound PersistentVolume's zone and region labels against the node's.

As kube-scheduler's ``VolumeZone.Filter`` (volumezone/volume_zone.go): a node that carries
none of the four topology labels (``topology.kubernetes.io/zone`` and ``/region``, and
their deprecated ``failure-domain.beta.kubernetes.io`` forms) is accepted: a single-zone
cluster's nodes may have none. On any other node, every topology label a PV the pod's
claims are bound to carries must be on the node, with a value among the PV's (several
zones are written ``a__b``); a PV's beta label is matched by the node's GA label when
the node lacks the beta one (``translateToGALabel``), not the other way round (a PV's GA
label against a node that has only the beta label is a conflict, as upstream). Else:
``node(s) had no available volume zone``. Unbound claims are not checked here
(VolumeBinding places them).
"""

from __future__ import annotations

from collections.abc import Iterable

from gangsched.core.values.model import Node
from gangsched.core.values.volume_specs import PersistentVolume

NO_ZONE = "node(s) had no available volume zone"
TOPOLOGY_LABELS = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
)
GA_LABEL = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
"""A deprecated label's GA form, which a node may carry instead."""


def conflict(volumes: Iterable[PersistentVolume], node: Node) -> str | None:
    """The reason ``node`` is outside a volume's zone or region, or None."""
    labels = node.labels
    if not any(label in labels for label in TOPOLOGY_LABELS):
        return None
    for volume in volumes:
        for label in TOPOLOGY_LABELS:
            wanted = volume.labels.get(label)
            if wanted is None:
                continue
            have = labels.get(label)
            if have is None:
                have = labels.get(GA_LABEL.get(label, label))
            if have is None or have not in wanted.split("__"):
                return NO_ZONE
    return None
