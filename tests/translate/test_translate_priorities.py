"""priorityClassName resolution, as the Priority admission plugin does it."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.podgroups import podgroup_from_k8s
from gangsched.translate.pods import pod_from_k8s, pod_with_membership
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses


def pc(name: str, value: int, default: bool = False) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": default}


CLASSES = PriorityClasses.from_k8s([pc("high", 1000), pc("low", -5), pc("std", 10, True),
                                    pc("std-too", 20, True), {"metadata": {"name": "bad"}}])


@pytest.mark.parametrize(("classes", "name", "expected"), [
    pytest.param(CLASSES, "high", (1000, None), id="named-class"),
    pytest.param(CLASSES, "low", (-5, None), id="negative-value"),
    pytest.param(CLASSES, None, (10, None), id="absent-takes-the-lowest-global-default"),
    pytest.param(CLASSES, "", (10, None), id="empty-takes-the-global-default"),
    pytest.param(NO_CLASSES, None, (0, None), id="absent-without-default-is-zero"),
    pytest.param(CLASSES, "nope", (10, "no PriorityClass with name nope was found"),
                 id="unknown-class-counts-as-none"),
    pytest.param(NO_CLASSES, "nope", (0, "no PriorityClass with name nope was found"),
                 id="unknown-class-without-default"),
    pytest.param(CLASSES, "bad", (10, "no PriorityClass with name bad was found"),
                 id="class-without-value-is-skipped"),
    pytest.param(CLASSES, 7, (10, "spec.priorityClassName: must be a string"),
                 id="not-a-string"),
])
def test_resolve(classes: PriorityClasses, name: object, expected: tuple[int, str | None]) -> None:
    assert classes.resolve(name) == expected


def _app(priority_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"queue": "default"}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "Application",
            "metadata": {"namespace": "ns", "name": "a", "uid": "u"}, "spec": spec}


@pytest.mark.parametrize(("priority_class", "expected"), [
    pytest.param("high", 1000, id="named"),
    pytest.param(None, 10, id="global-default"),
    pytest.param("later", 10, id="unknown-until-made"),
])
def test_applications_and_podgroups_get_their_class_priority(
    priority_class: str | None, expected: int
) -> None:
    app = app_from_k8s(_app(priority_class), priorities=CLASSES)
    assert (app.priority, app.invalid) == (expected, None)
    group_obj = {**_app(priority_class), "kind": "PodGroup"}
    group_obj["spec"] = {**group_obj["spec"], "minMember": 1}
    group = podgroup_from_k8s(group_obj, priorities=CLASSES)
    assert (group.priority, group.invalid) == (expected, None)


def test_a_pod_without_spec_priority_gets_its_class_value() -> None:
    obj = {"metadata": {"namespace": "ns", "name": "p", "uid": "u"},
           "spec": {"priorityClassName": "high", "containers": []}}
    assert pod_with_membership(obj, priorities=CLASSES)[0].priority == 1000
    assert pod_from_k8s(obj).priority == 0
    explicit = {**obj, "spec": {**obj["spec"], "priority": 3}}
    assert pod_with_membership(explicit, priorities=CLASSES)[0].priority == 3


def test_volcano_podgroups_take_their_class_and_coscheduling_ones_the_default() -> None:
    from gangsched.translate.dialects import coscheduling, volcano

    meta = {"namespace": "ns", "name": "pg", "uid": "u"}
    found = volcano.podgroup_from_k8s(
        {"metadata": meta, "spec": {"minMember": 2, "priorityClassName": "high"}},
        priorities=CLASSES)
    assert (found.priority, found.invalid) == (1000, None)
    found = coscheduling.podgroup_from_k8s({"metadata": meta, "spec": {"minMember": 2}},
                                           priorities=CLASSES)
    assert (found.priority, found.invalid) == (10, None)
