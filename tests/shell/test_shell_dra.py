"""Dynamic Resource Allocation end to end: the operator against the fake API server's
resource.k8s.io/v1, its resourceclaim controller and its kubelet, with real (small)
delays: claims made from templates after a while, watch events late, pods stopped
gracefully.

Here: the cluster and its helpers, and what the operator does with claims it does not
allocate itself (a claim allocated by hand decides the node). The scheduler's own
allocations are in ``test_shell_dra_allocation.py``.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.kubelet import QUICK
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    node,
    pod,
    wait_for,
)

pytestmark = pytest.mark.asyncio
GPU = "gpu.example.com"
V1 = "resource.k8s.io/v1"
DOMAIN = f"{GPU}/nvlink-domain"


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    api: FakeApiServer = await fake_api_factory(auto_run=True, timing=QUICK)
    api.serve_dra()
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    for i in range(3):
        add_node(api, node(f"node-{i}", cpu="8", memory="32Gi"))
    api.create({"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": GPU},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{GPU}'"}}]}})
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


def gpus(api: FakeApiServer, on: str, *domains: str) -> None:
    """A ResourceSlice of ``on`` with one GPU per domain given."""
    api.create({"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": f"{on}-gpus"},
                "spec": {"driver": GPU, "nodeName": on,
                         "pool": {"name": on, "generation": 1, "resourceSliceCount": 1},
                         "devices": [{"name": f"gpu-{i}", "attributes": {
                             "nvlink-domain": {"string": domain}}}
                             for i, domain in enumerate(domains)]}})


def template(api: FakeApiServer, name: str = "one-gpu", count: int = 1,
             same_domain: bool = False) -> None:
    devices: dict[str, Any] = {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": GPU, "count": count}}]}
    if same_domain:
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": DOMAIN}]
    api.create({"apiVersion": V1, "kind": "ResourceClaimTemplate",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"spec": {"devices": devices}}})


def podgroup(api: FakeApiServer, name: str, min_member: int, **spec: Any) -> None:
    api.create({"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"minMember": min_member, "scheduleTimeoutSeconds": 600, **spec}})


def member(name: str, group: str | None = None, claim_template: str = "one-gpu",
           **options: Any) -> dict[str, Any]:
    body = pod(name, cpu="500m", memory="256Mi",
               labels={"gangsched.io/pod-group": group} if group else None, **options)
    body["spec"]["resourceClaims"] = [{"name": "gpu",
                                       "resourceClaimTemplateName": claim_template}]
    body["spec"]["terminationGracePeriodSeconds"] = 1
    return body


def node_of(api: FakeApiServer, name: str) -> str | None:
    found = api.try_get("pods", "default", name)
    return None if found is None else found["spec"].get("nodeName")


def claim_of(api: FakeApiServer, name: str) -> dict[str, Any] | None:
    found = api.try_get("pods", "default", name)
    for status in ((found or {}).get("status") or {}).get("resourceClaimStatuses") or []:
        return api.try_get("resourceclaims", "default", status["resourceClaimName"])
    return None


def devices_of(api: FakeApiServer, name: str) -> list[tuple[str, str]]:
    """(pool, device) of each device allocated to the pod's claim."""
    claim = claim_of(api, name) or {}
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [(r["pool"], r["device"]) for r in allocation.get("devices", {}).get("results", [])]


def reserved_for(api: FakeApiServer, name: str) -> list[str]:
    claim = claim_of(api, name) or {}
    return [r["name"] for r in (claim.get("status") or {}).get("reservedFor") or []]


def running(api: FakeApiServer, name: str) -> bool:
    found = api.try_get("pods", "default", name)
    return (found or {}).get("status", {}).get("phase") == "Running"


async def test_the_operator_watches_dra_and_uses_a_claim_allocated_by_hand(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    gpus(api, "node-1", "a", "a")
    api.create({"apiVersion": V1, "kind": "ResourceClaim",
                "metadata": {"name": "shared", "namespace": "default"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                    "deviceClassName": GPU}}]}}})
    api.patch_status("resourceclaims", "default", "shared", {"allocation": {
        "devices": {"results": [{"request": "gpu", "driver": GPU, "pool": "node-1",
                                 "device": "gpu-0"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}})
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        body = member("user")
        body["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
        api.create(body)
        await wait_for(lambda: node_of(api, "user"), what="user bound")
        assert node_of(api, "user") == "node-1"  # where the allocated device is
        for path in ("deviceclasses", "resourceslices", "resourceclaimtemplates",
                     "resourceclaims"):
            assert api.request_count("watch", path) >= 1, path
    finally:
        await op.kill()
