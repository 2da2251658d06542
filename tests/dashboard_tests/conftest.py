"""The dashboard's tests: the operator on the fake API server, and one headless Chromium.

The browser is Chromium from the distribution's packages (``scripts/install-chromium.sh``),
driven by Playwright's synchronous API on a thread of its own: the operator and the fake
API server run on the test's event loop, which stays free while the browser works. One
browser serves the whole module (a fresh profile, closed at the end).

Without Chromium (or Playwright) the browser tests are skipped with the reason, except
under CI (``CI=true``), where they fail: CI installs what they need itself.

As in ``tests/shell``, every API call the operator makes while the dashboard is served
must be one its RBAC grants: the dashboard reads nothing of its own.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import pytest_asyncio
from dashboard_browser import Browser, chromium, missing
from fakeapi import FakeApiServer
from gangsched.shell import permissions

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "shell"))  # shellkit



@pytest_asyncio.fixture
async def fake_api_factory(
        fake_api_factory: Callable[..., Awaitable[FakeApiServer]],
) -> AsyncIterator[Callable[..., Awaitable[FakeApiServer]]]:
    servers: list[FakeApiServer] = []

    async def make(**options: Any) -> FakeApiServer:
        server = await fake_api_factory(**options)
        servers.append(server)
        return server

    yield make
    calls = {(group, resource, verb) for server in servers
             for (client, group, resource, verb) in server.audit
             if client in ("gangsched", "kopf")}
    granted = {(p.group, p.resource, p.verb) for p in permissions.NEEDED}
    assert not sorted(calls - granted), "API calls the operator's RBAC does not grant"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = chromium()
    if executable is None:
        missing("no Chromium found (GANGSCHED_CHROMIUM, chromium, /usr/bin/chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("the playwright package is not installed (pip install -e '.[dev]')")
    assert executable is not None
    started = Browser(executable)
    try:
        yield started
    finally:
        started.close()
