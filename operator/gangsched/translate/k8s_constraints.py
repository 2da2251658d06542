"""Raw Kubernetes JSON for scheduling constraints, to and from the core models.

Pod ``spec.tolerations``, ``spec.nodeSelector`` and ``spec.affinity``, and node
``spec.taints``, become :mod:`gangsched.core.values.constraints` values here and nowhere else.

The readers are tolerant of *missing* data and strict about *wrong* data:

* ``None`` or an absent key means "not set" and gets the Kubernetes default (no
  tolerations, no taints, no selector, no affinity, an empty string, ``Equal``, ...);
* a value of the wrong JSON type, an unknown enum spelling, or a requirement Kubernetes
  would not admit raises :class:`~gangsched.core.values.constraints.ConstraintError` whose message
  starts with the path of the offending field, e.g.
  ``tolerations[1].operator: unknown operator "Equals" (accepted: Exists, Equal)``.
  The path starts at the ``path`` argument, so callers can pass ``"spec.tolerations"``.

Fields that do not affect filtering (``tolerationSeconds``, ``timeAdded``, preferred
affinity, pod (anti-)affinity) are ignored. The writers render the models back as the JSON
the API server expects (used for placeholder pods); reading what they write gives back an
equal model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gangsched.core.values import constraints
from gangsched.translate.fields import json_type as _json_type

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _wrong_type(expected: str, value: object, path: str) -> constraints.ConstraintError:
    return constraints.ConstraintError(f"expected {expected}, got {_json_type(value)}", field=path)


def _list(raw: object, path: str) -> Sequence[object]:
    if raw is None:
        return ()
    if not isinstance(raw, list | tuple):
        raise _wrong_type("a list", raw, path)
    return raw


def _mapping(raw: object, path: str) -> Mapping[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise _wrong_type("an object", raw, path)
    return raw


def _string(obj: Mapping[str, object], key: str, path: str, *, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise constraints.ConstraintError("required", field=f"{path}.{key}")
        return ""
    if not isinstance(value, str):
        raise _wrong_type("a string", value, f"{path}.{key}")
    return value


def tolerations_from_k8s(
    raw: object, *, path: str = "tolerations"
) -> tuple[constraints.Toleration, ...]:
    """Read a pod's ``spec.tolerations`` list. ``None`` gives ``()``.

    Missing ``key``/``value`` are ``""``, a missing or empty ``operator`` is ``Equal`` and
    a missing or empty ``effect`` matches every effect (``None``). ``tolerationSeconds``
    is ignored.
    """
    result: list[constraints.Toleration] = []
    for index, item in enumerate(_list(raw, path)):
        item_path = f"{path}[{index}]"
        obj = _mapping(item, item_path)
        operator_text = _string(obj, "operator", item_path)
        effect_text = _string(obj, "effect", item_path)
        try:
            operator = constraints.TolerationOperator.from_string(operator_text)
        except constraints.ConstraintError as error:
            raise error.at(f"{item_path}.operator") from None
        try:
            effect = constraints.TaintEffect.from_string(effect_text) if effect_text else None
        except constraints.ConstraintError as error:
            raise error.at(f"{item_path}.effect") from None
        result.append(
            constraints.Toleration(
                key=_string(obj, "key", item_path),
                operator=operator,
                value=_string(obj, "value", item_path),
                effect=effect,
            )
        )
    return tuple(result)


def tolerations_to_k8s(tolerations: Sequence[constraints.Toleration]) -> list[dict[str, str]]:
    """Render tolerations as ``spec.tolerations``, leaving out empty key, value and effect."""
    result: list[dict[str, str]] = []
    for toleration in tolerations:
        item: dict[str, str] = {}
        if toleration.key:
            item["key"] = toleration.key
        item["operator"] = toleration.operator.value
        if toleration.value:
            item["value"] = toleration.value
        if toleration.effect is not None:
            item["effect"] = toleration.effect.value
        result.append(item)
    return result


def taints_from_k8s(raw: object, *, path: str = "taints") -> tuple[constraints.Taint, ...]:
    """Read a node's ``spec.taints`` list. ``None`` gives ``()``.

    ``key`` is required; a missing ``value`` is ``""``; a missing or empty ``effect`` is
    ``NoSchedule`` (the API server always sets one; this default is for hand-written
    fixtures). ``timeAdded`` is ignored.
    """
    result: list[constraints.Taint] = []
    for index, item in enumerate(_list(raw, path)):
        item_path = f"{path}[{index}]"
        obj = _mapping(item, item_path)
        effect_text = _string(obj, "effect", item_path)
        try:
            effect = (
                constraints.TaintEffect.from_string(effect_text)
                if effect_text
                else constraints.TaintEffect.NO_SCHEDULE
            )
        except constraints.ConstraintError as error:
            raise error.at(f"{item_path}.effect") from None
        key = _string(obj, "key", item_path, required=True)
        value = _string(obj, "value", item_path)
        try:
            result.append(constraints.Taint(key=key, value=value, effect=effect))
        except constraints.ConstraintError as error:
            raise error.at(item_path) from None
    return tuple(result)


def taints_to_k8s(taints: Sequence[constraints.Taint]) -> list[dict[str, str]]:
    """Render taints as ``spec.taints``, leaving out an empty value."""
    result: list[dict[str, str]] = []
    for taint in taints:
        item = {"key": taint.key}
        if taint.value:
            item["value"] = taint.value
        item["effect"] = taint.effect.value
        result.append(item)
    return result


def node_selector_from_k8s(raw: object, *, path: str = "nodeSelector") -> dict[str, str]:
    """Read a pod's ``spec.nodeSelector``: a mapping of string to string. ``None`` gives ``{}``."""
    result: dict[str, str] = {}
    for key, value in _mapping(raw, path).items():
        if not isinstance(key, str):
            raise constraints.ConstraintError(
                f"keys must be strings, got {_json_type(key)}", field=path
            )
        if not isinstance(value, str):
            raise _wrong_type("a string", value, f"{path}[{key}]")
        result[key] = value
    return result


def _requirement(raw: object, path: str) -> constraints.SelectorRequirement:
    obj = _mapping(raw, path)
    key = _string(obj, "key", path, required=True)
    operator_text = _string(obj, "operator", path, required=True)
    try:
        operator = constraints.SelectorOperator.from_string(operator_text)
    except constraints.ConstraintError as error:
        raise error.at(f"{path}.operator") from None
    values: list[str] = []
    for index, value in enumerate(_list(obj.get("values"), f"{path}.values")):
        if not isinstance(value, str):
            raise _wrong_type("a string", value, f"{path}.values[{index}]")
        values.append(value)
    try:
        return constraints.SelectorRequirement(key, operator, tuple(values))
    except constraints.ConstraintError as error:
        raise error.at(path) from None


def _term(raw: object, path: str) -> constraints.NodeSelectorTerm:
    obj = _mapping(raw, path)
    expressions_path = f"{path}.matchExpressions"
    expressions = tuple(
        _requirement(item, f"{expressions_path}[{index}]")
        for index, item in enumerate(_list(obj.get("matchExpressions"), expressions_path))
    )
    fields_path = f"{path}.matchFields"
    fields: list[constraints.SelectorRequirement] = []
    for index, item in enumerate(_list(obj.get("matchFields"), fields_path)):
        item_path = f"{fields_path}[{index}]"
        requirement = _requirement(item, item_path)
        try:
            constraints.check_field_requirement(requirement)
        except constraints.ConstraintError as error:
            raise error.at(item_path) from None
        fields.append(requirement)
    return constraints.NodeSelectorTerm(expressions, tuple(fields))


def node_selector_term_from_k8s(raw: object, path: str) -> constraints.NodeSelectorTerm:
    """One ``NodeSelectorTerm`` (as in a preferred term's ``preference``)."""
    return _term(raw, path)


def node_affinity_from_k8s(
    raw_affinity: object, *, path: str = "affinity"
) -> constraints.NodeAffinity:
    """Read the required node affinity out of a pod's ``spec.affinity``.

    Only ``nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``
    is read; preferred terms and pod (anti-)affinity are ignored. ``None`` at any level
    above ``nodeSelectorTerms`` means no requirement (``NodeAffinity(None)``). A present
    ``requiredDuringScheduling...`` with missing or empty ``nodeSelectorTerms`` gives an
    empty tuple of terms, which matches no node (the API server does not admit that).
    """
    affinity = _mapping(raw_affinity, path)
    node_path = f"{path}.nodeAffinity"
    node_affinity = _mapping(affinity.get("nodeAffinity"), node_path)
    required_path = f"{node_path}.{_REQUIRED}"
    required_raw = node_affinity.get(_REQUIRED)
    if required_raw is None:
        return constraints.NodeAffinity(None)
    required = _mapping(required_raw, required_path)
    terms_path = f"{required_path}.nodeSelectorTerms"
    terms = tuple(
        _term(item, f"{terms_path}[{index}]")
        for index, item in enumerate(_list(required.get("nodeSelectorTerms"), terms_path))
    )
    return constraints.NodeAffinity(terms)


def _requirement_to_k8s(requirement: constraints.SelectorRequirement) -> dict[str, object]:
    item: dict[str, object] = {"key": requirement.key, "operator": requirement.operator.value}
    if requirement.values:
        item["values"] = list(requirement.values)
    return item


def node_affinity_to_k8s(affinity: constraints.NodeAffinity) -> dict[str, object]:
    """Render the required node affinity as a pod's ``spec.affinity``.

    ``{}`` when there is no requirement; empty ``matchExpressions``/``matchFields`` lists
    are left out.
    """
    if affinity.required_terms is None:
        return {}
    terms: list[dict[str, object]] = []
    for term in affinity.required_terms:
        rendered: dict[str, object] = {}
        if term.match_expressions:
            rendered["matchExpressions"] = [
                _requirement_to_k8s(req) for req in term.match_expressions
            ]
        if term.match_fields:
            rendered["matchFields"] = [_requirement_to_k8s(req) for req in term.match_fields]
        terms.append(rendered)
    return {"nodeAffinity": {_REQUIRED: {"nodeSelectorTerms": terms}}}
