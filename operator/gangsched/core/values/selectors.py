"""Label selectors (``metav1.LabelSelector``) with Kubernetes matching semantics.

A selector is ``matchLabels`` (key equals value) ANDed with ``matchExpressions`` using
the label-selector operators ``In NotIn Exists DoesNotExist``. The two spellings of
"select" that Kubernetes distinguishes are kept apart:

* an *empty* selector (``{}``) matches every object;
* *no* selector (``None`` where a selector is optional) matches nothing, as in
  ``LabelSelectorAsSelector(nil)`` used by pod affinity terms and spread constraints.

:meth:`LabelSelector.equalities` names the ``(key, value)`` pairs a matching object must
carry, so that indexes can look up candidates instead of scanning every pod.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from gangsched.core.values.constraints import ConstraintError, SelectorOperator, SelectorRequirement

LABEL_OPERATORS = (
    SelectorOperator.IN,
    SelectorOperator.NOT_IN,
    SelectorOperator.EXISTS,
    SelectorOperator.DOES_NOT_EXIST,
)


@dataclasses.dataclass(frozen=True, slots=True)
class LabelSelector:
    """``matchLabels`` as sorted pairs and ``matchExpressions``; hashable.

    ``Gt`` and ``Lt`` are node-selector operators only: a label selector using them
    raises :class:`ConstraintError` naming the accepted operators.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()

    def __post_init__(self) -> None:
        for index, requirement in enumerate(self.match_expressions):
            if requirement.operator not in LABEL_OPERATORS:
                names = ", ".join(op.value for op in LABEL_OPERATORS)
                raise ConstraintError(
                    f'unknown operator "{requirement.operator}" (accepted: {names})',
                    field=f"matchExpressions[{index}].operator",
                )

    @classmethod
    def build(
        cls,
        match_labels: Mapping[str, str] | None = None,
        match_expressions: Iterable[SelectorRequirement] = (),
    ) -> LabelSelector:
        return cls(tuple(sorted((match_labels or {}).items())), tuple(match_expressions))

    @property
    def empty(self) -> bool:
        """True for ``{}``, which matches everything."""
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every pair and every expression."""
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for requirement in self.match_expressions:
            if not _requirement_matches(requirement, labels):
                return False
        return True

    def equalities(self) -> list[tuple[str, str]]:
        """Pairs every match must carry: ``matchLabels`` and single-value ``In``."""
        found = list(self.match_labels)
        for requirement in self.match_expressions:
            if requirement.operator is SelectorOperator.IN and len(requirement.values) == 1:
                found.append((requirement.key, requirement.values[0]))
        return found

    def with_requirements(self, extra: Iterable[SelectorRequirement]) -> LabelSelector:
        """This selector ANDed with ``extra`` (how matchLabelKeys are merged)."""
        more = tuple(extra)
        if not more:
            return self
        return LabelSelector(self.match_labels, self.match_expressions + more)


EVERYTHING = LabelSelector()


def _requirement_matches(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    op = requirement.operator
    if op is SelectorOperator.IN:
        return requirement.key in labels and labels[requirement.key] in requirement.values
    if op is SelectorOperator.NOT_IN:
        return requirement.key not in labels or labels[requirement.key] not in requirement.values
    if op is SelectorOperator.EXISTS:
        return requirement.key in labels
    return requirement.key not in labels


def matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """``None`` matches nothing; otherwise :meth:`LabelSelector.matches`."""
    return selector is not None and selector.matches(labels)
