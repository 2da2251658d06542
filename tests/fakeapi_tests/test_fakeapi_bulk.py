"""The fake's bulk makers for large benchmark clusters (``/debug/nodes``,
``/debug/pods?clone=1``): objects as the API would store them, listed and watched like
any other, one ADDED event each, and no copy sharing anything a later write changes."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi.serve import PodTemplate, ServedFakeApi

pytestmark = pytest.mark.asyncio


def node_body() -> dict[str, Any]:
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "ignored", "labels": {"kubernetes.io/os": "linux"}},
            "spec": {}, "status": {"capacity": capacity, "allocatable": capacity,
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def server() -> ServedFakeApi:
    api = ServedFakeApi(history_limit=1000, auto_run=False, seed=7)
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
    return api


async def test_nodes_made_in_bulk_are_ready_schedulable_and_distinct() -> None:
    api = server()
    assert await api.make_nodes(node_body(), 3, "n-") == 3
    nodes = api.list("nodes")
    assert [n["metadata"]["name"] for n in nodes] == ["n-00000", "n-00001", "n-00002"]
    assert [n["metadata"]["labels"]["kubernetes.io/hostname"] for n in nodes] == [
        "n-00000", "n-00001", "n-00002"]
    assert len({n["metadata"]["uid"] for n in nodes}) == 3
    assert all(not (n["spec"].get("taints")) for n in nodes)
    assert all(n["status"]["allocatable"]["cpu"] == "4" for n in nodes)
    versions = [int(n["metadata"]["resourceVersion"]) for n in nodes]
    assert versions == sorted(versions) and len(set(versions)) == 3


async def test_pods_cloned_in_bulk_are_created_bound_one_event_each() -> None:
    api = server()
    pods_t = api.resolve("pods")
    log = api.store.bucket(pods_t).log
    start = log.end
    template = PodTemplate(2, "n-", "gangsched", "100m", "256Mi")
    made = await api.make_pods(4, "bench", "run-", 0, True, template, clone=True)
    assert sorted(made["bound"]) == ["run-000000", "run-000001", "run-000002", "run-000003"]
    pods = api.list("pods", "bench")
    assert [p["spec"]["nodeName"] for p in pods] == ["n-00000", "n-00001", "n-00000",
                                                      "n-00001"]
    assert len({p["metadata"]["uid"] for p in pods}) == 4
    first = pods[0]
    for p in pods[1:]:
        assert p["spec"] == {**first["spec"], "nodeName": p["spec"]["nodeName"]}
        assert p["status"] == first["status"]  # PodScheduled, as the bind left the first
        assert p["metadata"].get("namespace") == first["metadata"]["namespace"] == "bench"
    # The first: created and bound (two events); every other: one ADDED.
    kinds = [(e.type, e.obj["metadata"]["name"]) for e in log.since(start)]
    assert kinds == [("ADDED", "run-000000"), ("MODIFIED", "run-000000"),
                     ("ADDED", "run-000001"), ("ADDED", "run-000002"),
                     ("ADDED", "run-000003")]


async def test_a_write_to_a_clone_leaves_the_others_alone() -> None:
    api = server()
    await api.make_pods(3, "bench", "run-", 0, True, PodTemplate(1, "n-"), clone=True)
    api.set_pod_running("bench", "run-000001")
    api.patch("pods", "bench", "run-000002", {"metadata": {"labels": {"x": "y"}}})
    first, running, labelled = api.list("pods", "bench")
    assert running["status"]["phase"] == "Running"
    assert first["status"].get("phase") != "Running"
    assert labelled["metadata"]["labels"] == {"x": "y"}
    assert "x" not in (first["metadata"].get("labels") or {})
    assert "x" not in (running["metadata"].get("labels") or {})
