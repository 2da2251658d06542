"""The Workload API (``scheduling.k8s.io`` Workloads and PodGroups): built in, but served
only while its feature gate is on; PodGroup with a status subresource."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.client import RawClient

GROUP = "/apis/scheduling.k8s.io"
PODGROUPS = f"{GROUP}/v1alpha2/namespaces/default/podgroups"


def podgroup(name: str = "pg", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}, **extra}


async def test_not_served_until_turned_on(fake_api: FakeApiServer) -> None:
    async with RawClient(fake_api.url) as client:
        status, _ = await client.get(PODGROUPS)
        assert status == 404
        _, group = await client.get(GROUP)
        assert [v["version"] for v in group["versions"]] == ["v1"]  # PriorityClasses only
        fake_api.serve_workload_api()
        _, group = await client.get(GROUP)
        assert [v["version"] for v in group["versions"]] == ["v1", "v1alpha2"]
        _, listed = await client.get(f"{GROUP}/v1alpha2")
        by_name = {r["name"]: r for r in listed["resources"]}
        assert set(by_name) == {"workloads", "podgroups", "podgroups/status"}
        assert by_name["podgroups"]["kind"] == "PodGroup" and by_name["podgroups"]["namespaced"]
        status, _ = await client.get(PODGROUPS)
        assert status == 200
        fake_api.stop_workload_api()
        status, _ = await client.get(PODGROUPS)
        assert status == 404


@pytest.mark.parametrize("versions", [
    pytest.param(("v1alpha2",), id="v1alpha2"),
    pytest.param(("v1alpha2", "v1beta1"), id="v1alpha2+v1beta1"),
])
async def test_one_storage_for_every_served_version(fake_api: FakeApiServer,
                                                    versions: tuple[str, ...]) -> None:
    fake_api.serve_workload_api(*versions)
    created = fake_api.create(podgroup())
    for version in versions:
        found = fake_api.get("podgroups", "default", "pg",
                             api_version=f"scheduling.k8s.io/{version}")
        assert found["metadata"]["uid"] == created["metadata"]["uid"]
        assert found["apiVersion"] == f"scheduling.k8s.io/{version}"


async def test_create_drops_status_and_status_is_a_subresource(fake_api: FakeApiServer) -> None:
    fake_api.serve_workload_api()
    condition = {"type": "PodGroupScheduled", "status": "True", "reason": "Scheduled",
                 "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
    async with RawClient(fake_api.url) as client:
        status, created = await client.post(PODGROUPS, podgroup(
            status={"conditions": [condition]}))
        assert status == 201
        assert "status" not in created
        status, _ = await client.patch(f"{PODGROUPS}/pg", {"status": {"conditions": [condition]}})
        assert status == 200
        assert not fake_api.get("podgroups", "default", "pg",
                                api_version="scheduling.k8s.io/v1alpha2").get("status")
        status, patched = await client.patch(f"{PODGROUPS}/pg/status",
                                             {"status": {"conditions": [condition]}})
        assert status == 200
        assert patched["status"]["conditions"] == [condition]
        assert patched["metadata"]["generation"] == 1  # status is not the spec
