"""Koordinator's gang annotations and labels, read from its gang scheduling design doc."""

from __future__ import annotations

from typing import Any

import pytest
from dialect_manifests import KOORDINATOR_GANG_A, KOORDINATOR_LABELS, pod, pods_of
from gangsched.core.values.model import GroupKey
from gangsched.translate.dialects import KOORDINATOR, goduration
from gangsched.translate.pods import gang_definition, pod_with_membership
from manifests_tests.test_crds import validation_errors

KOORD = frozenset({"gangsched", "koord-scheduler"})
ANN = "metadata.annotations[gang.scheduling.koordinator.sh/{}]"


def translate(obj: dict[str, Any]) -> Any:
    return pod_with_membership(obj, scheduler_names=KOORD)


TIMER = {"onTimeout": "Requeue", "waitForMinMember": True}
"""Koordinator's timer: nothing placed before min-available pods exist, and a timeout
requeues the gang."""


def spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    definition = gang_definition(obj, translate(obj)[1])
    assert definition is not None and definition.manifest is not None, definition
    return dict(definition.manifest["spec"])


def error_of(obj: dict[str, Any]) -> str | None:
    definition = gang_definition(obj, translate(obj)[1])
    assert definition is not None
    return definition.error


def test_the_doc_gang_group_example() -> None:
    obj = pods_of(KOORDINATOR_GANG_A, 1)[0]
    found, membership = translate(obj)
    assert found.ours and found.invalid is None
    assert found.pod_group == GroupKey("namespace-a/gang-a")
    assert (membership.dialect, membership.definer) == (KOORDINATOR, KOORDINATOR)
    definition = gang_definition(obj, membership)
    assert definition is not None and definition.manifest is not None
    assert definition.key == "namespace-a/gang-a"
    manifest = definition.manifest
    assert manifest["kind"] == "PodGroup"
    assert manifest["metadata"]["namespace"] == "namespace-a"
    assert manifest["metadata"]["ownerReferences"][0]["name"] == "gang-a-member-0"
    assert manifest["spec"] == {
        "minMember": 5,
        "scheduleTimeoutSeconds": 3600,
        "totalNumber": 5,
        "mode": "Strict",
        "gangGroup": ["namespace-a/gang-a", "namespace-b/gang-b"],
        **TIMER,
    }
    assert validation_errors(manifest) == []


def test_the_lightweight_coscheduling_labels() -> None:
    obj = pods_of(KOORDINATOR_LABELS, 1)[0]
    found, _ = translate(obj)
    assert found.pod_group == GroupKey("default/nginx")
    assert spec_of(obj) == {"minMember": 3, **TIMER}


@pytest.mark.parametrize(
    ("labels", "annotations", "group", "conflicts"),
    [
        pytest.param({}, {}, "namespace-a/gang-a", (), id="annotation"),
        pytest.param({"pod-group.scheduling.sigs.k8s.io": "gang-a"}, {}, "namespace-a/gang-a",
                     (), id="label-agrees"),
        pytest.param(
            {"pod-group.scheduling.sigs.k8s.io": "other"}, {}, "namespace-a/other",
            ("Koordinator gang name: metadata.annotations[gang.scheduling.koordinator.sh/name] "
             'is "gang-a" but metadata.labels[pod-group.scheduling.sigs.k8s.io] is "other"',),
            id="label-wins"),
        pytest.param({}, {"gang.scheduling.koordinator.sh/name": "Gang_A"},
                     "namespace-a/gang-a-d577b", (), id="made-dns-safe"),
    ],
)
def test_gang_name_keys(labels: dict[str, str], annotations: dict[str, str], group: str,
                        conflicts: tuple[str, ...]) -> None:
    found, membership = translate(pod(KOORDINATOR_GANG_A, labels=labels,
                                      annotations=annotations))
    assert found.pod_group == GroupKey(group)
    assert membership.conflicts == conflicts


def test_without_min_available_the_pod_joins_an_existing_podgroup() -> None:
    obj = pod(KOORDINATOR_GANG_A,
              annotations={"gang.scheduling.koordinator.sh/min-available": None})
    found, membership = translate(obj)
    assert found.pod_group == GroupKey("namespace-a/gang-a")
    assert membership.definer is None
    assert gang_definition(obj, membership) is None


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        pytest.param({"waiting-time": "1h30m"}, {"scheduleTimeoutSeconds": 5400}, id="1h30m"),
        pytest.param({"waiting-time": "1.5s"}, {"scheduleTimeoutSeconds": 2}, id="rounded-up"),
        pytest.param({"waiting-time": "500ms"}, {"scheduleTimeoutSeconds": 1}, id="sub-second"),
        pytest.param({"mode": "NonStrict"}, {"mode": "NonStrict"}, id="nonstrict"),
        pytest.param({"mode": "nonstrict"}, {"mode": "NonStrict"}, id="mode-any-case"),
        pytest.param({"groups": ""}, {}, id="groups-empty"),
        pytest.param({"groups": "[]"}, {}, id="groups-empty-list"),
        pytest.param({"groups": '["ns-b/Gang_B"]'}, {"gangGroup": ["ns-b/gang-b-68b5c"]},
                     id="groups-made-dns-safe"),
        pytest.param({"match-policy": "waiting-and-running"}, {}, id="match-policy"),
    ],
)
def test_optional_annotations(annotations: dict[str, str], expected: dict[str, Any]) -> None:
    base = {"gang.scheduling.koordinator.sh/" + key: None
            for key in ("waiting-time", "total-number", "mode", "groups")}
    base.update({"gang.scheduling.koordinator.sh/" + k: v for k, v in annotations.items()})
    expected = {"minMember": 5, **TIMER, **expected}
    assert spec_of(pod(KOORDINATOR_GANG_A, annotations=base)) == expected


@pytest.mark.parametrize(
    ("annotations", "error"),
    [
        pytest.param({"min-available": "-1"},
                     f"{ANN.format('min-available')}: must be at least 1, got -1",
                     id="negative-min-available"),
        pytest.param({"min-available": "five", "total-number": None},
                     f'{ANN.format("min-available")}: expected an integer, got "five"',
                     id="min-available-not-a-number"),
        pytest.param({"waiting-time": "10x"},
                     f'{ANN.format("waiting-time")}: invalid duration "10x": unknown unit "x" '
                     '(accepted: ns, us, µs, ms, s, m, h) (a Go duration such as "600s" or '
                     '"1h")', id="bad-duration"),
        pytest.param({"waiting-time": "600"},
                     f'{ANN.format("waiting-time")}: invalid duration "600": missing unit after '
                     '"600" (accepted: ns, us, µs, ms, s, m, h) (a Go duration such as "600s" '
                     'or "1h")', id="duration-without-unit"),
        pytest.param({"waiting-time": "-5s"},
                     f'{ANN.format("waiting-time")}: must be a positive duration, got "-5s"',
                     id="negative-duration"),
        pytest.param({"mode": "Sloppy"},
                     f'{ANN.format("mode")}: unknown mode "Sloppy" (accepted: Strict, NonStrict)',
                     id="unknown-mode"),
        pytest.param({"total-number": "3"},
                     f"{ANN.format('total-number')}: must be at least min-available (5), got 3",
                     id="total-below-min"),
        pytest.param({"groups": '["namespace-a/gang-a",'},
                     f"{ANN.format('groups')}: invalid JSON at line 1 column 23: Expecting value "
                     '(expected a list such as ["namespace-a/gang-a", "namespace-b/gang-b"])',
                     id="bad-groups-json"),
        pytest.param({"groups": '"namespace-a/gang-a"'},
                     f'{ANN.format("groups")}: expected a list, got string "namespace-a/gang-a"',
                     id="groups-not-a-list"),
        pytest.param({"groups": '["gang-b"]'},
                     f'{ANN.format("groups")}[0]: invalid gang reference "gang-b": expected '
                     "namespace/name", id="group-without-namespace"),
        pytest.param({"match-policy": "sometimes"},
                     f'{ANN.format("match-policy")}: unknown match policy "sometimes" '
                     "(accepted: once-satisfied, waiting-and-running, only-waiting)",
                     id="unknown-match-policy"),
    ],
)
def test_a_bad_value_is_a_precise_definition_error(annotations: dict[str, str | None],
                                                   error: str) -> None:
    obj = pod(KOORDINATOR_GANG_A, annotations={
        "gang.scheduling.koordinator.sh/" + k: v for k, v in annotations.items()})
    found, _ = translate(obj)
    assert found.invalid is None
    assert found.pod_group == GroupKey("namespace-a/gang-a")
    assert error_of(obj) == error


def test_the_queue_of_another_name_goes_into_the_podgroup() -> None:
    obj = pod(KOORDINATOR_GANG_A, labels={"gangsched.io/queue": "research"})
    assert spec_of(obj)["queue"] == "research"


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [("0", 0), ("600s", 600 * 10**9), ("1h30m", 5400 * 10**9), (".5s", 5 * 10**8),
     ("1.5h", 5400 * 10**9), ("+2m", 120 * 10**9), ("-1s", -(10**9)), ("3µs", 3000),
     ("3us", 3000), ("7ns", 7)],
)
def test_go_durations(text: str, nanoseconds: int) -> None:
    assert goduration.parse(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "why"),
    [("", "empty"), ("10x", 'unknown unit "x"'), ("10", 'missing unit after "10"'),
     ("s", 'expected a number at "s"'), ("1e3s", 'unknown unit "e"'),
     ("99999999999h", "out of range")],
)
def test_not_go_durations(text: str, why: str) -> None:
    with pytest.raises(goduration.DurationError, match=why):
        goduration.parse(text)
