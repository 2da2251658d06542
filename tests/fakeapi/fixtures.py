"""Pytest fixtures for the fake API server (registered from ``tests/conftest.py``).

* ``fake_api`` — a started :class:`~fakeapi.server.FakeApiServer` with default
  options, stopped after the test.
* ``fake_api_factory`` — ``await fake_api_factory(history_limit=5, auto_run=True)``
  starts more servers with other options; all are stopped after the test, which fails
  if a timer of their fake kubelet raised.
* ``fake_kubeconfig`` — a kubeconfig for ``fake_api`` in ``tmp_path``; also sets
  ``KUBECONFIG`` for the test, so clients that read the environment find it.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio

from fakeapi.server import FakeApiServer

ServerFactory = Callable[..., Awaitable[FakeApiServer]]


@pytest_asyncio.fixture
async def fake_api_factory() -> AsyncIterator[ServerFactory]:
    servers: list[FakeApiServer] = []

    async def make(**options: Any) -> FakeApiServer:
        server = FakeApiServer(**options)
        await server.start()
        servers.append(server)
        return server

    yield make
    for server in reversed(servers):
        await server.stop()
    failed = [e for server in servers for e in server.kubelet.errors]
    assert not failed, f"the fake kubelet's timers failed: {failed!r}"


@pytest_asyncio.fixture
async def fake_api(fake_api_factory: ServerFactory) -> FakeApiServer:
    return await fake_api_factory()


@pytest.fixture
def fake_kubeconfig(
    fake_api: FakeApiServer, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> pathlib.Path:
    path = fake_api.write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path
