from collections.abc import Callable

import pytest
from gangsched.core.values import constraints as c
from gangsched.core.values.constraints import (
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)

NO_SCHEDULE = TaintEffect.NO_SCHEDULE
PREFER = TaintEffect.PREFER_NO_SCHEDULE
NO_EXECUTE = TaintEffect.NO_EXECUTE
EXISTS = TolerationOperator.EXISTS
EQUAL = TolerationOperator.EQUAL


def req(key: str, operator: str, *values: str) -> SelectorRequirement:
    return SelectorRequirement(key, SelectorOperator(operator), values)


def term(
    *expressions: SelectorRequirement, fields: tuple[SelectorRequirement, ...] = ()
) -> NodeSelectorTerm:
    return NodeSelectorTerm(expressions, fields)


# Enums


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        pytest.param(TaintEffect.from_string, "NoSchedule", NO_SCHEDULE, id="effect"),
        pytest.param(TaintEffect.from_string, "PreferNoSchedule", PREFER, id="effect-prefer"),
        pytest.param(TaintEffect.from_string, "NoExecute", NO_EXECUTE, id="effect-execute"),
        pytest.param(TolerationOperator.from_string, "Exists", EXISTS, id="tol-exists"),
        pytest.param(TolerationOperator.from_string, "Equal", EQUAL, id="tol-equal"),
        pytest.param(TolerationOperator.from_string, "", EQUAL, id="tol-empty-is-equal"),
        pytest.param(SelectorOperator.from_string, "DoesNotExist", SelectorOperator.DOES_NOT_EXIST,
                     id="selector"),
    ],
)
def test_from_string(parse: Callable[[str], object], text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        pytest.param(
            TaintEffect.from_string, "NoScheduling",
            'unknown effect "NoScheduling" (accepted: NoSchedule, PreferNoSchedule, NoExecute)',
            id="effect",
        ),
        pytest.param(
            TaintEffect.from_string, "",
            'unknown effect "" (accepted: NoSchedule, PreferNoSchedule, NoExecute)',
            id="effect-empty",
        ),
        pytest.param(
            TolerationOperator.from_string, "Equals",
            'unknown operator "Equals" (accepted: Exists, Equal)', id="toleration-operator",
        ),
        pytest.param(
            SelectorOperator.from_string, "in",
            'unknown operator "in" (accepted: In, NotIn, Exists, DoesNotExist, Gt, Lt)',
            id="selector-operator-is-case-sensitive",
        ),
    ],
)
def test_from_string_errors(parse: Callable[[str], object], text: str, message: str) -> None:
    with pytest.raises(c.ConstraintError) as caught:
        parse(text)
    assert str(caught.value) == message


# Taints and tolerations

TAINT = Taint("dedicated", "gpu", NO_SCHEDULE)


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        pytest.param(Toleration("dedicated", EQUAL, "gpu", NO_SCHEDULE), TAINT, True,
                     id="equal-all-fields"),
        pytest.param(Toleration("dedicated", EQUAL, "gpu"), TAINT, True,
                     id="no-effect-matches-all"),
        pytest.param(Toleration("dedicated", EQUAL, "cpu"), TAINT, False, id="equal-other-value"),
        pytest.param(Toleration("dedicated", EQUAL, ""), TAINT, False, id="equal-empty-value"),
        pytest.param(Toleration("dedicated", EXISTS), TAINT, True, id="exists-ignores-value"),
        pytest.param(Toleration("other", EXISTS), TAINT, False, id="exists-other-key"),
        pytest.param(Toleration("", EXISTS), TAINT, True, id="empty-key-exists-matches-all"),
        pytest.param(Toleration("", EXISTS, effect=NO_EXECUTE), TAINT, False,
                     id="empty-key-exists-wrong-effect"),
        pytest.param(Toleration("", EQUAL, "gpu"), TAINT, True,
                     id="empty-key-equal-compares-value"),
        pytest.param(Toleration("dedicated", EXISTS, effect=PREFER), TAINT, False,
                     id="effect-mismatch"),
        pytest.param(Toleration("dedicated", EQUAL, "", NO_SCHEDULE), Taint("dedicated"), True,
                     id="empty-values-equal"),
    ],
)
def test_tolerates(toleration: Toleration, taint: Taint, expected: bool) -> None:
    assert c.tolerates(toleration, taint) is expected


def test_untolerated_taints_ignores_prefer_no_schedule() -> None:
    taints = [
        Taint("a", effect=NO_SCHEDULE),
        Taint("b", effect=PREFER),
        Taint("c", effect=NO_EXECUTE),
        Taint("d", "x", NO_SCHEDULE),
    ]
    assert c.untolerated_taints([], taints) == [taints[0], taints[2], taints[3]]
    assert c.untolerated_taints([Toleration("c", EXISTS)], taints) == [taints[0], taints[3]]
    assert c.untolerated_taints([Toleration(operator=EXISTS)], taints) == []
    assert c.untolerated_taints([], []) == []


def test_taint_key_is_required() -> None:
    with pytest.raises(c.ConstraintError, match=r"^key: required$"):
        Taint("")


def test_models_are_hashable_values() -> None:
    affinity = NodeAffinity((term(req("zone", "In", "a", "b")),))
    same = NodeAffinity((term(req("zone", "In", "a", "b")),))
    assert affinity == same
    assert len({affinity, same, Toleration(), Toleration(), TAINT}) == 3
    assert NodeAffinity() == c.ANY_NODE


# Selector requirements: validation


@pytest.mark.parametrize(
    ("key", "operator", "values", "message"),
    [
        pytest.param("zone", "In", (), "values: must have at least one value when operator is In",
                     id="in-without-values"),
        pytest.param("zone", "NotIn", (),
                     "values: must have at least one value when operator is NotIn",
                     id="notin-without-values"),
        pytest.param("zone", "Exists", ("a",), "values: must be empty when operator is Exists",
                     id="exists-with-values"),
        pytest.param("zone", "DoesNotExist", ("a",),
                     "values: must be empty when operator is DoesNotExist",
                     id="doesnotexist-with-values"),
        pytest.param("cores", "Gt", (),
                     "values: must have exactly one value when operator is Gt, got 0",
                     id="gt-without-value"),
        pytest.param("cores", "Lt", ("1", "2"),
                     "values: must have exactly one value when operator is Lt, got 2",
                     id="lt-two-values"),
        pytest.param("cores", "Gt", ("four",),
                     'values[0]: "four" is not an integer (required when operator is Gt)',
                     id="gt-not-int"),
        pytest.param("cores", "Gt", (" 4",),
                     'values[0]: " 4" is not an integer (required when operator is Gt)',
                     id="gt-whitespace"),
        pytest.param("cores", "Lt", (str(2**63),),
                     f'values[0]: "{2**63}" is not an integer (required when operator is Lt)',
                     id="lt-beyond-int64"),
        pytest.param("", "Exists", (), "key: required", id="empty-key"),
    ],
)
def test_requirement_validation(
    key: str, operator: str, values: tuple[str, ...], message: str
) -> None:
    with pytest.raises(c.ConstraintError) as caught:
        SelectorRequirement(key, SelectorOperator(operator), values)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        pytest.param(req("metadata.namespace", "In", "x"),
                     'match_fields[0].key: unsupported field selector key "metadata.namespace"'
                     " (accepted: metadata.name)", id="wrong-key"),
        pytest.param(req("metadata.name", "Exists"),
                     'match_fields[0].operator: unsupported field selector operator "Exists"'
                     " (accepted: In, NotIn)", id="wrong-operator"),
        pytest.param(req("metadata.name", "In", "a", "b"),
                     "match_fields[0].values: must have exactly one value for a field selector,"
                     " got 2", id="two-values"),
    ],
)
def test_match_fields_validation(requirement: SelectorRequirement, message: str) -> None:
    with pytest.raises(c.ConstraintError) as caught:
        NodeSelectorTerm(match_fields=(requirement,))
    assert str(caught.value) == message


def test_lists_are_rejected_to_keep_models_hashable() -> None:
    with pytest.raises(TypeError):
        SelectorRequirement("zone", SelectorOperator.IN, ["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        NodeAffinity([])  # type: ignore[arg-type]


# Selector requirements: matching

LABELS = {"zone": "a", "cores": "8", "gpu": "", "odd": "eight"}


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        pytest.param(req("zone", "In", "a", "b"), True, id="in"),
        pytest.param(req("zone", "In", "b"), False, id="in-other"),
        pytest.param(req("missing", "In", "a"), False, id="in-absent"),
        pytest.param(req("zone", "NotIn", "b"), True, id="notin"),
        pytest.param(req("zone", "NotIn", "a"), False, id="notin-present"),
        pytest.param(req("missing", "NotIn", "a"), True, id="notin-absent-matches"),
        pytest.param(req("gpu", "Exists"), True, id="exists-empty-value"),
        pytest.param(req("missing", "Exists"), False, id="exists-absent"),
        pytest.param(req("missing", "DoesNotExist"), True, id="doesnotexist"),
        pytest.param(req("zone", "DoesNotExist"), False, id="doesnotexist-present"),
        pytest.param(req("cores", "Gt", "4"), True, id="gt"),
        pytest.param(req("cores", "Gt", "8"), False, id="gt-equal"),
        pytest.param(req("cores", "Lt", "16"), True, id="lt"),
        pytest.param(req("cores", "Lt", "8"), False, id="lt-equal"),
        pytest.param(req("cores", "Gt", "-1"), True, id="gt-negative-bound"),
        pytest.param(req("odd", "Gt", "1"), False, id="gt-non-int-label"),
        pytest.param(req("odd", "Lt", "1"), False, id="lt-non-int-label"),
        pytest.param(req("gpu", "Lt", "1"), False, id="lt-empty-label"),
        pytest.param(req("missing", "Gt", "1"), False, id="gt-absent"),
        pytest.param(req("missing", "Lt", "1"), False, id="lt-absent"),
    ],
)
def test_requirement_matches(requirement: SelectorRequirement, expected: bool) -> None:
    assert c.requirement_matches(requirement, LABELS) is expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param({}, True, id="empty"),
        pytest.param({"zone": "a"}, True, id="match"),
        pytest.param({"zone": "a", "cores": "8"}, True, id="all-match"),
        pytest.param({"zone": "a", "cores": "4"}, False, id="one-differs"),
        pytest.param({"missing": ""}, False, id="absent-is-not-empty"),
    ],
)
def test_matches_node_selector(selector: dict[str, str], expected: bool) -> None:
    assert c.matches_node_selector(selector, LABELS) is expected


# Affinity: terms ORed, requirements ANDed, empty means nothing


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        pytest.param(NodeAffinity(None), True, id="no-requirement"),
        pytest.param(NodeAffinity(()), False, id="empty-terms-match-nothing"),
        pytest.param(NodeAffinity((term(),)), False, id="empty-term-matches-nothing"),
        pytest.param(NodeAffinity((term(), term(req("zone", "In", "a")))), True,
                     id="terms-are-ored"),
        pytest.param(NodeAffinity((term(req("zone", "In", "a"), req("cores", "Gt", "16")),)),
                     False, id="expressions-are-anded"),
        pytest.param(NodeAffinity((term(req("zone", "In", "a"), req("cores", "Gt", "4")),)),
                     True, id="all-expressions-hold"),
        pytest.param(NodeAffinity((term(fields=(req("metadata.name", "In", "node-1"),)),)),
                     True, id="match-fields-name"),
        pytest.param(NodeAffinity((term(fields=(req("metadata.name", "NotIn", "node-1"),)),)),
                     False, id="match-fields-notin"),
        pytest.param(
            NodeAffinity((term(req("zone", "In", "a"),
                               fields=(req("metadata.name", "In", "node-2"),)),)),
            False, id="fields-and-expressions-anded",
        ),
    ],
)
def test_matches_affinity(affinity: NodeAffinity, expected: bool) -> None:
    assert c.matches_affinity(affinity, LABELS, "node-1") is expected


def test_field_selectors_do_not_read_labels() -> None:
    affinity = NodeAffinity((term(fields=(req("metadata.name", "In", "node-1"),)),))
    assert not c.matches_affinity(affinity, {"metadata.name": "node-1"}, "node-2")


def test_error_at_prefixes_the_path() -> None:
    error = c.ConstraintError("required", field="key").at("taints[0]")
    assert str(error) == "taints[0].key: required"
    assert str(c.ConstraintError("bad").at("x.y")) == "x.y: bad"
