from typing import Any

import pytest
from gangsched.core.values.model import GangMode, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.translate.podgroups import podgroup_from_k8s
from k8s_objects import podgroup

Gi = 2**30


def test_podgroup() -> None:
    group = podgroup_from_k8s(podgroup())
    assert group.key == GroupKey("argo/gang-train")
    assert group.uid == "9a8b7c6d-2222-4333-8444-955556666777"
    assert group.min_member == 4
    assert group.min_resources == Resources({"cpu": 16000, "memory": 64 * Gi, "nvidia.com/gpu": 4})
    assert group.schedule_timeout == 300.0
    assert group.mode is GangMode.NON_STRICT
    assert group.gang_group == ("argo/gang-train", "argo/gang-eval")
    assert group.members_of_gang_group == ("argo/gang-eval", "argo/gang-train")
    assert group.total_number == 6
    assert group.queue == "research"
    assert group.priority == 0
    assert group.creation == 1717402540.0
    assert group.persisted_start == 1717402545.0
    assert group.persisted_phase == "Scheduling"
    assert group.invalid is None


def test_defaults() -> None:
    group = podgroup_from_k8s(
        {"metadata": {"name": "g", "namespace": "n"}, "spec": {"minMember": 2}}
    )
    assert (group.min_member, group.min_resources, group.schedule_timeout) == (
        2,
        Resources.ZERO,
        600.0,
    )
    assert (group.mode, group.gang_group, group.total_number, group.queue) == (
        GangMode.STRICT,
        (),
        None,
        "default",
    )
    assert (group.persisted_start, group.persisted_phase, group.invalid) == (None, "", None)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param({"minMember": None}, "spec.minMember: required", id="min-member-missing"),
        pytest.param(
            {"minMember": 0}, "spec.minMember: must be at least 1, got 0", id="min-member-zero"
        ),
        pytest.param(
            {"totalNumber": 3},
            "spec.totalNumber: must be at least spec.minMember (4), got 3",
            id="total-below-min",
        ),
        pytest.param(
            {"gangGroup": ["gang-eval"]},
            'spec.gangGroup[0]: invalid PodGroup reference "gang-eval": expected namespace/name',
            id="gang-group-without-namespace",
        ),
        pytest.param(
            {"gangGroup": ["argo/a", "argo/a"]},
            'spec.gangGroup[1]: duplicate PodGroup reference "argo/a"',
            id="gang-group-duplicate",
        ),
        pytest.param(
            {"gangGroup": [7]},
            "spec.gangGroup[0]: expected a string, got number 7",
            id="gang-group-type",
        ),
        pytest.param(
            {"mode": "strict"},
            "spec.mode: unknown GangMode 'strict' (accepted: Strict, NonStrict)",
            id="mode",
        ),
        pytest.param(
            {"scheduleTimeoutSeconds": 0},
            "spec.scheduleTimeoutSeconds: must be at least 1, got 0",
            id="timeout",
        ),
        pytest.param(
            {"minResources": {"cpu": "-1"}},
            'spec.minResources.cpu: invalid quantity "-1": must not be negative',
            id="negative",
        ),
        pytest.param(
            {"queue": "a_b"},
            'spec.queue: invalid queue name "a_b": must consist of lower case alphanumerics, '
            "'-' and '.', start and end with an alphanumeric, and be at most 253 characters",
            id="queue",
        ),
    ],
)
def test_errors(spec: dict[str, Any], message: str) -> None:
    obj = podgroup()
    for key, value in spec.items():
        if value is None:
            del obj["spec"][key]
        else:
            obj["spec"][key] = value
    group = podgroup_from_k8s(obj)
    assert group.invalid == message
    assert group.key == "argo/gang-train"
