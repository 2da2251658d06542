"""A task group's resource claims: read from its spec, carried by its placeholders.

``taskGroups[].resourceClaims`` has the shape of a pod's ``spec.resourceClaims``
(``core/v1`` ``PodResourceClaim``), as the other fields of a task group mirror the pod
spec (``nodeSelector``, ``tolerations``, ``affinity``, ``topologySpreadConstraints``):
each entry has a ``name`` (a DNS label, unique in the group) and exactly one of
``resourceClaimTemplateName`` (each member gets a claim of its own, made from the
template) and ``resourceClaimName`` (the members share that claim), both DNS
subdomains. A member's own ``spec.resourceClaims`` are expected to say the same; what
the member asks is what its claims get, the group's entries are what its placeholder
holds for it.

Placeholders carry their task group's entries in the annotation
``gangsched.io/resource-claims`` (the JSON list, as in the spec): the core reads them
from the placeholder itself, as it reads the constraints copied from the group, so a
placeholder found after a restart holds what its group asked for when it was made.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gangsched.core.values.volume_specs import GroupClaim, placeholder_volumes
from gangsched.translate import fields, labels

ANNOTATION = f"{labels.GROUP}/resource-claims"
"""Placeholder pod annotation: its task group's ``resourceClaims`` (a JSON list)."""
MAX_CLAIMS = 32
"""At most this many claims per task group (the CRD's ``maxItems``)."""

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_TEMPLATE = "resourceClaimTemplateName"
_CLAIM = "resourceClaimName"


def read(raw: object, path: str, problems: fields.Problems) -> tuple[GroupClaim, ...]:
    """The claims of ``raw`` (None: none); every problem is added with its path
    (``spec.taskGroups[0].resourceClaims[1].name: Required value``)."""
    if raw is None:
        return ()
    empty: Sequence[Any] = ()
    items = problems.read(lambda: fields.sequence(raw, path), empty)
    if len(items) > MAX_CLAIMS:
        problems.add(f"{path}: Too many: {len(items)}: must have at most {MAX_CLAIMS} items")
        return ()
    found: list[GroupClaim] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        at = f"{path}[{index}]"
        if not isinstance(item, Mapping):
            problems.add(f"{at}: must be an object")
            continue
        name = fields.lookup(item, "name")
        if not isinstance(name, str) or not name:
            problems.add(f"{at}.name: Required value")
            continue
        if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
            problems.add(f'{at}.name: Invalid value: "{name}": must be a DNS label')
            continue
        if name in seen:
            problems.add(f'{at}.name: Duplicate value: "{name}"')
            continue
        seen.add(name)
        template = fields.lookup(item, _TEMPLATE)
        claim = fields.lookup(item, _CLAIM)
        given = [(key, value) for key, value in ((_TEMPLATE, template), (_CLAIM, claim))
                 if value is not None and value != ""]
        if len(given) != 1:
            problems.add(f"{at}: Invalid value: must specify exactly one of "
                         f"{_CLAIM} and {_TEMPLATE}")
            continue
        key, value = given[0]
        if (not isinstance(value, str) or len(value) > 253
                or not _DNS_SUBDOMAIN.fullmatch(value)):
            problems.add(f'{at}.{key}: Invalid value: "{value}": must be a DNS subdomain')
            continue
        found.append(GroupClaim(name, template=value if key == _TEMPLATE else "",
                                claim=value if key == _CLAIM else ""))
    return tuple(found)


def manifest(claims: Sequence[GroupClaim]) -> list[dict[str, str]]:
    """The claims as the CRD stores them."""
    return [{"name": c.name, _TEMPLATE: c.template} if c.template
            else {"name": c.name, _CLAIM: c.claim} for c in claims]


def annotation(claims: Sequence[GroupClaim]) -> str:
    """The placeholder annotation's value for ``claims`` (compact JSON)."""
    return json.dumps(manifest(claims), separators=(",", ":"))


def placeholder_claims(pod_name: str, annotations: Mapping[str, str],
                       problems: fields.Problems
                       ) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """(held, shared) claims of placeholder ``pod_name`` from its annotation: held are
    (the name it holds the claim under, the template), shared the claims' names. No
    annotation: none. A malformed one is a problem of the pod."""
    text = annotations.get(ANNOTATION)
    if not text:
        return (), ()
    try:
        raw = json.loads(text)
    except ValueError as error:
        problems.add(f"metadata.annotations[{ANNOTATION}]: invalid JSON: {error}")
        return (), ()
    made = placeholder_volumes(pod_name, read(raw, f"metadata.annotations[{ANNOTATION}]",
                                              problems))
    return made.held_claims, made.shared_claims
