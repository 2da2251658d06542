"""Topology annotations on a pod that defines a gang: Kueue's TAS and KAI's.

Topology is orthogonal to which dialect names a gang: a Kueue plain-pod group, a
Koordinator gang or a gangsched pods-first Application may all carry Kueue's
``podset-*-topology`` or KAI's ``kai.scheduler/topology-*`` annotations. :func:`apply`
reads them on the pod whose definition makes the gang's custom resource, and writes the
request into that resource as gangsched's own ``topology`` field:

* a PodGroup (Kueue, Koordinator): ``spec.topology``;
* an Application (pods-first, YuniKorn): the task group the pod belongs to (the only one
  when there is one), unless that task group already has its own ``topology``, which
  then wins.

Annotations on pods that only *join* a gang are not read: the gang's resource holds its
request, as it holds its size. Wrong values make the definition fail with every
problem's path (the pod waits and says why, like any bad gang definition); Kueue's and
KAI's annotations on one pod that ask for different things are refused the same way.
The checks against the gang's size happen when the resource is read back
(:mod:`gangsched.translate.podgroups`, :mod:`gangsched.translate.gangspec`), so a
too-large slice is reported on the resource's status.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from gangsched.core.values import model
from gangsched.translate import fields, topology
from gangsched.translate.dialects import (
    APPLICATION,
    PODGROUP,
    Definition,
    kai,
    kueue,
)


def from_annotations(annotations: Mapping[str, str],
                     problems: fields.Problems) -> model.TopologyRequest | None:
    """The request the pod's Kueue and KAI annotations make, ``None`` when they make none;
    problems (with paths) are added to ``problems``."""
    found = [
        (name, request)
        for name, read in (("Kueue", kueue.topology_request), ("KAI", kai.topology_request))
        if (request := read(annotations, problems)) is not None
    ]
    if len(found) == 2 and found[0][1] != found[1][1]:
        problems.add(
            "metadata.annotations: Kueue's and KAI's topology annotations disagree: "
            f'"{topology.describe(found[0][1])}" and "{topology.describe(found[1][1])}"; '
            "keep one of them"
        )
    return found[0][1] if found else None


def apply(definition: Definition, annotations: Mapping[str, str],
          task_group: str | None) -> Definition:
    """``definition`` with the topology the defining pod's ``annotations`` ask for (see the
    module docstring), or with ``error`` naming their problems; unchanged when they ask
    for nothing, or when the definition already failed."""
    if definition.manifest is None:
        return definition
    problems = fields.Problems()
    request = from_annotations(annotations, problems)
    error = problems.message()
    if error is not None:
        return Definition(definition.kind, definition.key, None, error)
    if request is None or request.empty:
        return definition
    manifest = copy.deepcopy(definition.manifest)
    spec: dict[str, Any] = manifest.setdefault("spec", {})
    if definition.kind == PODGROUP:
        spec.setdefault("topology", topology.to_k8s(request))
    elif definition.kind == APPLICATION:
        groups = [g for g in spec.get("taskGroups", ()) if isinstance(g, dict)]
        chosen = [g for g in groups if g.get("name") == task_group] or groups[:1]
        if len(groups) > 1 and not any(g.get("name") == task_group for g in groups):
            return Definition(
                definition.kind, definition.key, None,
                "metadata.annotations: the topology annotations apply to the pod's task "
                f"group, but the pod names none of {[g.get('name') for g in groups]}",
            )
        for group in chosen:
            group.setdefault("topology", topology.to_k8s(request))
    return Definition(definition.kind, definition.key, manifest, definition.error)
