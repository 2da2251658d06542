"""Scheduling constraints: taints and tolerations, node selectors and required node affinity.

Pure models and matching functions with Kubernetes semantics, so that the simulator and
the operator decide placement exactly as ``kube-scheduler``'s ``TaintToleration``,
``NodeAffinity`` and node-selector filters would:

* :func:`tolerates` is ``v1.Toleration.ToleratesTaint``;
* :func:`untolerated_taints` is the filter: only ``NoSchedule`` and ``NoExecute`` taints
  keep a pod off a node, ``PreferNoSchedule`` is a scoring hint and is ignored here;
* :func:`requirement_matches` is ``labels.Requirement.Matches`` for node selector
  operators (``In NotIn Exists DoesNotExist Gt Lt``);
* :func:`matches_affinity` is ``nodeaffinity.NodeSelector.Match`` for
  ``requiredDuringSchedulingIgnoredDuringExecution``: terms are ORed, requirements within a
  term are ANDed, a term with no requirements matches nothing, and an empty list of terms
  matches no node.

All models are frozen, slotted dataclasses holding tuples, so they are hashable and can
serve as cheap signatures (pods with equal constraints fit the same nodes). Raw
Kubernetes JSON is translated into them by ``gangsched.translate.k8s_constraints``.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

NODE_NAME_FIELD = "metadata.name"
"""The only key Kubernetes supports in ``matchFields``."""

_INT64_RE = re.compile(r"[+-]?[0-9]+")
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class ConstraintError(ValueError):
    """An invalid constraint, with a precise message.

    ``field`` is the path of the offending field, when known (``"values"``, or a full path
    such as ``"tolerations[1].operator"`` once the translation layer has prefixed it); the
    message reads ``"<field>: <detail>"``.
    """

    def __init__(self, detail: str, *, field: str = "") -> None:
        self.detail = detail
        self.field = field
        super().__init__(f"{field}: {detail}" if field else detail)

    def at(self, prefix: str) -> ConstraintError:
        """The same error, with ``prefix`` put in front of its field path."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return ConstraintError(self.detail, field=field)


def _unknown(what: str, text: object, accepted: Sequence[enum.StrEnum]) -> ConstraintError:
    names = ", ".join(member.value for member in accepted)
    return ConstraintError(f'unknown {what} "{text}" (accepted: {names})')


class TaintEffect(enum.StrEnum):
    """What a taint does to pods that do not tolerate it."""

    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"

    @classmethod
    def from_string(cls, text: str) -> TaintEffect:
        """Parse the Kubernetes spelling; anything else (including ``""``) raises
        :class:`ConstraintError` naming the accepted values."""
        try:
            return cls(text)
        except ValueError:
            raise _unknown("effect", text, list(cls)) from None


class TolerationOperator(enum.StrEnum):
    """How a toleration compares its value to a taint's."""

    EXISTS = "Exists"
    EQUAL = "Equal"

    @classmethod
    def from_string(cls, text: str) -> TolerationOperator:
        """Parse the Kubernetes spelling; ``""`` is ``Equal`` (the Kubernetes default).
        Anything else raises :class:`ConstraintError` naming the accepted values."""
        if text == "":
            return cls.EQUAL
        try:
            return cls(text)
        except ValueError:
            raise _unknown("operator", text, list(cls)) from None


class SelectorOperator(enum.StrEnum):
    """The operator of a node selector requirement."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"

    @classmethod
    def from_string(cls, text: str) -> SelectorOperator:
        """Parse the Kubernetes spelling; anything else raises :class:`ConstraintError`
        naming the accepted values."""
        try:
            return cls(text)
        except ValueError:
            raise _unknown("operator", text, list(cls)) from None


@dataclasses.dataclass(frozen=True, slots=True)
class Taint:
    """A node taint. ``key`` must not be empty."""

    key: str
    value: str = ""
    effect: TaintEffect = TaintEffect.NO_SCHEDULE

    def __post_init__(self) -> None:
        if not self.key:
            raise ConstraintError("required", field="key")


@dataclasses.dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration.

    An empty ``key`` with ``Exists`` tolerates every taint; ``effect=None`` matches every
    effect. No cross-field validation is done: whatever the API server admitted is matched
    exactly as Kubernetes matches it (see :func:`tolerates`).
    """

    key: str = ""
    operator: TolerationOperator = TolerationOperator.EQUAL
    value: str = ""
    effect: TaintEffect | None = None


def _parse_int64(text: str) -> int | None:
    """Go's ``strconv.ParseInt(text, 10, 64)``: ``None`` when it would fail."""
    if _INT64_RE.fullmatch(text) is None:
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


@dataclasses.dataclass(frozen=True, slots=True)
class SelectorRequirement:
    """One requirement of a node selector term, validated as Kubernetes validates it.

    ``In`` and ``NotIn`` need at least one value, ``Exists`` and ``DoesNotExist`` need
    none, ``Gt`` and ``Lt`` need exactly one value that is a 64-bit integer. The key must
    not be empty. Violations raise :class:`ConstraintError` naming the field.
    """

    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.values, tuple):
            raise TypeError(f"values must be a tuple, got {type(self.values).__name__}")
        if not self.key:
            raise ConstraintError("required", field="key")
        op = self.operator
        if op in (SelectorOperator.IN, SelectorOperator.NOT_IN):
            if not self.values:
                raise ConstraintError(
                    f"must have at least one value when operator is {op}", field="values"
                )
        elif op in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST):
            if self.values:
                raise ConstraintError(f"must be empty when operator is {op}", field="values")
        elif len(self.values) != 1:
            raise ConstraintError(
                f"must have exactly one value when operator is {op}, got {len(self.values)}",
                field="values",
            )
        elif _parse_int64(self.values[0]) is None:
            raise ConstraintError(
                f'"{self.values[0]}" is not an integer (required when operator is {op})',
                field="values[0]",
            )


@dataclasses.dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A term of a required node affinity: all its requirements must hold (AND).

    ``match_fields`` supports only the key ``metadata.name`` with ``In`` or ``NotIn`` and
    exactly one value, as Kubernetes validation demands; anything else raises
    :class:`ConstraintError`. A term with no requirements at all matches no node.
    """

    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.match_expressions, tuple):
            raise TypeError("match_expressions must be a tuple")
        if not isinstance(self.match_fields, tuple):
            raise TypeError("match_fields must be a tuple")
        for index, requirement in enumerate(self.match_fields):
            try:
                check_field_requirement(requirement)
            except ConstraintError as error:
                raise error.at(f"match_fields[{index}]") from None


def check_field_requirement(requirement: SelectorRequirement) -> None:
    """Raise :class:`ConstraintError` unless ``requirement`` is a valid ``matchFields`` entry.

    Kubernetes accepts only the key ``metadata.name``, the operators ``In`` and ``NotIn``,
    and exactly one value. The error's field is relative to the requirement (``key``,
    ``operator`` or ``values``).
    """
    if requirement.key != NODE_NAME_FIELD:
        raise ConstraintError(
            f'unsupported field selector key "{requirement.key}" (accepted: {NODE_NAME_FIELD})',
            field="key",
        )
    if requirement.operator not in (SelectorOperator.IN, SelectorOperator.NOT_IN):
        raise ConstraintError(
            f'unsupported field selector operator "{requirement.operator}" (accepted: In, NotIn)',
            field="operator",
        )
    if len(requirement.values) != 1:
        raise ConstraintError(
            f"must have exactly one value for a field selector, got {len(requirement.values)}",
            field="values",
        )


@dataclasses.dataclass(frozen=True, slots=True)
class NodeAffinity:
    """The ``requiredDuringSchedulingIgnoredDuringExecution`` part of a node affinity.

    ``required_terms=None`` means there is no requirement: every node matches. A tuple of
    terms is ORed; an empty tuple matches no node (Kubernetes semantics; the API server
    would not admit it on a pod, but the result is defined).
    """

    required_terms: tuple[NodeSelectorTerm, ...] | None = None

    def __post_init__(self) -> None:
        if self.required_terms is not None and not isinstance(self.required_terms, tuple):
            raise TypeError("required_terms must be a tuple or None")


ANY_NODE = NodeAffinity()
"""The affinity with no requirement; usable as a dataclass default without a call."""


class TaintLike(Protocol):
    """A node taint or a device taint (``resource.k8s.io`` ``DeviceTaint``)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> enum.Enum: ...


class TolerationLike(Protocol):
    """A pod toleration or a device request's toleration (``DeviceToleration``)."""

    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> TolerationOperator: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> enum.Enum | None: ...


def tolerates(toleration: TolerationLike, taint: TaintLike) -> bool:
    """Whether ``toleration`` tolerates ``taint`` (Kubernetes ``ToleratesTaint``, and
    ``resourceclaim.ToleratesTaint`` for devices, which matches the same way).

    An effect of ``None`` matches every effect; an empty key matches every key; ``Exists``
    ignores the value, ``Equal`` requires the same value (including an empty key with
    ``Equal``, which then tolerates every taint with that value).
    """
    if toleration.effect is not None and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == TolerationOperator.EXISTS:
        return True
    return toleration.value == taint.value


def untolerated_taints(tolerations: Sequence[Toleration], taints: Sequence[Taint]) -> list[Taint]:
    """The ``NoSchedule`` and ``NoExecute`` taints no toleration tolerates, in input order.

    An empty result means the taints allow the pod on the node. ``PreferNoSchedule``
    taints are never returned: they only lower a node's score.
    """
    return [
        taint
        for taint in taints
        if taint.effect != TaintEffect.PREFER_NO_SCHEDULE
        and not any(tolerates(toleration, taint) for toleration in tolerations)
    ]


def requirement_matches(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy ``requirement`` (Kubernetes ``Requirement.Matches``).

    ``NotIn`` and ``DoesNotExist`` match when the label is absent. ``Gt`` and ``Lt`` do not
    match when the label is absent or its value is not a 64-bit integer.
    """
    op = requirement.operator
    present = requirement.key in labels
    if op == SelectorOperator.IN:
        return present and labels[requirement.key] in requirement.values
    if op == SelectorOperator.NOT_IN:
        return not present or labels[requirement.key] not in requirement.values
    if op == SelectorOperator.EXISTS:
        return present
    if op == SelectorOperator.DOES_NOT_EXIST:
        return not present
    if not present:
        return False
    actual = _parse_int64(labels[requirement.key])
    bound = _parse_int64(requirement.values[0])
    if actual is None or bound is None:
        return False
    return actual > bound if op == SelectorOperator.GT else actual < bound


def matches_node_selector(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """Whether every ``key: value`` of a pod's ``nodeSelector`` is among the node labels.

    An empty selector matches every node.
    """
    return all(labels.get(key) == value for key, value in selector.items())


def matches_term(term: NodeSelectorTerm, labels: Mapping[str, str], node_name: str) -> bool:
    """Whether a node satisfies every requirement of ``term``; an empty term never does."""
    if not term.match_expressions and not term.match_fields:
        return False
    if not all(requirement_matches(req, labels) for req in term.match_expressions):
        return False
    fields = {NODE_NAME_FIELD: node_name}
    return all(requirement_matches(req, fields) for req in term.match_fields)


def matches_affinity(affinity: NodeAffinity, labels: Mapping[str, str], node_name: str) -> bool:
    """Whether a node with ``labels`` and ``node_name`` satisfies the required affinity.

    ``True`` when there is no requirement; otherwise some term must match.
    """
    if affinity.required_terms is None:
        return True
    return any(matches_term(term, labels, node_name) for term in affinity.required_terms)
