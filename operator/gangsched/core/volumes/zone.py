"""VolumeZone: a bound PersistentVolume's zone and region labels against the node's.

As kube-scheduler v1.32: for each PV the pod's claims are bound to, every topology label
it carries (``topology.kubernetes.io/zone`` and ``/region``, and their deprecated
``failure-domain.beta.kubernetes.io`` forms) must be on the node, with a value among the
PV's (several zones are written ``a__b``); else ``node(s) had no available volume
zone``. Unbound claims are not checked here (VolumeBinding places them).
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


def conflict(volumes: Iterable[PersistentVolume], node: Node) -> str | None:
    """The reason ``node`` is outside a volume's zone or region, or None."""
    for volume in volumes:
        for label in TOPOLOGY_LABELS:
            wanted = volume.labels.get(label)
            if wanted is None:
                continue
            have = node.labels.get(label)
            if have is None or have not in wanted.split("__"):
                return NO_ZONE
    return None
