"""Which gang a pods-first pod makes: the decision, apart from the API call that makes it.

A pod may carry its gang's definition (native pods-first task groups, or another
dialect's, see :mod:`gangsched.translate.dialects`): when no such Application or PodGroup
exists yet, the operator creates it, owned by the pod. What to create, and whether to act
at all, is decided here from the pod and what was last acted on for it; the shell
(:mod:`gangsched.shell.handlers`) only creates the object, with retries.

The gang outlives its first pod: every real member of a gang made from pods (native
pods-first task groups, Koordinator's or Kueue's annotations) becomes one more owner of
it (:func:`owners_to_add`; never as controller, never blocking its owner's deletion), so
Kubernetes' garbage collector deletes the gang only once *all* its members are gone,
and drops each member's reference as it goes. A Spark client-mode job's first executor
(its originator) may go, the Application stays with the others, and a replacement
executor joins it as a member of the running gang. A gang whose only member goes before
it started is collected, and its placeholders with it (they are owned by the
Application): YuniKorn's rule for an originator that goes first. Placeholders never own
their gang (they are its dependents).

Acted on once per content of the definition: ``seen`` is the gang's key with the manifest
(or the error) it gives, so that an edited definition is acted on again and an unchanged
one is not. An invalid definition gives an ``InvalidTaskGroups`` (Application) or
``InvalidPodGroup`` Warning on the pod.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Container, Iterable, Mapping
from typing import Any

from gangsched.core.values.model import Pod
from gangsched.translate import labels
from gangsched.translate.dialects import APPLICATION, Membership
from gangsched.translate.pods import gang_definition

SEP = "\x00"
"""Between the gang's key and the content in ``seen``."""


@dataclasses.dataclass(frozen=True, slots=True)
class GangToMake:
    """The Application or PodGroup a pod asks for: ``manifest`` to create, or (``None``)
    ``why`` it cannot be made, with the ``reason`` of the Warning that says so."""

    key: str
    """``namespace/name`` of the gang."""
    is_app: bool
    """An Application (else a PodGroup)."""
    seen: str
    """What this decision was made on (see the module docstring)."""
    manifest: dict[str, Any] | None
    why: str = ""
    reason: str = ""

    @property
    def namespace(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def plural(self) -> str:
        return "applications" if self.is_app else "podgroups"

    @property
    def what(self) -> str:
        return "application" if self.is_app else "pod group"

    @property
    def not_created(self) -> str:
        """The reason of the Warning when the API server refuses the creation."""
        return "ApplicationNotCreated" if self.is_app else "PodGroupNotCreated"


def is_app(membership: Membership) -> bool:
    """Does ``membership`` define an Application (else a PodGroup)?"""
    return membership.definition_kind == APPLICATION


def gang_to_make(obj: Mapping[str, Any], membership: Membership, *,
                 existing: Container[str], tried: str | None) -> GangToMake | None:
    """What pod ``obj`` (of ``membership``) asks to be made, or ``None`` when nothing is to
    be done: the gang is among ``existing`` keys, the pod defines none, or ``tried`` (what
    was last acted on for this pod) is the same content."""
    key = membership.definition_key
    if key in existing:
        return None
    definition = gang_definition(obj, membership)
    if definition is None:
        return None
    manifest, error = definition.manifest, definition.error
    seen = key + SEP + json.dumps(manifest if manifest is not None else error, sort_keys=True)
    if tried == seen:
        return None
    app = is_app(membership)
    if manifest is None:
        what = "application" if app else "pod group"
        return GangToMake(key, app, seen, None,
                          why=f"{what} {key} cannot be created from this pod: {error}",
                          reason="InvalidTaskGroups" if app else "InvalidPodGroup")
    return GangToMake(key, app, seen, manifest)


def made_for(seen: str, key: str) -> bool:
    """Was ``seen`` (a decision's) about the gang ``key``?"""
    return seen.startswith(key + SEP)


def owner_ref(pod: Pod) -> dict[str, Any]:
    """The reference that makes ``pod`` an owner of its gang: not the controller, not
    blocking the pod's deletion (so no ``pods/finalizers`` grant is needed)."""
    return {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": str(pod.uid),
            "controller": False, "blockOwnerDeletion": False}


def made_from_pods(gang: Mapping[str, Any]) -> bool:
    """Was ``gang`` (an Application or PodGroup as the API server has it) made by the
    operator from its pods: labelled managed-by gangsched, owned by pods only?"""
    meta = gang.get("metadata")
    if not isinstance(meta, Mapping):
        return False
    found = meta.get("labels")
    if not isinstance(found, Mapping) or found.get(labels.LABEL_MANAGED_BY) != labels.MANAGED_BY:
        return False
    refs = meta.get("ownerReferences")
    return isinstance(refs, list) and bool(refs) and all(
        isinstance(r, Mapping) and r.get("kind") == "Pod" and r.get("apiVersion") == "v1"
        for r in refs)


def owners_to_add(gang: Mapping[str, Any], members: Iterable[Pod]) -> list[dict[str, Any]] | None:
    """The JSON patch (RFC 6902) that adds every member of ``members`` that may own
    ``gang`` and does not yet, or ``None`` when there is none or the gang is not one made
    from pods (:func:`made_from_pods`), or is being deleted.

    A member may own it when it is a real pod (not a placeholder) that holds on: not
    finished, not terminating (one that goes would be dropped by the garbage collector
    at once). The patch first tests ``metadata.resourceVersion``: a gang changed since
    (another member added, a reference dropped by the collector) refuses it with 422,
    and it is worked out again from the gang as it then is. Members are added in name
    order."""
    if not made_from_pods(gang):
        return None
    meta = gang["metadata"]
    if meta.get("deletionTimestamp"):
        return None
    have = {str(r.get("uid")) for r in meta["ownerReferences"]}
    wanted = sorted((p for p in members
                     if not p.placeholder and p.active and not p.terminating
                     and str(p.uid) not in have), key=lambda p: p.name)
    if not wanted:
        return None
    ops: list[dict[str, Any]] = [{"op": "test", "path": "/metadata/resourceVersion",
                                  "value": meta.get("resourceVersion")}]
    ops += [{"op": "add", "path": "/metadata/ownerReferences/-", "value": owner_ref(p)}
            for p in wanted]
    return ops
