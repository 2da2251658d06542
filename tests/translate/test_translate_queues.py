from typing import Any

import pytest
from gangsched.core.values.model import SortPolicy
from gangsched.core.values.resources import Resources
from gangsched.translate.queues import queue_from_k8s
from k8s_objects import queue

Gi = 2**30


def test_queue() -> None:
    q = queue_from_k8s(queue())
    assert q.name == "research"
    assert q.parent == "root"
    assert q.max == Resources({"cpu": 64000, "memory": 256 * Gi, "nvidia.com/gpu": 8})
    assert q.limited == {"cpu", "memory", "nvidia.com/gpu"}
    assert q.guaranteed == Resources({"cpu": 16000, "memory": 64 * Gi})
    assert q.max_applications == 10
    assert q.sort_policy is SortPolicy.PRIORITY
    assert q.state_aware_timeout == 120.0
    assert q.weight == 2
    assert q.reclaimable is False
    assert q.invalid is None


def test_defaults() -> None:
    q = queue_from_k8s({"metadata": {"name": "root"}, "spec": {"parent": ""}})
    assert (q.name, q.parent, q.max, q.limited, q.guaranteed) == (
        "root",
        None,
        None,
        frozenset(),
        Resources.ZERO,
    )
    assert (q.max_applications, q.sort_policy, q.state_aware_timeout, q.weight) == (
        0,
        SortPolicy.FIFO,
        300.0,
        1,
    )
    assert q.reclaimable is True
    assert q.invalid is None


def test_a_zero_max_is_a_limit() -> None:
    obj = queue()
    obj["spec"]["max"] = {"nvidia.com/gpu": 0}
    obj["spec"]["guaranteed"] = {}
    q = queue_from_k8s(obj)
    assert q.max == Resources.ZERO
    assert q.limited == {"nvidia.com/gpu"}
    assert q.limit("nvidia.com/gpu") == 0
    assert q.limit("cpu") is None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"guaranteed": {"cpu": "80", "memory": "1Ti"}},
            "spec.guaranteed.cpu: 80 is more than spec.max.cpu 64; "
            "spec.guaranteed.memory: 1Ti is more than spec.max.memory 256Gi",
            id="guaranteed-over-max",
        ),
        pytest.param(
            {"max": {"nvidia.com/gpu": 0}, "guaranteed": {"nvidia.com/gpu": 1}},
            "spec.guaranteed[nvidia.com/gpu]: 1 is more than spec.max[nvidia.com/gpu] 0",
            id="guaranteed-over-zero-max",
        ),
        pytest.param(
            {"sortPolicy": "FIFO"},
            "spec.sortPolicy: unknown SortPolicy 'FIFO' (accepted: fifo, stateaware, priority, "
            "fair)",
            id="sort-policy",
        ),
        pytest.param({"weight": 0}, "spec.weight: must be at least 1, got 0", id="weight"),
        pytest.param(
            {"maxApplications": -1},
            "spec.maxApplications: must be at least 0, got -1",
            id="max-applications",
        ),
        pytest.param(
            {"max": {"cpu": "lots"}},
            'spec.max.cpu: invalid quantity "lots": expected a number, with an optional sign, '
            "at the start",
            id="bad-max",
        ),
        pytest.param(
            {"reclaimable": "no"},
            'spec.reclaimable: expected a boolean, got string "no"',
            id="reclaimable",
        ),
        pytest.param(
            {"parent": "Root"},
            'spec.parent: invalid queue name "Root": must consist of lower case alphanumerics, '
            "'-' and '.', start and end with an alphanumeric, and be at most 253 characters",
            id="parent",
        ),
    ],
)
def test_errors(spec: dict[str, Any], message: str) -> None:
    obj = queue()
    obj["spec"].update(spec)
    q = queue_from_k8s(obj)
    assert q.invalid == message
    assert q.name == "research"
