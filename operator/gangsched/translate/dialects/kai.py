"""NVIDIA KAI scheduler: topology-aware placement from ``kai.scheduler/*`` annotations.

KAI's pod grouper reads these annotations on a workload's top owner (a Job, a
PyTorchJob; for Ray, on each group's pod template) and writes them into its PodGroup's
``topologyConstraint``. gangsched reads them on the pod that defines a gang (put them on
the pod template; a plain pod is its own top owner), whichever dialect names the gang
(:func:`gangsched.translate.dialects.topologies.apply`). Only topology is read: KAI's
gangs themselves come from its pod grouper and its ``scheduling.run.ai`` PodGroups, which
gangsched does not emulate or read.

KAI's levels are the ``nodeLabel`` entries of a ``Topology`` object, and its user guide
writes the annotations with those node-label keys
(``topology-required-placement: cloud.provider.com/topology-rack``). gangsched reads the
value as the node-label key of the level; it does not read the ``Topology`` object.

==================================================  =======================================
annotation                                          TopologyRequest
==================================================  =======================================
``topology-required-placement: <key>``              ``required=<key>`` (KAI: the highest
                                                    level the whole job may span)
``topology-preferred-placement: <key>``             ``preferred=(<key>,)``: one domain of
                                                    the key if one fits, else up to the
                                                    required level, else anywhere
``segment-size: "<n>"`` with                        ``slice_key=<key>``, ``slice_size=<n>``
``segment-topology-required-placement: <key>``
``topology: <name>``                                checked (a DNS subdomain), not used
==================================================  =======================================

Both placements may be given (KAI's "require a block, prefer a rack"); the same key in
both is one required level. Refused with a message: a segment size without a required
segment placement, ``segment-topology-preferred-placement`` (gangsched's slices are
required), a size below 1 or above the gang's size, keys that are not label keys.
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.values import model
from gangsched.translate import fields, topology
from gangsched.translate.dialects import annotation_path, count

PREFIX = "kai.scheduler/"
ANN_TOPOLOGY = f"{PREFIX}topology"
ANN_REQUIRED = f"{PREFIX}topology-required-placement"
ANN_PREFERRED = f"{PREFIX}topology-preferred-placement"
ANN_SEGMENT_SIZE = f"{PREFIX}segment-size"
ANN_SEGMENT_REQUIRED = f"{PREFIX}segment-topology-required-placement"
ANN_SEGMENT_PREFERRED = f"{PREFIX}segment-topology-preferred-placement"
TOPOLOGY_ANNOTATIONS = (
    ANN_TOPOLOGY, ANN_REQUIRED, ANN_PREFERRED, ANN_SEGMENT_SIZE, ANN_SEGMENT_REQUIRED,
    ANN_SEGMENT_PREFERRED,
)


def topology_request(annotations: Mapping[str, str], problems: fields.Problems, *,
                     members: int | None = None) -> model.TopologyRequest | None:
    """KAI's topology annotations as a request (see the module docstring); ``None`` when
    the pod carries none of the placement or segment annotations (``topology`` alone asks
    for nothing). Every broken rule is added to ``problems`` with the annotation's path."""
    if ANN_TOPOLOGY in annotations:
        problems.read(
            lambda: fields.dns_subdomain(
                annotations[ANN_TOPOLOGY], annotation_path(ANN_TOPOLOGY), what="Topology name"
            ),
            "",
        )
    if not any(key in annotations for key in TOPOLOGY_ANNOTATIONS[1:]):
        return None
    if ANN_SEGMENT_PREFERRED in annotations:
        problems.add(
            f"{annotation_path(ANN_SEGMENT_PREFERRED)}: not supported: gangsched keeps "
            f"segments in one domain of a required level; use {ANN_SEGMENT_REQUIRED}"
        )

    def pair(key: str) -> tuple[str, str] | None:
        return (annotations[key], annotation_path(key)) if key in annotations else None

    required = pair(ANN_REQUIRED)
    preferred = pair(ANN_PREFERRED)
    if preferred is not None and required is not None and preferred[0] == required[0]:
        preferred = None
    size: tuple[int, str] | None = None
    if ANN_SEGMENT_SIZE in annotations:
        size_path = annotation_path(ANN_SEGMENT_SIZE)
        value = problems.read(
            lambda: count(annotations[ANN_SEGMENT_SIZE], size_path, minimum=-(2**31),
                          maximum=2**31 - 1),
            None,
        )
        if value is not None:
            size = (value, size_path)
    segment = pair(ANN_SEGMENT_REQUIRED)
    if size is not None and segment is None and ANN_SEGMENT_PREFERRED not in annotations:
        problems.add(f"{size[1]}: given without {ANN_SEGMENT_REQUIRED}")
        size = None
    if segment is not None and ANN_SEGMENT_SIZE not in annotations:
        problems.add(f"{annotation_path(ANN_SEGMENT_SIZE)}: required with {ANN_SEGMENT_REQUIRED}")
        segment = None
    return topology.build(
        required=required,
        preferred=[preferred] if preferred is not None else [],
        slice_key=segment,
        slice_size=size if segment is not None else None,
        members=members,
        problems=problems,
    )
