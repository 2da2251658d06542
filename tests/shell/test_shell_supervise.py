"""No task dies silently: restarts, exits non-zero, and a liveness probe that means it."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from gangsched.shell.health import Health, HealthServer, fresh
from gangsched.shell.supervise import Supervisor
from shellkit import FakeClock, OperatorUnderTest, add_node, new_cluster, node, pod, wait_for

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=1, cpu="1")


async def test_a_watch_that_fails_unexpectedly_is_restarted(cluster) -> None:  # type: ignore[no-untyped-def]
    """The node watch's stream raises a bug (not an API error) once: the watch is started
    again, and a node that joins afterwards is used."""
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), watch_timeout=1).start()
    try:
        runtime = op.runtime
        assert runtime is not None and runtime.supervisor is not None
        client = runtime.client
        original = client.watch
        broken = {"left": 1}

        def watch(path: str, *args: Any, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
            if path == "/api/v1/nodes" and broken["left"]:
                broken["left"] -= 1

                async def fail() -> AsyncIterator[dict[str, Any]]:
                    raise RuntimeError("a bug in the watch")
                    yield {}  # pragma: no cover

                return fail()
            return original(path, *args, **kwargs)

        client.watch = watch  # type: ignore[method-assign]
        # The current node stream ends after watch_timeout (1 s): the broken one is next.
        await wait_for(lambda: runtime.supervisor is not None
                       and runtime.supervisor.restarts["node-watch"] >= 1,
                       what="the watch fails and is restarted")
        assert broken["left"] == 0
        add_node(api, node("node-big", cpu="16"))
        api.create(pod("big", cpu="8"))
        await wait_for(lambda: api.get("pods", "default", "big")["spec"].get("nodeName")
                       == "node-big", what="the new node is used")
        assert not runtime.failed
    finally:
        await op.kill()


async def test_a_failing_scheduling_loop_stops_the_operator_non_zero(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        runtime = op.runtime
        assert runtime is not None

        def cycle() -> list[Any]:
            raise RuntimeError("a bug in the core")

        runtime.cycle = cycle  # type: ignore[method-assign]
        await wait_for(lambda: op.task is not None and op.task.done(), what="operator stops")
        assert op.failed is not None and "task cycles failed" in op.failed
        assert "a bug in the core" in op.failed
    finally:
        await op.kill()


async def test_supervisor_restarts_with_backoff_then_gives_up() -> None:
    stop = asyncio.Event()
    clock = FakeClock()
    supervisor = Supervisor(stop, monotonic=clock, initial=0.001, cap=0.002, max_failures=3,
                            window=60)
    runs = []

    async def flaky() -> None:
        runs.append(clock.now)
        raise ValueError("boom")

    task = supervisor.spawn("flaky", flaky)
    await asyncio.wait_for(task, timeout=5)
    assert len(runs) == 4  # the first run and three restarts, all within the window
    assert stop.is_set()
    assert supervisor.failed.startswith("task flaky failed 4 times within 60s")
    await supervisor.close()


async def test_supervisor_forgives_failures_outside_the_window() -> None:
    stop = asyncio.Event()
    clock = FakeClock()
    supervisor = Supervisor(stop, monotonic=clock, initial=0.001, cap=0.001, max_failures=1,
                            window=10)
    runs = []

    async def flaky() -> None:
        runs.append(clock.now)
        clock.advance(11)  # each failure comes long after the previous one
        if len(runs) < 5:
            raise ValueError("boom")

    await asyncio.wait_for(supervisor.spawn("flaky", flaky), timeout=5)
    assert (len(runs), supervisor.failed, stop.is_set()) == (5, "", False)
    assert supervisor.restarts["flaky"] == 4


async def test_liveness_checks_progress_and_answers_500_when_stale() -> None:
    clock = FakeClock()
    last: dict[str, float | None] = {"cycle": None}
    health = Health()
    health.add("loop", fresh("scheduling cycle", lambda: last["cycle"], clock, 60))
    server = HealthServer(health, host="127.0.0.1", port=0, path="/healthz")
    await server.start()
    url = f"http://127.0.0.1:{server.port}/healthz"
    try:
        async with aiohttp.ClientSession() as session:
            answers = []
            for cycle_at, advance in ((None, 0), (clock.now, 30), (clock.now, 61)):
                last["cycle"] = cycle_at
                clock.advance(advance)
                async with session.get(url) as response:
                    answers.append((response.status, (await response.json())["loop"]))
        assert answers == [(200, "ok"), (200, "ok"), (500, "no scheduling cycle for 91s")]
    finally:
        await server.stop()


async def test_liveness_of_a_running_operator_names_a_silent_watch(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        runtime = op.runtime
        assert runtime is not None and runtime.health is not None
        await wait_for(lambda: "/api/v1/pods" in runtime.client.watch_activity,
                       what="the pod watch streams")
        assert not any(runtime.health.problems().values()), runtime.health.problems()
        runtime.client.watch_activity["/api/v1/pods"] -= op.settings.liveness_stale + 1
        problems = runtime.health.problems()
        assert problems["watches"].startswith("watch /api/v1/pods silent for")
    finally:
        await op.kill()
