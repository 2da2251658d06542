from typing import Any

import pytest
from gangsched.core.values.decisions import (
    CreatePlaceholder,
    EventType,
    ObjectRef,
    PodPending,
    RecordEvent,
)
from gangsched.core.values.model import AppKey, PodUID
from gangsched.core.values.naming import placeholder_name
from gangsched.core.values.resources import Resources
from gangsched.translate import labels, render
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.pods import pod_from_k8s
from hypothesis import given
from hypothesis import strategies as st
from k8s_objects import (
    application,
    is_dns_label,
    is_dns_subdomain,
    is_label_value,
    is_qualified_name,
)

NOW = 1714635100.5
Gi = 2**30


def create(app_obj: dict[str, Any], group: str, index: int) -> CreatePlaceholder:
    app = app_from_k8s(app_obj)
    task_group = app.group(group)
    assert task_group is not None
    meta = app_obj["metadata"]
    return CreatePlaceholder(
        app=app.key,
        task_group=group,
        index=index,
        name=placeholder_name(meta["name"], meta["uid"], group, index),
        namespace=meta["namespace"],
        requests=task_group.min_resource,
    )


def test_placeholder_pod_for_a_worker() -> None:
    app_obj = application()
    d = create(app_obj, "worker", 5)
    pod = render.placeholder_pod(d, app_obj)
    meta, spec = pod["metadata"], pod["spec"]
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert (meta["name"], meta["namespace"]) == (d.name, "ml")
    assert meta["labels"] == {
        "job": "llm-finetune",
        "role": "worker",
        labels.LABEL_APP: "llm-finetune",
        labels.LABEL_PLACEHOLDER: "true",
        labels.LABEL_MANAGED_BY: "gangsched",
    }
    assert meta["annotations"] == {
        "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
        labels.ANN_TASK_GROUP: "worker",
        labels.ANN_MEMBER_INDEX: "5",
        labels.ANN_APP_NAME: "llm-finetune",
    }
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "gangsched.io/v1alpha1",
            "kind": "Application",
            "name": "llm-finetune",
            "uid": "5e6f7a8b-1111-4222-8333-944445555666",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    (container,) = spec["containers"]
    amounts = {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "1"}
    assert container["name"] == "pause"
    assert container["image"] == "registry.k8s.io/pause:3.10"
    assert container["resources"] == {"requests": amounts, "limits": amounts}
    assert container["resources"]["requests"] is not container["resources"]["limits"]
    assert container["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65535,
        "runAsGroup": 65535,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert spec["schedulerName"] == "gangsched"
    assert spec["restartPolicy"] == "Never"
    assert spec["terminationGracePeriodSeconds"] == 5  # never 0: devices freed first
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert spec["priorityClassName"] == "batch-high"
    worker = app_obj["spec"]["taskGroups"][1]
    for key in ("nodeSelector", "tolerations", "affinity", "topologySpreadConstraints"):
        assert spec[key] == worker[key]
        assert spec[key] is not worker[key]
    assert "podAffinity" in spec["affinity"]


def test_placeholder_round_trips_through_pod_from_k8s() -> None:
    app_obj = application()
    app = app_from_k8s(app_obj)
    d = create(app_obj, "worker", 2)
    obj = render.placeholder_pod(d, app_obj, scheduler_name="gangsched-a")
    obj["metadata"]["uid"] = "placeholder-uid"
    pod = pod_from_k8s(obj, scheduler_names=frozenset({"gangsched-a"}))
    worker = app.group("worker")
    assert worker is not None
    assert pod.invalid is None
    assert pod.ours
    assert pod.placeholder
    assert pod.app == AppKey("ml/llm-finetune")
    assert pod.task_group == "worker"
    assert pod.member_index == 2
    assert pod.pod_group is None
    assert pod.requests == d.requests == worker.min_resource
    assert pod.node_selector == worker.node_selector
    assert pod.tolerations == worker.tolerations
    assert pod.affinity == worker.affinity


def test_placeholder_of_a_group_without_resources_or_constraints() -> None:
    app_obj = application()
    app_obj["spec"].pop("priorityClassName")
    app_obj["spec"]["taskGroups"][0] = {"name": "launcher", "minMember": 1}
    d = CreatePlaceholder(AppKey("ml/llm-finetune"), "launcher", 0, "p-0", "ml", Resources.ZERO)
    spec = render.placeholder_pod(d, app_obj, image="example.com/pause:1")["spec"]
    assert "resources" not in spec["containers"][0]
    assert spec["containers"][0]["image"] == "example.com/pause:1"
    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName"):
        assert key not in spec


def test_placeholder_of_a_group_that_left_the_spec_keeps_our_names() -> None:
    app_obj = application()
    d = CreatePlaceholder(AppKey("ml/llm-finetune"), "gone", 1, "p-1", "ml", Resources({"cpu": 1}))
    pod = render.placeholder_pod(d, app_obj)
    assert pod["metadata"]["labels"][labels.LABEL_PLACEHOLDER] == "true"
    assert pod["metadata"]["annotations"][labels.ANN_TASK_GROUP] == "gone"
    assert "nodeSelector" not in pod["spec"]


def test_our_labels_win_over_the_task_group_labels() -> None:
    app_obj = application()
    app_obj["spec"]["taskGroups"][1]["labels"] = {labels.LABEL_PLACEHOLDER: "false"}
    d = create(app_obj, "worker", 0)
    pod = render.placeholder_pod(d, app_obj)
    assert pod["metadata"]["labels"][labels.LABEL_PLACEHOLDER] == "true"


@pytest.mark.parametrize(
    "app_name",
    [
        pytest.param("llm-finetune", id="short"),
        pytest.param("a" * 63, id="63"),
        pytest.param("spark-" + "x" * 200 + ".prod.example", id="long-dotted"),
    ],
)
def test_placeholder_names_follow_kubernetes_rules(app_name: str) -> None:
    app_obj = application()
    app_obj["metadata"]["name"] = app_name
    d = create(app_obj, "worker", 9999)
    pod = render.placeholder_pod(d, app_obj)
    meta = pod["metadata"]
    assert is_dns_label(meta["name"])
    for key, value in meta["labels"].items():
        assert is_qualified_name(key)
        assert is_label_value(value), value
    for key in meta["annotations"]:
        assert is_qualified_name(key)
    assert meta["annotations"][labels.ANN_APP_NAME] == app_name
    pod_obj = {**pod, "metadata": {**meta, "uid": "u"}}
    assert pod_from_k8s(pod_obj).app == f"ml/{app_name}"


def test_pod_scheduled_condition() -> None:
    d = PodPending(PodUID("u"), "ns", "p", "QueueQuota", "queue research has cpu=2 free")
    assert render.pod_scheduled_condition(d, now=NOW) == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "QueueQuota: queue research has cpu=2 free",
        "lastProbeTime": None,
        "lastTransitionTime": "2024-05-02T07:31:40Z",
    }


def event(
    kind: str = "Application",
    namespace: str = "ml",
    name: str = "llm-finetune",
    reason: str = "PlaceholderTimeout",
    message: str = "gang not complete after 120s",
    type_: EventType = EventType.WARNING,
) -> RecordEvent:
    return RecordEvent(ObjectRef(kind, namespace, name, "uid-1"), type_, reason, message)


def test_event_body() -> None:
    d = event()
    body = render.event_body(d, now=NOW, instance="gangsched-7d9f-abcde")
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": render.event_name(d), "namespace": "ml"},
        "eventTime": "2024-05-02T07:31:40.500000Z",
        "reportingController": "gangsched.io/scheduler",
        "reportingInstance": "gangsched-7d9f-abcde",
        "action": "PlaceholderTimeout",
        "reason": "PlaceholderTimeout",
        "type": "Warning",
        "note": "gang not complete after 120s",
        "regarding": {
            "apiVersion": "gangsched.io/v1alpha1",
            "kind": "Application",
            "namespace": "ml",
            "name": "llm-finetune",
            "uid": "uid-1",
        },
    }
    assert render.event_name(d).startswith("llm-finetune.")
    assert is_qualified_name(body["reportingController"])


@pytest.mark.parametrize(
    ("kind", "api_version"), [("Node", "v1"), ("Queue", "gangsched.io/v1alpha1")]
)
def test_events_about_cluster_scoped_objects_go_to_default(kind: str, api_version: str) -> None:
    body = render.event_body(event(kind=kind, namespace="", name="research"), now=NOW)
    assert body["metadata"]["namespace"] == "default"
    assert "namespace" not in body["regarding"]
    assert body["regarding"]["apiVersion"] == api_version
    assert body["reportingInstance"] == "gangsched"


def test_event_name_is_deterministic_and_tells_events_apart() -> None:
    assert render.event_name(event()) == render.event_name(event())
    names = {
        render.event_name(event()),
        render.event_name(event(message="gang not complete after 121s")),
        render.event_name(event(reason="Other")),
        render.event_name(event(kind="Pod")),
        render.event_name(event(type_=EventType.NORMAL)),
    }
    assert len(names) == 5


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a" * 253, id="longest-name"),
        pytest.param("spark." + "b" * 240 + ".-x", id="dots-near-the-cut"),
        pytest.param("Weird_Name..x", id="invalid-characters"),
        pytest.param("", id="empty"),
    ],
)
def test_event_names_are_valid_object_names(name: str) -> None:
    d = event(name=name)
    assert is_dns_subdomain(render.event_name(d)), render.event_name(d)


def test_event_note_reason_and_instance_fit_the_limits() -> None:
    d = event(reason="R" * 200, message="é" * 1000)
    body = render.event_body(d, now=NOW, instance="i" * 300)
    assert len(body["note"].encode()) <= 1024
    assert body["note"].endswith("...")
    assert body["note"].startswith("é" * 500)
    assert len(body["reason"]) == len(body["action"]) == 128
    assert len(body["reportingInstance"]) == 128
    assert render.event_body(event(reason=""), now=NOW)["reason"] == "Unknown"


resource_vectors = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi"]),
    st.integers(min_value=1, max_value=2**50),
).map(Resources)


@given(resource_vectors)
def test_placeholder_requests_survive_the_round_trip(requests: Resources) -> None:
    d = CreatePlaceholder(AppKey("ml/llm-finetune"), "worker", 0, "p-0", "ml", requests)
    obj = render.placeholder_pod(d, application())
    assert pod_from_k8s(obj).requests == requests
