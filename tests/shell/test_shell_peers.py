"""The peers' promises, on the fake API server with a real kubelet's timing.

A client-mode Spark job has no driver pod: each executor carries the gang's definition
(``gangsched.io/task-groups``) and the first one to come is the gang's originator.
These tests create the executors as Spark's executor allocator does (a batch within
half a second), with the operator on the wall clock, and measure how long after the last
executor appears the gang is bound:

* all four within the gathering bound: no placeholder is made, and they are bound within
  one cycle of the last one;
* one first, three later: placeholders hold the three, and the three swaps run at once,
  so the gang is bound within one graceful deletion of the last executor.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import time
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.kubelet import Timing
from shellkit import OperatorUnderTest, new_cluster, placeholders, pod, wait_for

pytestmark = pytest.mark.asyncio

GRACE = 1.0
"""Every pod's graceful deletion takes this long (a real kubelet: 0.5 to 2 s)."""
TIMING = Timing(start=(0.2, 0.8), stop=GRACE, watch_lag=0.05)
TASK_GROUPS = [{"name": "executor", "minMember": 4,
                "minResource": {"cpu": "1", "memory": "1Gi"}}]


def executor(index: int, app: str = "spark-pi") -> dict[str, Any]:
    """A client-mode Spark executor: it carries the gang's definition itself."""
    return pod(f"{app}-exec-{index}", cpu="1", memory="1Gi", labels={"gangsched.io/app": app},
               annotations={"gangsched.io/task-group": "executor",
                            "gangsched.io/task-groups": json.dumps(TASK_GROUPS)})


def bound(api: FakeApiServer, names: list[str]) -> list[str]:
    found = []
    for name in names:
        obj = api.try_get("pods", "default", name)
        if obj is not None and obj["spec"].get("nodeName"):
            found.append(name)
    return found


async def start(fake_api_factory: Any, tmp_path: pathlib.Path
                ) -> tuple[FakeApiServer, OperatorUnderTest]:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=2, cpu="4",
                                        timing=TIMING)
    operator = await OperatorUnderTest(api, kubeconfig, time.time).start()
    return api, operator


async def until_bound(api: FakeApiServer, names: list[str], limit: float = 20.0) -> float:
    """Wait until every pod of ``names`` is bound; when that was seen (monotonic)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if len(bound(api, names)) == len(names):
            return time.monotonic()
        await asyncio.sleep(0.01)
    raise AssertionError(f"not bound in {limit}s: {sorted(set(names) - set(bound(api, names)))}")


async def test_executors_created_together_are_bound_together_without_placeholders(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        names = []
        for i in range(4):  # Spark's allocator: four executors within half a second
            names.append(api.create(executor(i))["metadata"]["name"])
            await asyncio.sleep(0.15)
        last = time.monotonic() - 0.15
        done = await until_bound(api, names)
        print(f"bound {done - last:.2f}s after the last executor")
        assert api.request_count("create", "pods") == 0, "placeholders were made"
        assert done - last < 0.5
    finally:
        await op.kill()


async def test_late_executors_swap_their_placeholders_at_once(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        first = api.create(executor(0))["metadata"]["name"]
        await wait_for(lambda: len([p for p in placeholders(api)
                                    if p["spec"].get("nodeName")]) == 3,
                       what="three placeholders placed")
        names = [first]
        for i in range(1, 4):
            names.append(api.create(executor(i))["metadata"]["name"])
        last = time.monotonic()
        done = await until_bound(api, names)
        print(f"bound {done - last:.2f}s after the last executor")
        assert done - last < 2 * GRACE, "the swaps ran one after another"
    finally:
        await op.kill()


def owners(api: FakeApiServer, app: str = "spark-pi") -> list[str]:
    obj = api.try_get("applications", "default", app)
    return [] if obj is None else sorted(
        r["name"] for r in obj["metadata"].get("ownerReferences") or ())


async def test_the_originator_may_go_and_its_replacement_joins_the_running_gang(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """Spark's client mode: the first executor is the Application's originator. Each
    member becomes an owner, so deleting the first executor of the running job leaves
    the Application (the same object, its history with it) and the others' gang; its
    replacement is bound into the running gang at once, with no new wait for
    minMember. Once every member is gone, the garbage collector takes the Application."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        names = [api.create(executor(i))["metadata"]["name"] for i in range(4)]
        await until_bound(api, names)
        await wait_for(lambda: owners(api) == sorted(names), what="every executor an owner")
        app = api.get("applications", "default", "spark-pi")
        await wait_for(lambda: (api.get("applications", "default", "spark-pi").get("status")
                                or {}).get("state") == "Running", what="Running")
        before = api.get("applications", "default", "spark-pi")["status"]
        api.delete("pods", "default", names[0])  # graceful: the kubelet takes a second
        await wait_for(lambda: api.try_get("pods", "default", names[0]) is None,
                       what="the first executor gone", timeout=10)
        await wait_for(lambda: owners(api) == sorted(names[1:]), what="its reference dropped")
        kept = api.try_get("applications", "default", "spark-pi")
        assert kept is not None and kept["metadata"]["uid"] == app["metadata"]["uid"]
        replacement = api.create(executor(4))["metadata"]["name"]
        since = time.monotonic()
        done = await until_bound(api, [replacement])
        assert done - since < 1.0, "the replacement waited as if for a new gang"
        await wait_for(lambda: replacement in owners(api), what="the replacement an owner")
        after = api.get("applications", "default", "spark-pi")["status"]
        assert after.get("state") == "Running"
        for field in ("startingSince", "placeholderTimerStart"):
            assert after.get(field) == before.get(field), field
        for name in [*names[1:], replacement]:
            api.delete("pods", "default", name)
        await wait_for(lambda: api.try_get("applications", "default", "spark-pi") is None,
                       what="the Application collected with its last member", timeout=10)
    finally:
        await op.kill()


async def test_an_originator_that_goes_before_the_gang_started_takes_its_placeholders(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """YuniKorn's rule: the first executor alone, its gang reserved with placeholders for
    the three others; it goes before the gang started: the Application is collected and
    its placeholders with it."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        first = api.create(executor(0))["metadata"]["name"]
        await wait_for(lambda: len(placeholders(api)) == 3, what="three placeholders")
        api.delete("pods", "default", first)
        await wait_for(lambda: api.try_get("applications", "default", "spark-pi") is None,
                       what="the Application collected", timeout=10)
        await wait_for(lambda: not [p for p in placeholders(api)
                                    if not p["metadata"].get("deletionTimestamp")],
                       what="its placeholders deleted", timeout=10)
    finally:
        await op.kill()
