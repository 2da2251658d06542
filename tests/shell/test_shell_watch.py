"""Watch semantics of the reflector and of the operator that feeds the core from it.

Against the fake API server at the HTTP level: a relist diffs by UID (vanished objects
are DELETED, a re-created one never loses its fresh self), only a 410 relists, any
other watch error watches again from the last resourceVersion, an expired ``continue``
starts the list over, lists hand their pages over one at a time, and the operator's
core never keeps an Application, PodGroup or Queue that is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fakeapi import FakeApiServer
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.watch import Backoff, Reflector
from shellkit import FakeClock, OperatorUnderTest, application, group, new_cluster, pod, wait_for

pytestmark = pytest.mark.asyncio

PODS = "/api/v1/pods"
POD_WATCH = r"^/api/v1/pods\?.*watch=true"


class Consumer:
    """Keyed by name, as the core is for Applications, PodGroups, Queues and nodes."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.by_name: dict[str, str] = {}
        self.ticks: list[int] = []
        self.clock = 0

    def __call__(self, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name, uid = str(meta.get("name")), str(meta.get("uid"))
        self.seen.append((kind, name, uid))
        self.ticks.append(self.clock)
        if kind == "DELETED":
            self.by_name.pop(name, None)
        else:
            self.by_name[name] = uid


@pytest.fixture
async def api(fake_api_factory) -> FakeApiServer:  # type: ignore[no-untyped-def]
    server: FakeApiServer = await fake_api_factory()
    server.log_requests = True
    return server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[KubeClient]:
    async with KubeClient(Connection(host=api.url)) as kube:
        yield kube


def uid_of(api: FakeApiServer, name: str) -> str:
    return str(api.get("pods", "default", name)["metadata"]["uid"])


def requests_to(api: FakeApiServer, path: str, *, watch: bool) -> list[tuple[dict[str, str], int]]:
    """(query, HTTP status) of every list (or watch) request to ``path``, in order."""
    found = []
    for entry in api.request_log:
        url = urlsplit(entry.path_qs)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == path and (query.get("watch") == "true") is watch:
            found.append((query, entry.status))
    return found


@contextlib.asynccontextmanager
async def running(reflector: Reflector) -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    task = asyncio.create_task(reflector.run(stop))
    try:
        yield stop
    finally:
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def reflector(client: KubeClient, consumer: Consumer, **options: Any) -> Reflector:
    options.setdefault("backoff_initial", 0.01)
    options.setdefault("backoff_max", 0.05)
    return Reflector(client, PODS, consumer, name="pods", **options)


def delays_of(r: Reflector) -> list[float]:
    """The backoff delays ``r`` takes from now on, in order."""
    taken: list[float] = []
    original = r.backoff.next

    def next_delay() -> float:
        taken.append(original())
        return taken[-1]

    r.backoff.next = next_delay  # type: ignore[method-assign]
    return taken


async def test_relist_reports_a_recreated_object_after_its_predecessor(api, client) -> None:  # type: ignore[no-untyped-def]
    """Deleted and re-created under its name while the watch was down (history compacted):
    the relist says DELETED for the old UID first, so a consumer keyed by name keeps the
    new one. A pod deleted meanwhile is DELETED; one unchanged is not."""
    for name in ("a", "b", "c"):
        api.create(pod(name))
    consumer = Consumer()
    r = reflector(client, consumer)
    await r.list()
    old_a = uid_of(api, "a")
    api.delete("pods", "default", "a")
    api.create(pod("a"))
    api.delete("pods", "default", "b")
    api.compact()
    consumer.seen.clear()
    async with running(r):
        await wait_for(lambda: r.lists == 2, what="the relist after 410")
    new_a = uid_of(api, "a")
    assert consumer.by_name == {"a": new_a, "c": uid_of(api, "c")}
    assert consumer.seen.index(("DELETED", "a", old_a)) < consumer.seen.index(
        ("ADDED", "a", new_a))
    assert [e for e in consumer.seen if e[0] == "DELETED"] == [
        ("DELETED", "a", old_a), ("DELETED", "b", consumer.seen[-1][2])]


async def test_an_object_we_created_is_reported_gone_by_a_relist(api, client) -> None:  # type: ignore[no-untyped-def]
    """Created by us (noted from the create's answer), deleted before its watch event
    reached us: the relist still reports it DELETED."""
    consumer = Consumer()
    r = reflector(client, consumer)
    await r.list()
    created = api.create(pod("ours"))
    r.observed(created)
    consumer("ADDED", created)
    api.delete("pods", "default", "ours")
    api.compact()
    async with running(r):
        await wait_for(lambda: r.lists == 2, what="the relist after 410")
    assert consumer.by_name == {}
    assert consumer.seen[-1] == ("DELETED", "ours", created["metadata"]["uid"])


@pytest.mark.parametrize("slice_size", [1, 2, 20_000])
async def test_a_relist_reports_what_went_when_as_many_came(  # type: ignore[no-untyped-def]
        api, client, monkeypatch: pytest.MonkeyPatch, slice_size: int) -> None:
    """The relist finds vanished objects by comparing what it listed with what it knew
    (in slices between yields): as many pods created as deleted since still reports
    every deleted one, in the order they were first seen, and nothing else."""
    monkeypatch.setattr("gangsched.shell.watch.VANISHED_SLICE", slice_size)
    for name in ("a", "b", "c", "d", "e"):
        api.create(pod(name))
    consumer = Consumer()
    r = reflector(client, consumer)
    await r.list()
    gone = {name: uid_of(api, name) for name in ("b", "d", "e")}
    for name in gone:
        api.delete("pods", "default", name)
    for name in ("f", "g", "h"):
        api.create(pod(name))
    api.compact()
    consumer.seen.clear()
    async with running(r):
        await wait_for(lambda: r.lists == 2, what="the relist after 410")
    assert [e for e in consumer.seen if e[0] == "DELETED"] == [
        ("DELETED", name, uid) for name, uid in gone.items()]
    assert sorted(consumer.by_name) == ["a", "c", "f", "g", "h"]
    assert len(r.known) == 5


@pytest.mark.parametrize("fault", [
    pytest.param({"status": 429}, id="429"),
    pytest.param({"status": 500}, id="500"),
    pytest.param({"status": 503, "retry_after": 1}, id="503"),
    pytest.param({"status": 504}, id="504"),
    pytest.param({"drop_connection": True}, id="connection-dropped"),
    pytest.param({"status": 500, "in_stream": True}, id="error-event-500"),
])
async def test_watch_errors_other_than_410_watch_again_without_listing(  # type: ignore[no-untyped-def]
        api, client, fault: dict[str, Any]) -> None:
    api.create(pod("a"))
    consumer = Consumer()
    r = reflector(client, consumer)
    await r.list()
    listed_at = r.resource_version
    delays = delays_of(r)
    rule = api.faults.add(method="GET", path_regex=POD_WATCH, times=2, **fault)
    api.create(pod("b"))
    async with running(r):
        await wait_for(lambda: "b" in consumer.by_name, what="the pod created meanwhile")
    assert rule.hits == 2
    assert r.lists == 1
    assert len(requests_to(api, PODS, watch=False)) == 1
    failed = requests_to(api, PODS, watch=True)  # the stream that works is still open
    assert [query["resourceVersion"] for query, _ in failed] == [listed_at] * 2
    # Each failure waited before watching again, longer each time (aiohttp itself sends
    # a GET again once when a kept-alive connection drops: then one failure reaches us).
    assert delays[:2] == ([0.01] if fault.get("drop_connection") else [0.01, 0.02])


async def test_a_bookmark_moves_a_filtered_watch_past_events_it_never_saw(  # type: ignore[no-untyped-def]
        fake_api_factory) -> None:
    """As client-go's reflector: a watch that filters (a label selector) sees no event of
    the pods it leaves out, so its resourceVersion stays where it was while theirs push
    the server's history past it; a BOOKMARK carries the server's current version, and
    the next watch starts there instead of getting 410 and listing everything again."""
    api = await fake_api_factory(history_limit=4, bookmark_interval=0.05)
    api.log_requests = True
    mine = pod("mine")
    mine["metadata"]["labels"] = {"app": "mine"}
    api.create(mine)
    consumer = Consumer()
    async with KubeClient(Connection(host=api.url)) as client:
        r = reflector(client, consumer, params={"labelSelector": "app=mine"},
                      timeout_seconds=1)
        await r.list()
        listed_at = int(r.resource_version)
        async with running(r):
            await api.wait_for_watches(1)
            for i in range(12):  # others' events: the history keeps the last 4 or so
                api.create(pod(f"other-{i}"))
                await asyncio.sleep(0.01)  # the stream keeps up (else it is 410 at once)
            await wait_for(lambda: len(requests_to(api, PODS, watch=True)) >= 2,
                           what="the watch ended by its timeout and started again", timeout=10)
    watches = [int(query["resourceVersion"]) for query, _ in requests_to(api, PODS, watch=True)]
    assert watches[0] == listed_at
    assert watches[1] >= listed_at + 12  # a bookmark's version, past the others' events
    assert r.lists == 1 and len(requests_to(api, PODS, watch=False)) == 1
    assert [name for _, name, _ in consumer.seen] == ["mine"]


@pytest.mark.parametrize("fault", [
    pytest.param({"status": 410}, id="http-410"),
    pytest.param({"status": 410, "in_stream": True}, id="error-event-410"),
])
async def test_410_lists_again(api, client, fault: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    api.create(pod("a"))
    consumer = Consumer()
    r = reflector(client, consumer)
    await r.list()
    api.faults.add(method="GET", path_regex=POD_WATCH, times=1, **fault)
    api.create(pod("b"))
    async with running(r):
        await wait_for(lambda: r.lists == 2 and "b" in consumer.by_name, what="relist")
    assert len(requests_to(api, PODS, watch=False)) == 2


async def test_an_expired_continue_starts_the_list_over(api, client) -> None:  # type: ignore[no-untyped-def]
    """etcd compacts between two pages: the next page is 410 Expired, and the list starts
    again from the first page (without the token), reporting everything."""
    for i in range(5):
        api.create(pod(f"p-{i}"))
    consumer = Consumer()

    def compact_once(kind: str, obj: Mapping[str, Any]) -> None:
        consumer(kind, obj)
        if len(consumer.seen) == 1:
            api.create(pod("late"))
            api.compact()

    r = Reflector(client, PODS, compact_once, page=2, backoff_initial=0.01)
    delays = delays_of(r)
    await r.list()
    assert (r.restarts, delays) == (1, [0.01])  # listed again after a backoff
    assert sorted(consumer.by_name) == ["late", "p-0", "p-1", "p-2", "p-3", "p-4"]
    lists = requests_to(api, PODS, watch=False)
    assert [("continue" in query, status) for query, status in lists[:3]] == [
        (False, 200), (True, 410), (False, 200)]
    assert r.resource_version == str(api.store.rv)


async def test_list_errors_other_than_an_expired_continue_are_raised(api, client) -> None:  # type: ignore[no-untyped-def]
    api.faults.add(method="GET", path_regex=r"^/api/v1/pods\?limit", status=410, times=1)
    r = reflector(client, Consumer())
    with pytest.raises(Exception, match="410"):
        await r.list()
    assert r.restarts == 0


async def test_a_list_hands_over_page_by_page(api, client) -> None:  # type: ignore[no-untyped-def]
    """The loop runs between pages: a ticking task advances while a list is taken."""
    for i in range(6):
        api.create(pod(f"p-{i}"))
    consumer = Consumer()

    async def tick() -> None:
        while True:
            consumer.clock += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    try:
        await Reflector(client, PODS, consumer, page=2).list()
    finally:
        ticker.cancel()
    pages = [consumer.ticks[i:i + 2] for i in range(0, 6, 2)]
    assert all(page[0] == page[1] for page in pages)
    assert pages[0][0] < pages[1][0] < pages[2][0]


@pytest.mark.parametrize("failures, delays", [
    pytest.param(4, [0.5, 1.0, 2.0, 4.0], id="doubles"),
    pytest.param(8, [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0, 5.0], id="capped"),
])
async def test_backoff(failures: int, delays: list[float]) -> None:
    backoff = Backoff(0.5, 5.0)
    assert [backoff.next() for _ in range(failures)] == delays
    backoff.reset()
    assert backoff.next() == 0.5


# --- the operator ------------------------------------------------------------------------


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=1, cpu="8", memory="32Gi")


def queue(name: str) -> dict[str, Any]:
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": name}, "spec": {}}


def podgroup(name: str) -> dict[str, Any]:
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 2, "queue": "default"}}


KINDS = {
    "applications": (lambda: application("gang", [group("workers", 2, cpu="6")]),
                     lambda core: core.apps, "default/gang", "default"),
    "podgroups": (lambda: podgroup("gang"), lambda core: core.groups, "default/gang", "default"),
    "queues": (lambda: queue("gang"), lambda core: core.queues.specs, "gang", None),
}


async def _while_the_watch_is_down(api: FakeApiServer, plural: str) -> Any:
    rule = api.faults.add(method="GET", path_regex=rf"/{plural}\?.*watch=true", status=503)
    await wait_for(lambda: rule.hits >= 1, what=f"the {plural} watch to be down")
    return rule


@pytest.mark.parametrize("plural", list(KINDS))
@pytest.mark.parametrize("recreated", [pytest.param(False, id="deleted"),
                                       pytest.param(True, id="recreated")])
async def test_a_custom_resource_deleted_during_a_relist_leaves_the_core(  # type: ignore[no-untyped-def]
        cluster, plural: str, recreated: bool) -> None:
    """Deleted (or deleted and re-created) while the operator's watch was down and the
    history compacted: the relist tells the core, which keeps no phantom and loses no
    fresh object."""
    api, kubeconfig = cluster
    make, core_objects, key, namespace = KINDS[plural]
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), watch_timeout=1,
                                 api_retry_initial=0.01, api_retry_max=0.05).start()
    try:
        runtime = op.runtime
        assert runtime is not None
        api.create(make())
        await wait_for(lambda: key in core_objects(runtime.scheduler), what="observed")
        rule = await _while_the_watch_is_down(api, plural)
        name = key.rpartition("/")[2]
        api.delete(plural, namespace, name)
        fresh = api.create(make())["metadata"]["uid"] if recreated else None
        api.compact()
        api.faults.rules.remove(rule)
        if fresh is None:
            await wait_for(lambda: key not in core_objects(runtime.scheduler),
                           what="the deletion to reach the core")
        else:
            reflector = next(r for r in runtime.cr_watches if r.name == plural)
            await wait_for(lambda: reflector.lists >= 2, what="the relist")
            await op.settle()
            assert key in core_objects(runtime.scheduler)
            known = runtime.apps if plural == "applications" else (
                runtime.groups if plural == "podgroups" else runtime.queues)
            assert known[key]["metadata"]["uid"] == fresh
    finally:
        await op.kill()


async def test_a_finished_pod_in_no_gang_is_not_kept(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        runtime = op.runtime
        assert runtime is not None
        api.create(pod("done"))
        await wait_for(lambda: api.get("pods", "default", "done")["spec"].get("nodeName"),
                       what="bound")
        uid = api.get("pods", "default", "done")["metadata"]["uid"]
        api.finish_pod("default", "done")
        await wait_for(lambda: uid not in runtime.scheduler.pods, what="forgotten")
        assert uid not in runtime.pod_translations._last
    finally:
        await op.kill()
