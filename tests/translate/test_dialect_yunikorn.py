"""YuniKorn's labels and annotations, read from the manifests of its gang scheduling guide."""

from __future__ import annotations

import json
from typing import Any

import pytest
from dialect_manifests import YUNIKORN_HARD_JOB, YUNIKORN_JOB, pod, pods_of
from gangsched.core.values.model import AppKey
from gangsched.translate.dialects import YUNIKORN, lenient_meta, resolve, yunikorn
from gangsched.translate.pods import gang_definition, pod_with_membership
from manifests_tests.test_crds import validation_errors

YK = frozenset({"gangsched", "yunikorn"})
TG = "metadata.annotations[yunikorn.apache.org/task-groups]"


def translate(obj: dict[str, Any]) -> Any:
    return pod_with_membership(obj, scheduler_names=YK)


def test_the_guide_job_joins_its_application_and_task_group() -> None:
    for obj in pods_of(YUNIKORN_JOB, 2):
        found, membership = translate(obj)
        assert found.ours
        assert found.app == AppKey("default/gang-scheduling-job-example")
        assert found.task_group == "task-group-example"
        assert found.queue == "sandbox"  # root.sandbox: the leaf names the gangsched Queue
        assert found.invalid is None
        assert (membership.dialect, membership.definer) == (YUNIKORN, YUNIKORN)
        assert membership.conflicts == ()


def test_the_guide_job_defines_its_application() -> None:
    obj = pods_of(YUNIKORN_HARD_JOB, 1)[0]
    _, membership = translate(obj)
    definition = gang_definition(obj, membership)
    assert definition is not None and definition.error is None
    manifest = definition.manifest
    assert manifest is not None
    assert definition.key == "default/gang-app-timeout"
    assert manifest["kind"] == "Application"
    assert manifest["metadata"]["name"] == "gang-app-timeout"
    assert manifest["metadata"]["annotations"] == {"yunikorn.apache.org/app-id": "gang-app-timeout"}
    assert manifest["metadata"]["labels"]["gangsched.io/dialect"] == "yunikorn"
    owner = manifest["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Pod", "gang-app-timeout-0", "uid-gang-app-timeout-0", False)
    assert manifest["spec"] == {
        "queue": "fifo",
        "taskGroups": [{"name": "sched-style", "minMember": 4,
                        "minResource": {"cpu": "1", "memory": "1000M"}}],
        "schedulingPolicy": {"placeholderTimeoutSeconds": 60, "style": "Hard"},
    }
    assert validation_errors(manifest) == []


@pytest.mark.parametrize(
    ("labels", "annotations", "app", "conflict"),
    [
        pytest.param({"applicationId": "a"}, {}, "a", None, id="applicationId-label"),
        pytest.param({"spark-app-selector": "spark-1"}, {}, "spark-1", None, id="spark"),
        pytest.param({}, {"yunikorn.apache.org/app-id": "b"}, "b", None, id="annotation"),
        pytest.param({"yunikorn.apache.org/app-id": "c"}, {}, "c", None, id="canonical-label"),
        pytest.param(
            {"yunikorn.apache.org/app-id": "c", "applicationId": "a"}, {}, "c",
            'metadata.labels.applicationId is "a" but '
            'metadata.labels[yunikorn.apache.org/app-id] is "c"',
            id="canonical-label-wins"),
        pytest.param(
            {"applicationId": "a"}, {"yunikorn.apache.org/app-id": "b"}, "b",
            'metadata.labels.applicationId is "a" but '
            'metadata.annotations[yunikorn.apache.org/app-id] is "b"',
            id="annotation-beats-applicationId"),
        pytest.param({"applicationId": "Spark_App.1"}, {}, "spark-app.1-64063", None,
                     id="made-dns-safe"),
    ],
)
def test_application_id_keys(labels: dict[str, str], annotations: dict[str, str], app: str,
                             conflict: str | None) -> None:
    obj = pod(YUNIKORN_JOB, labels={"applicationId": None, **labels},
              annotations=annotations)
    found, membership = translate(obj)
    assert found.app == AppKey(f"default/{app}")
    expected = () if conflict is None else (f"YuniKorn application ID: {conflict}",)
    assert membership.conflicts == expected


def test_made_dns_safe_is_stable_and_valid() -> None:
    from gangsched.translate.dialects import dns_name

    assert dns_name("Spark_App.1") == dns_name("Spark_App.1")
    assert dns_name("spark-app-1") == "spark-app-1"
    assert dns_name("x" * 80) != dns_name("x" * 81)
    assert len(dns_name("x" * 300)) <= 63


def test_field_names_are_matched_ignoring_case() -> None:
    groups = [{"NAME": "task-group-example", "MinMember": 2,
               "minresource": {"cpu": "100m"}, "NodeSelector": {"pool": "a"}}]
    obj = pod(YUNIKORN_JOB, annotations={"yunikorn.apache.org/task-groups": json.dumps(groups)})
    definition = gang_definition(obj, translate(obj)[1])
    assert definition is not None and definition.manifest is not None
    assert definition.manifest["spec"]["taskGroups"] == [
        {"name": "task-group-example", "minMember": 2, "minResource": {"cpu": "100m"},
         "nodeSelector": {"pool": "a"}}]


@pytest.mark.parametrize(
    ("annotations", "error"),
    [
        pytest.param({"yunikorn.apache.org/task-groups": '[{"name": "a", "minMember": 2'},
                     f"{TG}: invalid JSON at line 1 column 30: Expecting ',' delimiter",
                     id="bad-json"),
        pytest.param({"yunikorn.apache.org/task-groups": '[{"name": "a", "minMember": -1}]'},
                     f"{TG}[0].minMember: must be at least 1, got -1", id="negative-minMember"),
        pytest.param({"yunikorn.apache.org/task-groups": '{"name": "a"}'},
                     f"{TG}: expected a JSON list of task groups, got object", id="not-a-list"),
        pytest.param(
            {"yunikorn.apache.org/schedulingPolicyParameters": "gangSchedulingStyle=Firm"},
            "metadata.annotations[yunikorn.apache.org/schedulingPolicyParameters]"
            '.gangSchedulingStyle: unknown style "Firm" (accepted: Hard, Soft)',
            id="unknown-style"),
    ],
)
def test_a_bad_definition_names_its_path(annotations: dict[str, str], error: str) -> None:
    obj = pod(YUNIKORN_JOB, annotations=annotations)
    found, membership = translate(obj)
    assert found.invalid is None  # the pod still waits for its Application
    definition = gang_definition(obj, membership)
    assert definition is not None
    assert (definition.manifest, definition.error) == (None, error)


def test_a_queue_that_is_no_valid_name_is_a_definition_error() -> None:
    obj = pod(YUNIKORN_JOB, labels={"queue": "root.Big_Queue"})
    definition = resolve.define(lenient_meta(obj), translate(obj)[1])
    assert definition is not None
    assert definition.error is not None
    assert definition.error.startswith(
        'metadata.labels.queue: invalid queue name "big_queue"')


def test_an_application_id_alone_makes_no_gang() -> None:
    obj = pod(YUNIKORN_JOB, annotations={"yunikorn.apache.org/task-group-name": None,
                                         "yunikorn.apache.org/task-groups": None})
    found, membership = translate(obj)
    assert (found.app, found.task_group, found.pod_group) == (None, None, None)
    assert found.queue == "sandbox"
    assert membership.definer is None


def test_a_task_group_without_application_id_is_invalid() -> None:
    obj = pod(YUNIKORN_JOB, labels={"applicationId": None})
    found, _ = translate(obj)
    assert found.app is None
    assert found.invalid == (
        "metadata.annotations[yunikorn.apache.org/task-group-name]: a YuniKorn task group "
        "needs an application ID: set label yunikorn.apache.org/app-id (or label "
        "applicationId or spark-app-selector)")


@pytest.mark.parametrize(
    ("value", "preemptible", "invalid"),
    [
        pytest.param("false", False, None, id="false"),
        pytest.param("True", True, None, id="true"),
        pytest.param("maybe", True,
                     'metadata.annotations[yunikorn.apache.org/allow-preemption]: expected '
                     '"true" or "false", got "maybe"', id="not-a-boolean"),
    ],
)
def test_allow_preemption(value: str, preemptible: bool, invalid: str | None) -> None:
    found, _ = translate(pod(YUNIKORN_JOB,
                             annotations={"yunikorn.apache.org/allow-preemption": value}))
    assert (found.preemptible, found.invalid) == (preemptible, invalid)


@pytest.mark.parametrize(
    ("path", "queue"),
    [("root.sandbox", "sandbox"), ("root", "root"), ("root.Org.Team-A", "team-a"),
     ("fifo", "fifo")],
)
def test_queue_paths_name_their_leaf(path: str, queue: str) -> None:
    assert yunikorn.queue_name(path) == queue


def test_the_scheduler_name_decides_whether_the_pod_is_ours() -> None:
    obj = pods_of(YUNIKORN_JOB, 1)[0]
    assert not pod_with_membership(obj)[0].ours
    assert pod_with_membership(obj, scheduler_names=YK)[0].ours
