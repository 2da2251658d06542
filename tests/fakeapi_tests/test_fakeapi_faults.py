"""Fault injection, request counters and the request log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.builders import make_configmap, make_pod
from fakeapi.client import RawClient
from fakeapi.fixtures import ServerFactory

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


@pytest.mark.parametrize("code, reason", [
    pytest.param(500, "InternalError", id="500"),
    pytest.param(503, "ServiceUnavailable", id="503"),
    pytest.param(409, "Conflict", id="409"),
    pytest.param(429, "TooManyRequests", id="429"),
    pytest.param(504, "Timeout", id="504"),
])
async def test_status_faults_are_consumed_by_count(fake_api: FakeApiServer, api: RawClient,
                                                   code: int, reason: str) -> None:
    rule = fake_api.faults.add(method="POST", path_regex=r"/configmaps$", status=code, times=2)
    results = [(await api.post(CMS, make_configmap(f"c{i}")))[0] for i in range(3)]
    assert results == [code, code, 201]
    assert rule.hits == 2 and rule.exhausted
    assert (await api.post(CMS, make_configmap("c0")))[0] == 201  # faulted: never created
    fake_api.faults.add(status=code, times=1)
    status, body = await api.get(CMS)
    assert status == code and body["kind"] == "Status" and body["reason"] == reason


async def test_429_carries_retry_after(fake_api: FakeApiServer) -> None:
    fake_api.faults.add(status=429, times=1, retry_after=3)
    async with aiohttp.ClientSession(fake_api.url) as session, session.get(CMS) as resp:
        body = await resp.json()
        assert resp.status == 429 and resp.headers["Retry-After"] == "3"
        assert body["details"]["retryAfterSeconds"] == 3


async def test_rules_match_method_and_path_in_order(fake_api: FakeApiServer,
                                                    api: RawClient) -> None:
    fake_api.faults.add(method="GET", path_regex="pods", status=500)
    fake_api.faults.add(path_regex="pods", status=503)
    assert (await api.get(PODS))[0] == 500
    assert (await api.post(PODS, make_pod("p")))[0] == 503
    assert (await api.get(CMS))[0] == 200
    fake_api.faults.clear()
    assert (await api.get(PODS))[0] == 200


async def test_query_is_part_of_the_matched_path(fake_api: FakeApiServer,
                                                 api: RawClient) -> None:
    fake_api.faults.add(path_regex=r"watch=true", status=500, times=1)
    assert (await api.get(PODS))[0] == 200
    status, _ = await api.request("GET", PODS, params={"watch": "true"})
    assert status == 500


async def test_delay_makes_clients_time_out(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.faults.add(path_regex="configmaps", delay=5.0, times=1)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await api.get(CMS)
    assert (await api.get(CMS))[0] == 200


async def test_delay_only_rule_lets_the_request_through(fake_api: FakeApiServer,
                                                        api: RawClient) -> None:
    rule = fake_api.faults.add(path_regex="configmaps", delay=0.01, times=1)
    assert (await api.post(CMS, make_configmap("c")))[0] == 201
    assert rule.hits == 1


async def test_dropped_connection(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.faults.add(method="POST", drop_connection=True, times=1)
    with pytest.raises(aiohttp.ClientConnectionError):
        await api.post(CMS, make_configmap("c"))
    assert (await api.post(CMS, make_configmap("c")))[0] == 201


async def test_latency_applies_to_every_request(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.faults.latency = 5.0
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await api.get(CMS)
    fake_api.faults.latency = 0.0
    assert (await api.get(CMS))[0] == 200


async def test_request_counters_and_log(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.log_requests = True
    await api.post(PODS, make_pod("p"))
    await api.post(f"{PODS}/p/binding", {"metadata": {"name": "p"}, "target": {"name": "n"}})
    await api.get(PODS)
    await api.get(f"{PODS}/p")
    await api.patch(f"{PODS}/p/status", {"status": {"phase": "Running"}})
    await api.watch(PODS, 1, resourceVersion="0")
    assert fake_api.requests[("create", "pods", "")] == 1
    assert fake_api.request_count("create", "pods", "binding") == 1
    assert fake_api.request_count("list", "pods") == 1
    assert fake_api.request_count("get", "pods") == 1
    assert fake_api.request_count("patch", "pods", "status") == 1
    assert fake_api.request_count("watch", "pods") == 1
    logged = [(r.method, r.status) for r in fake_api.request_log]
    assert logged[:5] == [("POST", 201), ("POST", 201), ("GET", 200), ("GET", 200),
                          ("PATCH", 200)]
    assert fake_api.request_log[1].path_qs.endswith("/pods/p/binding")


async def test_request_log_is_bounded(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(request_log_limit=3)
    server.log_requests = True
    async with RawClient(server.url) as api:
        for _ in range(5):
            await api.get(CMS)
    assert len(server.request_log) == 3
    assert server.internal_errors == []


async def test_a_probable_fault_fires_on_about_that_share(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(seed=7)
    rule = server.faults.add(method="GET", status=500, probability=0.25)
    async with RawClient(server.url) as client:
        codes = [(await client.get(f"{CMS}/missing"))[0] for _ in range(200)]
    assert codes.count(500) == rule.hits
    assert 25 <= rule.hits <= 75  # 50 expected; the seed makes it reproducible
    assert set(codes) == {404, 500}


async def test_a_spared_request_goes_on_to_the_next_rule(fake_api: FakeApiServer,
                                                         api: RawClient) -> None:
    never = fake_api.faults.add(status=500, probability=0.0)
    then = fake_api.faults.add(status=503, times=1)
    assert (await api.get(f"{CMS}/missing"))[0] == 503
    assert (never.hits, then.hits) == (0, 1)


async def test_a_lost_answer_still_did_the_write(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.faults.add(method="POST", lose_answer=True, times=1)
    with pytest.raises(aiohttp.ClientError):
        await api.post(CMS, make_configmap("c"))
    assert fake_api.try_get("configmaps", "default", "c") is not None
    status, err = await api.post(CMS, make_configmap("c"))
    assert status == 409 and err["reason"] == "AlreadyExists"


def test_a_probability_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError):
        FakeApiServer().faults.add(probability=1.5)
