from typing import Any

import pytest
from gangsched.core.values.model import AppKey, PersistedAppStatus, Style
from gangsched.core.values.resources import Resources
from gangsched.translate.apps import app_from_k8s
from k8s_objects import application

Gi = 2**30


def test_application_with_two_task_groups() -> None:
    app = app_from_k8s(application())
    assert app.key == AppKey("ml/llm-finetune")
    assert app.uid == "5e6f7a8b-1111-4222-8333-944445555666"
    assert app.queue == "research"
    assert app.priority == 0
    assert app.creation == 1714635000.0
    assert app.invalid is None
    launcher, worker = app.task_groups
    assert (launcher.name, launcher.min_member) == ("launcher", 1)
    assert launcher.min_resource == Resources({"cpu": 500, "memory": Gi})
    assert (worker.name, worker.min_member) == ("worker", 8)
    assert worker.min_resource == Resources({"cpu": 8000, "memory": 64 * Gi, "nvidia.com/gpu": 1})
    assert worker.node_selector == {"nvidia.com/gpu.present": "true"}
    assert [t.key for t in worker.tolerations] == ["nvidia.com/gpu"]
    assert worker.affinity.required_terms is not None
    assert app.placeholder_ask == Resources(
        {"cpu": 500 + 8 * 8000, "memory": Gi + 8 * 64 * Gi, "nvidia.com/gpu": 8}
    )
    assert app.policy.style is Style.HARD
    assert (app.policy.placeholder_timeout, app.policy.waiting_timeout) == (120.0, 10.0)
    assert app.persisted == PersistedAppStatus(
        state="Accepted",
        reason="Accepted",
        message="queue research",
        state_since=1714635001.0,
        placeholder_timer_start=1714635002.25,
        waiting_since=None,
        starting_since=None,
    )


def test_defaults_of_a_bare_application() -> None:
    app = app_from_k8s({"metadata": {"name": "a", "namespace": "n"}})
    assert app.key == "n/a"
    assert app.queue == "default"
    assert app.task_groups == ()
    assert not app.gang
    assert (app.policy.style, app.policy.placeholder_timeout, app.policy.waiting_timeout) == (
        Style.SOFT,
        900.0,
        30.0,
    )
    assert app.persisted is None
    assert app.invalid is None


def test_empty_queue_means_default_and_empty_min_resource_is_allowed() -> None:
    obj = application()
    obj["spec"]["queue"] = ""
    obj["spec"]["taskGroups"] = [{"name": "a", "minMember": 2, "minResource": {}}]
    app = app_from_k8s(obj)
    assert app.queue == "default"
    assert app.task_groups[0].min_resource == Resources.ZERO
    assert app.invalid is None


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(None, None, id="no-status"),
        pytest.param({"reserved": "1/2"}, None, id="no-state"),
        pytest.param(
            {
                "state": "Running",
                "stateSince": "not a time",
                "waitingSince": "2024-05-02T07:31:00+01:00",
                "startingSince": "2024-05-02T07:30:05.5Z",
            },
            PersistedAppStatus(
                state="Running",
                state_since=None,
                waiting_since=1714635000.0 - 3600 + 60,
                starting_since=1714635005.5,
            ),
            id="bad-time-is-absent",
        ),
    ],
)
def test_persisted_status(status: dict[str, Any] | None, expected: PersistedAppStatus) -> None:
    obj = application()
    if status is None:
        del obj["status"]
    else:
        obj["status"] = status
    assert app_from_k8s(obj).persisted == expected


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param(
            {"taskGroups": [{"name": "a", "minMember": 1}, {"name": "a", "minMember": 2}]},
            'spec.taskGroups[1].name: duplicate task group name "a" (first at spec.taskGroups[0])',
            id="duplicate",
        ),
        pytest.param(
            {"taskGroups": [{"name": "a", "minMember": 0}]},
            "spec.taskGroups[0].minMember: must be at least 1, got 0",
            id="min-member",
        ),
        pytest.param(
            {
                "taskGroups": [
                    {"name": "a", "minMember": 1},
                    {"name": "b", "minMember": 1, "minResource": {"memory": "12Qi"}},
                ]
            },
            'spec.taskGroups[1].minResource.memory: invalid quantity "12Qi": unknown suffix "Qi"',
            id="bad-quantity",
        ),
        pytest.param(
            {"taskGroups": [{"name": "a", "minMember": 1, "minResource": {"cpu": "-500m"}}]},
            'spec.taskGroups[0].minResource.cpu: invalid quantity "-500m": must not be negative',
            id="negative",
        ),
        pytest.param(
            {"taskGroups": {"name": "a"}},
            "spec.taskGroups: expected a list, got object",
            id="task-groups-not-list",
        ),
        pytest.param(
            {"queue": "Research"},
            'spec.queue: invalid queue name "Research": must consist of lower case '
            "alphanumerics, '-' and '.', start and end with an alphanumeric, and be at most 253 "
            "characters",
            id="queue",
        ),
        pytest.param(
            {"schedulingPolicy": {"style": "Strict"}},
            "spec.schedulingPolicy.style: unknown Style 'Strict' (accepted: Hard, Soft)",
            id="style",
        ),
        pytest.param(
            {"schedulingPolicy": {"waitingTimeoutSeconds": -1}, "queue": 7},
            "spec.queue: expected a string, got number 7; "
            "spec.schedulingPolicy.waitingTimeoutSeconds: must be at least 0, got -1",
            id="every-problem",
        ),
    ],
)
def test_errors(spec: dict[str, Any], message: str) -> None:
    obj = application()
    obj["spec"].update(spec)
    app = app_from_k8s(obj)
    assert app.invalid == message
    assert app.key == "ml/llm-finetune"


def test_valid_task_groups_are_kept_next_to_invalid_ones() -> None:
    obj = application()
    obj["spec"]["taskGroups"].append({"name": "broken", "minMember": "many"})
    app = app_from_k8s(obj)
    assert [g.name for g in app.task_groups] == ["launcher", "worker"]
    assert app.invalid == 'spec.taskGroups[2].minMember: expected an integer, got string "many"'
