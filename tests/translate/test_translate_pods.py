from typing import Any

import pytest
from gangsched.core.values.constraints import (
    NodeAffinity,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from gangsched.core.values.model import AppKey, GroupKey, PodPhase, PodUID
from gangsched.core.values.naming import label_value
from gangsched.core.values.resources import Resources
from gangsched.translate import k8s_placement, labels
from gangsched.translate.pods import app_manifest_from_pod, pod_from_k8s
from k8s_objects import argo_pod, is_dns_subdomain, make_pod, spark_driver
from manifests_tests.test_crds import validation_errors

Mi = 2**20
Gi = 2**30


def test_spark_driver_pod() -> None:
    pod = pod_from_k8s(spark_driver())
    assert pod.uid == PodUID("0b9f3c2e-6a47-4d43-9a51-6d2f1f1f8e01")
    assert (pod.namespace, pod.name) == ("spark-jobs", "spark-pi-7c1e0a8f-driver")
    assert pod.requests == Resources({"cpu": 1000, "memory": 1408 * Mi})
    assert pod.priority == 1000
    assert pod.creation == 1714564800.0
    assert pod.node_name is None
    assert pod.phase is PodPhase.PENDING
    assert not pod.terminating
    assert pod.ours
    assert pod.node_selector == {"kubernetes.io/os": "linux"}
    assert [t.key for t in pod.tolerations] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert pod.affinity == NodeAffinity(None)
    assert pod.app == AppKey("spark-jobs/spark-pi-7c1e0a8f")
    assert pod.task_group == "spark-driver"
    assert pod.pod_group is None
    assert not pod.placeholder
    assert pod.member_index == -1
    assert pod.queue == "research"
    assert pod.preemptible
    assert pod.invalid is None


def test_argo_pod_with_sidecar_overhead_and_limits_only_container() -> None:
    pod = pod_from_k8s(argo_pod())
    # wait 10m + main 4 (limits stand in for requests) + sidecar 100m, then overhead 250m;
    # the init container (10m, before the sidecar starts) never peaks above that.
    assert pod.requests == Resources(
        {
            "cpu": 10 + 4000 + 100 + 250,
            "memory": 64 * Mi + 16 * Gi + 128 * Mi + 120 * Mi,
            "nvidia.com/gpu": 1,
        }
    )
    assert pod.node_name == "gpu-node-3"
    assert pod.phase is PodPhase.RUNNING
    assert pod.pod_group == GroupKey("argo/gang-train")
    assert pod.app is None
    assert not pod.preemptible
    assert pod.tolerations == (
        Toleration("nvidia.com/gpu", TolerationOperator.EXISTS, "", TaintEffect.NO_SCHEDULE),
    )
    assert pod.affinity.required_terms is not None
    assert pod.invalid is None


def container(
    requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "image": "busybox", "resources": resources, **extra}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({"containers": []}, {}, id="no-containers"),
        pytest.param({"containers": [{"name": "c"}]}, {}, id="no-resources"),
        pytest.param(
            {
                "containers": [
                    container({"cpu": "500m"}),
                    container({"cpu": "1.5", "memory": "1Gi"}),
                ]
            },
            {"cpu": 2000, "memory": Gi},
            id="containers-add-up",
        ),
        pytest.param(
            {"containers": [container(None, {"cpu": "2", "memory": "1Gi"})]},
            {"cpu": 2000, "memory": Gi},
            id="limits-default-requests",
        ),
        pytest.param(
            {"containers": [container({"cpu": "0"}, {"cpu": "2", "memory": "1Gi"})]},
            {"memory": Gi},
            id="explicit-zero-request-is-kept",
        ),
        pytest.param(
            {"containers": [container({"cpu": "1"})], "initContainers": [container({"cpu": "3"})]},
            {"cpu": 3000},
            id="init-container-peak",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1"})],
                "initContainers": [
                    container({"cpu": "1"}, restartPolicy="Always"),
                    container({"cpu": "2"}),
                ],
            },
            {"cpu": 3000},
            id="sidecar-runs-next-to-later-init-containers",
        ),
        pytest.param(
            {
                "containers": [
                    container({"cpu": "1", "memory": "1Gi"}),
                    container({"cpu": "1", "memory": "1Gi"}),
                ],
                "resources": {"requests": {"cpu": "1500m"}, "limits": {"memory": "1Gi"}},
                "overhead": {"cpu": "100m"},
            },
            {"cpu": 1600, "memory": Gi},
            id="pod-level-resources-replace-the-sum",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "1", "ephemeral-storage": "1Gi"})],
                "resources": {"requests": {"ephemeral-storage": "5Gi"}},
            },
            {"cpu": 1000, "ephemeral-storage": Gi},
            id="pod-level-ignores-unsupported-resources",
        ),
    ],
)
def test_effective_requests(spec: dict[str, Any], expected: dict[str, int]) -> None:
    pod = pod_from_k8s(make_pod(**spec))
    assert pod.invalid is None
    assert pod.requests == Resources(expected)


@pytest.mark.parametrize(
    ("spec", "names", "ours"),
    [
        pytest.param({"schedulerName": "gangsched"}, frozenset({"gangsched"}), True, id="ours"),
        pytest.param(
            {"schedulerName": "volcano"}, frozenset({"gangsched"}), False, id="another-scheduler"
        ),
        pytest.param(
            {"schedulerName": None}, frozenset({"gangsched"}), False, id="default-scheduler"
        ),
        pytest.param(
            {"schedulerName": None},
            frozenset({"gangsched", "default-scheduler"}),
            True,
            id="taking-over-the-default",
        ),
    ],
)
def test_ours_follows_the_scheduler_name(
    spec: dict[str, Any], names: frozenset[str], ours: bool
) -> None:
    obj = make_pod()
    obj["spec"].update(spec)
    if spec.get("schedulerName") is None:
        del obj["spec"]["schedulerName"]
    assert pod_from_k8s(obj, scheduler_names=names).ours is ours


def test_defaults_of_a_bare_pod() -> None:
    pod = pod_from_k8s({"metadata": {"name": "p", "namespace": "n", "uid": "u"}})
    assert pod.requests == Resources.ZERO
    assert (pod.priority, pod.creation, pod.phase, pod.ours) == (0, 0.0, PodPhase.PENDING, False)
    assert pod.invalid is None


def test_terminating_and_unknown_phase() -> None:
    obj = make_pod()
    obj["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z"
    obj["status"]["phase"] = "Evicted"
    pod = pod_from_k8s(obj)
    assert pod.terminating
    assert pod.phase is PodPhase.UNKNOWN


@pytest.mark.parametrize(
    ("pod_labels", "annotations", "app", "pod_group", "placeholder", "index", "queue"),
    [
        pytest.param({labels.LABEL_APP: "job"}, {}, "ns/job", None, False, -1, None, id="app"),
        pytest.param(
            {labels.LABEL_POD_GROUP: "pg"}, {}, None, "ns/pg", False, -1, None, id="pod-group"
        ),
        pytest.param(
            {labels.LABEL_APP: "job", labels.LABEL_PLACEHOLDER: "true"},
            {labels.ANN_MEMBER_INDEX: "3", labels.ANN_TASK_GROUP: "w"},
            "ns/job",
            None,
            True,
            3,
            None,
            id="placeholder",
        ),
        pytest.param(
            {labels.LABEL_PLACEHOLDER: "True"},
            {},
            None,
            None,
            False,
            -1,
            None,
            id="placeholder-label-must-be-exactly-true",
        ),
        pytest.param(
            {labels.LABEL_QUEUE: "from-label"},
            {labels.ANN_QUEUE: "from-annotation"},
            None,
            None,
            False,
            -1,
            "from-label",
            id="queue-label-wins",
        ),
        pytest.param(
            {},
            {labels.ANN_QUEUE: "from-annotation"},
            None,
            None,
            False,
            -1,
            "from-annotation",
            id="queue-annotation",
        ),
        pytest.param({labels.LABEL_APP: ""}, {}, None, None, False, -1, None, id="empty-app"),
    ],
)
def test_membership(
    pod_labels: dict[str, str],
    annotations: dict[str, str],
    app: str | None,
    pod_group: str | None,
    placeholder: bool,
    index: int,
    queue: str | None,
) -> None:
    pod = pod_from_k8s(make_pod(namespace="ns", labels=pod_labels, annotations=annotations))
    assert pod.invalid is None
    assert pod.app == app
    assert pod.pod_group == pod_group
    assert pod.placeholder is placeholder
    assert pod.member_index == index
    assert pod.queue == queue


def test_full_app_name_from_the_annotation_when_the_label_was_shortened() -> None:
    full = "x" * 70
    obj = make_pod(
        namespace="ns",
        labels={labels.LABEL_APP: label_value(full)},
        annotations={labels.ANN_APP_NAME: full},
    )
    pod = pod_from_k8s(obj)
    assert pod.app == f"ns/{full}"
    assert pod.invalid is None


BAD = {"name": "c", "resources": {"requests": {"cpu": "12Qi"}}}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(
            {"spec.containers": [BAD]},
            'spec.containers[0].resources.requests.cpu: invalid quantity "12Qi": '
            'unknown suffix "Qi"',
            id="bad-request",
        ),
        pytest.param(
            {"spec.containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "-1"}}}]},
            'spec.containers[0].resources.limits[nvidia.com/gpu]: invalid quantity "-1": '
            "must not be negative",
            id="negative-limit",
        ),
        pytest.param(
            {"spec.initContainers": [{"name": "i"}, BAD]},
            'spec.initContainers[1].resources.requests.cpu: invalid quantity "12Qi": '
            'unknown suffix "Qi"',
            id="bad-init-container",
        ),
        pytest.param(
            {"spec.overhead": {"memory": "1 Gi"}},
            'spec.overhead.memory: invalid quantity "1 Gi": must not contain whitespace',
            id="bad-overhead",
        ),
        pytest.param(
            {"spec.containers": [{"name": "c", "resources": []}]},
            "spec.containers[0].resources: expected an object, got list",
            id="resources-not-object",
        ),
        pytest.param(
            {"spec.containers": {"name": "c"}},
            "spec.containers: expected a list, got object",
            id="containers-not-list",
        ),
        pytest.param(
            {"spec.priority": "high"},
            'spec.priority: expected an integer, got string "high"',
            id="priority",
        ),
        pytest.param(
            {"spec.tolerations": [{"key": "k", "operator": "Equals"}]},
            'spec.tolerations[0].operator: unknown operator "Equals" (accepted: Exists, Equal)',
            id="toleration",
        ),
        pytest.param(
            {
                "spec.affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "cores", "operator": "Gt", "values": ["x"]}
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            '.nodeSelectorTerms[0].matchExpressions[0].values[0]: "x" is not an integer '
            "(required when operator is Gt)",
            id="affinity",
        ),
        pytest.param(
            {"spec.nodeSelector": ["zone"]},
            "spec.nodeSelector: expected an object, got list",
            id="node-selector",
        ),
        pytest.param(
            {"metadata.labels": {labels.LABEL_APP: "job", labels.LABEL_POD_GROUP: "pg"}},
            f'conflicting gang membership: label {labels.LABEL_APP} names Application "job" '
            f'and label {labels.LABEL_POD_GROUP} names PodGroup "pg"; a pod can be a member '
            "of one gang only",
            id="app-and-pod-group",
        ),
        pytest.param(
            {
                "metadata.labels": {labels.LABEL_APP: "short"},
                "metadata.annotations": {labels.ANN_APP_NAME: "other"},
            },
            f'metadata.annotations[{labels.ANN_APP_NAME}]: "other" does not match label '
            f'{labels.LABEL_APP} "short" (expected "other")',
            id="app-name-mismatch",
        ),
        pytest.param(
            {"metadata.annotations": {labels.ANN_MEMBER_INDEX: "-1"}},
            f"metadata.annotations[{labels.ANN_MEMBER_INDEX}]: expected a non-negative integer, "
            'got "-1"',
            id="member-index",
        ),
        pytest.param(
            {"metadata.annotations": {labels.ANN_PREEMPTIBLE: "no"}},
            f'metadata.annotations[{labels.ANN_PREEMPTIBLE}]: expected "true" or "false", got "no"',
            id="preemptible",
        ),
        pytest.param(
            {"spec.preemptionPolicy": "Sometimes"},
            'spec.preemptionPolicy: unknown value "Sometimes" (accepted: PreemptLowerPriority, '
            "Never)",
            id="preemption-policy",
        ),
        pytest.param(
            {"spec.priority": 1.5, "spec.overhead": {"cpu": "x1"}},
            'spec.overhead.cpu: invalid quantity "x1": expected a number, with an optional '
            "sign, at the start; spec.priority: expected an integer, got number 1.5",
            id="every-problem-is-reported",
        ),
    ],
)
def test_errors(edit: dict[str, Any], message: str) -> None:
    obj = make_pod()
    for dotted, value in edit.items():
        section, key = dotted.split(".")
        obj[section][key] = value
    pod = pod_from_k8s(obj)
    assert pod.invalid == message
    assert (pod.namespace, pod.name, pod.uid) == ("default", "p", "uid-p")


def test_an_invalid_pod_has_no_requests_but_keeps_everything_else() -> None:
    obj = spark_driver()
    obj["spec"]["containers"][0]["resources"]["requests"]["memory"] = "1.4Gb"
    pod = pod_from_k8s(obj)
    assert pod.invalid is not None
    assert pod.invalid.startswith("spec.containers[0].resources.requests.memory:")
    assert pod.requests == Resources.ZERO
    assert pod.app == "spark-jobs/spark-pi-7c1e0a8f"
    assert pod.priority == 1000


# The pods-first flow.


def test_spark_driver_asks_for_its_application() -> None:
    manifest, error = app_manifest_from_pod(spark_driver())
    assert error is None
    assert manifest is not None
    assert manifest["apiVersion"] == "gangsched.io/v1alpha1"
    assert manifest["kind"] == "Application"
    assert manifest["metadata"] == {
        "name": "spark-pi-7c1e0a8f",
        "namespace": "spark-jobs",
        "labels": {"app.kubernetes.io/managed-by": "gangsched"},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": "spark-pi-7c1e0a8f-driver",
                "uid": "0b9f3c2e-6a47-4d43-9a51-6d2f1f1f8e01",
                "controller": False,
                "blockOwnerDeletion": False,
            }
        ],
    }
    spec = manifest["spec"]
    assert spec["queue"] == "research"
    assert spec["priorityClassName"] == "batch-high"
    assert spec["schedulingPolicy"] == {"placeholderTimeoutSeconds": 60, "style": "Hard"}
    assert [g["name"] for g in spec["taskGroups"]] == ["spark-driver", "spark-executor"]
    executor = spec["taskGroups"][1]
    assert executor["minMember"] == 4
    assert executor["minResource"] == {"cpu": "2", "memory": "4Gi"}
    assert executor["labels"] == {"spark-role": "executor"}
    assert "podAntiAffinity" in executor["affinity"]
    assert validation_errors(manifest) == []


def test_manifest_defaults() -> None:
    obj = make_pod(
        "driver",
        "ns",
        labels={labels.LABEL_APP: "job"},
        annotations={labels.ANN_TASK_GROUPS: '[{"name": "a", "minMember": 2}]'},
    )
    manifest, error = app_manifest_from_pod(obj)
    assert error is None
    assert manifest is not None
    assert manifest["spec"] == {
        "queue": "default",
        "taskGroups": [{"name": "a", "minMember": 2}],
    }
    assert validation_errors(manifest) == []


@pytest.mark.parametrize(
    ("pod_labels", "annotations"),
    [
        pytest.param({}, {}, id="ordinary-pod"),
        pytest.param({labels.LABEL_APP: "job"}, {}, id="app-without-task-groups"),
        pytest.param({}, {labels.ANN_TASK_GROUPS: "[]"}, id="task-groups-without-app"),
    ],
)
def test_manifest_not_applicable(pod_labels: dict[str, str], annotations: dict[str, str]) -> None:
    obj = make_pod(labels=pod_labels, annotations=annotations)
    assert app_manifest_from_pod(obj) == (None, None)


TG = f"metadata.annotations[{labels.ANN_TASK_GROUPS}]"


@pytest.mark.parametrize(
    ("pod_labels", "annotations", "message"),
    [
        pytest.param(
            {labels.LABEL_APP: "job"},
            {labels.ANN_TASK_GROUPS: '[{"name": "a", "minMember": 1}'},
            f"{TG}: invalid JSON at line 1 column 31: Expecting ',' delimiter",
            id="invalid-json",
        ),
        pytest.param(
            {labels.LABEL_APP: "Job_1"},
            {labels.ANN_TASK_GROUPS: "[]"},
            f'metadata.labels[{labels.LABEL_APP}]: invalid Application name "Job_1": must '
            "consist of lower case alphanumerics, '-' and '.', start and end with an "
            "alphanumeric, and be at most 253 characters",
            id="app-name",
        ),
        pytest.param(
            {labels.LABEL_APP: "job"},
            {labels.ANN_TASK_GROUPS: "[]", labels.ANN_QUEUE: "Research"},
            f'metadata.annotations[{labels.ANN_QUEUE}]: invalid queue name "Research": must '
            "consist of lower case alphanumerics, '-' and '.', start and end with an "
            "alphanumeric, and be at most 253 characters",
            id="queue-name",
        ),
        pytest.param(
            {labels.LABEL_APP: "job"},
            {
                labels.ANN_TASK_GROUPS: '[{"name": "a"}]',
                labels.ANN_SCHEDULING_POLICY: "gangSchedulingStyle=Strict",
            },
            f"{TG}[0].minMember: required; "
            f"metadata.annotations[{labels.ANN_SCHEDULING_POLICY}].gangSchedulingStyle: "
            'unknown style "Strict" (accepted: Hard, Soft)',
            id="every-problem",
        ),
    ],
)
def test_manifest_errors(
    pod_labels: dict[str, str], annotations: dict[str, str], message: str
) -> None:
    obj = make_pod(labels=pod_labels, annotations=annotations)
    assert app_manifest_from_pod(obj) == (None, message)


def test_manifest_name_is_a_valid_object_name_with_a_full_name_annotation() -> None:
    full = "spark-" + "a" * 80
    obj = make_pod(
        labels={labels.LABEL_APP: label_value(full)},
        annotations={labels.ANN_APP_NAME: full, labels.ANN_TASK_GROUPS: "[]"},
    )
    manifest, error = app_manifest_from_pod(obj)
    assert error is None
    assert manifest is not None
    assert manifest["metadata"]["name"] == full
    assert is_dns_subdomain(full)


def _owner(api_version: object, kind: object, controller: object = True) -> dict[str, object]:
    return {"apiVersion": api_version, "kind": kind, "name": "o", "uid": "u",
            "controller": controller}


@pytest.mark.parametrize(("owners", "expected"), [
    pytest.param([_owner("apps/v1", "ReplicaSet")], True, id="replicaset"),
    pytest.param([_owner("apps/v1", "StatefulSet")], True, id="statefulset"),
    pytest.param([_owner("v1", "ReplicationController")], True, id="replicationcontroller"),
    pytest.param([_owner("batch/v1", "Job")], False, id="job"),
    pytest.param([_owner("apps/v1", "ReplicaSet", controller=False)], False,
                 id="owner-not-controller"),
    pytest.param([_owner("batch/v1", "Job", controller=False), _owner("apps/v1", "ReplicaSet")],
                 True, id="the-controller-among-owners"),
    pytest.param(None, False, id="bare-pod"),
    pytest.param([_owner(["apps/v1"], "ReplicaSet")], False, id="garbage-api-version"),
    pytest.param("garbage", False, id="garbage-owners"),
])
def test_default_spread_for_pods_of_replicasets_and_statefulsets(owners: object,
                                                                 expected: bool) -> None:
    """kube-scheduler's default spread constraints select with the selector of a
    ReplicaSet, ReplicationController or StatefulSet controlling the pod."""
    meta: dict[str, object] = {} if owners is None else {"ownerReferences": owners}
    assert k8s_placement.spread_by_default(meta) is expected


@pytest.mark.parametrize(("policy", "preempts"), [
    pytest.param(None, True, id="unset"),
    pytest.param("PreemptLowerPriority", True, id="PreemptLowerPriority"),
    pytest.param("Never", False, id="Never"),
])
def test_preemption_policy(policy: str | None, preempts: bool) -> None:
    obj = make_pod()
    if policy is not None:
        obj["spec"]["preemptionPolicy"] = policy
    pod = pod_from_k8s(obj)
    assert pod.invalid is None
    assert pod.preempts is preempts
