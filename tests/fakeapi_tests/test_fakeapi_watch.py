"""Watch semantics: resume from resourceVersion, 410, selectors, bookmarks, timeouts."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.builders import make_configmap, make_namespace, make_pod
from fakeapi.client import RawClient
from fakeapi.fixtures import ServerFactory

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def _summary(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


async def test_watch_without_version_starts_with_synthetic_added(
        fake_api: FakeApiServer, api: RawClient) -> None:
    await api.post(CMS, make_configmap("a"))
    await api.post(CMS, make_configmap("b"))
    watcher = asyncio.create_task(api.watch(CMS, 4))
    async with asyncio.timeout(5):
        await fake_api.wait_for_watches(1)
    await api.post(CMS, make_configmap("c"))
    await api.patch(f"{CMS}/a", {"data": {"k": "v"}})
    events = await watcher
    assert _summary(events) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c"), ("MODIFIED", "a")]


async def test_watch_resumes_after_resource_version_across_reconnects(api: RawClient) -> None:
    _, first = await api.post(CMS, make_configmap("a"))
    rv = first["metadata"]["resourceVersion"]
    await api.patch(f"{CMS}/a", {"data": {"x": "1"}})
    await api.post(CMS, make_configmap("b"))
    await api.delete(f"{CMS}/a")
    events = await api.watch(CMS, 2, resourceVersion=rv)
    assert _summary(events) == [("MODIFIED", "a"), ("ADDED", "b")]
    rv = events[-1]["object"]["metadata"]["resourceVersion"]
    events = await api.watch(CMS, 1, resourceVersion=rv)  # "reconnect"
    assert _summary(events) == [("DELETED", "a")]
    deleted_rv = int(events[0]["object"]["metadata"]["resourceVersion"])
    assert deleted_rv > int(rv)  # a DELETED event carries the deletion's version


async def test_events_carry_increasing_versions(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("a"))
    for i in range(5):
        await api.patch(f"{CMS}/a", {"data": {"i": str(i)}})
    events = await api.watch(CMS, 5, resourceVersion=cm["metadata"]["resourceVersion"])
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and [e["object"]["data"]["i"] for e in events] == list("01234")


async def test_too_old_version_is_410_gone_error_event(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(history_limit=4)
    async with RawClient(server.url) as api:
        _, first = await api.post(CMS, make_configmap("c0"))
        for i in range(1, 20):
            await api.post(CMS, make_configmap(f"c{i}"))
        events = await api.watch(CMS, 1, resourceVersion=first["metadata"]["resourceVersion"])
        assert events[0]["type"] == "ERROR"
        status = events[0]["object"]
        assert status["kind"] == "Status" and status["code"] == 410
        assert status["reason"] == "Expired" and "too old resource version" in status["message"]
        _, page = await api.get(CMS)  # the usual recovery: re-list, watch from the list's rv
        await api.post(CMS, make_configmap("fresh"))
        events = await api.watch(CMS, 1, resourceVersion=page["metadata"]["resourceVersion"])
        assert _summary(events) == [("ADDED", "fresh")]


@pytest.mark.parametrize("version", ["", "0"])
async def test_empty_or_zero_version_lists_current_objects(api: RawClient, version: str) -> None:
    await api.post(CMS, make_configmap("a"))
    events = await api.watch(CMS, 1, resourceVersion=version)
    assert _summary(events) == [("ADDED", "a")]


async def test_label_selector_transitions(api: RawClient) -> None:
    _, base = await api.post(CMS, make_configmap("other", labels={"app": "no"}))
    rv = base["metadata"]["resourceVersion"]
    await api.post(CMS, make_configmap("a", labels={"app": "yes"}))
    await api.patch(f"{CMS}/a", {"data": {"k": "v"}})
    await api.patch(f"{CMS}/a", {"metadata": {"labels": {"app": "no"}}})   # leaves the selection
    await api.patch(f"{CMS}/other", {"data": {"k": "v"}})                   # never selected
    await api.patch(f"{CMS}/a", {"metadata": {"labels": {"app": "yes"}}})  # enters again
    await api.delete(f"{CMS}/a")
    events = await api.watch(CMS, 5, resourceVersion=rv, labelSelector="app=yes")
    assert _summary(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a"),
                                ("ADDED", "a"), ("DELETED", "a")]
    _, page = await api.get(CMS, labelSelector="app=no")
    assert [i["metadata"]["name"] for i in page["items"]] == ["other"]


async def test_field_selector_on_node_name_sees_binding_as_transition(
        fake_api: FakeApiServer, api: RawClient) -> None:
    _, pod = await api.post(PODS, make_pod("p"))
    rv = pod["metadata"]["resourceVersion"]
    fake_api.bind("default", "p", "n1")
    unbound = await api.watch("/api/v1/pods", 1, resourceVersion=rv, fieldSelector="spec.nodeName=")
    bound = await api.watch("/api/v1/pods", 1, resourceVersion=rv, fieldSelector="spec.nodeName=n1")
    assert _summary(unbound) == [("DELETED", "p")]
    assert _summary(bound) == [("ADDED", "p")]


@pytest.mark.parametrize("query, expected", [
    pytest.param({"labelSelector": "tier in (web,db)"}, ["web", "db"], id="in"),
    pytest.param({"labelSelector": "tier notin (web)"}, ["db", "bare"], id="notin"),
    pytest.param({"labelSelector": "tier!=db"}, ["web", "bare"], id="not-equal"),
    pytest.param({"labelSelector": "tier"}, ["web", "db"], id="exists"),
    pytest.param({"labelSelector": "!tier"}, ["bare"], id="not-exists"),
    pytest.param({"labelSelector": "tier==web"}, ["web"], id="double-equal"),
    pytest.param({"fieldSelector": "metadata.name!=web"}, ["db", "bare"], id="field-not"),
    pytest.param({"fieldSelector": "metadata.name==db"}, ["db"], id="field-eq"),
])
async def test_selectors_in_list_and_watch(api: RawClient, query: dict[str, str],
                                           expected: list[str]) -> None:
    await api.post(CMS, make_configmap("web", labels={"tier": "web"}))
    await api.post(CMS, make_configmap("db", labels={"tier": "db"}))
    await api.post(CMS, make_configmap("bare"))
    _, page = await api.get(CMS, **query)
    assert sorted(i["metadata"]["name"] for i in page["items"]) == sorted(expected)
    events = await api.watch(CMS, len(expected), resourceVersion="0", params=query)
    assert sorted(e["object"]["metadata"]["name"] for e in events) == sorted(expected)


async def test_namespaced_watch_ignores_other_namespaces(api: RawClient) -> None:
    await api.post("/api/v1/namespaces", make_namespace("other"))
    _, mark = await api.post(CMS, make_configmap("first"))
    rv = mark["metadata"]["resourceVersion"]
    await api.post("/api/v1/namespaces/other/configmaps", make_configmap("x", "other"))
    await api.post(CMS, make_configmap("y"))
    assert _summary(await api.watch(CMS, 1, resourceVersion=rv)) == [("ADDED", "y")]
    cluster = await api.watch("/api/v1/configmaps", 2, resourceVersion=rv)
    assert _summary(cluster) == [("ADDED", "x"), ("ADDED", "y")]


async def test_send_initial_events_ends_with_annotated_bookmark(api: RawClient) -> None:
    await api.post(CMS, make_configmap("a"))
    events = await api.watch(CMS, 2, sendInitialEvents="true", allowWatchBookmarks="true",
                             resourceVersionMatch="NotOlderThan")
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    mark = events[1]["object"]
    assert mark["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert mark["kind"] == "ConfigMap" and int(mark["metadata"]["resourceVersion"]) > 0


async def test_idle_watch_sends_bookmarks(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(bookmark_interval=0.05)
    async with RawClient(server.url) as api:
        _, page = await api.get(CMS)
        events = await api.watch(CMS, 2, allowWatchBookmarks="true",
                                 resourceVersion=page["metadata"]["resourceVersion"])
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert set(events[0]["object"]) == {"kind", "apiVersion", "metadata"}


async def test_timeout_seconds_ends_the_stream(api: RawClient) -> None:
    events = await api.watch(CMS, None, timeoutSeconds="0.2", resourceVersion="1")
    assert events == []


async def test_live_events_reach_many_watchers(fake_api: FakeApiServer, api: RawClient) -> None:
    _, page = await api.get(CMS)
    rv = page["metadata"]["resourceVersion"]
    watchers = [asyncio.create_task(api.watch(CMS, 3, resourceVersion=rv)) for _ in range(10)]
    for name in ("a", "b", "c"):
        await api.post(CMS, make_configmap(name))
    results = await asyncio.gather(*watchers)
    assert all(_summary(r) == [("ADDED", n) for n in "abc"] for r in results)


async def test_stopping_the_server_ends_watches(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory()
    async with RawClient(server.url) as api:
        watcher = asyncio.create_task(api.watch(CMS, None, resourceVersion="1"))
        async with asyncio.timeout(5):
            await server.wait_for_watches(1)
        await server.stop()
        assert await watcher == []


async def test_compaction_expires_continue_tokens_as_etcd_does(
        fake_api: FakeApiServer, api: RawClient) -> None:
    """A ``continue`` token of a snapshot older than the compaction: 410 ``Expired`` with
    etcd3 storage's message, and an inconsistent token in the Status that resumes at the
    same place against the current state."""
    for name in ("a", "b", "c"):
        await api.post(CMS, make_configmap(name))
    _, first = await api.get(CMS, limit="1")
    assert [i["metadata"]["name"] for i in first["items"]] == ["a"]
    await api.post(CMS, make_configmap("d"))
    fake_api.compact()
    code, status = await api.get(CMS, limit="1", **{"continue": first["metadata"]["continue"]})
    assert code == 410
    assert status["kind"] == "Status" and status["reason"] == "Expired"
    assert status["message"].startswith(
        "The provided continue parameter is too old to display a consistent list result.")
    _, rest = await api.get(CMS, **{"continue": status["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in rest["items"]] == ["b", "c", "d"]


async def test_compaction_expires_older_watch_versions(
        fake_api: FakeApiServer, api: RawClient) -> None:
    _, first = await api.post(CMS, make_configmap("a"))
    await api.post(CMS, make_configmap("b"))
    fake_api.compact()
    events = await api.watch(CMS, 1, resourceVersion=first["metadata"]["resourceVersion"])
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    _, page = await api.get(CMS)
    await api.post(CMS, make_configmap("c"))
    events = await api.watch(CMS, 1, resourceVersion=page["metadata"]["resourceVersion"])
    assert _summary(events) == [("ADDED", "c")]


@pytest.mark.parametrize("code, reason, message", [
    pytest.param(410, "Expired", "too old resource version: 7 (", id="410"),
    pytest.param(500, "InternalError", "injected fault", id="500"),
])
async def test_in_stream_fault_is_one_error_event_with_a_status(
        fake_api: FakeApiServer, api: RawClient, code: int, reason: str, message: str) -> None:
    fake_api.faults.add(method="GET", path_regex=r"watch=true", status=code, in_stream=True,
                        times=1)
    events = await api.watch(CMS, resourceVersion="7")
    assert [e["type"] for e in events] == ["ERROR"]
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", code, reason)
    assert message in status["message"]


async def test_pages_follow_each_other_without_gaps_or_repeats(api: RawClient) -> None:
    names = [f"c{i:02}" for i in range(23)]
    for name in reversed(names):
        await api.post(CMS, make_configmap(name))
    seen: list[str] = []
    token = ""
    remaining = []
    while True:
        params = {"limit": "5", **({"continue": token} if token else {})}
        _, page = await api.get(CMS, **params)
        seen += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue", "")
        if not token:
            break
        remaining.append(page["metadata"]["remainingItemCount"])
    assert seen == names
    assert remaining == [18, 13, 8, 3]


async def test_cluster_wide_pages_across_namespaces_with_changes_between(
        fake_api: FakeApiServer, api: RawClient) -> None:
    """Pages resume after the last key of the previous page, across namespaces, whatever
    was created or deleted in between (as an etcd range over the current state)."""
    for ns in ("b", "a", "c"):
        await api.post("/api/v1/namespaces", make_namespace(ns))
        for i in range(3):
            await api.post(f"/api/v1/namespaces/{ns}/configmaps",
                           make_configmap(f"m{i}", namespace=ns))
    _, first = await api.get("/api/v1/configmaps", limit="4")
    keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in first["items"]]
    assert keys == [("a", "m0"), ("a", "m1"), ("a", "m2"), ("b", "m0")]
    assert first["metadata"]["remainingItemCount"] == 5
    await api.delete("/api/v1/namespaces/b/configmaps/m1")
    await api.post("/api/v1/namespaces/a/configmaps", make_configmap("m9", namespace="a"))
    await api.post("/api/v1/namespaces/c/configmaps", make_configmap("m5", namespace="c"))
    _, rest = await api.get("/api/v1/configmaps", **{"continue": first["metadata"]["continue"]})
    keys = [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in rest["items"]]
    assert keys == [("b", "m2"), ("c", "m0"), ("c", "m1"), ("c", "m2"), ("c", "m5")]
