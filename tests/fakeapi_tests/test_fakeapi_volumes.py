"""Storage kinds over HTTP: the PV controller's binding, provisioning, and a gated Binding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.builders import make_pod
from fakeapi.client import RawClient

PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
CLASSES = "/apis/storage.k8s.io/v1/storageclasses"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def claim(name: str, storage_class: str = "local") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name},
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "5Gi"}}}}


def volume(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "local", "local": {"path": "/mnt"}}}


def storage_class(name: str, provisioner: str, mode: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": provisioner, "volumeBindingMode": mode}


async def test_new_volumes_and_claims_start_pending_and_free_volumes_become_available(
    api: RawClient,
) -> None:
    status, pv = await api.post(PVS, {**volume("pv"), "status": {"phase": "Bound"}})
    assert status == 201
    _, pv = await api.get(f"{PVS}/pv")
    assert pv["status"] == {"phase": "Available"}
    _, pvc = await api.post(PVCS, claim("c"))
    assert pvc["status"] == {"phase": "Pending"}


async def test_setting_claim_ref_completes_the_binding(api: RawClient) -> None:
    await api.post(CLASSES, storage_class("local", "kubernetes.io/no-provisioner",
                                          "WaitForFirstConsumer"))
    _, pvc = await api.post(PVCS, claim("c"))
    await api.post(PVS, volume("pv"))
    _, pv = await api.get(f"{PVS}/pv")  # the controller made it Available meanwhile
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "c",
                              "uid": pvc["metadata"]["uid"]}
    status, _ = await api.put(f"{PVS}/pv", pv)
    assert status == 200
    _, pv = await api.get(f"{PVS}/pv")
    _, pvc = await api.get(f"{PVCS}/c")
    assert pv["status"]["phase"] == "Bound"
    assert pvc["spec"]["volumeName"] == "pv"
    assert pvc["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                             "capacity": {"storage": "10Gi"}}
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"


async def test_a_stale_pv_update_is_a_conflict(api: RawClient) -> None:
    _, pv = await api.post(PVS, volume("pv"))
    stale = dict(pv, spec={**pv["spec"], "claimRef": {"namespace": "default", "name": "c"}})
    status, body = await api.put(f"{PVS}/pv", stale)
    assert status == 409, body


@pytest.mark.parametrize(("mode", "annotate", "provisioned"), [
    pytest.param("WaitForFirstConsumer", False, False, id="wffc-waits-for-a-node"),
    pytest.param("WaitForFirstConsumer", True, True, id="wffc-provisions-for-the-node"),
    pytest.param("Immediate", False, True, id="immediate-provisions-at-once"),
])
async def test_provisioning(api: RawClient, mode: str, annotate: bool,
                            provisioned: bool) -> None:
    await api.post(CLASSES, storage_class("fast", "csi.example.com", mode))
    _, pvc = await api.post(PVCS, claim("c", "fast"))
    if annotate:
        status, _ = await api.patch(
            f"{PVCS}/c", {"metadata": {"annotations": {
                "volume.kubernetes.io/selected-node": "node-2"}}})
        assert status == 200
    _, pvc = await api.get(f"{PVCS}/c")
    name = f"pvc-{pvc['metadata']['uid']}"
    status, pv = await api.get(f"{PVS}/{name}")
    assert (status == 200) is provisioned
    if provisioned:
        assert pvc["spec"]["volumeName"] == name and pvc["status"]["phase"] == "Bound"
        assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
        assert pv["spec"]["capacity"] == {"storage": "5Gi"}
        terms = (pv["spec"].get("nodeAffinity") or {}).get("required", {}).get(
            "nodeSelectorTerms")
        assert terms == ([{"matchExpressions": [{"key": "kubernetes.io/hostname",
                                                 "operator": "In", "values": ["node-2"]}]}]
                         if annotate else None)


async def test_binding_a_gated_pod_is_refused_with_the_api_servers_words(
    fake_api: FakeApiServer, api: RawClient,
) -> None:
    fake_api.create(make_pod("g", gates=["example.com/wait"]))
    status, body = await api.post("/api/v1/namespaces/default/pods/g/binding",
                                  {"metadata": {"name": "g"}, "target": {"name": "n1"}})
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == ('Operation cannot be fulfilled on pods/binding "g": '
                               "pod g has non-empty .spec.schedulingGates")
