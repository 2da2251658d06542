"""coscheduling (scheduler-plugins): the pod-group label and the scheduling.x-k8s.io PodGroup,
read from the plugin's install guide example."""

from __future__ import annotations

from typing import Any

import pytest
from dialect_manifests import COSCHEDULING_DEPLOYMENT, COSCHEDULING_PODGROUP, load, pods_of
from gangsched.core.values.decisions import (
    EventType,
    ObjectRef,
    RecordEvent,
    SetPodGroupStatus,
)
from gangsched.core.values.model import GangMode, GroupKey
from gangsched.translate import render
from gangsched.translate.dialects import (
    COSCHEDULING,
    coscheduling,
    foreign,
    foreign_key,
    split_foreign_key,
)
from gangsched.translate.pods import pod_with_membership

NAMES = frozenset({"scheduler-plugins-scheduler"})


def podgroup(**spec: Any) -> dict[str, Any]:
    obj = load(COSCHEDULING_PODGROUP)
    obj["metadata"].update(namespace="default", uid="uid-pg1",
                           creationTimestamp="2024-05-01T12:00:00Z")
    for key, value in spec.items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    return obj


def test_deployment_pods_join_the_podgroup() -> None:
    for obj in pods_of(COSCHEDULING_DEPLOYMENT, 2):
        found, membership = pod_with_membership(obj, scheduler_names=NAMES)
        assert found.ours and found.invalid is None
        assert found.pod_group == GroupKey("default/coscheduling:pg1")
        assert (membership.dialect, membership.definer) == (COSCHEDULING, None)


def test_the_foreign_key_never_clashes_with_a_kubernetes_name() -> None:
    key = foreign_key(COSCHEDULING, "default", "pg1")
    assert key == "default/coscheduling:pg1"
    assert split_foreign_key(key) == (COSCHEDULING, "default", "pg1")
    assert split_foreign_key("default/pg1") == ("", "default", "pg1")
    kind = foreign.kind_of(key)
    assert kind is not None and kind.api_version == "scheduling.x-k8s.io/v1alpha1"
    assert kind.path == "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"
    assert foreign.kind_of("default/pg1") is None


def test_the_guide_podgroup() -> None:
    spec = coscheduling.podgroup_from_k8s(podgroup())
    assert spec.key == GroupKey("default/coscheduling:pg1")
    assert (spec.uid, spec.min_member, spec.schedule_timeout) == ("uid-pg1", 3, 10.0)
    assert (spec.mode, spec.gang_group, spec.total_number, spec.queue) == (
        GangMode.STRICT, (), None, "default")
    assert spec.creation == 1714564800.0
    assert spec.invalid is None


def test_the_plugin_default_timeout_is_60_seconds() -> None:
    assert coscheduling.podgroup_from_k8s(podgroup(scheduleTimeoutSeconds=None)).schedule_timeout \
        == 60.0


@pytest.mark.parametrize(
    ("spec", "invalid"),
    [
        pytest.param({"minMember": -1}, "spec.minMember: must be at least 1, got -1",
                     id="negative-minMember"),
        pytest.param({"minMember": None}, "spec.minMember: required", id="no-minMember"),
        pytest.param({"scheduleTimeoutSeconds": 0},
                     "spec.scheduleTimeoutSeconds: must be at least 1, got 0", id="zero-timeout"),
        pytest.param({"minResources": {"cpu": "lots"}},
                     'spec.minResources.cpu: invalid quantity "lots": expected a number, with '
                     "an optional sign, at the start",
                     id="bad-quantity"),
    ],
)
def test_an_invalid_podgroup_says_why(spec: dict[str, Any], invalid: str) -> None:
    assert coscheduling.podgroup_from_k8s(podgroup(**spec)).invalid == invalid


def test_koordinator_annotations_on_the_podgroup() -> None:
    obj = podgroup()
    obj["metadata"]["annotations"] = {
        "gang.scheduling.koordinator.sh/total-number": "5",
        "gang.scheduling.koordinator.sh/mode": "NonStrict",
        "gang.scheduling.koordinator.sh/groups": '["default/pg1", "other/pg2"]',
    }
    spec = coscheduling.podgroup_from_k8s(obj)
    assert (spec.total_number, spec.mode) == (5, GangMode.NON_STRICT)
    assert spec.gang_group == (GroupKey("default/coscheduling:pg1"),
                               GroupKey("other/coscheduling:pg2"))
    assert spec.invalid is None
    obj["metadata"]["annotations"] = {"gang.scheduling.koordinator.sh/total-number": "2",
                                      "gang.scheduling.koordinator.sh/mode": "Lax"}
    assert coscheduling.podgroup_from_k8s(obj).invalid == (
        'metadata.annotations[gang.scheduling.koordinator.sh/mode]: unknown mode "Lax" '
        "(accepted: Strict, NonStrict); "
        "metadata.annotations[gang.scheduling.koordinator.sh/total-number]: must be at least "
        "spec.minMember (3), got 2")


def test_fields_coscheduling_does_not_have_are_not_read() -> None:
    spec = coscheduling.podgroup_from_k8s(podgroup(queue="elsewhere", mode="NonStrict",
                                                   totalNumber=1))
    assert (spec.queue, spec.mode, spec.total_number, spec.invalid) == (
        "default", GangMode.STRICT, None, None)


def test_the_written_status_comes_back_after_a_restart() -> None:
    obj = podgroup()
    obj["status"] = {"phase": "Scheduling", "scheduleStartTime": "2024-05-01T12:00:05Z"}
    spec = coscheduling.podgroup_from_k8s(obj)
    assert (spec.persisted_phase, spec.persisted_start) == ("Scheduling", 1714564805.0)


def test_status_body_has_coscheduling_fields_only() -> None:
    d = SetPodGroupStatus(key=GroupKey("default/coscheduling:pg1"), phase="Scheduled",
                          reason="", message="", members=3, assumed=0, scheduled=3, running=1,
                          succeeded=1, failed=0, schedule_start=1714564805.0)
    assert coscheduling.status_body(d) == {
        "phase": "Scheduled", "running": 1, "succeeded": 1, "failed": 0,
        "scheduleStartTime": "2024-05-01T12:00:05Z"}
    pending = SetPodGroupStatus(key=d.key, phase="Pending", reason="", message="", members=2,
                                assumed=0, scheduled=0, running=0, succeeded=0, failed=0,
                                schedule_start=None)
    assert coscheduling.status_body(pending)["scheduleStartTime"] is None


def test_events_about_the_podgroup_point_at_it() -> None:
    d = RecordEvent(ObjectRef("PodGroup", "default", "coscheduling:pg1", "uid-pg1"),
                    EventType.WARNING, "InvalidSpec", "spec.minMember: required")
    body = foreign.retarget_event(render.event_body(d, now=0.0))
    assert body["regarding"] == {"apiVersion": "scheduling.x-k8s.io/v1alpha1",
                                 "kind": "PodGroup", "name": "pg1", "namespace": "default",
                                 "uid": "uid-pg1"}
    own = RecordEvent(ObjectRef("PodGroup", "default", "pg1"), EventType.NORMAL, "X", "y")
    assert foreign.retarget_event(render.event_body(own, now=0.0))["regarding"][
        "apiVersion"] == "gangsched.io/v1alpha1"
