"""Which gang a pods-first pod makes: the decision, apart from the API call that makes it.

A pod may carry its gang's definition (native pods-first task groups, or another
dialect's, see :mod:`gangsched.translate.dialects`): when no such Application or PodGroup
exists yet, the operator creates it, owned by the pod. What to create, and whether to act
at all, is decided here from the pod and what was last acted on for it; the shell
(:mod:`gangsched.shell.handlers`) only creates the object, with retries.

Acted on once per content of the definition: ``seen`` is the gang's key with the manifest
(or the error) it gives, so that an edited definition is acted on again and an unchanged
one is not. An invalid definition gives an ``InvalidTaskGroups`` (Application) or
``InvalidPodGroup`` Warning on the pod.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Container, Mapping
from typing import Any

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
