"""Sample Application, PodGroup and Queue objects for the CRD tests: builders and tables.

``VALID_SAMPLES`` must be accepted as they are; each entry of ``INVALID_CASES`` is a valid
sample with one thing broken, and the field path the API server would complain about.
"""

from __future__ import annotations

import copy
from typing import Any

DELETE = object()
NAMESPACED = {"Application", "PodGroup"}
TIME = "2026-01-02T03:04:05Z"


def sample(
    kind: str,
    *,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
    name: str = "sample",
) -> dict[str, Any]:
    """A ``kind`` object; ``spec`` and ``status`` are left out when None."""
    metadata: dict[str, Any] = {"name": name}
    if kind in NAMESPACED:
        metadata["namespace"] = "team-a"
    obj: dict[str, Any] = {
        "apiVersion": "gangsched.io/v1alpha1", "kind": kind, "metadata": metadata,
    }
    if spec is not None:
        obj["spec"] = copy.deepcopy(spec)
    if status is not None:
        obj["status"] = copy.deepcopy(status)
    return obj


def changed(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with the dotted ``path`` (list indexes as numbers) set or DELETEd."""
    out = copy.deepcopy(obj)
    *parents, last = path.split(".")
    target: Any = out
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    key: Any = int(last) if isinstance(target, list) else last
    if value is DELETE:
        del target[key]
    else:
        target[key] = value
    return out


def blocking(reason: str) -> dict[str, Any]:
    return {
        "reason": reason,
        "message": "needs cpu 8, queue research has 6 of 32 free",
        "details": {"requested": "cpu=8", "free": "cpu=6"},
    }


def condition(type_: str, status: str = "True") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "observedGeneration": 2,
        "lastTransitionTime": TIME,
        "reason": "AllMembersPlaced",
        "message": "",
    }


APPLICATION = sample(
    "Application",
    spec={
        "queue": "research",
        "priorityClassName": "batch-high",
        "schedulingPolicy": {
            "style": "Hard", "placeholderTimeoutSeconds": 600, "waitingTimeoutSeconds": 0,
        },
        "taskGroups": [
            {"name": "driver", "minMember": 1, "minResource": {"cpu": "500m", "memory": "1Gi"}},
            {
                "name": "workers",
                "minMember": 8,
                "minResource": {
                    "cpu": 4, "memory": "15.5Gi", "nvidia.com/gpu": 1,
                    "ephemeral-storage": "2e9", "hugepages-2Mi": "+.5Ki",
                },
                "nodeSelector": {"node.kubernetes.io/instance-type": "gpu-large"},
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {
                        "key": "spot", "operator": "Equal", "value": "true",
                        "effect": "NoExecute", "tolerationSeconds": 300,
                    },
                ],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "zone", "operator": "In", "values": ["a", "b"]},
                                        {"key": "gpus", "operator": "Gt", "values": ["3"]},
                                    ],
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "NotIn",
                                         "values": ["node-9"]},
                                    ],
                                }
                            ]
                        },
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 100,
                                "preference": {
                                    "matchExpressions": [{"key": "ssd", "operator": "Exists"}]
                                },
                            }
                        ],
                    },
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 50, "podAffinityTerm": {"topologyKey": "zone"}}
                        ]
                    },
                },
                "topologySpreadConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ],
                "topology": {
                    "required": "topology.gangsched.io/block",
                    "preferred": ["topology.gangsched.io/rack"],
                    "sliceKey": "kubernetes.io/hostname",
                    "sliceSize": 4,
                },
                "labels": {"team": "ml"},
                "annotations": {"example.com/owner": "ml-platform"},
            },
        ],
    },
    status={
        "state": "Starting",
        "reason": "ReservingGang",
        "message": "7 of 9 placeholders allocated",
        "observedGeneration": 2,
        "queue": "research",
        "reserved": "7/9",
        "running": 1,
        "taskGroups": [
            {
                "name": "driver", "minMember": 1,
                "placeholders": {
                    "created": 1, "pending": 0, "allocated": 0, "replaced": 1, "released": 0,
                },
                "realPodsBound": 1, "realPodsPending": 0,
                "blockingReason": {"reason": "None"},
            },
            {
                "name": "workers", "minMember": 8,
                "placeholders": {
                    "created": 8, "pending": 2, "allocated": 6, "replaced": 0, "released": 0,
                },
                "realPodsBound": 0, "realPodsPending": 8,
                "blockingReason": blocking("Capacity"),
            },
        ],
        "placeholderTimerStart": TIME,
        "stateSince": TIME,
        "startingSince": TIME,
        "reservationExpiry": "2026-01-02T03:14:05Z",
        "conditions": [condition("GangReserved", "False"), condition("Schedulable")],
    },
)

PODGROUP = sample(
    "PodGroup",
    spec={
        "minMember": 4,
        "totalNumber": 6,
        "minResources": {"cpu": 16, "memory": "64Gi"},
        "scheduleTimeoutSeconds": 120,
        "mode": "NonStrict",
        "gangGroup": ["team-a/sample", "team-b/ps.v2"],
        "queue": "research",
        "priorityClassName": "batch-high",
        "topology": {"required": "rack", "sliceKey": "kubernetes.io/hostname", "sliceSize": 2},
    },
    status={
        "phase": "Scheduling",
        "reason": "WaitingForMembers",
        "message": "3 of 4 members assumed",
        "observedGeneration": 1,
        "members": 4, "assumed": 3, "scheduled": 0, "running": 0, "succeeded": 0, "failed": 0,
        "scheduleStartTime": TIME,
        "blockingReason": blocking("WaitingForGang"),
        "conditions": [condition("Scheduled", "False")],
    },
)

QUEUE = sample(
    "Queue",
    name="research",
    spec={
        "parent": "root",
        "max": {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8},
        "guaranteed": {"cpu": "16", "memory": "64Gi"},
        "maxApplications": 10,
        "sortPolicy": "stateaware",
        "stateAwareTimeoutSeconds": 120,
        "weight": 3,
        "reclaimable": False,
    },
    status={
        "allocated": {"cpu": "4", "memory": "8Gi"},
        "pending": {"cpu": "32"},
        "reservedByPlaceholders": {"cpu": "2"},
        "max": {"cpu": "64", "memory": "256Gi"},
        "guaranteed": {"cpu": "16"},
        "applications": {"Running": 2, "Accepted": 1},
        "usage": "cpu 4/64, memory 8Gi/256Gi",
        "message": "",
        "conditions": [condition("Valid")],
    },
)

VALID_SAMPLES: dict[str, dict[str, Any]] = {
    "application-full": APPLICATION,
    "application-without-spec": sample("Application"),
    "application-without-task-groups": sample("Application", spec={"queue": "batch.nightly"}),
    "application-just-created": changed(APPLICATION, "status", DELETE),
    "podgroup-full": PODGROUP,
    "podgroup-minimal": sample("PodGroup", spec={"minMember": 1}),
    "podgroup-total-equals-min": changed(PODGROUP, "spec.totalNumber", 4),
    "podgroup-preferred-only": changed(
        PODGROUP, "spec.topology", {"preferred": ["rack", "topology.gangsched.io/block"]}
    ),
    "podgroup-empty-topology": changed(PODGROUP, "spec.topology", {}),
    "queue-full": QUEUE,
    "queue-top-level": sample("Queue", spec={"parent": "", "max": {"cpu": "500m"}}),
    "queue-without-spec": sample("Queue"),
}

WORKERS = "spec.taskGroups.1"
INVALID_CASES: dict[str, tuple[dict[str, Any], str]] = {
    # Application spec.
    "app-min-member-zero": (changed(APPLICATION, f"{WORKERS}.minMember", 0), "minMember"),
    "app-min-member-too-large": (
        changed(APPLICATION, f"{WORKERS}.minMember", 10001), "minMember"
    ),
    "app-min-member-missing": (
        changed(APPLICATION, f"{WORKERS}.minMember", DELETE), "minMember"
    ),
    "app-min-member-string": (changed(APPLICATION, f"{WORKERS}.minMember", "8"), "minMember"),
    "app-task-group-name-not-dns": (changed(APPLICATION, f"{WORKERS}.name", "Workers_1"), "name"),
    "app-task-group-names-repeat": (
        changed(APPLICATION, f"{WORKERS}.name", "driver"), "duplicate key"
    ),
    "app-too-many-task-groups": (
        changed(
            APPLICATION,
            "spec.taskGroups",
            [{"name": f"g{i}", "minMember": 1} for i in range(33)],
        ),
        "taskGroups",
    ),
    "app-unknown-style": (changed(APPLICATION, "spec.schedulingPolicy.style", "Medium"), "style"),
    "app-placeholder-timeout-zero": (
        changed(APPLICATION, "spec.schedulingPolicy.placeholderTimeoutSeconds", 0),
        "placeholderTimeoutSeconds",
    ),
    "app-waiting-timeout-negative": (
        changed(APPLICATION, "spec.schedulingPolicy.waitingTimeoutSeconds", -1),
        "waitingTimeoutSeconds",
    ),
    "app-quantity-bad-suffix": (
        changed(APPLICATION, f"{WORKERS}.minResource.memory", "12Qi"), "memory"
    ),
    "app-quantity-float": (changed(APPLICATION, f"{WORKERS}.minResource.cpu", 1.5), "cpu"),
    "app-queue-uppercase": (changed(APPLICATION, "spec.queue", "Research"), "queue"),
    "app-queue-empty": (changed(APPLICATION, "spec.queue", ""), "queue"),
    "app-toleration-bad-operator": (
        changed(APPLICATION, f"{WORKERS}.tolerations.0.operator", "Like"), "operator"
    ),
    "app-toleration-bad-effect": (
        changed(APPLICATION, f"{WORKERS}.tolerations.0.effect", "NoRun"), "effect"
    ),
    "app-node-affinity-bad-operator": (
        changed(
            APPLICATION,
            f"{WORKERS}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms.0.matchExpressions.0.operator",
            "Near",
        ),
        "operator",
    ),
    "app-preferred-weight-too-large": (
        changed(
            APPLICATION,
            f"{WORKERS}.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
            ".0.weight",
            101,
        ),
        "weight",
    ),
    "app-node-selector-not-a-string": (
        changed(APPLICATION, f"{WORKERS}.nodeSelector.gpus", 4), "gpus"
    ),
    "app-unknown-spec-field": (changed(APPLICATION, "spec.minMember", 3), "minMember"),
    "app-typo-in-task-group": (
        changed(APPLICATION, f"{WORKERS}.minResources", {}), "minResources"
    ),
    # Application status.
    "app-unknown-state": (changed(APPLICATION, "status.state", "Exploded"), "state"),
    "app-negative-counter": (
        changed(APPLICATION, "status.taskGroups.1.placeholders.allocated", -1), "allocated"
    ),
    "app-unknown-blocking-reason": (
        changed(APPLICATION, "status.taskGroups.1.blockingReason.reason", "Bored"), "reason"
    ),
    "app-timestamp-not-rfc3339": (
        changed(APPLICATION, "status.placeholderTimerStart", "yesterday"), "placeholderTimerStart"
    ),
    "app-condition-status-maybe": (
        changed(APPLICATION, "status.conditions.0.status", "Maybe"), "status"
    ),
    "app-condition-without-reason": (
        changed(APPLICATION, "status.conditions.0.reason", DELETE), "conditions"
    ),
    "app-condition-reason-with-space": (
        changed(APPLICATION, "status.conditions.0.reason", "Not Ready"), "reason"
    ),
    "app-condition-types-repeat": (
        changed(APPLICATION, "status.conditions.1.type", "GangReserved"), "duplicate key"
    ),
    # PodGroup.
    "pg-min-member-zero": (changed(PODGROUP, "spec.minMember", 0), "minMember"),
    "pg-without-spec": (changed(PODGROUP, "spec", DELETE), "spec"),
    "pg-without-min-member": (changed(PODGROUP, "spec.minMember", DELETE), "spec"),
    "pg-unknown-mode": (changed(PODGROUP, "spec.mode", "Loose"), "mode"),
    "pg-timeout-zero": (
        changed(PODGROUP, "spec.scheduleTimeoutSeconds", 0), "scheduleTimeoutSeconds"
    ),
    "pg-gang-group-without-namespace": (changed(PODGROUP, "spec.gangGroup.0", "ps"), "gangGroup"),
    "pg-gang-group-uppercase": (changed(PODGROUP, "spec.gangGroup.0", "Team/ps"), "gangGroup"),
    "pg-gang-group-repeats": (
        changed(PODGROUP, "spec.gangGroup", ["team-a/ps", "team-a/ps"]), "gangGroup"
    ),
    "pg-total-below-min": (
        changed(PODGROUP, "spec.totalNumber", 3), "totalNumber must be at least minMember"
    ),
    "pg-quantity-bad-suffix": (changed(PODGROUP, "spec.minResources.cpu", "12Qi"), "cpu"),
    "pg-unknown-phase": (changed(PODGROUP, "status.phase", "Done"), "phase"),
    "pg-topology-key-with-space": (
        changed(PODGROUP, "spec.topology.required", "my rack"), "required"
    ),
    "pg-topology-key-empty": (changed(PODGROUP, "spec.topology.required", ""), "required"),
    "pg-topology-prefix-uppercase": (
        changed(PODGROUP, "spec.topology.required", "Example.com/rack"), "required"
    ),
    "pg-topology-preferred-repeats": (
        changed(PODGROUP, "spec.topology.preferred", ["rack", "rack"]), "preferred"
    ),
    "pg-topology-preferred-names-required": (
        changed(PODGROUP, "spec.topology.preferred", ["host", "rack"]),
        "preferred lists the levels below required",
    ),
    "pg-topology-slice-size-zero": (changed(PODGROUP, "spec.topology.sliceSize", 0), "sliceSize"),
    "pg-topology-slice-without-size": (
        changed(PODGROUP, "spec.topology.sliceSize", DELETE),
        "sliceKey and sliceSize must be given together",
    ),
    "pg-topology-size-without-slice": (
        changed(PODGROUP, "spec.topology.sliceKey", DELETE),
        "sliceKey and sliceSize must be given together",
    ),
    "pg-topology-unknown-field": (changed(PODGROUP, "spec.topology.mode", "hard"), "mode"),
    "app-topology-key-not-a-string": (
        changed(APPLICATION, f"{WORKERS}.topology.required", 3), "required"
    ),
    # Queue.
    "queue-unknown-sort-policy": (changed(QUEUE, "spec.sortPolicy", "lifo"), "sortPolicy"),
    "queue-sort-policy-wrong-case": (changed(QUEUE, "spec.sortPolicy", "FIFO"), "sortPolicy"),
    "queue-weight-zero": (changed(QUEUE, "spec.weight", 0), "weight"),
    "queue-max-applications-negative": (
        changed(QUEUE, "spec.maxApplications", -1), "maxApplications"
    ),
    "queue-state-aware-timeout-zero": (
        changed(QUEUE, "spec.stateAwareTimeoutSeconds", 0), "stateAwareTimeoutSeconds"
    ),
    "queue-max-bad-quantity": (changed(QUEUE, "spec.max.memory", "12Qi"), "memory"),
    "queue-reclaimable-string": (changed(QUEUE, "spec.reclaimable", "yes"), "reclaimable"),
    "queue-parent-not-dns": (changed(QUEUE, "spec.parent", "Root_Queue"), "parent"),
    "queue-status-count-negative": (
        changed(QUEUE, "status.applications.Running", -2), "Running"
    ),
}
