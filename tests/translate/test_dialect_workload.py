"""The Workload API as a gang dialect: ``spec.schedulingGroup`` on pods, the
``scheduling.k8s.io`` PodGroup read as a gang, and its scheduling condition written as
kube-scheduler writes it."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.decisions import (
    BlockingReason,
    EventType,
    ObjectRef,
    RecordEvent,
    SetPodGroupStatus,
)
from gangsched.core.model import NO_TOPOLOGY, GangMode, GroupKey, TopologyRequest
from gangsched.translate import render
from gangsched.translate.dialects import WORKLOAD, foreign, resolve, workload
from gangsched.translate.pods import pod_with_membership
from gangsched.translate.priorities import PriorityClasses
from hypothesis import given, settings
from hypothesis import strategies as st
from k8s_objects import make_pod
from test_translate_robustness import json_values, paths, replaced
from workload_objects import BASIC, gang, job_objects, member, podgroup

NAMES = frozenset({"gangsched"})
NOW = 1_800_000_000.0
STAMP = "2027-01-15T08:00:00Z"  # NOW as metav1.Time


# --- pods ------------------------------------------------------------------------------------


def test_a_pod_joins_the_podgroup_its_scheduling_group_names() -> None:
    found, membership = pod_with_membership(member("w-0", "train"), scheduler_names=NAMES)
    assert found.pod_group == GroupKey("default/workload:train")
    assert found.invalid is None and found.ours
    assert (membership.dialect, membership.definer, membership.conflicts) == (WORKLOAD, None, ())


def test_a_pod_without_scheduling_group_is_no_member() -> None:
    found, membership = pod_with_membership(make_pod("plain"), scheduler_names=NAMES)
    assert found.pod_group is None and membership.dialect is None


@pytest.mark.parametrize(
    ("value", "invalid"),
    [
        pytest.param({}, "spec.schedulingGroup.podGroupName: required (the name of the "
                     "PodGroup the pod belongs to)", id="empty"),
        pytest.param("train", 'spec.schedulingGroup: expected an object, got string "train"',
                     id="not-an-object"),
        pytest.param({"podGroupName": 3}, "spec.schedulingGroup.podGroupName: expected a "
                     "string, got number 3", id="name-not-a-string"),
        pytest.param({"podGroupName": "Train_1"}, 'spec.schedulingGroup.podGroupName: invalid '
                     'PodGroup name "Train_1": must consist of lower case alphanumerics, '
                     "'-' and '.', start and end with an alphanumeric, and be at most 253 "
                     "characters", id="name-not-a-dns-subdomain"),
    ],
)
def test_a_bad_scheduling_group_makes_the_pod_invalid_with_its_path(value: object,
                                                                   invalid: str) -> None:
    obj = make_pod("bad", schedulingGroup=value)
    found, membership = pod_with_membership(obj, scheduler_names=NAMES)
    assert found.invalid == invalid
    assert found.pod_group is None and membership.pod_group is None


def test_gangsched_labels_win_over_the_scheduling_group_and_say_so() -> None:
    obj = member("both", "train")
    obj["metadata"]["labels"] = {"gangsched.io/pod-group": "mine"}
    found, membership = pod_with_membership(obj, scheduler_names=NAMES)
    assert found.pod_group == GroupKey("default/mine")
    assert membership.conflicts == (
        'the pod names two gangs: PodGroup "mine" (native: metadata.labels'
        '[gangsched.io/pod-group]) and PodGroup "train" (workload: '
        "spec.schedulingGroup.podGroupName); it joins the native one "
        f"({resolve.ORDER})",)


def test_the_scheduling_group_wins_over_the_other_schedulers() -> None:
    obj = member("both", "train")
    obj["metadata"]["labels"] = {"scheduling.x-k8s.io/pod-group": "other"}
    found, membership = pod_with_membership(obj, scheduler_names=NAMES)
    assert found.pod_group == GroupKey("default/workload:train")
    assert membership.dialect == WORKLOAD and len(membership.conflicts) == 1


# --- PodGroups -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "min_member", "topology"),
    [
        pytest.param(podgroup(policy=gang(4)), 4, NO_TOPOLOGY, id="gang"),
        pytest.param(podgroup(policy=gang(1)), 1, NO_TOPOLOGY, id="gang-of-one"),
        pytest.param(podgroup(policy=BASIC), 1, NO_TOPOLOGY, id="basic-is-no-gang"),
        pytest.param(podgroup(policy=gang(6), topology="rack"), 6,
                     TopologyRequest(required="rack"), id="gang-in-one-rack"),
        pytest.param(podgroup(policy=gang(2), topology="topology.kubernetes.io/zone"), 2,
                     TopologyRequest(required="topology.kubernetes.io/zone"),
                     id="prefixed-topology-key"),
        pytest.param(podgroup(policy=gang(3), api_version="scheduling.k8s.io/v1beta1"), 3,
                     NO_TOPOLOGY, id="later-version"),
    ],
)
def test_a_podgroup_as_a_gang(obj: dict[str, Any], min_member: int,
                              topology: TopologyRequest) -> None:
    obj["metadata"].update(uid="uid-pg", creationTimestamp="2024-05-01T12:00:00Z")
    spec = workload.podgroup_from_k8s(obj)
    assert spec.invalid is None
    assert spec.key == GroupKey("default/workload:pg")
    assert (spec.uid, spec.min_member, spec.topology) == ("uid-pg", min_member, topology)
    assert (spec.mode, spec.queue, spec.gang_group, spec.min_resources.is_zero()) == (
        GangMode.STRICT, "default", (), True)
    assert spec.schedule_timeout == workload.NO_TIMEOUT  # kube-scheduler never gives up
    assert spec.creation == 1714564800.0


def test_priority_is_the_podgroups_or_its_class() -> None:
    classes = PriorityClasses({"high": 1000}, None)
    with_class = podgroup()
    with_class["spec"]["priorityClassName"] = "high"
    assert workload.podgroup_from_k8s(with_class, priorities=classes).priority == 1000
    with_class["spec"]["priority"] = 7  # set by the Priority admission plugin: it wins
    assert workload.podgroup_from_k8s(with_class, priorities=classes).priority == 7


@pytest.mark.parametrize(
    ("spec", "invalid"),
    [
        pytest.param({"schedulingPolicy": {}}, "spec.schedulingPolicy: exactly one of basic "
                     "and gang must be set, got neither", id="no-policy"),
        pytest.param({}, "spec.schedulingPolicy: exactly one of basic and gang must be set, "
                     "got neither", id="no-scheduling-policy"),
        pytest.param({"schedulingPolicy": {"basic": {}, "gang": {"minCount": 2}}},
                     "spec.schedulingPolicy: exactly one of basic and gang must be set, got "
                     "basic and gang", id="both-policies"),
        pytest.param({"schedulingPolicy": {"gang": {}}},
                     "spec.schedulingPolicy.gang.minCount: required", id="no-minCount"),
        pytest.param({"schedulingPolicy": {"gang": {"minCount": 0}}},
                     "spec.schedulingPolicy.gang.minCount: must be at least 1, got 0",
                     id="zero-minCount"),
        pytest.param({"schedulingPolicy": {"gang": {"minCount": "4"}}},
                     'spec.schedulingPolicy.gang.minCount: expected an integer, got string "4"',
                     id="minCount-a-string"),
        pytest.param({"schedulingPolicy": {"gang": {"minCount": 2**31}}},
                     "spec.schedulingPolicy.gang.minCount: must be at most 2147483647, got "
                     "2147483648", id="minCount-above-int32"),
        pytest.param({"schedulingPolicy": {"gang": 4}},
                     "spec.schedulingPolicy.gang: expected an object, got number 4",
                     id="gang-not-an-object"),
        pytest.param({"schedulingPolicy": gang(2),
                      "schedulingConstraints": {"topology": [{"key": "rack"}, {"key": "zone"}]}},
                     "spec.schedulingConstraints.topology: must have at most 1 item, got 2",
                     id="two-topology-keys"),
        pytest.param({"schedulingPolicy": gang(2), "schedulingConstraints": {"topology": [{}]}},
                     "spec.schedulingConstraints.topology[0].key: required (a node label key)",
                     id="topology-without-key"),
        pytest.param({"schedulingPolicy": gang(2),
                      "schedulingConstraints": {"topology": [{"key": "rack/"}]}},
                     'spec.schedulingConstraints.topology[0].key: invalid label key "rack/": '
                     "the name part must be 1 to 63 characters, alphanumerics, '-', '_' or "
                     "'.', starting and ending with an alphanumeric", id="bad-topology-key"),
        pytest.param({"schedulingPolicy": gang(2), "priority": "high"},
                     'spec.priority: expected an integer, got string "high"',
                     id="priority-a-string"),
    ],
)
def test_a_bad_podgroup_is_invalid_with_a_precise_message(spec: dict[str, Any],
                                                          invalid: str) -> None:
    obj = podgroup()
    obj["spec"] = spec
    found = workload.podgroup_from_k8s(obj)
    assert found.invalid == invalid
    assert found.key == GroupKey("default/workload:pg")
    assert found.topology == NO_TOPOLOGY


def test_a_podgroup_without_spec_or_metadata_never_raises() -> None:
    found = workload.podgroup_from_k8s({"metadata": "x"})
    assert found.invalid == ("metadata: expected an object, got string \"x\"; spec: required; "
                             "spec.schedulingPolicy: exactly one of basic and gang must be set, "
                             "got neither")


def test_the_invalid_spec_event_points_at_the_real_podgroup() -> None:
    event = RecordEvent(ObjectRef("PodGroup", "default", "workload:pg", "uid-pg"),
                        EventType.WARNING, "InvalidSpec", "spec.schedulingPolicy: ...")
    body = foreign.retarget_event(render.event_body(event, now=NOW))
    assert body["regarding"] == {"apiVersion": "scheduling.k8s.io/v1alpha2",
                                 "kind": "PodGroup", "namespace": "default", "name": "pg",
                                 "uid": "uid-pg"}
    assert body["note"] == "spec.schedulingPolicy: ..."
    served = foreign.retarget_event(render.event_body(event, now=NOW), {WORKLOAD: "v1beta1"})
    assert served["regarding"]["apiVersion"] == "scheduling.k8s.io/v1beta1"


def test_the_kind_is_found_from_the_servers_discovery() -> None:
    kind = foreign.kind_of("default/workload:pg")
    assert kind is not None and kind.group == "scheduling.k8s.io"
    assert kind.served({"versions": [{"version": "v1"}, {"version": "v1alpha2"}]}) == "v1alpha2"
    assert kind.served({"versions": [{"version": "v1alpha2"}, {"version": "v1beta1"}]}) \
        == "v1beta1"  # the newest known one
    assert kind.served({"versions": [{"version": "v1"}]}) is None  # PriorityClasses only
    assert kind.served({"versions": "v1alpha2"}) is None
    assert kind.path_at("v1alpha3") == "/apis/scheduling.k8s.io/v1alpha3/podgroups"


# --- the Job controller's objects ------------------------------------------------------------


def test_a_jobs_pods_are_one_gang_of_its_parallelism() -> None:
    _, group, pods = job_objects("train", "uid-job", parallelism=4, cpu="1")
    spec = workload.podgroup_from_k8s(group)
    assert (spec.min_member, spec.invalid) == (4, None)
    keys = {pod_with_membership(pod, scheduler_names=NAMES)[0].pod_group for pod in pods}
    assert keys == {spec.key}


# --- status ----------------------------------------------------------------------------------


NOT_BLOCKED = BlockingReason()


def decision(phase: str, *, reason: str = "", message: str = "", scheduled: int = 0,
             blocking: BlockingReason = NOT_BLOCKED) -> SetPodGroupStatus:
    return SetPodGroupStatus(key=GroupKey("default/workload:pg"), phase=phase, reason=reason,
                             message=message, members=4, assumed=0, scheduled=scheduled,
                             running=0, succeeded=0, failed=0, schedule_start=None,
                             blocking=blocking)


def condition(kind: str, status: str, reason: str, message: str,
              since: str = STAMP) -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": since, "observedGeneration": 1}


CAPACITY = BlockingReason("Capacity", "0/4 nodes are available: 4 Insufficient cpu.")


@pytest.mark.parametrize(
    ("d", "version", "wanted"),
    [
        pytest.param(decision("Scheduled", scheduled=4), "v1alpha2",
                     condition("PodGroupScheduled", "True", "Scheduled",
                               "4 pods of the group scheduled"), id="scheduled"),
        pytest.param(decision("Running", scheduled=4), "v1beta1",
                     condition("PodGroupInitiallyScheduled", "True", "Scheduled",
                               "4 pods of the group scheduled"), id="running-later-version"),
        pytest.param(decision("Inqueue", blocking=CAPACITY), "v1alpha2",
                     condition("PodGroupScheduled", "False", "Unschedulable",
                               "0/4 nodes are available: 4 Insufficient cpu."),
                     id="does-not-fit"),
        pytest.param(decision("Failed", reason="InvalidSpec", message="spec.x: bad"),
                     "v1alpha3",
                     condition("PodGroupInitiallyScheduled", "False", "SchedulerError",
                               "spec.x: bad"), id="invalid"),
    ],
)
def test_the_scheduling_condition(d: SetPodGroupStatus, version: str,
                                  wanted: dict[str, Any]) -> None:
    obj = podgroup(generation=1)
    assert workload.status_body(d, obj, now=NOW, version=version) == {"conditions": [wanted]}


def test_nothing_is_written_while_the_gang_waits_for_its_pods() -> None:
    assert workload.status_body(decision("Inqueue"), podgroup(), now=NOW,
                                version="v1alpha2") is None


def test_a_scheduled_podgroup_is_never_turned_back_to_false() -> None:
    obj = podgroup(generation=1)
    obj["status"] = {"conditions": [condition("PodGroupScheduled", "True", "Scheduled", "x")]}
    assert workload.status_body(decision("Inqueue", blocking=CAPACITY), obj, now=NOW,
                                version="v1alpha2") is None


def test_other_conditions_are_kept_and_the_transition_time_too() -> None:
    obj = podgroup(generation=2)
    disruption = condition("DisruptionTarget", "True", "PreemptionByScheduler", "preempted")
    waiting = condition("PodGroupScheduled", "False", "Unschedulable", "old reason",
                        since="2026-01-01T00:00:00Z")
    obj["status"] = {"conditions": [waiting, disruption]}
    body = workload.status_body(decision("Inqueue", blocking=CAPACITY), obj, now=NOW,
                                version="v1alpha2")
    assert body == {"conditions": [disruption, {
        **waiting, "message": CAPACITY.message, "observedGeneration": 2}]}
    obj["status"] = body
    assert workload.status_body(decision("Inqueue", blocking=CAPACITY), obj, now=NOW + 60,
                                version="v1alpha2") is None  # unchanged: nothing to write


@pytest.mark.parametrize(
    ("reason", "members", "expected"),
    [
        pytest.param("PodGroupNotFound", 1,
                     'waiting for pod\'s pod group "pg" to appear in scheduling queue',
                     id="no-podgroup"),
        pytest.param("WaitingForGang", 3, "waiting for minCount pods from a gang to appear in "
                     "scheduling queue (minCount 4)", id="below-quorum"),
        pytest.param("WaitingForGang", 4, "core words", id="quorum-reached"),
        pytest.param("Unschedulable", 1, "core words", id="other-reason"),
    ],
)
def test_waiting_members_get_kube_scheduler_words(reason: str, members: int,
                                                  expected: str) -> None:
    assert workload.pending_message(reason, "core words", "pg", members=members,
                                    minimum=4) == expected


# --- robustness ------------------------------------------------------------------------------


def _status_over(obj: dict[str, Any]) -> object:
    return workload.status_body(decision("Inqueue", blocking=CAPACITY), obj, now=NOW,
                                version="v1alpha2")


def _old_status() -> dict[str, Any]:
    obj = podgroup(generation=3, topology="rack")
    obj["status"] = {"conditions": [condition("PodGroupScheduled", "False", "Unschedulable",
                                              "x"), condition("DisruptionTarget", "True",
                                                              "PreemptionByScheduler", "y")]}
    return obj


WORKLOAD_TRANSLATORS = [
    (lambda: podgroup(topology="rack"), workload.podgroup_from_k8s),
    (lambda: member("w-0", "train"), lambda obj: pod_with_membership(obj)),
    (_old_status, _status_over),
]


@settings(max_examples=300)
@given(st.data(), json_values)
def test_any_field_may_hold_any_json(data: st.DataObject, value: Any) -> None:
    build, translate = data.draw(st.sampled_from(WORKLOAD_TRANSLATORS))
    obj = build()
    path = data.draw(st.sampled_from(paths(obj)))
    translate(replaced(obj, path, value))
