"""Lists asked for ahead of their reader: same pages, same errors, once, bounded.

:class:`~gangsched.shell.prefetch.ReadAhead` on its own, then
:meth:`KubeClient.prefetch <gangsched.shell.client.KubeClient.prefetch>` against the fake
API server (the operator's start-up: ``test_shell_startup.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from fakeapi import FakeApiServer
from gangsched.shell.client import ApiError, Connection, KubeClient
from gangsched.shell.prefetch import ReadAhead
from shellkit import pod, wait_for

PODS = "/api/v1/pods"


async def counting(produced: list[int], count: int,
                   fail_at: int | None = None) -> AsyncGenerator[int, None]:
    """0, 1, ... ``count - 1``, noting each in ``produced`` as it is made; raises an
    ApiError instead of item ``fail_at``."""
    for i in range(count):
        if i == fail_at:
            raise ApiError(410, "Expired", "continue expired")
        produced.append(i)
        yield i
        await asyncio.sleep(0)


async def drain(items: AsyncIterator[int]) -> list[int]:
    return [i async for i in items]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_read_ahead_gives_every_item_in_order() -> None:
    produced: list[int] = []
    ahead = ReadAhead(counting(produced, 10), ahead=3)
    assert await drain(ahead.items()) == list(range(10))


async def test_read_ahead_raises_where_the_source_did() -> None:
    got: list[int] = []
    ahead = ReadAhead(counting([], 10, fail_at=4), ahead=8)
    with pytest.raises(ApiError) as raised:
        async for i in ahead.items():
            got.append(i)
    assert got == [0, 1, 2, 3]
    assert raised.value.code == 410


async def test_read_ahead_stays_within_its_bound_until_read() -> None:
    """Unread, it holds ``ahead`` items (and the one it waits to hand over)."""
    produced: list[int] = []
    ahead = ReadAhead(counting(produced, 100), ahead=3)
    await settle()
    assert len(produced) == 4
    items = ahead.items()
    assert await anext(items) == 0
    await settle()
    assert len(produced) == 5
    ahead.cancel()


async def test_a_cancelled_read_ahead_reads_no_more() -> None:
    produced: list[int] = []
    ahead = ReadAhead(counting(produced, 100), ahead=2)
    await settle()
    ahead.cancel()
    before = len(produced)
    await settle()
    assert len(produced) == before < 100


# --- the client ----------------------------------------------------------------------------


@pytest.fixture
async def api(fake_api_factory) -> FakeApiServer:  # type: ignore[no-untyped-def]
    server: FakeApiServer = await fake_api_factory()
    server.log_requests = True
    return server


@pytest.fixture
async def client(api: FakeApiServer) -> AsyncIterator[KubeClient]:
    async with KubeClient(Connection(host=api.url)) as kube:
        yield kube


def lists_of(api: FakeApiServer, path: str) -> list[dict[str, str]]:
    """The query of every list request (not watch) to ``path``, in order."""
    found = []
    for entry in api.request_log:
        url = urlsplit(entry.path_qs)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == path and query.get("watch") != "true":
            found.append(query)
    return found


def names(items: list[Any]) -> list[str]:
    return [str(obj["metadata"]["name"]) for obj in items]


async def test_a_prefetched_list_is_read_once_as_if_asked_then(api: FakeApiServer,
                                                               client: KubeClient) -> None:
    """The pages are asked for once, when prefetched; the list then read is the list as
    it was then (a pod made since is not in it); the next list asks afresh."""
    for i in range(5):
        api.create(pod(f"p-{i}"))
    client.prefetch(PODS, page=2, ahead=8)
    await wait_for(lambda: len(lists_of(api, PODS)) == 3, what="all three pages asked for")
    api.create(pod("late"))
    items, _ = await client.list(PODS, page=2)
    assert names(items) == [f"p-{i}" for i in range(5)]
    assert len(lists_of(api, PODS)) == 3
    again, _ = await client.list(PODS, page=2)
    assert "late" in names(again)
    assert len(lists_of(api, PODS)) == 6


async def test_a_prefetch_is_for_its_page_size_only(api: FakeApiServer,
                                                    client: KubeClient) -> None:
    api.create(pod("a"))
    client.prefetch(PODS, page=2)
    items, _ = await client.list(PODS, page=500)
    assert names(items) == ["a"]
    assert sorted(q.get("limit", "") for q in lists_of(api, PODS)) == ["2", "500"]


async def test_an_error_of_a_prefetched_list_comes_to_its_reader(api: FakeApiServer,
                                                                 client: KubeClient) -> None:
    api.create(pod("a"))
    api.faults.add(method="GET", path_regex=r"^/api/v1/pods\?limit", status=503, times=1)
    client.prefetch(PODS)
    with pytest.raises(ApiError) as raised:
        await client.list(PODS)
    assert raised.value.code == 503
    items, _ = await client.list(PODS)
    assert names(items) == ["a"]


async def test_a_prefetch_nobody_reads_is_dropped(api: FakeApiServer,
                                                  client: KubeClient) -> None:
    api.create(pod("a"))
    client.prefetch(PODS, keep=0.05)
    await asyncio.sleep(0.2)
    api.create(pod("b"))
    items, _ = await client.list(PODS)
    assert names(items) == ["a", "b"]
    assert len(lists_of(api, PODS)) == 2
