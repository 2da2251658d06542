"""Kueue plain-pod groups, read from Kueue's "Run Plain Pods" example."""

from __future__ import annotations

import pytest
from dialect_manifests import KUEUE_POD, pod, pods_of
from gangsched.core.values.model import GroupKey
from gangsched.translate.dialects import KUEUE
from gangsched.translate.pods import gang_definition, pod_with_membership
from manifests_tests.test_crds import validation_errors

NAMES = frozenset({"default-scheduler"})
COUNT = "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]"


def test_the_example_group() -> None:
    pods = pods_of(KUEUE_POD, 2)
    for obj in pods:
        found, membership = pod_with_membership(obj, scheduler_names=NAMES)
        assert found.ours and found.invalid is None  # no schedulerName: default-scheduler
        assert found.pod_group == GroupKey("default/sample-group")
        assert found.queue == "user-queue"
        assert (membership.dialect, membership.definer) == (KUEUE, KUEUE)
    definition = gang_definition(pods[0], pod_with_membership(pods[0])[1])
    assert definition is not None and definition.manifest is not None
    manifest = definition.manifest
    assert definition.key == "default/sample-group"
    assert manifest["metadata"]["name"] == "sample-group"
    assert manifest["metadata"]["labels"]["gangsched.io/dialect"] == "kueue"
    assert manifest["spec"] == {"minMember": 2, "totalNumber": 2, "queue": "user-queue",
                                "onTimeout": "Requeue", "waitForMinMember": True}
    assert validation_errors(manifest) == []


@pytest.mark.parametrize(
    ("count", "error"),
    [
        pytest.param("-2", f"{COUNT}: must be at least 1, got -2", id="negative"),
        pytest.param("0", f"{COUNT}: must be at least 1, got 0", id="zero"),
        pytest.param("two", f'{COUNT}: expected an integer, got "two"', id="not-a-number"),
        pytest.param("20000", f"{COUNT}: must be at most 10000, got 20000", id="too-many"),
    ],
)
def test_a_bad_total_count_is_a_precise_definition_error(count: str, error: str) -> None:
    obj = pod(KUEUE_POD, annotations={"kueue.x-k8s.io/pod-group-total-count": count})
    found, membership = pod_with_membership(obj, scheduler_names=NAMES)
    assert found.invalid is None and found.pod_group == GroupKey("default/sample-group")
    definition = gang_definition(obj, membership)
    assert definition is not None
    assert (definition.manifest, definition.error) == (None, error)


def test_without_total_count_the_pod_joins_an_existing_podgroup() -> None:
    obj = pod(KUEUE_POD, annotations={"kueue.x-k8s.io/pod-group-total-count": None})
    found, membership = pod_with_membership(obj)
    assert found.pod_group == GroupKey("default/sample-group")
    assert membership.definer is None


def test_a_queue_label_alone_only_names_the_queue() -> None:
    obj = pod(KUEUE_POD, labels={"kueue.x-k8s.io/pod-group-name": None})
    found, membership = pod_with_membership(obj)
    assert (found.pod_group, found.queue, membership.dialect) == (None, "user-queue", None)


def test_a_group_name_that_is_no_object_name_is_made_one() -> None:
    obj = pod(KUEUE_POD, labels={"kueue.x-k8s.io/pod-group-name": "Sample_Group"})
    found, membership = pod_with_membership(obj)
    assert found.pod_group == GroupKey("default/sample-group-2ee9f")
    definition = gang_definition(obj, membership)
    assert definition is not None and definition.manifest is not None
    assert definition.manifest["metadata"]["name"] == "sample-group-2ee9f"
