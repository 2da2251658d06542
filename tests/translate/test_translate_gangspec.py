import json
from typing import Any

import pytest
from gangsched.core.values.model import Style
from gangsched.core.values.resources import Resources
from gangsched.translate import fields, gangspec
from gangsched.translate.gangspec import TranslationError, task_groups_from_json

P = "metadata.annotations[gangsched.io/task-groups]"


def groups_json(*groups: dict[str, Any]) -> str:
    return json.dumps(list(groups))


def test_yunikorn_style_field_names_are_matched_ignoring_case() -> None:
    text = """[
      {"Name": "driver", "MinMember": 1, "MinResource": {"cpu": "1", "memory": "2Gi"}},
      {"name": "executor", "minmember": 4, "minresource": {"cpu": 2},
       "NodeSelector": {"kubernetes.io/os": "linux"}, "LABELS": {"role": "executor"}}
    ]"""
    assert task_groups_from_json(text, path=P) == [
        {"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "2Gi"}},
        {
            "name": "executor",
            "minMember": 4,
            "minResource": {"cpu": 2},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "labels": {"role": "executor"},
        },
    ]


def test_an_exact_field_name_wins_over_a_case_insensitive_one() -> None:
    text = groups_json({"minmember": 9, "minMember": 2, "name": "a"})
    assert task_groups_from_json(text, path=P)[0]["minMember"] == 2


def test_unknown_fields_are_dropped_and_constraints_copied_raw() -> None:
    affinity = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    tolerations = [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 30}]
    text = groups_json(
        {
            "name": "w",
            "minMember": 2,
            "priorityClassName": "ignored",
            "affinity": affinity,
            "topologySpreadConstraints": spread,
            "tolerations": tolerations,
            "annotations": {"a": "b"},
        }
    )
    assert task_groups_from_json(text, path=P) == [
        {
            "name": "w",
            "minMember": 2,
            "tolerations": tolerations,
            "affinity": affinity,
            "topologySpreadConstraints": spread,
            "annotations": {"a": "b"},
        }
    ]


def test_fractional_json_numbers_become_canonical_quantities() -> None:
    text = groups_json({"name": "a", "minMember": 1, "minResource": {"cpu": 0.5, "memory": 1024}})
    assert task_groups_from_json(text, path=P)[0]["minResource"] == {"cpu": "500m", "memory": 1024}


def test_an_empty_list_is_no_gang() -> None:
    assert task_groups_from_json("[]", path=P) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '[{"name": "a",\n  "minMember": 1,,}]',
            f"{P}: invalid JSON at line 2 column 18: "
            "Expecting property name enclosed in double quotes",
            id="invalid-json",
        ),
        pytest.param(
            '{"name": "a"}',
            f"{P}: expected a JSON list of task groups, got object",
            id="not-a-list",
        ),
        pytest.param('["a"]', f'{P}[0]: expected an object, got string "a"', id="item-not-object"),
        pytest.param('[{"minMember": 1}]', f"{P}[0].name: required", id="missing-name"),
        pytest.param(
            '[{"name": 7, "minMember": 1}]',
            f"{P}[0].name: expected a string, got number 7",
            id="name-not-string",
        ),
        pytest.param(
            '[{"name": "Spark_Exec", "minMember": 1}]',
            f'{P}[0].name: invalid task group name "Spark_Exec": must consist of lower case '
            "alphanumerics and '-', start and end with an alphanumeric, and be at most 63 "
            "characters",
            id="name-not-dns-label",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1}, {"name": "b", "minMember": 1},'
            ' {"name": "a", "minMember": 2}]',
            f'{P}[2].name: duplicate task group name "a" (first at {P}[0])',
            id="duplicate-name",
        ),
        pytest.param('[{"name": "a"}]', f"{P}[0].minMember: required", id="missing-min-member"),
        pytest.param(
            '[{"name": "a", "minMember": 0}]',
            f"{P}[0].minMember: must be at least 1, got 0",
            id="min-member-zero",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 2.5}]',
            f"{P}[0].minMember: expected an integer, got number 2.5",
            id="min-member-fraction",
        ),
        pytest.param(
            '[{"name": "a", "minMember": "2"}]',
            f'{P}[0].minMember: expected an integer, got string "2"',
            id="min-member-string",
        ),
        pytest.param(
            '[{"name": "a", "minMember": true}]',
            f"{P}[0].minMember: expected an integer, got boolean true",
            id="min-member-boolean",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 10001}]',
            f"{P}[0].minMember: must be at most 10000, got 10001",
            id="min-member-too-large",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "minResource": {"memory": "12Qi"}}]',
            f'{P}[0].minResource.memory: invalid quantity "12Qi": unknown suffix "Qi"',
            id="bad-quantity",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "minResource": {"nvidia.com/gpu": "-1"}}]',
            f'{P}[0].minResource[nvidia.com/gpu]: invalid quantity "-1": must not be negative',
            id="negative-quantity",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "minResource": ["cpu"]}]',
            f"{P}[0].minResource: expected an object, got list",
            id="min-resource-not-object",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "nodeSelector": {"zone": 1}}]',
            f"{P}[0].nodeSelector[zone]: expected a string, got number",
            id="node-selector-value",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "tolerations": [{"key": "k", "operator": "Equals"}]}]',
            f'{P}[0].tolerations[0].operator: unknown operator "Equals" (accepted: Exists, Equal)',
            id="toleration-operator",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "affinity": {"nodeAffinity": '
            '{"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": '
            '[{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}}]',
            f"{P}[0].affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].values: must have at least one value "
            "when operator is In",
            id="affinity-in-without-values",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "topologySpreadConstraints": {"maxSkew": 1}}]',
            f"{P}[0].topologySpreadConstraints: expected a list, got object",
            id="spread-not-list",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "topologySpreadConstraints": [1]}]',
            f"{P}[0].topologySpreadConstraints[0]: expected an object, got number 1",
            id="spread-item-not-object",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 1, "labels": {"role": 1}}]',
            f"{P}[0].labels.role: expected a string, got number 1",
            id="label-not-string",
        ),
        pytest.param(
            '[{"name": "a", "minMember": 0, "minResource": {"cpu": "x"}}]',
            f"{P}[0].minMember: must be at least 1, got 0; "
            f'{P}[0].minResource.cpu: invalid quantity "x": expected a number, with an '
            "optional sign, at the start",
            id="every-problem-is-reported",
        ),
    ],
)
def test_task_group_errors_name_the_path(text: str, message: str) -> None:
    with pytest.raises(TranslationError) as raised:
        task_groups_from_json(text, path=P)
    assert str(raised.value) == message


def test_too_many_task_groups() -> None:
    text = groups_json(*({"name": f"g{i}", "minMember": 1} for i in range(33)))
    with pytest.raises(TranslationError, match=r"too many task groups: 33 \(at most 32\)"):
        task_groups_from_json(text, path=P)


def test_read_task_groups_keeps_the_valid_ones_and_builds_models() -> None:
    raw = [
        {"name": "ok", "minMember": 3, "minResource": {"cpu": "250m"}},
        {"name": "bad", "minMember": -1},
    ]
    groups, errors = gangspec.read_task_groups(raw, "spec.taskGroups")
    assert [g.model.name for g in groups] == ["ok"]
    assert groups[0].model.min_resource == Resources({"cpu": 250})
    assert groups[0].model.total == Resources({"cpu": 750})
    assert errors == ["spec.taskGroups[1].minMember: must be at least 1, got -1"]


PP = "metadata.annotations[gangsched.io/scheduling-policy]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "placeholderTimeoutInSeconds=60 gangSchedulingStyle=Hard",
            {"placeholderTimeoutSeconds": 60, "style": "Hard"},
            id="yunikorn-text",
        ),
        pytest.param(
            "style=soft  placeholderTimeoutSeconds=5\twaitingTimeoutSeconds=0",
            {"style": "Soft", "placeholderTimeoutSeconds": 5, "waitingTimeoutSeconds": 0},
            id="our-keys-any-case-any-space",
        ),
        pytest.param(
            '{"style": "Hard", "placeholderTimeoutSeconds": 60, "waitingTimeoutSeconds": 30}',
            {"style": "Hard", "placeholderTimeoutSeconds": 60, "waitingTimeoutSeconds": 30},
            id="json",
        ),
        pytest.param(
            '{"gangSchedulingStyle": "HARD", "placeholderTimeoutInSeconds": "90"}',
            {"style": "Hard", "placeholderTimeoutSeconds": 90},
            id="json-with-yunikorn-keys",
        ),
        pytest.param("unknownKey=1 style=Hard", {"style": "Hard"}, id="unknown-keys-ignored"),
        pytest.param("", {}, id="empty"),
    ],
)
def test_scheduling_policy_forms(text: str, expected: dict[str, Any]) -> None:
    assert gangspec.scheduling_policy_from_text(text, path=PP) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "gangSchedulingStyle=Strict",
            f'{PP}.gangSchedulingStyle: unknown style "Strict" (accepted: Hard, Soft)',
            id="style",
        ),
        pytest.param(
            "placeholderTimeoutInSeconds=1m",
            f'{PP}.placeholderTimeoutInSeconds: expected an integer, got "1m"',
            id="timeout-not-integer",
        ),
        pytest.param(
            "placeholderTimeoutSeconds=0",
            f"{PP}.placeholderTimeoutSeconds: must be at least 1, got 0",
            id="timeout-zero",
        ),
        pytest.param(
            "waitingTimeoutSeconds=-1",
            f"{PP}.waitingTimeoutSeconds: must be at least 0, got -1",
            id="waiting-negative",
        ),
        pytest.param("Hard", f'{PP}: expected key=value, got "Hard"', id="no-equals"),
        pytest.param(
            '{"style": "Hard",}',
            f"{PP}: invalid JSON at line 1 column 18: Expecting property name enclosed in "
            "double quotes",
            id="invalid-json",
        ),
        pytest.param(
            '{"placeholderTimeoutSeconds": 1.5}',
            f"{PP}.placeholderTimeoutSeconds: expected an integer, got number 1.5",
            id="json-fraction",
        ),
    ],
)
def test_scheduling_policy_errors(text: str, message: str) -> None:
    with pytest.raises(TranslationError) as raised:
        gangspec.scheduling_policy_from_text(text, path=PP)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("raw", "style", "placeholder", "waiting", "message"),
    [
        pytest.param(None, Style.SOFT, 900.0, 30.0, None, id="defaults"),
        pytest.param(
            {"style": "Hard", "placeholderTimeoutSeconds": 60, "waitingTimeoutSeconds": 0},
            Style.HARD,
            60.0,
            0.0,
            None,
            id="given",
        ),
        pytest.param(
            {"style": "hard"},
            Style.SOFT,
            900.0,
            30.0,
            "spec.schedulingPolicy.style: unknown Style 'hard' (accepted: Hard, Soft)",
            id="crd-style-is-exact",
        ),
        pytest.param(
            {"placeholderTimeoutSeconds": 0},
            Style.SOFT,
            900.0,
            30.0,
            "spec.schedulingPolicy.placeholderTimeoutSeconds: must be at least 1, got 0",
            id="timeout-zero",
        ),
        pytest.param(
            "Hard",
            Style.SOFT,
            900.0,
            30.0,
            'spec.schedulingPolicy: expected an object, got string "Hard"',
            id="not-an-object",
        ),
    ],
)
def test_policy_from_k8s(
    raw: object, style: Style, placeholder: float, waiting: float, message: str | None
) -> None:
    problems = fields.Problems()
    policy = gangspec.policy_from_k8s(raw, "spec.schedulingPolicy", problems)
    assert (policy.style, policy.placeholder_timeout, policy.waiting_timeout) == (
        style,
        placeholder,
        waiting,
    )
    assert problems.message() == message
