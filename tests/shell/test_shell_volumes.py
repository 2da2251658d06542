"""Volumes end to end: the operator against the fake API server and its PV controller."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    bind_answers,
    condition,
    node,
    pod,
    wait_for,
)

pytestmark = pytest.mark.asyncio
NODES = ("node-a", "node-b", "node-c", "node-d")


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    api: FakeApiServer = await fake_api_factory(auto_run=True)
    api.log_requests = True
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    for name in NODES:
        add_node(api, node(name, labels={"kubernetes.io/hostname": name}))
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


def storage_class(name: str, provisioner: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": "WaitForFirstConsumer"}


def local_pv(name: str, on: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "local", "local": {"path": "/mnt/disk"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In",
                          "values": [on]}]}]}}}}


def claim(name: str, storage_class: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "10Gi"}}}}


def pod_with_claim(name: str, claim_name: str) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["volumes"] = [{"name": "data",
                                "persistentVolumeClaim": {"claimName": claim_name}}]
    return body


def node_of(api: FakeApiServer, name: str) -> str | None:
    found = api.try_get("pods", "default", name)
    return None if found is None else found["spec"].get("nodeName")


async def test_a_local_volume_decides_the_node_and_its_claim_is_bound(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(storage_class("local", "kubernetes.io/no-provisioner"))
    api.create(local_pv("local-d", "node-d"))
    api.create(claim("data", "local"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(pod_with_claim("worker", "data"))
        await wait_for(lambda: node_of(api, "worker"), what="worker bound")
        assert node_of(api, "worker") == "node-d"
        pvc = api.get("persistentvolumeclaims", "default", "data")
        assert pvc["spec"]["volumeName"] == "local-d"
        assert pvc["status"]["phase"] == "Bound"
        pv = api.get("persistentvolumes", None, "local-d")
        assert pv["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
        # the volume was bound before the pod: its update precedes the Binding
        paths = [e.path_qs for e in api.request_log if e.method in ("PUT", "POST")]
        assert paths.index("/api/v1/persistentvolumes/local-d") < paths.index(
            "/api/v1/namespaces/default/pods/worker/binding")
    finally:
        await op.kill()


async def test_a_provisioned_claim_gets_the_selected_node_before_the_binding(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(storage_class("fast", "csi.example.com"))
    api.create(claim("scratch", "fast"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(pod_with_claim("worker", "scratch"))
        chosen = await wait_for(lambda: node_of(api, "worker"), what="worker bound")
        pvc = api.get("persistentvolumeclaims", "default", "scratch")
        assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == chosen
        assert pvc["status"]["phase"] == "Bound"
        pv = api.get("persistentvolumes", None, pvc["spec"]["volumeName"])
        terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"][0]["values"] == [chosen]
    finally:
        await op.kill()


async def test_a_missing_claim_keeps_the_pod_waiting_with_the_reason(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(storage_class("fast", "csi.example.com"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(pod_with_claim("worker", "later"))
        scheduled = await wait_for(
            lambda: condition(api.get("pods", "default", "worker"), "PodScheduled"),
            what="PodScheduled condition")
        assert scheduled["status"] == "False"
        assert scheduled["reason"] == "Unschedulable"
        assert scheduled["message"].endswith(
            '0/4 nodes are available: persistentvolumeclaim "later" not found.')
        assert bind_answers(api, "worker") == []
        api.create(claim("later", "fast"))
        await wait_for(lambda: node_of(api, "worker"), what="worker bound once its claim exists")
    finally:
        await op.kill()


async def test_a_volume_taken_meanwhile_is_not_bound_and_the_pod_is_not_either(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(storage_class("local", "kubernetes.io/no-provisioner"))
    api.create(local_pv("local-d", "node-d"))
    api.create(claim("data", "local"))
    api.create(claim("theirs", "local"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    runtime = op.runtime
    assert runtime is not None
    try:
        await op.settle()
        # another binder takes the volume after the operator saw it free, before it acts
        pv = api.get("persistentvolumes", None, "local-d")
        theirs = api.get("persistentvolumeclaims", "default", "theirs")
        runtime.storage.reflectors[0].on_event = lambda kind, obj: None  # it sees nothing
        api.patch("persistentvolumes", None, "local-d", {"spec": {"claimRef": {
            "namespace": "default", "name": "theirs", "uid": theirs["metadata"]["uid"]}}})
        assert pv["metadata"]["resourceVersion"] != api.get(
            "persistentvolumes", None, "local-d")["metadata"]["resourceVersion"]
        api.create(pod_with_claim("worker", "data"))
        scheduled = await wait_for(
            lambda: (c := condition(api.get("pods", "default", "worker"), "PodScheduled"))
            and "VolumeBindFailed" in c.get("message", "") and c, what="VolumeBindFailed")
        assert "persistentvolume local-d is bound to default/theirs" in scheduled["message"]
        assert bind_answers(api, "worker") == []
        assert node_of(api, "worker") is None
    finally:
        await op.kill()


def member(name: str, claim_name: str) -> dict[str, Any]:
    body = pod_with_claim(name, claim_name)
    body["metadata"]["labels"] = {"gangsched.io/pod-group": "job"}
    return body


PODGROUP = {"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {"minMember": 2, "mode": "Strict"}}


@pytest.mark.parametrize("taken", [
    pytest.param(False, id="both-volumes-free"),
    pytest.param(True, id="one-volume-taken-meanwhile"),
])
async def test_a_gangs_volumes_are_all_bound_before_any_member(cluster, taken: bool) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(storage_class("local", "kubernetes.io/no-provisioner"))
    api.create(local_pv("local-c", "node-c"))
    api.create(local_pv("local-d", "node-d"))
    for name in ("data-0", "data-1", "theirs"):
        api.create(claim(name, "local"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    runtime = op.runtime
    assert runtime is not None
    try:
        await op.settle()
        if taken:
            runtime.storage.reflectors[0].on_event = lambda kind, obj: None  # unseen
            theirs = api.get("persistentvolumeclaims", "default", "theirs")
            api.patch("persistentvolumes", None, "local-d", {"spec": {"claimRef": {
                "namespace": "default", "name": "theirs", "uid": theirs["metadata"]["uid"]}}})
        api.create(PODGROUP)
        api.create(member("w0", "data-0"))
        api.create(member("w1", "data-1"))
        if not taken:
            await wait_for(lambda: node_of(api, "w0") and node_of(api, "w1"), what="bound")
            assert {node_of(api, "w0"), node_of(api, "w1")} == {"node-c", "node-d"}
            for name in ("data-0", "data-1"):
                assert api.get("persistentvolumeclaims", "default", name)["status"][
                    "phase"] == "Bound"
            return
        for name in ("w0", "w1"):
            await wait_for(
                lambda name=name: "VolumeBindFailed" in condition(
                    api.get("pods", "default", name), "PodScheduled").get("message", ""),
                what=f"{name} VolumeBindFailed")
        assert bind_answers(api) == []  # no member was bound
    finally:
        await op.kill()


async def test_a_pod_with_resource_claims_is_never_bound_blindly(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster  # the fake serves no resource.k8s.io API, as v1.32 by default
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        body = pod("gpu-job")
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
        api.create(body)
        scheduled = await wait_for(
            lambda: condition(api.get("pods", "default", "gpu-job"), "PodScheduled"),
            what="PodScheduled condition")
        assert scheduled["reason"] == "Unschedulable"
        assert "the resource.k8s.io API is not served" in scheduled["message"]
        await op.settle()
        assert bind_answers(api, "gpu-job") == []
    finally:
        await op.kill()


RESOURCE_CLAIM_CRD = {
    # Stands in for the built-in resource.k8s.io/v1beta1 API of a cluster with DRA on.
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "resourceclaims.resource.k8s.io",
                 "annotations": {"api-approved.kubernetes.io": "unapproved, testing only"}},
    "spec": {"group": "resource.k8s.io", "scope": "Namespaced",
             "names": {"plural": "resourceclaims", "singular": "resourceclaim",
                       "kind": "ResourceClaim", "listKind": "ResourceClaimList"},
             "versions": [{"name": "v1beta1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {
                               "type": "object",
                               "x-kubernetes-preserve-unknown-fields": True}}}]},
}


async def test_a_claim_allocated_elsewhere_decides_the_node_and_is_reserved(cluster) -> None:  # type: ignore[no-untyped-def]
    """On a v1beta1 cluster (request fields flat): a claim whose class does not exist
    cannot be allocated here; once something else allocates it, the pod goes to the
    allocation's node and the claim is reserved for it before the Binding."""
    api, kubeconfig = cluster
    api.create(RESOURCE_CLAIM_CRD)
    api.create({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                "metadata": {"name": "gpu-claim", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu",
                                                   "deviceClassName": "elsewhere"}]}}})
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        body = pod("gpu-job")
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
        api.create(body)
        scheduled = await wait_for(
            lambda: condition(api.get("pods", "default", "gpu-job"), "PodScheduled"),
            what="PodScheduled condition")
        assert scheduled["status"] == "False"
        await op.settle()
        assert node_of(api, "gpu-job") is None
        api.patch_status("resourceclaims", "default", "gpu-claim", {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": "node-c", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-c"]}]}]}}},
            api_version="resource.k8s.io/v1beta1")
        await wait_for(lambda: node_of(api, "gpu-job"), what="gpu-job bound")
        assert node_of(api, "gpu-job") == "node-c"
        claim = api.get("resourceclaims", "default", "gpu-claim",
                        api_version="resource.k8s.io/v1beta1")
        uid = api.get("pods", "default", "gpu-job")["metadata"]["uid"]
        assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "gpu-job",
                                                   "uid": uid}]
    finally:
        await op.kill()


async def test_resource_claims_the_role_may_not_read_count_as_not_served(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(RESOURCE_CLAIM_CRD)
    api.faults.add(method="GET", path_regex=r"/resource\.k8s\.io/v1beta1/resourceclaims",
                   status=403)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()  # starts, all the same
    try:
        body = pod("gpu-job")
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
        api.create(body)
        scheduled = await wait_for(
            lambda: condition(api.get("pods", "default", "gpu-job"), "PodScheduled"),
            what="PodScheduled condition")
        assert "the resource.k8s.io API is not served" in scheduled["message"]
    finally:
        await op.kill()


CSI_DRIVER = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
              "metadata": {"name": "csi.example.com"}, "spec": {"storageCapacity": True}}


def capacity_on(node_name: str, size: str = "100Gi") -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": f"fast-{node_name}", "namespace": "default"},
            "storageClassName": "fast", "capacity": size,
            "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": node_name}}}


async def test_a_capacity_tracking_driver_provisions_where_capacity_is_published(cluster) -> None:  # type: ignore[no-untyped-def]
    """binder.go hasEnoughCapacity: only node-c publishes room for the claim."""
    api, kubeconfig = cluster
    api.create(CSI_DRIVER)
    api.create(capacity_on("node-a", "1Gi"))
    api.create(capacity_on("node-c"))
    api.create(storage_class("fast", "csi.example.com"))
    api.create(claim("scratch", "fast"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(pod_with_claim("worker", "scratch"))
        assert await wait_for(lambda: node_of(api, "worker"), what="bound") == "node-c"
        pvc = api.get("persistentvolumeclaims", "default", "scratch")
        assert pvc["status"]["phase"] == "Bound"
    finally:
        await op.kill()


async def test_a_failed_provisioning_binds_nothing_and_the_pod_is_scheduled_again(cluster) -> None:  # type: ignore[no-untyped-def]
    """volume_binding PreBind (binder.go BindPodVolumes, checkBindings): the provisioner
    removes the selected-node annotation; the pod is not bound there, and once capacity
    says where room is, it is bound there."""
    api, kubeconfig = cluster
    failing = storage_class("fast", "csi.example.com")
    failing["parameters"] = {"fakeapi.gangsched.io/fail-on-nodes": "node-a,node-b,node-c"}
    api.create(failing)
    api.create(claim("scratch", "fast"))
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        api.create(pod_with_claim("worker", "scratch"))
        scheduled = await wait_for(
            lambda: (c := condition(api.get("pods", "default", "worker"), "PodScheduled"))
            and "VolumeBindFailed" in c.get("message", "") and c, what="VolumeBindFailed")
        assert 'provisioning failed for PVC "scratch"' in scheduled["message"]
        assert bind_answers(api, "worker") == []
        pvc = api.get("persistentvolumeclaims", "default", "scratch")
        assert "volume.kubernetes.io/selected-node" not in pvc["metadata"].get("annotations", {})
        assert [e for e in api.list("events", "default", api_version="v1")
                if e.get("reason") == "ProvisioningFailed"]
        # the driver now tracks capacity, and only node-d has room: the retry goes there
        api.create(CSI_DRIVER)
        api.create(capacity_on("node-d"))
        runtime = op.runtime
        assert runtime is not None
        seen = runtime.scheduler.volumes
        await wait_for(lambda: seen.capacities and seen.csidrivers, what="capacity seen")
        await op.advance(120.0)
        assert await wait_for(lambda: node_of(api, "worker"), what="bound") == "node-d"
        pvc = api.get("persistentvolumeclaims", "default", "scratch")
        assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-d"
        assert pvc["status"]["phase"] == "Bound"
    finally:
        await op.kill()


async def test_the_pod_is_bound_only_once_its_claim_is(cluster) -> None:  # type: ignore[no-untyped-def]
    """binder.go BindPodVolumes: the selected node is written, the Binding waits for the
    provisioner (held here until the test lets it act) and the PV controller."""
    from fakeapi import volumes as fake_volumes

    api, kubeconfig = cluster
    slow = storage_class("fast", "csi.example.com")
    slow["parameters"] = {fake_volumes.MANUAL: "manual"}
    api.create(slow)
    api.create(claim("scratch", "fast"))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(pod_with_claim("worker", "scratch"))
        chosen = await wait_for(
            lambda: (api.get("persistentvolumeclaims", "default", "scratch")["metadata"]
                     .get("annotations") or {}).get("volume.kubernetes.io/selected-node"),
            what="selected node written")
        await op.settle()
        assert bind_answers(api, "worker") == []
        assert node_of(api, "worker") is None
        fake_volumes.provision(api.store, "default", "scratch")
        assert await wait_for(lambda: node_of(api, "worker"), what="bound") == chosen
        paths = [e.path_qs for e in api.request_log if e.method in ("PATCH", "POST")]
        assert "/api/v1/namespaces/default/pods/worker/binding" in paths
    finally:
        await op.kill()
