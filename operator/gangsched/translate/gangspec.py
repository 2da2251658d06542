"""The gang part of an Application: task groups and the scheduling policy.

Two sources feed it:

* the Application CRD (``spec.taskGroups``, ``spec.schedulingPolicy``), already shaped by
  the API server's schema but validated again here, because the core must never see an
  impossible gang;
* the pods-first annotations of a pod (``gangsched.io/task-groups``,
  ``gangsched.io/scheduling-policy``), which nobody has validated. Like YuniKorn, which
  decodes them with Go's ``encoding/json``, field names are matched ignoring case
  (``minmember``, ``MinMember``) and unknown fields are ignored; the known fields are
  checked strictly. The policy may also be YuniKorn's ``key=value`` text.

Each task group is read once into a :class:`ParsedTaskGroup`: the core model, and the
CRD-shaped manifest (camelCase fields, only the known ones) that the pods-first flow puts
into the Application it creates. Constraint fields are validated for the model but copied
raw into the manifest, so pod affinity and preferred terms pass through to placeholders.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from gangsched.core.values import constraints, model, resources
from gangsched.translate import fields, group_claims, k8s_constraints, k8s_placement, topology

MAX_TASK_GROUPS = 32
MAX_MIN_MEMBER = 10000
DEFAULT_PLACEHOLDER_TIMEOUT = 900
DEFAULT_WAITING_TIMEOUT = 30

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_LABEL_RULE = (
    "must consist of lower case alphanumerics and '-', start and end with an alphanumeric, "
    "and be at most 63 characters"
)

TranslationError = fields.TranslationError


@dataclasses.dataclass(frozen=True, slots=True)
class ParsedTaskGroup:
    """A validated task group: the core's model and its CRD-shaped manifest."""

    model: model.TaskGroup
    manifest: dict[str, Any]


def _quantity_manifest(raw: object, path: str) -> dict[str, Any]:
    """Quantities as the CRD stores them: strings and integers as given, other numbers in
    canonical form (the CRD's ``int-or-string`` admits no fractions)."""
    result: dict[str, Any] = {}
    for name, value in fields.mapping(raw, path).items():
        if isinstance(value, float):
            amount = resources.parse_resource(name, value)
            result[name] = resources.format_amount(name, amount)
        else:
            result[name] = value
    return result


def _task_group(raw: object, path: str, problems: fields.Problems) -> ParsedTaskGroup | None:
    before = len(problems.messages)
    obj: Mapping[str, Any] = problems.read(lambda: fields.mapping(raw, path), {})
    if len(problems.messages) > before:
        return None

    def get(key: str) -> Any:
        return fields.lookup(obj, key)

    name = problems.read(lambda: fields.string(get("name"), f"{path}.name"), "")
    if not name and len(problems.messages) == before:
        problems.add(f"{path}.name: required")
    elif name and (len(name) > 63 or not _DNS_LABEL.fullmatch(name)):
        problems.add(f'{path}.name: invalid task group name "{name}": {_DNS_LABEL_RULE}')
    member_path = f"{path}.minMember"
    if get("minMember") is None:
        problems.add(f"{member_path}: required")
    min_member = problems.read(
        lambda: fields.integer(
            get("minMember"), member_path, default=1, minimum=1, maximum=MAX_MIN_MEMBER
        ),
        1,
    )
    resource_path = f"{path}.minResource"
    min_resource = problems.read(
        lambda: fields.resource_list(get("minResource"), resource_path), resources.Resources.ZERO
    )
    selector: dict[str, str] = problems.read(
        lambda: k8s_constraints.node_selector_from_k8s(
            get("nodeSelector"), path=f"{path}.nodeSelector"
        ),
        {},
    )
    tolerations: tuple[constraints.Toleration, ...] = problems.read(
        lambda: k8s_constraints.tolerations_from_k8s(
            get("tolerations"), path=f"{path}.tolerations"
        ),
        (),
    )
    affinity = problems.read(
        lambda: k8s_constraints.node_affinity_from_k8s(get("affinity"), path=f"{path}.affinity"),
        constraints.ANY_NODE,
    )
    labels: dict[str, str] = problems.read(
        lambda: fields.string_map(get("labels"), f"{path}.labels"), {}
    )
    annotations: dict[str, str] = problems.read(
        lambda: fields.string_map(get("annotations"), f"{path}.annotations"), {}
    )
    group_placement = k8s_placement.placement_from_k8s(
        {"affinity": get("affinity"),
         "topologySpreadConstraints": get("topologySpreadConstraints")},
        labels, problems, path=path)
    topology_request = topology.from_k8s(
        get("topology"), f"{path}.topology", problems, members=min_member
    )
    claims = group_claims.read(get("resourceClaims"), f"{path}.resourceClaims", problems)
    if len(problems.messages) > before:
        return None

    manifest: dict[str, Any] = {"name": name, "minMember": min_member}
    if get("minResource") is not None:
        manifest["minResource"] = _quantity_manifest(get("minResource"), resource_path)
    if selector:
        manifest["nodeSelector"] = selector
    for key, value in (
        ("tolerations", get("tolerations")),
        ("affinity", get("affinity")),
        ("topologySpreadConstraints", get("topologySpreadConstraints")),
    ):
        if value:
            manifest[key] = copy.deepcopy(value)
    if labels:
        manifest["labels"] = labels
    if annotations:
        manifest["annotations"] = annotations
    if not topology_request.empty:
        manifest["topology"] = topology.to_k8s(topology_request)
    if claims:
        manifest["resourceClaims"] = group_claims.manifest(claims)
    group = model.TaskGroup(
        name=name,
        min_member=min_member,
        min_resource=min_resource,
        node_selector=selector,
        tolerations=tolerations,
        affinity=affinity,
        placement=group_placement,
        topology=topology_request,
        claims=claims,
    )
    return ParsedTaskGroup(model=group, manifest=manifest)


def read_task_groups(raw: object, path: str) -> tuple[list[ParsedTaskGroup], list[str]]:
    """Read a list of task groups; ``None`` is an empty list.

    Returns the valid task groups and the error messages of the others (each starting with
    its path). Checked: the list type, at most 32 groups, each an object with a ``name``
    (a DNS label, unique) and ``minMember`` (an integer from 1 to 10000), quantities in
    ``minResource`` (not negative; an empty or absent ``minResource`` is allowed),
    ``nodeSelector``, ``tolerations`` and required node affinity as Kubernetes would
    admit them, ``resourceClaims`` as a pod's (see
    :mod:`gangsched.translate.group_claims`), ``topologySpreadConstraints`` a list of
    objects, ``labels`` and ``annotations`` maps of strings.
    """
    problems = fields.Problems()
    items: Sequence[Any] = problems.read(lambda: fields.sequence(raw, path), ())
    if len(items) > MAX_TASK_GROUPS:
        problems.add(f"{path}: too many task groups: {len(items)} (at most {MAX_TASK_GROUPS})")
    parsed: list[ParsedTaskGroup] = []
    first_at: dict[str, int] = {}
    for index, item in enumerate(items):
        item_path = f"{path}[{index}]"
        group = _task_group(item, item_path, problems)
        if group is None:
            continue
        name = group.model.name
        if name in first_at:
            problems.add(
                f'{item_path}.name: duplicate task group name "{name}" '
                f"(first at {path}[{first_at[name]}])"
            )
            continue
        first_at[name] = index
        parsed.append(group)
    return parsed, problems.messages


def task_groups_from_json(text: str, *, path: str) -> list[dict[str, Any]]:
    """Parse pods-first task groups (a JSON list) into CRD-shaped ``taskGroups`` entries.

    Field names are matched ignoring case; unknown fields are dropped. Raises
    :class:`TranslationError` with every problem found, each prefixed with ``path``:
    invalid JSON (with line and column), not a list, and the checks of
    :func:`read_task_groups`.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        raise TranslationError(
            f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        ) from None
    if not isinstance(raw, list):
        raise TranslationError(
            f"{path}: expected a JSON list of task groups, got {fields.json_type(raw)}"
        )
    groups, errors = read_task_groups(raw, path)
    if errors:
        raise TranslationError("; ".join(errors))
    return [group.manifest for group in groups]


# The scheduling policy.

_POLICY_KEYS: Mapping[str, str] = {
    "style": "style",
    "gangschedulingstyle": "style",
    "placeholdertimeoutseconds": "placeholderTimeoutSeconds",
    "placeholdertimeoutinseconds": "placeholderTimeoutSeconds",
    "waitingtimeoutseconds": "waitingTimeoutSeconds",
}
_TIMEOUT_MINIMUM = {"placeholderTimeoutSeconds": 1, "waitingTimeoutSeconds": 0}


def _policy_entries(text: str, path: str) -> list[tuple[str, object]]:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            raw = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise TranslationError(
                f"{path}: invalid JSON at line {error.lineno} column {error.colno}: {error.msg}"
            ) from None
        return list(fields.mapping(raw, path).items())
    entries: list[tuple[str, object]] = []
    for word in stripped.split():
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise TranslationError(f'{path}: expected key=value, got "{word}"')
        entries.append((key, value))
    return entries


def _policy_value(field: str, value: object, path: str) -> object:
    if field == "style":
        text = fields.string(value, path)
        for style in model.Style:
            if style.value.casefold() == text.casefold():
                return style.value
        accepted = ", ".join(style.value for style in model.Style)
        raise TranslationError(f'{path}: unknown style "{text}" (accepted: {accepted})')
    if isinstance(value, str):
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise TranslationError(f'{path}: expected an integer, got "{value}"')
        value = int(value)
    return fields.integer(value, path, default=0, minimum=_TIMEOUT_MINIMUM[field])


def scheduling_policy_from_text(text: str, *, path: str) -> dict[str, Any]:
    """Parse a pods-first scheduling policy into a CRD-shaped ``schedulingPolicy``.

    Either a JSON object (``{"style": "Hard", "placeholderTimeoutSeconds": 60}``) or
    YuniKorn's space-separated text (``placeholderTimeoutInSeconds=60
    gangSchedulingStyle=Hard``). Keys, matched ignoring case: ``style`` or
    ``gangSchedulingStyle`` (``Hard``/``Soft``, any case), ``placeholderTimeoutSeconds``
    or ``placeholderTimeoutInSeconds`` (an integer of at least 1),
    ``waitingTimeoutSeconds`` (at least 0). Unknown keys are ignored; only the keys given
    appear in the result (the CRD defaults the rest). Empty text gives ``{}``. Raises
    :class:`TranslationError` naming ``path`` and the key for anything else.
    """
    result: dict[str, Any] = {}
    for key, value in _policy_entries(text, path):
        field = _POLICY_KEYS.get(key.casefold())
        if field is not None:
            result[field] = _policy_value(field, value, fields.key_path(path, key))
    return result


def policy_from_k8s(raw: object, path: str, problems: fields.Problems) -> model.SchedulingPolicy:
    """Read the CRD's ``spec.schedulingPolicy`` into the core model, recording errors.

    ``None`` or missing fields take the CRD defaults: Soft, 900 s, 30 s.
    """
    obj: Mapping[str, Any] = problems.read(lambda: fields.mapping(raw, path), {})
    style_text = problems.read(
        lambda: fields.string(obj.get("style"), f"{path}.style", default="Soft"), "Soft"
    )
    style = problems.read(lambda: _style(style_text, f"{path}.style"), model.Style.SOFT)
    placeholder_timeout = problems.read(
        lambda: fields.integer(
            obj.get("placeholderTimeoutSeconds"),
            f"{path}.placeholderTimeoutSeconds",
            default=DEFAULT_PLACEHOLDER_TIMEOUT,
            minimum=1,
        ),
        DEFAULT_PLACEHOLDER_TIMEOUT,
    )
    waiting_timeout = problems.read(
        lambda: fields.integer(
            obj.get("waitingTimeoutSeconds"),
            f"{path}.waitingTimeoutSeconds",
            default=DEFAULT_WAITING_TIMEOUT,
            minimum=0,
        ),
        DEFAULT_WAITING_TIMEOUT,
    )
    return model.SchedulingPolicy(
        style=style,
        placeholder_timeout=float(placeholder_timeout),
        waiting_timeout=float(waiting_timeout),
    )


def _style(text: str, path: str) -> model.Style:
    try:
        return cast(model.Style, model.Style.from_string(text))
    except ValueError as error:
        raise TranslationError(f"{path}: {error}") from None
