from typing import Any

import pytest
from gangsched.core.values.constraints import Taint, TaintEffect
from gangsched.core.values.resources import Resources
from gangsched.translate.nodes import node_from_k8s, node_problems
from k8s_objects import kind_node

Ki = 2**10


def test_kind_worker() -> None:
    node = node_from_k8s(kind_node())
    assert node.name == "kind-worker2"
    assert node.allocatable == Resources(
        {
            "cpu": 8000,
            "memory": 16283508 * Ki,
            "ephemeral-storage": 102625208 * Ki,
            "pods": 110,
        }
    )
    assert node.labels["kubernetes.io/hostname"] == "kind-worker2"
    assert node.taints == (
        Taint("dedicated", "spark", TaintEffect.NO_SCHEDULE),
        Taint("node.kubernetes.io/disk-pressure", "", TaintEffect.PREFER_NO_SCHEDULE),
    )
    assert not node.unschedulable
    assert node.ready
    assert node_problems(kind_node()) == []


def ready_status(status: str | None) -> list[dict[str, Any]]:
    conditions = [{"type": "MemoryPressure", "status": "False"}]
    if status is not None:
        conditions.append({"type": "Ready", "status": status, "reason": "KubeletNotReady"})
    return conditions


@pytest.mark.parametrize(
    ("conditions", "ready"),
    [
        pytest.param(ready_status("True"), True, id="ready"),
        pytest.param(ready_status("False"), False, id="not-ready"),
        pytest.param(ready_status("Unknown"), False, id="unknown"),
        pytest.param(ready_status(None), False, id="no-ready-condition"),
        pytest.param(None, False, id="no-conditions"),
    ],
)
def test_ready_is_the_ready_condition(conditions: list[dict[str, Any]] | None, ready: bool) -> None:
    obj = kind_node()
    obj["status"]["conditions"] = conditions
    assert node_from_k8s(obj).ready is ready


def test_cordoned_node_and_node_without_allocatable() -> None:
    obj = kind_node()
    obj["spec"]["unschedulable"] = True
    del obj["status"]["allocatable"]
    node = node_from_k8s(obj)
    assert node.unschedulable
    assert node.allocatable == Resources.ZERO
    assert node.ready


@pytest.mark.parametrize(
    ("section", "key", "value", "problem"),
    [
        pytest.param(
            "status",
            "allocatable",
            {"cpu": "8", "memory": "16GB"},
            'status.allocatable.memory: invalid quantity "16GB": unknown suffix "GB"',
            id="bad-allocatable",
        ),
        pytest.param(
            "spec",
            "taints",
            [{"key": "k", "effect": "NoPlace"}],
            'spec.taints[0].effect: unknown effect "NoPlace" '
            "(accepted: NoSchedule, PreferNoSchedule, NoExecute)",
            id="bad-taint",
        ),
        pytest.param(
            "spec",
            "unschedulable",
            "yes",
            'spec.unschedulable: expected a boolean, got string "yes"',
            id="bad-unschedulable",
        ),
    ],
)
def test_an_unreadable_node_takes_nothing(
    section: str, key: str, value: object, problem: str
) -> None:
    obj = kind_node()
    obj[section][key] = value
    node = node_from_k8s(obj)
    assert not node.ready
    assert node.allocatable == Resources.ZERO
    assert node_problems(obj) == [problem]
