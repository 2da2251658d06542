import copy
from typing import Any

import pytest
from gangsched.core.values.decisions import (
    BlockingReason,
    PlaceholderCounts,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
    TaskGroupStatus,
)
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.translate import conditions, render, statuses
from k8s_objects import application, podgroup, queue
from manifests_tests.test_crds import validation_errors

T0 = 1714635000.0
NOW = T0 + 100.0
Gi = 2**30


NOT_BLOCKED = BlockingReason()


def group_status(
    name: str = "worker", allocated: int = 3, blocking: BlockingReason = NOT_BLOCKED
) -> TaskGroupStatus:
    return TaskGroupStatus(
        name=name,
        min_member=8,
        placeholders=PlaceholderCounts(created=8, allocated=allocated, pending=8 - allocated),
        real_bound=0,
        real_pending=8,
        blocking=blocking,
    )


def app_status(
    state: str = "Accepted",
    reason: str = "Accepted",
    message: str = "queue research",
    reserved: str = "3/8",
    groups: tuple[TaskGroupStatus, ...] | None = None,
    **times: float | None,
) -> SetAppStatus:
    return SetAppStatus(
        key=AppKey("ml/llm-finetune"),
        state=state,
        reason=reason,
        message=message,
        queue="research",
        reserved=reserved,
        running=0,
        task_groups=(group_status(),) if groups is None else groups,
        state_since=times.get("state_since", T0),
        placeholder_timer_start=times.get("placeholder_timer_start"),
        waiting_since=times.get("waiting_since"),
        starting_since=times.get("starting_since"),
    )


def by_type(body: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in body["conditions"]}


def without_nulls(value: Any) -> Any:
    """What the API server keeps: nulls of non-nullable fields are pruned."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def assert_valid(obj: dict[str, Any], status: dict[str, Any]) -> None:
    merged = copy.deepcopy(obj)
    merged["status"] = without_nulls(status)
    assert validation_errors(merged) == []


def test_app_status_body_fields() -> None:
    d = app_status(placeholder_timer_start=T0 + 2.25)
    body = render.app_status_body(d, now=NOW, generation=3, old_status=None)
    assert {k: v for k, v in body.items() if k not in ("conditions", "taskGroups")} == {
        "state": "Accepted",
        "reason": "Accepted",
        "message": "queue research",
        "observedGeneration": 3,
        "queue": "research",
        "reserved": "3/8",
        "running": 0,
        "stateSince": "2024-05-02T07:30:00Z",
        "placeholderTimerStart": "2024-05-02T07:30:02.250000Z",
        "waitingSince": None,
        "startingSince": None,
    }
    assert body["taskGroups"] == [
        {
            "name": "worker",
            "minMember": 8,
            "placeholders": {
                "created": 8,
                "pending": 5,
                "allocated": 3,
                "replaced": 0,
                "released": 0,
            },
            "realPodsBound": 0,
            "realPodsPending": 8,
            "blockingReason": {"reason": "None", "message": "", "details": {}},
        }
    ]
    for condition in body["conditions"]:
        assert condition["lastTransitionTime"] == "2024-05-02T07:31:40Z"
        assert condition["observedGeneration"] == 3
    assert_valid(application(), body)


CAPACITY = BlockingReason("Capacity", "needs cpu 8, 2 nodes have 6 free", {"Insufficient cpu": "2"})


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        pytest.param(
            app_status(state="New", reason="", message="", reserved="0/8"),
            {
                "Accepted": ("False", "New", ""),
                "GangReserved": ("False", "NotAccepted", "not admitted to a queue yet"),
                "Running": ("False", "New", ""),
                "Terminated": ("False", "New", ""),
            },
            id="new",
        ),
        pytest.param(
            app_status(groups=(group_status(blocking=CAPACITY),)),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "GangReserved": (
                    "False",
                    "Capacity",
                    "task group worker: needs cpu 8, 2 nodes have 6 free",
                ),
                "Running": ("False", "Accepted", "queue research"),
                "Terminated": ("False", "Accepted", ""),
            },
            id="accepted-blocked",
        ),
        pytest.param(
            app_status(),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "GangReserved": ("False", "Reserving", "3/8 placeholders hold a node"),
                "Running": ("False", "Accepted", "queue research"),
                "Terminated": ("False", "Accepted", ""),
            },
            id="accepted-reserving",
        ),
        pytest.param(
            app_status(reserved="8/8", groups=(group_status(allocated=8),)),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "GangReserved": ("True", "Reserved", "8/8 placeholders hold a node"),
                "Running": ("False", "Accepted", "queue research"),
                "Terminated": ("False", "Accepted", ""),
            },
            id="accepted-reserved",
        ),
        pytest.param(
            app_status(state="Running", reason="Running", message="real pods allocated"),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "GangReserved": ("True", "GangStarted", "the gang was reserved and started"),
                "Running": ("True", "Running", "real pods allocated"),
                "Terminated": ("False", "Running", ""),
            },
            id="running",
        ),
        pytest.param(
            app_status(state="Killed", reason="PlaceholderTimeout", message="Hard gang timed out"),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "GangReserved": ("False", "PlaceholderTimeout", "Hard gang timed out"),
                "Running": ("False", "Killed", "Hard gang timed out"),
                "Terminated": ("True", "PlaceholderTimeout", "Hard gang timed out"),
            },
            id="killed",
        ),
        pytest.param(
            app_status(
                state="Rejected", reason="QueueQuotaExceeded", message="needs 64 GPUs, max 8"
            ),
            {
                "Accepted": ("False", "QueueQuotaExceeded", "needs 64 GPUs, max 8"),
                "GangReserved": ("False", "QueueQuotaExceeded", "needs 64 GPUs, max 8"),
                "Running": ("False", "Rejected", "needs 64 GPUs, max 8"),
                "Terminated": ("True", "QueueQuotaExceeded", "needs 64 GPUs, max 8"),
            },
            id="rejected",
        ),
        pytest.param(
            app_status(
                state="Completed",
                reason="Completed",
                message="nothing ran for 30s",
                reserved="",
                groups=(),
            ),
            {
                "Accepted": ("True", "Accepted", "admitted to queue research"),
                "Running": ("False", "Completed", "nothing ran for 30s"),
                "Terminated": ("True", "Completed", "nothing ran for 30s"),
            },
            id="completed-non-gang-has-no-gang-condition",
        ),
    ],
)
def test_app_conditions(d: SetAppStatus, expected: dict[str, tuple[str, str, str]]) -> None:
    body = render.app_status_body(d, now=NOW, generation=1, old_status=None)
    assert by_type(body) == expected
    assert_valid(application(), body)


def test_gang_reserved_stays_as_it_was_once_the_gang_started() -> None:
    resuming = app_status(state="Resuming", reason="PlaceholderTimeout", message="soft timeout")
    old = render.app_status_body(resuming, now=NOW, generation=1, old_status=None)
    assert by_type(old)["GangReserved"] == ("False", "PlaceholderTimeout", "soft timeout")
    running = app_status(state="Running", reason="Running", message="pods running")
    body = render.app_status_body(running, now=NOW + 50, generation=1, old_status=old)
    assert by_type(body)["GangReserved"] == ("False", "PlaceholderTimeout", "soft timeout")


def test_last_transition_time_changes_only_with_the_status() -> None:
    first = render.app_status_body(app_status(), now=NOW, generation=1, old_status=None)
    reserved = app_status(reserved="8/8", groups=(group_status(allocated=8),))
    second = render.app_status_body(reserved, now=NOW + 60, generation=2, old_status=first)
    times = {c["type"]: c["lastTransitionTime"] for c in second["conditions"]}
    assert times == {
        "Accepted": "2024-05-02T07:31:40Z",
        "GangReserved": "2024-05-02T07:32:40Z",
        "Running": "2024-05-02T07:31:40Z",
        "Terminated": "2024-05-02T07:31:40Z",
    }
    assert {c["observedGeneration"] for c in second["conditions"]} == {2}


def test_merge_patch_clears_what_is_gone() -> None:
    old = {
        "state": "Running",
        "reservationExpiry": "2024-05-02T07:40:00Z",
        "placeholderTimerStart": "2024-05-02T07:30:02Z",
        "conditions": [],
    }
    body = render.app_status_body(app_status(), now=NOW, generation=1, old_status=old)
    assert body["reservationExpiry"] is None
    assert body["placeholderTimerStart"] is None


def test_non_gang_app_has_no_reserved_text() -> None:
    body = render.app_status_body(
        app_status(reserved="0/0", groups=()), now=NOW, generation=1, old_status=None
    )
    assert body["reserved"] == ""
    assert body["taskGroups"] == []


def test_unusable_texts_are_made_to_fit_the_schema() -> None:
    d = app_status(
        state="Rejected",
        reason="invalid spec!",
        message="x" * 40000,
        groups=(group_status(blocking=BlockingReason("SomethingNew", "why", {"a": "1"})),),
    )
    body = render.app_status_body(d, now=NOW, generation=1, old_status=None)
    assert len(body["message"]) == 32768
    assert by_type(body)["Terminated"][1] == "InvalidSpec"
    assert body["taskGroups"][0]["blockingReason"] == {
        "reason": "None",
        "message": "why",
        "details": {"a": "1", "reason": "SomethingNew"},
    }
    assert_valid(application(), body)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("PlaceholderTimeout", "PlaceholderTimeout"),
        ("queue quota exceeded", "QueueQuotaExceeded"),
        ("2fast", "Fast"),
        ("", "Unknown"),
        ("!!!", "Unknown"),
    ],
)
def test_condition_reasons(text: str, reason: str) -> None:
    assert conditions.reason_text(text, "Unknown") == reason


def podgroup_status(phase: str = "Scheduling", **changes: Any) -> SetPodGroupStatus:
    values: dict[str, Any] = {
        "key": GroupKey("argo/gang-train"),
        "phase": phase,
        "reason": "",
        "message": "",
        "members": 4,
        "assumed": 2,
        "scheduled": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "schedule_start": T0 + 45,
    }
    values.update(changes)
    return SetPodGroupStatus(**values)


def test_podgroup_status_body() -> None:
    blocking = BlockingReason("Capacity", "2 members do not fit", {"Insufficient cpu": "3"})
    d = podgroup_status(blocking=blocking)
    body = render.podgroup_status_body(d, now=NOW, generation=1, old_status=None)
    assert {k: v for k, v in body.items() if k != "conditions"} == {
        "phase": "Scheduling",
        "reason": "",
        "message": "",
        "observedGeneration": 1,
        "members": 4,
        "assumed": 2,
        "scheduled": 0,
        "running": 0,
        "succeeded": 0,
        "failed": 0,
        "scheduleStartTime": "2024-05-02T07:30:45Z",
        "blockingReason": {
            "reason": "Capacity",
            "message": "2 members do not fit",
            "details": {"Insufficient cpu": "3"},
        },
    }
    assert by_type(body) == {
        "Scheduled": ("False", "Capacity", "2 members do not fit"),
        "Terminated": ("False", "Scheduling", ""),
    }
    assert_valid(podgroup(), body)


@pytest.mark.parametrize(
    ("d", "expected"),
    [
        pytest.param(
            podgroup_status("Running", scheduled=4, running=4),
            {
                "Scheduled": ("True", "Scheduled", "4 members bound to nodes"),
                "Terminated": ("False", "Running", ""),
            },
            id="running",
        ),
        pytest.param(
            podgroup_status("TimedOut", reason="ScheduleTimeout", message="300s passed"),
            {
                "Scheduled": ("False", "ScheduleTimeout", "300s passed"),
                "Terminated": ("False", "TimedOut", ""),
            },
            id="timed-out",
        ),
        pytest.param(
            podgroup_status("Failed", reason="InvalidSpec", message="spec.minMember: required"),
            {
                "Scheduled": ("False", "InvalidSpec", "spec.minMember: required"),
                "Terminated": ("True", "InvalidSpec", "spec.minMember: required"),
            },
            id="failed",
        ),
        pytest.param(
            podgroup_status("Pending", schedule_start=None),
            {
                "Scheduled": ("False", "Pending", ""),
                "Terminated": ("False", "Pending", ""),
            },
            id="pending",
        ),
    ],
)
def test_podgroup_conditions(d: SetPodGroupStatus, expected: dict[str, Any]) -> None:
    body = render.podgroup_status_body(d, now=NOW, generation=1, old_status=None)
    assert by_type(body) == expected
    assert_valid(podgroup(), body)


def test_podgroup_merge_patch_clears_old_details() -> None:
    old = {"blockingReason": {"reason": "Capacity", "details": {"Insufficient cpu": "3"}}}
    body = render.podgroup_status_body(podgroup_status(), now=NOW, generation=1, old_status=old)
    assert body["blockingReason"]["details"] == {"Insufficient cpu": None}


def queue_status(max_: Resources | None) -> SetQueueStatus:
    return SetQueueStatus(
        name="research",
        allocated=Resources({"cpu": 4000, "memory": 8 * Gi, "pods": 5}),
        pending=Resources({"cpu": 500}),
        reserved_by_placeholders=Resources({"cpu": 2000}),
        max=max_,
        guaranteed=Resources({"cpu": 2000}),
        applications={"Running": 2, "Accepted": 1},
    )


def test_queue_status_body() -> None:
    d = queue_status(Resources({"cpu": 10000, "memory": 32 * Gi, "nvidia.com/gpu": 8}))
    body = render.queue_status_body(d)
    assert body == {
        "allocated": {"cpu": "4", "memory": "8Gi", "pods": "5"},
        "pending": {"cpu": "500m"},
        "reservedByPlaceholders": {"cpu": "2"},
        "max": {"cpu": "10", "memory": "32Gi", "nvidia.com/gpu": "8"},
        "guaranteed": {"cpu": "2"},
        "applications": {"Running": 2, "Accepted": 1},
        "usage": "cpu 4/10, memory 8Gi/32Gi, nvidia.com/gpu 0/8",
        "message": "",
    }
    assert_valid(queue(), body)


def test_queue_without_max() -> None:
    old = {"max": {"cpu": "10"}, "pending": {"memory": "1Gi"}}
    body = render.queue_status_body(queue_status(None), old_status=old)
    assert body["usage"] == "cpu 4/-, memory 8Gi/-"
    assert body["max"] == {"cpu": None}
    assert body["pending"] == {"cpu": "500m", "memory": None}


@pytest.mark.parametrize(
    ("allocated", "limit", "summary"),
    [
        pytest.param({}, None, "cpu 0/-, memory 0/-", id="idle-unlimited"),
        pytest.param({"pods": 3}, {"pods": 10}, "cpu 0/-, memory 0/-, pods 3/10", id="pods"),
        pytest.param(
            {"memory": 1536 * 2**20}, {"cpu": 500}, "cpu 0/500m, memory 1536Mi/-", id="partial-max"
        ),
    ],
)
def test_usage_summary(
    allocated: dict[str, int], limit: dict[str, int] | None, summary: str
) -> None:
    max_ = Resources(limit) if limit is not None else None
    assert statuses.usage_summary(Resources(allocated), max_) == summary
