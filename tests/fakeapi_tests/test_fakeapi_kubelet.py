"""The fake kubelet's timing: graceful pod deletion, start-up delay, late watch events.

Timers are fired with ``kubelet.flush()`` (no waiting) except where the test is about
the timer itself firing on the loop; those wait for the watch event, not for a clock.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from fakeapi import ApiError, FakeApiServer
from fakeapi.builders import make_pod
from fakeapi.client import RawClient
from fakeapi.fixtures import ServerFactory
from fakeapi.kubelet import Timing, grace_period

PODS = "/api/v1/namespaces/default/pods"
SLOW = Timing(start=5.0, stop=3.0)
"""Delays long enough never to fire by themselves within a test."""


async def slow_server(factory: ServerFactory, timing: Timing = SLOW) -> FakeApiServer:
    server = await factory(auto_run=True, timing=timing)
    return server


def bound_pod(server: FakeApiServer, name: str = "p", **spec: Any) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"].update(spec)
    server.create(pod)
    server.bind("default", name, "n1")
    return server.get("pods", "default", name)


@pytest.mark.parametrize("pod, options, expected", [
    pytest.param({"spec": {"nodeName": "n"}}, {}, 30, id="default-30"),
    pytest.param({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 7}}, {}, 7,
                 id="pod-period"),
    pytest.param({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 7}},
                 {"gracePeriodSeconds": 2}, 2, id="request-wins"),
    pytest.param({"spec": {}}, {"gracePeriodSeconds": 9}, 0, id="never-bound-at-once"),
    pytest.param({"spec": {"nodeName": "n"}, "status": {"phase": "Succeeded"}}, {}, 0,
                 id="terminated-at-once"),
    pytest.param({"spec": {"nodeName": "n"}}, {"gracePeriodSeconds": -5}, 1,
                 id="negative-is-one"),
    pytest.param({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": "x"}}, {}, 0,
                 id="not-a-number-is-zero"),
])
def test_grace_period_follows_the_pod_strategy(
        pod: dict[str, Any], options: dict[str, Any], expected: int) -> None:
    assert grace_period(pod, options) == expected


async def test_a_bound_pod_stays_terminating_until_the_kubelet_confirms(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    before = bound_pod(server)
    async with RawClient(server.url) as api:
        status, body = await api.delete(f"{PODS}/p")
    assert status == 200 and body["kind"] == "Pod"
    md = body["metadata"]
    assert md["deletionTimestamp"] and md["deletionGracePeriodSeconds"] == 30
    assert md["generation"] == before["metadata"]["generation"] + 1
    still = server.get("pods", "default", "p")
    assert still["spec"]["nodeName"] == "n1"
    assert still["metadata"]["deletionTimestamp"] == md["deletionTimestamp"]
    assert server.kubelet.flush() >= 1
    assert server.try_get("pods", "default", "p") is None


async def test_a_pod_never_bound_is_removed_at_once(fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    server.create(make_pod("p"))
    server.delete("pods", "default", "p")
    assert server.try_get("pods", "default", "p") is None
    assert server.kubelet.pending == 0


async def test_a_second_delete_only_shortens_the_grace_period(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    bound_pod(server, terminationGracePeriodSeconds=20)
    first = server.delete("pods", "default", "p")
    again = server.delete("pods", "default", "p", grace_period_seconds=25)
    assert again["metadata"] == first["metadata"]  # longer: nothing changes
    shorter = server.delete("pods", "default", "p", grace_period_seconds=5)
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 5
    assert shorter["metadata"]["deletionTimestamp"] < first["metadata"]["deletionTimestamp"]
    assert server.try_get("pods", "default", "p") is not None
    negative = server.delete("pods", "default", "p", grace_period_seconds=-3)
    assert negative["metadata"]["deletionGracePeriodSeconds"] == 1  # read as 1
    assert server.try_get("pods", "default", "p") is not None
    server.delete("pods", "default", "p", grace_period_seconds=0)
    assert server.try_get("pods", "default", "p") is None


async def test_delete_preconditions_still_apply_while_terminating(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    bound_pod(server)
    server.delete("pods", "default", "p")
    with pytest.raises(ApiError) as caught:
        server.delete("pods", "default", "p", preconditions={"uid": "not-the-uid"})
    assert caught.value.code == 409


async def test_a_terminating_pod_cannot_be_bound_again(fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    server.create(make_pod("p"))
    server.bind("default", "p", "n1")
    server.delete("pods", "default", "p")
    with pytest.raises(ApiError) as caught:
        server.bind("default", "p", "n2")
    assert caught.value.code == 409


async def test_finalizers_keep_a_confirmed_pod_and_removal_waits_for_the_kubelet(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    pod = make_pod("p")
    pod["metadata"]["finalizers"] = ["example.dev/keep"]
    server.create(pod)
    server.bind("default", "p", "n1")
    server.delete("pods", "default", "p")
    server.patch("pods", "default", "p", {"metadata": {"finalizers": None}})
    assert server.try_get("pods", "default", "p") is not None  # the kubelet has not confirmed
    server.kubelet.flush()
    assert server.try_get("pods", "default", "p") is None


async def test_a_pod_replaced_under_the_same_name_is_not_deleted_by_the_old_timer(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    bound_pod(server)
    server.delete("pods", "default", "p", grace_period_seconds=0)
    server.create(make_pod("p"))
    server.kubelet.flush()
    assert server.try_get("pods", "default", "p") is not None


async def test_a_bound_pod_runs_after_the_start_delay(fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    pod = bound_pod(server)
    assert pod["status"]["phase"] == "Pending" and pod["spec"]["nodeName"] == "n1"
    server.kubelet.flush()
    assert server.get("pods", "default", "p")["status"]["phase"] == "Running"


async def test_a_pod_deleted_before_it_started_never_runs(fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory)
    bound_pod(server)
    server.delete("pods", "default", "p")
    server.kubelet.flush()
    assert server.try_get("pods", "default", "p") is None


async def test_the_instant_kubelet_is_the_default(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True)
    bound_pod(server)
    assert server.get("pods", "default", "p")["status"]["phase"] == "Running"
    server.delete("pods", "default", "p")
    assert server.try_get("pods", "default", "p") is None


@pytest.mark.parametrize("bad", [
    pytest.param({"stop": -1.0}, id="negative"),
    pytest.param({"start": (2.0, 1.0)}, id="reversed-range"),
    pytest.param({"watch_lag": -0.1}, id="negative-lag"),
])
def test_timing_refuses_impossible_delays(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Timing(**bad)


async def watch_events(server: FakeApiServer, count: int, started: asyncio.Event,
                       ) -> list[tuple[str, dict[str, Any], float]]:
    """The first ``count`` events of a pod watch from now on, with when each arrived."""
    async with RawClient(server.url) as api:
        rv = server.store.rv
        session = api.session
        async with session.get(f"{PODS}?watch=true&resourceVersion={rv}") as resp:
            started.set()
            seen = []
            async for line in resp.content:
                event = json.loads(line)
                seen.append((event["type"], event["object"], time.monotonic()))
                if len(seen) >= count:
                    return seen
    return seen


async def test_the_timer_fires_on_the_loop_and_watchers_see_the_deletion_late(
        fake_api_factory: ServerFactory) -> None:
    server = await slow_server(fake_api_factory, Timing(stop=0.05, watch_lag=0.2))
    bound_pod(server)
    started = asyncio.Event()
    watcher = asyncio.create_task(watch_events(server, 3, started))
    await started.wait()
    deleted = time.monotonic()
    server.delete("pods", "default", "p")
    seen = await asyncio.wait_for(watcher, timeout=10)
    assert seen[0][2] - deleted >= 0.2  # held back by the lag
    types = [t for t, _, _ in seen]
    # the DELETE, the kubelet's DELETE with grace 0, and the removal
    assert types == ["MODIFIED", "MODIFIED", "DELETED"]
    assert seen[0][1]["metadata"]["deletionGracePeriodSeconds"] == 30
    assert seen[1][1]["metadata"]["deletionGracePeriodSeconds"] == 0
    assert seen[2][1]["spec"]["nodeName"] == "n1"
    assert server.kubelet.errors == []
