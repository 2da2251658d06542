"""Shell tests: every API call the operator (and kopf inside it) makes is one its RBAC
grants.

``fake_api_factory`` is wrapped so that, after each test, the requests every fake API
server saw from the ``gangsched`` and ``kopf`` clients are checked against
:data:`gangsched.shell.permissions.NEEDED` (which ``test_rbac.py`` checks against the
ClusterRole and Role in ``manifests/``). The calls of all tests are also gathered in
:data:`RECORDED`, so that ``test_zz_rbac_coverage.py`` can tell a grant no test used.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from gangsched.shell import permissions

CLIENTS = frozenset({"gangsched", "kopf"})
RECORDED: set[tuple[str, str, str]] = set()
"""(group, resource, verb) of every request from the operator in this session."""
TESTS_RECORDED: list[str] = []
"""The tests whose calls are in RECORDED."""
TESTS_RUN: list[str] = []
"""Every shell test run so far in this session."""


@pytest.fixture(autouse=True)
def _ran(request: Any) -> None:
    TESTS_RUN.append(request.node.nodeid)


@pytest_asyncio.fixture
async def fake_api_factory(
        fake_api_factory: Callable[..., Awaitable[FakeApiServer]],
        request: Any) -> AsyncIterator[Callable[..., Awaitable[FakeApiServer]]]:
    servers: list[FakeApiServer] = []

    async def make(**options: Any) -> FakeApiServer:
        server = await fake_api_factory(**options)
        servers.append(server)
        return server

    yield make
    calls = {(group, resource, verb) for server in servers
             for (client, group, resource, verb) in server.audit if client in CLIENTS}
    RECORDED.update(calls)
    TESTS_RECORDED.append(request.node.nodeid)
    granted = {(p.group, p.resource, p.verb) for p in permissions.NEEDED}
    ungranted = sorted(calls - granted)
    assert not ungranted, f"API calls the operator's RBAC does not grant: {ungranted}"

