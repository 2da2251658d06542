"""PreBind's claim write (:func:`gangsched.shell.resourceclaims.reserve_claim`) against the
fake API server's ``resource.k8s.io/v1``: the finalizer, then allocation and reservedFor
on the status, on the version the core saw."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.builders import make_pod
from gangsched.shell.client import ApiError, Connection, KubeClient
from gangsched.shell.resourceclaims import FINALIZER, reserve_claim

AGENT = "gangsched/test"
V1 = "resource.k8s.io/v1"


def claim(name: str = "c") -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com"}}]}}}


def allocation(device: str = "gpu-0") -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": "node-0", "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-0"]}]}]}}


async def write(api: FakeApiServer, *, rv: str, alloc: dict[str, Any] | None,
                pod: str = "p") -> str:
    """Reserve claim ``c`` for pod ``pod`` (made if missing: the resourceclaim controller
    drops a reservation for a pod that does not exist)."""
    found = api.try_get("pods", "default", pod) or api.create(make_pod(pod))
    async with KubeClient(Connection(api.url), user_agent=AGENT) as client:
        return await reserve_claim(client, version="v1", namespace="default", name="c",
                                   resource_version=rv, allocation=alloc, pod=pod,
                                   pod_uid=found["metadata"]["uid"])


async def test_allocates_with_the_finalizer_then_only_reserves(fake_api: FakeApiServer) -> None:
    fake_api.serve_dra()
    made = fake_api.create(claim())
    left = await write(fake_api, rv=made["metadata"]["resourceVersion"], alloc=allocation())
    stored = fake_api.get("resourceclaims", "default", "c")
    assert stored["metadata"]["resourceVersion"] == left
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    uid = fake_api.get("pods", "default", "p")["metadata"]["uid"]
    assert stored["status"] == {"allocation": allocation(), "reservedFor": [
        {"resource": "pods", "name": "p", "uid": uid}]}
    # A second consumer of the allocated (shared) claim is only added to reservedFor.
    await write(fake_api, rv=left, alloc=None, pod="q")
    stored = fake_api.get("resourceclaims", "default", "c")
    assert [r["name"] for r in stored["status"]["reservedFor"]] == ["p", "q"]
    assert stored["status"]["allocation"] == allocation()
    # Written already for this pod (an earlier attempt): left as it is.
    assert await write(fake_api, rv="1", alloc=None, pod="q") == \
        stored["metadata"]["resourceVersion"]
    assert fake_api.request_count("update", "resourceclaims", "status") == 2
    assert fake_api.request_count("update", "resourceclaims") == 1  # the finalizer, once


@pytest.mark.parametrize("change, message", [
    pytest.param("relabelled", "changed since its devices were chosen", id="changed"),
    pytest.param("allocated", "got allocated elsewhere in the meantime", id="taken"),
    pytest.param("deleted", "got deleted in the meantime", id="deleting"),
])
async def test_a_claim_changed_meanwhile_is_a_conflict(fake_api: FakeApiServer, change: str,
                                                       message: str) -> None:
    fake_api.serve_dra()
    made = fake_api.create(claim())
    rv = made["metadata"]["resourceVersion"]
    if change == "relabelled":
        fake_api.patch("resourceclaims", "default", "c", {"metadata": {"labels": {"a": "b"}}})
    elif change == "allocated":
        fake_api.patch_status("resourceclaims", "default", "c", {"allocation": allocation()})
        rv = ""  # even when the version is not checked
    else:
        fake_api.patch("resourceclaims", "default", "c", {"metadata": {"finalizers": ["x/y"]}})
        fake_api.delete("resourceclaims", "default", "c")
        rv = ""
    with pytest.raises(ApiError) as caught:
        await write(fake_api, rv=rv, alloc=allocation())
    assert caught.value.code == 409 and message in str(caught.value)
    assert fake_api.request_count("update", "resourceclaims", "status") == 0


async def test_a_conflict_on_the_status_write_is_reported(fake_api: FakeApiServer) -> None:
    fake_api.serve_dra()
    made = fake_api.create(claim())
    fake_api.faults.add(method="PUT", path_regex=r"/resourceclaims/c/status$", status=409,
                        message='Operation cannot be fulfilled on resourceclaims.resource.k8s.io '
                                '"c": the object has been modified')
    with pytest.raises(ApiError) as caught:
        await write(fake_api, rv=made["metadata"]["resourceVersion"], alloc=allocation())
    assert caught.value.code == 409
    assert "allocation" not in fake_api.get("resourceclaims", "default", "c").get("status", {})
