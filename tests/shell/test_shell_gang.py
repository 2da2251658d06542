"""End-to-end through kopf and the runtime against the fake API server: one gang."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    application,
    group,
    node,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    api: FakeApiServer = await fake_api_factory(auto_run=True)
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    for i in range(3):
        api.create(node(f"node-{i}", cpu="4", memory="16Gi"))
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


async def test_gang_reserves_then_swaps_and_completes(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        api.create(application("train", [group("ps", 1), group("worker", 4, cpu="2")],
                               style="Hard", timeout=120, waiting=30))
        def bound_placeholders() -> int:
            return len([p for p in placeholders(api) if p["spec"].get("nodeName")])

        await wait_for(lambda: bound_placeholders() == 5, what="5 placeholders bound")
        status = await wait_for(lambda: status_of(api, "applications", "default", "train")
                                .get("reserved") == "5/5" and status_of(api, "applications",
                                                                       "default", "train"),
                                what="status reserved 5/5")
        assert status["state"] == "Accepted"
        for ph in placeholders(api):
            spec = ph["spec"]
            assert spec["restartPolicy"] == "Never"
            assert spec["terminationGracePeriodSeconds"] == 5
            assert spec["automountServiceAccountToken"] is False
            assert ph["metadata"]["ownerReferences"][0]["kind"] == "Application"

        assert op.runtime is not None
        client = op.runtime.client
        sent = client.request
        deletes: list[object] = []

        async def request(method: str, path: str, **kwargs: Any) -> Any:
            if method == "DELETE":
                deletes.append(kwargs.get("body"))
            return await sent(method, path, **kwargs)

        client.request = request  # type: ignore[method-assign]
        api.create(pod("ps-0", labels={"gangsched.io/app": "train"},
                       annotations={"gangsched.io/task-group": "ps"}))
        for i in range(4):
            api.create(pod(f"worker-{i}", cpu="2", labels={"gangsched.io/app": "train"},
                           annotations={"gangsched.io/task-group": "worker"}))

        def real_bound() -> bool:
            real = [p for p in pods_in(api) if not p["metadata"]["name"].startswith("train-")]
            return len(real) == 5 and all(p["spec"].get("nodeName") for p in real)

        await wait_for(real_bound, what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        # Deleted gracefully (never forced), with a UID precondition.
        assert len(deletes) == 5
        assert all(isinstance(d, dict) and d["gracePeriodSeconds"] == 5
                   and d["preconditions"]["uid"] for d in deletes), deletes
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Running", what="Running")

        for p in pods_in(api):
            api.finish_pod("default", p["metadata"]["name"])
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Waiting", what="Waiting")
        clock.advance(31)
        op.wake()
        status = await wait_for(lambda: status_of(api, "applications", "default", "train")
                                .get("state") == "Completed" and status_of(
                                    api, "applications", "default", "train"), what="Completed")
        assert any(c["type"] for c in status.get("conditions", []))
        reasons = {e.get("reason") for e in api.list("events", "default",
                                                     api_version="events.k8s.io/v1")}
        assert {"GangReserved", "Completed"} <= reasons
        assert api.request_count("create", "pods", "binding") == 10
    finally:
        await op.kill()
