"""A minimal raw-HTTP client for tests: JSON in, ``(status, body)`` out, and watches.

Deliberately thin (plain aiohttp), so tests see exactly what the server sends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp

Obj = dict[str, Any]


class RawClient:
    def __init__(self, url: str) -> None:
        self.session = aiohttp.ClientSession(url)

    async def close(self) -> None:
        await self.session.close()

    async def __aenter__(self) -> RawClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json",
                      params: dict[str, str] | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body)
        async with self.session.request(method, path, data=data, params=params,
                                        headers={"Content-Type": content_type}) as resp:
            text = await resp.text()
            try:
                return resp.status, json.loads(text)
            except ValueError:
                return resp.status, text

    async def get(self, path: str, **params: str) -> tuple[int, Any]:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("POST", path, body)

    async def put(self, path: str, body: Any) -> tuple[int, Any]:
        return await self.request("PUT", path, body)

    async def patch(self, path: str, body: Any,
                    content_type: str = "application/merge-patch+json") -> tuple[int, Any]:
        return await self.request("PATCH", path, body, content_type=content_type)

    async def delete(self, path: str, body: Any = None) -> tuple[int, Any]:
        return await self.request("DELETE", path, body)

    async def watch(self, path: str, count: int | None = None, *, timeout: float = 5.0,
                    until: Callable[[Obj], bool] | None = None,
                    params: Mapping[str, str] | None = None, **more: str) -> list[Obj]:
        """Read watch events until ``count`` arrived, an event satisfies ``until``,
        or the server ended the stream.

        Fails with ``TimeoutError`` after ``timeout`` seconds: no sleeping, no polling.
        """
        events: list[Obj] = []
        query = {"watch": "true", **(params or {}), **more}
        async with asyncio.timeout(timeout), self.session.get(path, params=query) as resp:
            assert resp.status == 200, await resp.text()
            async for line in resp.content:
                if line.strip():
                    events.append(json.loads(line))
                if count is not None and len(events) >= count:
                    break
                if until is not None and events and until(events[-1]):
                    break
        return events
