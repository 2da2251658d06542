"""The workload schema: what a good file builds, and where a bad one is wrong."""

from __future__ import annotations

import textwrap

import pytest
from gangsched.core.values.model import GangMode, SortPolicy, Style
from gangsched.core.values.resources import Resources
from gangsched.sim.parse import build
from gangsched.sim.source import WorkloadError, parse
from gangsched.sim.workload import EventKind, FailurePolicy, JobKind, Workload

NODES = """\
nodes:
  - {pool: worker, count: 3, cpu: 8, memory: 32Gi}
"""


def load(text: str) -> Workload:
    return build(parse(text, "workload.yaml"))


def errors(text: str) -> list[str]:
    with pytest.raises(WorkloadError) as caught:
        load(text)
    return [str(e) for e in caught.value.errors]


def test_a_full_workload_builds_core_models() -> None:
    workload = load(NODES + textwrap.dedent("""\
          - name: fast
            cpu: 16
            memory: 64Gi
            gpu: 2
            labels: {disk: ssd}
            taints: [{key: dedicated, value: ml, effect: NoSchedule}]
        queues:
          - {name: analytics, max: {cpu: 40, memory: 160Gi}, sortPolicy: fifo}
        applications:
          - name: spark
            replicas: 2
            intervalSeconds: 10
            submitAt: 5
            queue: analytics
            style: Hard
            placeholderTimeoutSeconds: 120
            taskGroups:
              - {name: driver, minMember: 1, minResource: {cpu: 1, memory: 2Gi}}
              - {name: executor, minMember: 4, minResource: {cpu: 2, memory: 4Gi}}
            pods:
              - {taskGroup: driver, duration: 600, cpu: 1, memory: 2Gi}
              - {taskGroup: executor, count: 3, after: driver, delay: 5, duration: 500,
                 cpu: 2, memory: 4Gi}
            driverTimeoutSeconds: 300
            maxRetries: 1
            onPodFailure: fail
        podGroups:
          - {name: mpi, submitAt: 10, minMember: 2, mode: NonStrict,
             scheduleTimeoutSeconds: 300, pods: [{count: 2, duration: 900, cpu: 4}]}
        pods:
          - {name: web, count: 3, duration: 60, cpu: 500m, memory: 1Gi}
        events:
          - {at: 100, podFails: spark-1/executor-2}
          - {at: 50, nodeDown: worker-2}
    """))
    assert [n.name for n in workload.nodes] == ["worker-0", "worker-1", "worker-2", "fast"]
    fast = workload.nodes[3]
    assert fast.allocatable == Resources.from_k8s(
        {"cpu": 16, "memory": "64Gi", "nvidia.com/gpu": 2, "pods": 110})
    assert fast.labels["disk"] == "ssd" and fast.taints[0].key == "dedicated"
    assert workload.queues[0].sort_policy is SortPolicy.FIFO
    assert [j.name for j in workload.jobs] == ["web", "spark-1", "mpi", "spark-2"]
    spark = workload.jobs[1]
    assert spark.kind is JobKind.APPLICATION and spark.submit_at == 5
    assert spark.app is not None and spark.app.policy.style is Style.HARD
    assert spark.app.queue == "analytics"
    # The gang is capped by the pods a group has: 3 executors for minMember 4.
    assert dict(spark.gang) == {"driver": 1, "executor": 3}
    assert spark.behaviour.on_pod_failure is FailurePolicy.FAIL
    assert spark.member_names() == {"driver-0", "executor-0", "executor-1", "executor-2"}
    mpi = workload.jobs[2]
    assert mpi.group is not None and mpi.group.mode is GangMode.NON_STRICT
    assert dict(mpi.gang) == {None: 2}
    assert [(e.at, e.kind) for e in workload.events] == [(50, EventKind.NODE_DOWN),
                                                         (100, EventKind.POD_FAILS)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("nodes: []\n", "workload.yaml:1:8: nodes: must be a non-empty list",
                     id="no-nodes"),
        pytest.param("nodes:\n  - {pool: a, cpu: 0, memory: 1Gi}\n",
                     "workload.yaml:2:20: nodes[0].cpu: must be more than 0", id="zero-cpu"),
        pytest.param("nodes:\n  - {pool: a, name: b, cpu: 1, memory: 1Gi}\n",
                     "workload.yaml:2:5: nodes[0]: give either pool (with count) or name",
                     id="pool-and-name"),
        pytest.param("nodes:\n  - {pool: a, cpu: 1, memory: 1Gb}\n",
                     "workload.yaml:2:31: nodes[0].memory: unknown suffix \"Gb\"",
                     id="bad-quantity"),
        pytest.param("nodes:\n  - {pool: a, cpu: 1, memory: 1Gi, colour: red}\n",
                     "workload.yaml:2:36: nodes[0].colour: unknown field (accepted: pool,",
                     id="unknown-field"),
        pytest.param(NODES + "  - {name: x, cpu: 1, memory: 1Gi, taints: [{key: k, "
                     "effect: Never}]}\n",
                     "workload.yaml:3:62: nodes[1].taints[0].effect: unknown effect \"Never\"",
                     id="bad-taint"),
        pytest.param(NODES + "applications:\n  - name: a\n    taskGroups:\n"
                     "      - {name: g, minMember: 0, minResource: {cpu: 1}}\n"
                     "    pods: [{taskGroup: g, duration: 1}]\n",
                     "workload.yaml:6:30: applications[0].taskGroups[0].minMember: must be "
                     "an integer ≥ 1, got 0", id="min-member"),
        pytest.param(NODES + "applications:\n  - name: a\n    pods: [{taskGroup: g, "
                     "duration: 1}]\n",
                     "applications[0].pods[0].taskGroup: no task group \"g\"",
                     id="unknown-task-group"),
        pytest.param(NODES + "applications:\n  - name: a\n    queue: nope\n"
                     "    pods: [{duration: 1}]\n",
                     "workload.yaml:5:12: applications[0].queue: no queue named \"nope\"",
                     id="unknown-queue"),
        pytest.param(NODES + "applications:\n  - name: a\n    style: Firm\n"
                     "    pods: [{duration: 1}]\n",
                     "applications[0].style: unknown Style 'Firm' (accepted: Hard, Soft)",
                     id="bad-style"),
        pytest.param(NODES + "applications:\n  - name: a\n    pods: [{duration: -1}]\n",
                     "applications[0].pods[0].duration: must be a number > 0, got -1",
                     id="negative-duration"),
        pytest.param(NODES + "applications:\n  - name: a\n    pods: [{duration: 1, after: x}]\n",
                     "applications[0].pods[0].after: \"x\" must name the pods of an earlier "
                     "entry", id="after-unknown"),
        pytest.param(NODES + "applications:\n  - {name: a}\n",
                     "workload.yaml:4:5: applications[0].pods: is required", id="no-pods"),
        pytest.param(NODES + "podGroups:\n  - {name: g, minMember: 3, pods: [{count: 2, "
                     "duration: 1}]}\n",
                     "podGroups[0].minMember: is 3 but the pods list only 2 members",
                     id="group-too-small"),
        pytest.param(NODES + "pods:\n  - {name: a, duration: 1}\n  - {name: a, duration: 1}\n",
                     "workload.yaml:5:12: pods[1].name: job name \"a\" is used twice "
                     "(first on line 4)",
                     id="duplicate-job"),
        pytest.param(NODES + "pods:\n  - {name: A_b, duration: 1}\n",
                     "pods[0].name: 'A_b' is not a valid name", id="bad-name"),
        pytest.param(NODES + "events:\n  - {at: 5, nodeDown: worker-9}\n",
                     "events[0].nodeDown: no node named \"worker-9\"", id="unknown-node"),
        pytest.param(NODES + "pods:\n  - {name: a, duration: 1}\nevents:\n"
                     "  - {at: 5, podFails: a/pod-7}\n",
                     "events[0].podFails: job a has no pod \"pod-7\"", id="unknown-pod"),
        pytest.param(NODES + "events:\n  - {at: 5, nodeDown: worker-1, nodeUp: worker-1}\n",
                     "events[0]: give exactly one of nodeDown, nodeUp, podFails",
                     id="two-event-kinds"),
        pytest.param("- just a list\n", "workload.yaml:1:1: (top level): must be a mapping",
                     id="not-a-mapping"),
    ],
)
def test_errors_name_the_line_the_column_and_the_field(text: str, expected: str) -> None:
    found = errors(text)
    assert any(e.startswith(expected) or expected in e for e in found), found


def test_every_problem_is_reported_in_line_order() -> None:
    found = errors(NODES + textwrap.dedent("""\
        applications:
          - name: a
            submitAt: -5
            pods: [{duration: 0, count: 0}]
    """))
    assert [e.split(": ")[1] for e in found] == [
        "applications[0].submitAt",
        "applications[0].pods[0].duration",
        "applications[0].pods[0].count",
    ]
    assert all(e.startswith("workload.yaml:") for e in found)
