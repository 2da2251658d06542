"""Workload checks: errors on the entry they are about, warnings for absurd values, and
bounds."""

from __future__ import annotations

import pytest
from gangsched.sim import parse as reader
from gangsched.sim.parse import MAX_NODES, build
from gangsched.sim.source import WorkloadError, parse
from gangsched.sim.workload import Workload

NODES = "nodes:\n  - {pool: worker, count: 3, cpu: 8, memory: 32Gi}\n"


def load(text: str) -> Workload:
    return build(parse(text, "w.yaml"))


def errors(text: str) -> list[str]:
    with pytest.raises(WorkloadError) as caught:
        load(text)
    return [str(e) for e in caught.value.errors]


@pytest.mark.parametrize(
    ("queues", "expected"),
    [
        pytest.param("  - {name: a, parent: nope}\n  - {name: b}\n",
                     ['w.yaml:4:23: queues[0].parent: no queue named "nope" is defined'],
                     id="first-of-two"),
        pytest.param("  - {name: a, parent: nope}\n  - {name: a}\n",
                     ['w.yaml:4:23: queues[0].parent: no queue named "nope" is defined',
                      'w.yaml:5:12: queues[1].name: queue "a" is defined twice'],
                     id="first-of-two-with-the-same-name"),
        pytest.param("  - {name: a}\n  - {name: b, parent: nope}\n",
                     ['w.yaml:5:23: queues[1].parent: no queue named "nope" is defined'],
                     id="second"),
    ],
)
def test_a_queue_error_names_its_own_entry_and_line(queues: str, expected: list[str]) -> None:
    assert errors(NODES + "queues:\n" + queues) == expected


APP = """\
applications:
  - name: spark
    taskGroups:
      - {name: driver, minMember: 1, minResource: {cpu: 1, memory: 1Gi}}
      - {name: executor, minMember: MIN, minResource: {cpu: 1, memory: 1Gi}}
    pods:
      - {taskGroup: driver, duration: 60, cpu: CPU, memory: MEM}
      - {taskGroup: executor, count: 2, duration: 60, cpu: 1, memory: 1Gi}
"""


@pytest.mark.parametrize(
    ("minimum", "cpu", "memory", "warnings"),
    [
        pytest.param(2, "1", "1Gi", [], id="sensible"),
        pytest.param(2, "1.5Gi", "1Gi",
                     ["w.yaml:9:48: applications[0].pods[0].cpu: warning: cpu: 1.5Gi is "
                      "1,610,612,736 cores; cpu is counted in cores (2, 500m): did you mean "
                      "memory?"], id="cpu-in-gibibytes"),
        pytest.param(2, "500m", "0.5",
                     ["w.yaml:9:62: applications[0].pods[0].memory: warning: memory: 0.5 is "
                      "1 bytes, under 1Mi (a number without a unit is bytes); did you mean "
                      "0.5Gi?"], id="memory-in-bytes"),
        pytest.param(2, "1", "512", ["did you mean 512Mi?"], id="memory-512-bytes"),
        pytest.param(4, "1", "1Gi",
                     ["w.yaml:7:37: applications[0].taskGroups[1].minMember: warning: task "
                      "group executor has minMember 4 but only 2 pods: 2 of its placeholders "
                      "are never taken"], id="fewer-pods-than-min-member"),
    ],
)
def test_absurd_values_are_warned_about(minimum: int, cpu: str, memory: str,
                                        warnings: list[str]) -> None:
    text = APP.replace("MIN", str(minimum)).replace("CPU", cpu).replace("MEM", memory)
    workload = load(NODES + text)
    assert len(workload.warnings) == len(warnings)
    for got, want in zip(workload.warnings, warnings, strict=True):
        assert want in got


def test_node_count_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patched:  # the bound itself is taken (100,000 are slow)
        patched.setattr(reader, "MAX_NODES", 300)
        assert load("nodes:\n  - {pool: w, count: 300, cpu: 1, memory: 1Gi}\n")
        assert errors("nodes:\n  - {pool: w, count: 301, cpu: 1, memory: 1Gi}\n")
    assert MAX_NODES == 100_000
    assert errors("nodes:\n  - {pool: a, count: 40, cpu: 1, memory: 1Gi}\n"
                  "  - {pool: b, count: 99961, cpu: 1, memory: 1Gi}\n") == [
        "w.yaml:3:22: nodes[1].count: the workload would have 100,001 nodes, more than "
        "100,000 (the largest clusters run today: EKS's 100,000 nodes)"]
