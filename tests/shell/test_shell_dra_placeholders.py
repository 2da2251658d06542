"""Placeholders hold devices for their task group, end to end: the operator against the
fake API server's resource.k8s.io/v1, its resourceclaim controller and its kubelet (see
``test_shell_dra.py``).

An Application whose task group says its members will have a one-GPU claim gets its
placeholders on the two nodes with a GPU; they hold the GPUs in the operator's memory
(no claim is made or written for them), so a competing pod with a GPU claim waits, also
across an operator restart; then the real members take the placeholders' places and get
the very GPUs, with the competitor never bound in between.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
    assert_bound_at_most_once,
    condition,
    placeholders,
    pod,
    wait_for,
)
from test_shell_dra import cluster, devices_of, gpus, node_of, running, template

pytestmark = pytest.mark.asyncio
__all__ = ["cluster"]  # the fixture, shared with test_shell_dra.py

GPU_CLAIM = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def with_claim(body: dict[str, Any]) -> dict[str, Any]:
    body["spec"]["resourceClaims"] = GPU_CLAIM
    body["spec"]["terminationGracePeriodSeconds"] = 1
    return body


def worker(name: str) -> dict[str, Any]:
    return with_claim(pod(name, cpu="500m", memory="256Mi",
                          labels={"gangsched.io/app": "train"},
                          annotations={"gangsched.io/task-group": "worker"}))


def placed(api: FakeApiServer) -> dict[str, str | None]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in placeholders(api)}


async def test_placeholders_keep_their_gpus_against_a_competitor_and_hand_over(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-0", "a")
    gpus(api, "node-1", "b")  # node-2 has no GPU
    template(api)
    api.create(application("train", [{"name": "worker", "minMember": 2,
                                      "minResource": {"cpu": "500m", "memory": "256Mi"},
                                      "resourceClaims": GPU_CLAIM}]))
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        await wait_for(lambda: len(placed(api)) == 2 and all(placed(api).values()),
                       what="two placeholders bound", timeout=30)
        by_node = {node: name for name, node in placed(api).items()}
        assert set(by_node) == {"node-0", "node-1"}  # the nodes with a GPU
        assert not api.list("resourceclaims", "default")  # held in memory, nothing written
        api.create(with_claim(pod("other", cpu="500m", memory="256Mi")))
        await wait_for(lambda: "cannot allocate all claims" in condition(
            api.try_get("pods", "default", "other"), "PodScheduled").get("message", ""),
            what="the competitor unschedulable", timeout=30)
        # A restart: the new operator holds the GPUs again for the bound placeholders.
        await op.kill()
        op = await OperatorUnderTest(api, kubeconfig, clock).start()
        await op.advance(20, cycles=4)  # past the competitor's backoff
        assert node_of(api, "other") is None
        for i in range(2):
            api.create(worker(f"worker-{i}"))
        for _ in range(20):  # past the pods' backoff, as often as it takes
            if running(api, "worker-0") and running(api, "worker-1"):
                break
            assert node_of(api, "other") is None  # never in between
            await op.advance(2)
        await wait_for(lambda: running(api, "worker-0") and running(api, "worker-1"),
                       what="the members running", timeout=30)
        assert {node_of(api, "worker-0"), node_of(api, "worker-1")} == {"node-0", "node-1"}
        assert sorted(devices_of(api, "worker-0") + devices_of(api, "worker-1")) == [
            ("node-0", "gpu-0"), ("node-1", "gpu-0")]
        await wait_for(lambda: not placed(api), what="the placeholders gone", timeout=30)
        await op.settle(cycles=3)
        assert node_of(api, "other") is None
        assert_bound_at_most_once(api)
    finally:
        await op.kill()
