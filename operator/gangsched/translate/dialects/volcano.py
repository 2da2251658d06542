"""Volcano: the ``scheduling.k8s.io/group-name`` annotation, the queue annotations and the
``scheduling.volcano.sh/v1beta1`` PodGroup.

A pod annotated ``scheduling.k8s.io/group-name: <name>`` (or
``scheduling.volcano.sh/group-name``) joins the Volcano PodGroup ``<name>`` of its
namespace, known to the core as ``<namespace>/volcano:<name>``. When Volcano's CRD is
installed, the shell watches those PodGroups; :func:`podgroup_from_k8s` reads
``minMember``, ``minResources`` and ``queue``. Volcano has no gang timeout: its gang
plugin tries a gang again in every session for as long as it exists, so the gang gets
none (:data:`~gangsched.core.values.model.NO_TIMEOUT`) and is never ``TimedOut``; Strict.
No member is placed before ``minMember`` pods exist (the gang plugin's job validity:
"Not enough valid tasks for gang-scheduling"). ``minTaskMember`` (a minimum per task role) is
not read: the whole gang's ``minMember`` still holds.

Read only: Volcano's own controllers own a PodGroup's status (its phases are not
gangsched's), so gangsched writes none, and reads no timer or phase from it.

The queue: annotation ``scheduling.volcano.sh/queue-name``, else ``volcano.sh/queue-name``,
names the gangsched Queue.

Network topology: ``spec.networkTopology {mode, highestTierAllowed}`` (a Volcano Job's
``networkTopology`` is copied there by Volcano's job controller). Volcano's tiers are
HyperNode objects; gangsched does not read them and maps each tier to a node label
instead (:data:`TIER_KEYS`), tier 1 being the smallest:

====  ================================  ====================================
tier  node-label key                    usual meaning
====  ================================  ====================================
1     ``topology.gangsched.io/rack``    a leaf switch: the nodes of one rack
2     ``topology.gangsched.io/block``   a spine: the racks of one block
3     ``topology.kubernetes.io/zone``   the blocks of one zone
====  ================================  ====================================

So a cluster labelled for gangsched's racks and blocks (the same labels as the examples
and the simulator use) serves Volcano jobs unchanged; label the nodes the way Volcano's
label-based HyperNode discovery is configured to see them and both agree.

* ``mode: hard`` (Volcano's default) with ``highestTierAllowed: n`` (default 1):
  ``required`` the key of tier n, ``preferred`` the keys of the tiers below it, smallest
  first (Volcano also tries the lowest tier first);
* ``mode: soft``: ``preferred`` the keys of tiers 1 to ``highestTierAllowed`` (all three
  when absent), then anywhere.

Refused, with the path: another mode, a tier outside 1 to 3, ``highestTierName`` (tier
names live in HyperNode objects), and a ``subGroupPolicy`` entry that carries its own
``networkTopology`` (gangsched would not honour it; entries without one are ignored, as
``minTaskMember`` is).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields, podgroups, topology
from gangsched.translate.dialects import VOLCANO, Claim, PodMeta, first, foreign_key
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

GROUP = "scheduling.volcano.sh"
VERSION = "v1beta1"
PLURAL = "podgroups"
API_VERSION = f"{GROUP}/{VERSION}"
ANN_GROUP_NAME = "scheduling.k8s.io/group-name"
ANN_VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
ANN_QUEUE = "scheduling.volcano.sh/queue-name"
ANN_LEGACY_QUEUE = "volcano.sh/queue-name"
SCHEDULER_NAME = "volcano"

GROUP_KEYS = (("annotation", ANN_GROUP_NAME), ("annotation", ANN_VOLCANO_GROUP_NAME))
QUEUE_KEYS = (("annotation", ANN_QUEUE), ("annotation", ANN_LEGACY_QUEUE))
_SPEC_FIELDS = ("minMember", "minResources", "queue", "priorityClassName")

TIER_KEYS: dict[int, str] = {1: topology.RACK, 2: topology.BLOCK, 3: topology.ZONE}
"""Volcano's network tier n as the node-label key of its domains (see the module
docstring)."""
MODES = ("hard", "soft")


def read(meta: PodMeta) -> Claim | None:
    """Volcano's claim on a pod, or ``None`` when it has none of its annotations.
    Conflicts: group-name or queue annotations that disagree."""
    name, source, name_disagree = first(meta, GROUP_KEYS)
    queue, queue_source, queue_disagree = first(meta, QUEUE_KEYS)
    if name is None and queue is None:
        return None
    conflicts = [f"Volcano group name: {text}" for text in name_disagree]
    conflicts += [f"Volcano queue: {text}" for text in queue_disagree]
    return Claim(
        dialect=VOLCANO,
        source=source,
        pod_group=foreign_key(VOLCANO, meta.namespace, name) if name else None,
        queue=queue,
        queue_source=queue_source,
        conflicts=tuple(conflicts),
    )


def podgroup_from_k8s(obj: Mapping[str, Any], *,
                      priorities: PriorityClasses = NO_CLASSES) -> model.PodGroupSpec:
    """A ``scheduling.volcano.sh`` PodGroup as the core's PodGroupSpec, keyed
    ``namespace/volcano:name``: ``minMember`` (required, 1 to 10000), ``minResources``,
    ``queue`` (default ``default``), ``priorityClassName`` (resolved in ``priorities``),
    checked as a gangsched PodGroup's, and ``networkTopology`` as :func:`network_topology`
    reads it, with every problem in ``invalid``. Nothing is read from ``status``."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    shaped: dict[str, Any] = {"metadata": meta, "spec": spec}
    if isinstance(spec, Mapping):
        shaped["spec"] = {key: spec[key] for key in _SPEC_FIELDS if key in spec}
    result = podgroups.podgroup_from_k8s(shaped, priorities=priorities)
    namespace = str(meta.get("namespace") or "")
    problems = fields.Problems()
    request = model.NO_TOPOLOGY
    if isinstance(spec, Mapping):
        request = network_topology(spec.get("networkTopology"), "spec.networkTopology", problems)
        _sub_groups(spec.get("subGroupPolicy"), problems)
    return dataclasses.replace(
        result,
        key=foreign_key(VOLCANO, namespace, str(meta.get("name") or "")),
        schedule_timeout=model.NO_TIMEOUT,
        wait_for_min_member=True,
        topology=request,
        invalid="; ".join(m for m in (result.invalid, problems.message()) if m) or None,
    )


def network_topology(raw: object, path: str, problems: fields.Problems) -> model.TopologyRequest:
    """Volcano's ``networkTopology`` at ``path`` as a request (see the module docstring);
    ``None`` is no request. Problems are added to ``problems`` with their paths."""
    if raw is None:
        return model.NO_TOPOLOGY
    before = len(problems.messages)
    obj: Mapping[str, Any] = problems.read(lambda: fields.mapping(raw, path), {})
    mode = problems.read(lambda: fields.string(obj.get("mode"), f"{path}.mode"), "") or "hard"
    if mode not in MODES:
        problems.add(f'{path}.mode: unknown mode "{mode}" (accepted: hard, soft)')
    if obj.get("highestTierName") is not None:
        problems.add(
            f"{path}.highestTierName: not supported: tier names live in HyperNode objects, "
            f"which gangsched does not read; give highestTierAllowed (tiers {_tiers_text()})"
        )
    default = 1 if mode == "hard" else max(TIER_KEYS)
    tier = problems.read(
        lambda: fields.integer(obj.get("highestTierAllowed"), f"{path}.highestTierAllowed",
                               default=default),
        default,
    )
    if tier not in TIER_KEYS:
        problems.add(
            f"{path}.highestTierAllowed: must be one of the tiers gangsched maps to node "
            f"labels ({_tiers_text()}), got {tier}"
        )
    if len(problems.messages) > before:
        return model.NO_TOPOLOGY
    below = [(TIER_KEYS[n], f"{path}.highestTierAllowed") for n in range(1, tier)]
    if mode == "soft":
        return topology.build(preferred=[*below, (TIER_KEYS[tier], path)], problems=problems)
    return topology.build(
        required=(TIER_KEYS[tier], f"{path}.highestTierAllowed"), preferred=below,
        problems=problems,
    )


def _tiers_text() -> str:
    return ", ".join(f"{tier}: {key}" for tier, key in sorted(TIER_KEYS.items()))


def _sub_groups(raw: object, problems: fields.Problems) -> None:
    path = "spec.subGroupPolicy"
    if not isinstance(raw, list):
        return
    for index, item in enumerate(raw):
        if isinstance(item, Mapping) and item.get("networkTopology") is not None:
            problems.add(
                f"{path}[{index}].networkTopology: not supported: gangsched keeps slices of "
                "members in member order, not sub-groups selected by labels; give the "
                "PodGroup's networkTopology only"
            )
