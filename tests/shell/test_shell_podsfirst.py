"""Pods first (Spark): the driver pod carries the gang; its Application is made for it.

The driver has label ``gangsched.io/app`` and annotation ``gangsched.io/task-groups``
(and ``gangsched.io/scheduling-policy``); the operator creates the Application, owned by
the driver. Executors name the same app. Whatever order the objects arrive in, the gang
is reserved, every pod is bound once, and no placeholder is left behind.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
    assert_bound_at_most_once,
    condition,
    events,
    new_cluster,
    placeholders,
    pod,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio

TASK_GROUPS = [
    {"name": "driver", "minMember": 1, "minResource": {"cpu": "1", "memory": "2Gi"}},
    {"name": "executor", "minMember": 2, "minResource": {"cpu": "2", "memory": "4Gi"},
     "nodeSelector": {"pool": "spark"}},
]
EXECUTORS = ["spark-exec-1", "spark-exec-2"]


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4")
    for i in range(3):
        api.patch("nodes", None, f"node-{i}", {"metadata": {"labels": {"pool": "spark"}}})
    return api, kubeconfig


@pytest.fixture
async def op(cluster):  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    operator = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    yield operator
    await operator.kill()


def driver(name: str = "spark-driver", app: str = "spark-pi",
           policy: str = "placeholderTimeoutInSeconds=60 gangSchedulingStyle=Hard",
           task_groups: Any = None) -> dict[str, Any]:
    annotations = {"gangsched.io/task-group": "driver",
                   "gangsched.io/task-groups": json.dumps(task_groups or TASK_GROUPS)}
    if policy:
        annotations["gangsched.io/scheduling-policy"] = policy
    return pod(name, cpu="1", memory="2Gi", labels={"gangsched.io/app": app},
               annotations=annotations)


def executor(name: str, app: str = "spark-pi") -> dict[str, Any]:
    found = pod(name, cpu="2", memory="4Gi", labels={"gangsched.io/app": app},
                annotations={"gangsched.io/task-group": "executor"})
    found["spec"]["nodeSelector"] = {"pool": "spark"}
    return found


def bound(api: FakeApiServer, names: list[str]) -> bool:
    for name in names:
        found = api.try_get("pods", "default", name)
        if not found or not found["spec"].get("nodeName"):
            return False
    return True


def app_obj(api: FakeApiServer, name: str = "spark-pi") -> dict[str, Any] | None:
    return api.try_get("applications", "default", name)


ORDERS = [
    pytest.param(["driver", *EXECUTORS], id="driver-first"),
    pytest.param([*EXECUTORS, "driver"], id="executors-first"),
    pytest.param([EXECUTORS[0], "driver", EXECUTORS[1]], id="interleaved"),
]


@pytest.mark.parametrize("order", ORDERS)
async def test_any_arrival_order_schedules_the_gang(cluster, op, order: list[str]) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    for name in order:
        api.create(driver() if name == "driver" else executor(name))
        await op.settle(2)
        if name != "driver" and app_obj(api) is None:
            # An executor before its app: it waits, and says so in its status.
            found = await wait_for(lambda name=name: condition(
                api.try_get("pods", "default", name), "PodScheduled"), what="condition")
            assert found["message"].startswith("ApplicationNotFound: application "
                                               "default/spark-pi does not exist yet")
            assert events(api, reason="ApplicationNotFound", regarding=name)
    await wait_for(lambda: bound(api, ["spark-driver", *EXECUTORS]), what="gang bound")
    await wait_for(lambda: not placeholders(api), what="placeholders replaced")
    await wait_for(lambda: status_of(api, "applications", "default", "spark-pi")
                   .get("state") == "Running", what="Running")

    app = app_obj(api)
    assert app is not None
    owner = app["metadata"]["ownerReferences"][0]
    the_driver = api.get("pods", "default", "spark-driver")
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Pod", "spark-driver", the_driver["metadata"]["uid"])
    assert app["spec"]["schedulingPolicy"]["style"] == "Hard"
    assert app["spec"]["schedulingPolicy"]["placeholderTimeoutSeconds"] == 60
    assert [g["name"] for g in app["spec"]["taskGroups"]] == ["driver", "executor"]
    assert api.request_count("create", "applications") == 1
    assert_bound_at_most_once(api)


async def test_existing_application_is_not_created_again(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    api.create(application("spark-pi", TASK_GROUPS))
    await wait_for(lambda: status_of(api, "applications", "default", "spark-pi")
                   .get("reserved") == "3/3", what="reserved")
    api.create(driver())
    for name in EXECUTORS:
        api.create(executor(name))
    await wait_for(lambda: bound(api, ["spark-driver", *EXECUTORS]), what="gang bound")
    assert api.request_count("create", "applications") == 0
    app = app_obj(api)
    assert app is not None and not app["metadata"].get("ownerReferences")


async def test_restart_after_the_application_was_made(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(driver())
    await wait_for(lambda: status_of(api, "applications", "default", "spark-pi")
                   .get("state") == "Running", what="driver bound, app Running")
    await op.kill()
    for name in EXECUTORS:
        api.create(executor(name))
    again = await OperatorUnderTest(api, kubeconfig, op.clock).start()
    try:
        await wait_for(lambda: bound(api, EXECUTORS), what="executors bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        assert api.request_count("create", "applications") == 1
        assert_bound_at_most_once(api)
    finally:
        await again.kill()


async def test_deleting_the_driver_removes_its_application_and_placeholders(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    api.create(driver())
    await wait_for(lambda: bound(api, ["spark-driver"]), what="driver bound")
    assert len(placeholders(api)) == 2  # the executors' placeholders still hold their room
    api.delete("pods", "default", "spark-driver")
    await wait_for(lambda: app_obj(api) is None, what="application collected")
    await wait_for(lambda: not placeholders(api), what="placeholders collected")
    # The room is free again: another gang of the same size is reserved.
    api.create(application("next", TASK_GROUPS))
    await wait_for(lambda: status_of(api, "applications", "default", "next")
                   .get("reserved") == "3/3", what="the next gang reserved")


async def test_edited_annotation_is_acted_on(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """A driver whose task groups are invalid gets no Application; once the annotation is
    fixed (annotations are mutable), the Application is made and the gang runs."""
    api, _ = cluster
    api.create(driver(task_groups=[{"name": "driver", "minMember": 0}]))
    found = await wait_for(lambda: events(api, reason="InvalidTaskGroups",
                                          regarding="spark-driver"), what="event")
    assert "minMember" in found[0]["note"]
    await op.settle(3)
    assert app_obj(api) is None
    api.patch("pods", "default", "spark-driver", {"metadata": {"annotations": {
        "gangsched.io/task-groups": json.dumps(TASK_GROUPS)}}})
    await wait_for(lambda: app_obj(api) is not None, what="application made")
    for name in EXECUTORS:
        api.create(executor(name))
    await wait_for(lambda: bound(api, ["spark-driver", *EXECUTORS]), what="gang bound")
    assert api.request_count("create", "applications") == 1


async def test_transient_failure_to_create_the_application_is_retried(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), api_retry_initial=0.05).start()
    try:
        rule = api.faults.add(method="POST", path_regex="/applications$", times=2, status=503)
        api.create(driver())
        await wait_for(lambda: app_obj(api) is not None, what="application made")
        assert rule.hits == 2
        await wait_for(lambda: bound(api, ["spark-driver"]), what="driver bound")
    finally:
        await op.kill()
