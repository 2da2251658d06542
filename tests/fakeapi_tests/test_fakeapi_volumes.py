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


CAPACITIES = "/apis/storage.k8s.io/v1/namespaces/kube-system/csistoragecapacities"
DRIVERS = "/apis/storage.k8s.io/v1/csidrivers"
SELECTED = "volume.kubernetes.io/selected-node"


def labelled(name: str, capacity: str = "10Gi", *, mode: str | None = None,
             **labels: str) -> dict[str, Any]:
    body = volume(name)
    body["metadata"]["labels"] = labels
    body["spec"]["capacity"] = {"storage": capacity}
    if mode:
        body["spec"]["volumeMode"] = mode
    return body


async def test_csidrivers_and_storage_capacities_are_served(api: RawClient) -> None:
    status, _ = await api.post(DRIVERS, {"apiVersion": "storage.k8s.io/v1",
                                         "kind": "CSIDriver", "metadata": {"name": "d"},
                                         "spec": {"storageCapacity": True}})
    assert status == 201
    await api.post("/api/v1/namespaces", {"metadata": {"name": "kube-system"}})
    status, body = await api.post(CAPACITIES, {
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"name": "c1"}, "storageClassName": "fast", "capacity": "10Gi",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}})
    assert status == 201, body
    status, listed = await api.get("/apis/storage.k8s.io/v1/csistoragecapacities")
    assert status == 200 and [i["metadata"]["name"] for i in listed["items"]] == ["c1"]


@pytest.mark.parametrize(("claim_spec", "chosen"), [
    pytest.param({}, "small", id="smallest-fit"),
    pytest.param({"selector": {"matchLabels": {"tier": "gold"}}}, "gold", id="selector"),
    pytest.param({"selector": {"matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["gold"]}]}}, "small",
        id="selector-expressions"),
    pytest.param({"volumeMode": "Block"}, "raw", id="volume-mode"),
    pytest.param({"resources": {"requests": {"storage": "15Gi"}}}, "gold", id="capacity"),
])
async def test_an_immediate_claim_is_bound_as_find_matching_volume_chooses(
    api: RawClient, claim_spec: dict[str, Any], chosen: str,
) -> None:
    await api.post(CLASSES, storage_class("local", "kubernetes.io/no-provisioner",
                                          "Immediate"))
    await api.post(PVS, labelled("small", "6Gi"))
    await api.post(PVS, labelled("gold", "20Gi", tier="gold"))
    await api.post(PVS, labelled("raw", "8Gi", mode="Block"))
    body = claim("c")
    body["spec"].update(claim_spec)
    await api.post(PVCS, body)
    _, pvc = await api.get(f"{PVCS}/c")
    assert pvc["spec"].get("volumeName") == chosen
    _, pv = await api.get(f"{PVS}/{chosen}")
    assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert pv["status"]["phase"] == "Bound"


async def test_a_wffc_claim_is_left_to_the_scheduler_unless_pre_bound(api: RawClient) -> None:
    await api.post(CLASSES, storage_class("local", "kubernetes.io/no-provisioner",
                                          "WaitForFirstConsumer"))
    await api.post(PVS, labelled("free"))
    await api.post(PVCS, claim("c"))
    _, pvc = await api.get(f"{PVCS}/c")
    assert not pvc["spec"].get("volumeName")
    body = claim("pre")
    body["spec"]["volumeName"] = "free"
    await api.post(PVCS, body)
    _, pvc = await api.get(f"{PVCS}/pre")
    _, pv = await api.get(f"{PVS}/free")
    assert pvc["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["name"] == "pre"


async def _select(api: RawClient, node: str) -> dict[str, Any]:
    await api.patch(f"{PVCS}/c", {"metadata": {"annotations": {SELECTED: node}}})
    _, pvc = await api.get(f"{PVCS}/c")
    return pvc


async def _failed_events(api: RawClient) -> list[dict[str, Any]]:
    _, events = await api.get("/api/v1/namespaces/default/events")
    return [e for e in events["items"] if e["reason"] == "ProvisioningFailed"]


@pytest.mark.parametrize(("extra", "objects", "provisioned"), [
    pytest.param({"allowedTopologies": [{"matchLabelExpressions": [
        {"key": "topology.kubernetes.io/zone", "values": ["b"]}]}]}, [], False,
        id="allowed-topologies-exclude-the-node"),
    pytest.param({"allowedTopologies": [{"matchLabelExpressions": [
        {"key": "topology.kubernetes.io/zone", "values": ["a"]}]}]}, [], True,
        id="allowed-topologies-admit-the-node"),
    pytest.param({"parameters": {"fakeapi.gangsched.io/fail-on-nodes": "n1"}}, [], False,
                 id="backend-fails-on-the-node"),
    pytest.param({}, [(DRIVERS, {"metadata": {"name": "csi.example.com"},
                                 "spec": {"storageCapacity": True}})], False,
                 id="capacity-tracked-none-published"),
    pytest.param({}, [(DRIVERS, {"metadata": {"name": "csi.example.com"},
                                 "spec": {"storageCapacity": True}}),
                      (CAPACITIES, {"metadata": {"name": "c"}, "storageClassName": "fast",
                                    "capacity": "100Gi", "nodeTopology": {"matchLabels": {
                                        "topology.kubernetes.io/zone": "a"}}})], True,
                 id="capacity-tracked-room-published"),
    pytest.param({}, [(DRIVERS, {"metadata": {"name": "csi.example.com"},
                                 "spec": {"storageCapacity": True}}),
                      (CAPACITIES, {"metadata": {"name": "c"}, "storageClassName": "fast",
                                    "capacity": "100Gi", "maximumVolumeSize": "1Gi",
                                    "nodeTopology": {"matchLabels": {
                                        "topology.kubernetes.io/zone": "a"}}})], False,
                 id="capacity-tracked-volumes-too-large"),
])
async def test_provisioning_for_a_selected_node_fails_as_csi_provisioner_does(
    fake_api: FakeApiServer, api: RawClient, extra: dict[str, Any],
    objects: list[tuple[str, dict[str, Any]]], provisioned: bool,
) -> None:
    await api.post("/api/v1/nodes", {"metadata": {"name": "n1", "labels": {
        "kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "a"}}})
    await api.post("/api/v1/namespaces", {"metadata": {"name": "kube-system"}})
    for path, body in objects:
        status, answer = await api.post(path, body)
        assert status == 201, answer
    await api.post(CLASSES, {**storage_class("fast", "csi.example.com",
                                             "WaitForFirstConsumer"), **extra})
    await api.post(PVCS, claim("c", "fast"))
    pvc = await _select(api, "n1")
    if provisioned:
        assert pvc["status"]["phase"] == "Bound"
        assert pvc["metadata"]["annotations"][SELECTED] == "n1"
        assert await _failed_events(api) == []
    else:
        assert pvc["status"]["phase"] == "Pending" and not pvc["spec"].get("volumeName")
        assert SELECTED not in pvc["metadata"].get("annotations", {})
        [event] = await _failed_events(api)
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "c"


async def test_a_manual_provisioner_acts_only_when_told(fake_api: FakeApiServer,
                                                        api: RawClient) -> None:
    from fakeapi import volumes as fake_volumes

    await api.post(CLASSES, {**storage_class("slow", "csi.example.com", "WaitForFirstConsumer"),
                             "parameters": {fake_volumes.MANUAL: "manual"}})
    await api.post(PVCS, claim("c", "slow"))
    pvc = await _select(api, "n1")
    assert pvc["status"]["phase"] == "Pending"
    fake_volumes.provision(fake_api.store, "default", "c")
    _, pvc = await api.get(f"{PVCS}/c")
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["spec"]["volumeName"] == f"pvc-{pvc['metadata']['uid']}"
