"""Node admission: every Node created through the API gets the ``not-ready`` taint
(``TaintNodesAtCreation``), whatever its conditions say; updates do not add it back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.client import RawClient

NODES = "/api/v1/nodes"
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def node(name: str, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {} if taints is None else {"taints": taints}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


GPU = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
NOT_READY_EXECUTE = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}


@pytest.mark.parametrize(("given", "expected"), [
    pytest.param(None, [NOT_READY], id="none"),
    pytest.param([GPU], [GPU, NOT_READY], id="others-kept"),
    pytest.param([NOT_READY], [NOT_READY], id="already-there"),
    pytest.param([NOT_READY_EXECUTE], [NOT_READY_EXECUTE, NOT_READY], id="other-effect"),
])
async def test_a_created_node_is_tainted_not_ready(api: RawClient, given: Any,
                                                   expected: list[dict[str, Any]]) -> None:
    status, created = await api.post(NODES, node("n1", given))
    assert status == 201
    assert created["spec"]["taints"] == expected
    assert (await api.get(f"{NODES}/n1"))[1]["spec"]["taints"] == expected


async def test_the_taint_once_removed_stays_removed(api: RawClient) -> None:
    await api.post(NODES, node("n1"))
    status, patched = await api.patch(f"{NODES}/n1", {"spec": {"taints": None}})
    assert status == 200
    assert not patched["spec"].get("taints")
    _, again = await api.patch(f"{NODES}/n1", {"metadata": {"labels": {"a": "b"}}})
    assert not again["spec"].get("taints")
