"""``resource.k8s.io/v1`` as a v1.36 API server serves it: the four kinds, their
validation, the claim's status subresource with optimistic concurrency, the
resourceclaim controller and the kubelet's check of a pod's claims.

The controller's and the kubelet's timers are fired with ``kubelet.flush()``; the
delays are long enough never to fire by themselves within a test.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import ApiError, FakeApiServer
from fakeapi.builders import make_pod
from fakeapi.claims import FINALIZER, POD_CLAIM_NAME, generate_name
from fakeapi.client import RawClient
from fakeapi.fixtures import ServerFactory
from fakeapi.kubelet import Timing

GROUP = "/apis/resource.k8s.io"
V1 = "resource.k8s.io/v1"
SLOW = Timing(start=5.0, controller=5.0)


def device_class(name: str = "gpu.example.com", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression":
                                            'device.driver == "gpu.example.com"'}}], **spec}}


def resource_slice(name: str = "n1-gpus", node: str = "n1", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "a"}}},
                                 {"name": "gpu-1"}], **spec}}


def claim_spec(count: int | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com"}
    if count is not None:
        exactly["count"] = count
    return {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}


def claim(name: str = "c", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": claim_spec(), **extra}


def template(name: str = "gpu") -> dict[str, Any]:
    return {"apiVersion": V1, "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"metadata": {"labels": {"team": "a"}}, "spec": claim_spec()}}


def allocation(device: str = "gpu-0", node: str = "n1") -> dict[str, Any]:
    return {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": node, "device": device}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}


def pod_with_claims(name: str, **entry: str) -> dict[str, Any]:
    pod = make_pod(name)
    pod["spec"]["resourceClaims"] = [{"name": "gpu", **entry}]
    return pod


def reserve(server: FakeApiServer, name: str, pod: dict[str, Any]) -> dict[str, Any]:
    """What kube-scheduler's PreBind writes: the finalizer, then allocation and
    reservedFor on the status (each at the version read)."""
    current = server.get("resourceclaims", "default", name)
    current["metadata"]["finalizers"] = [FINALIZER]
    rtype = server.resolve("resourceclaims")
    updated = server.store.update(rtype, "default", name, current)
    updated["status"] = {"allocation": allocation(), "reservedFor": [
        {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}]}
    return server.store.update(rtype, "default", name, updated, subresource="status")


async def test_not_served_until_turned_on(fake_api: FakeApiServer) -> None:
    async with RawClient(fake_api.url) as client:
        status, _ = await client.get(f"{GROUP}/v1/resourceclaims")
        assert status == 404
        fake_api.serve_dra()
        _, group = await client.get(GROUP)
        assert [v["version"] for v in group["versions"]] == ["v1"]
        _, listed = await client.get(f"{GROUP}/v1")
        by_name = {r["name"]: r for r in listed["resources"]}
        assert set(by_name) == {"deviceclasses", "resourceslices", "resourceclaims",
                                "resourceclaims/status", "resourceclaimtemplates"}
        assert not by_name["deviceclasses"]["namespaced"]
        assert not by_name["resourceslices"]["namespaced"]
        assert by_name["resourceclaims"]["namespaced"]
        fake_api.stop_dra()
        status, _ = await client.get(f"{GROUP}/v1/resourceclaims")
        assert status == 404


async def test_resource_slices_select_by_node_and_driver(fake_api: FakeApiServer) -> None:
    fake_api.serve_dra()
    fake_api.create(resource_slice("a", "n1"))
    fake_api.create(resource_slice("b", "n2"))
    fake_api.create(resource_slice("c", "n3", driver="nic.example.com"))
    names = [s["metadata"]["name"] for s in fake_api.list(
        "resourceslices", field_selector="spec.nodeName=n2")]
    assert names == ["b"]
    names = [s["metadata"]["name"] for s in fake_api.list(
        "resourceslices", field_selector="spec.driver=gpu.example.com")]
    assert names == ["a", "b"]
    async with RawClient(fake_api.url) as client:
        status, body = await client.get(f"{GROUP}/v1/resourceclaims?fieldSelector="
                                        "spec.nodeName%3Dn1")
        assert status == 400 and body["message"] == "field label not supported: spec.nodeName"


async def test_claim_defaults_and_drops_status_on_create(fake_api: FakeApiServer) -> None:
    fake_api.serve_dra()
    made = fake_api.create(claim(status={"allocation": allocation()}))
    assert "status" not in made
    assert made["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}


@pytest.mark.parametrize("obj, cause", [
    pytest.param(resource_slice(pool={"name": "p", "resourceSliceCount": 0}),
                 "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
                 id="slice-count"),
    pytest.param(resource_slice(allNodes=True),
                 "exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                 "`perDeviceNodeSelection` is required, but multiple fields are set",
                 id="slice-two-node-fields"),
    pytest.param(resource_slice(devices=[{"name": "gpu-0"}, {"name": "gpu-0"}]),
                 'spec.devices[1].name: Duplicate value: "gpu-0"', id="slice-duplicate-device"),
    pytest.param(resource_slice(devices=[{"name": "g", "attributes": {"x": {}}}]),
                 "spec.devices[0].attributes[x]: Invalid value: exactly one value must be "
                 "specified", id="slice-attribute-without-value"),
    pytest.param(device_class(selectors=[{"cel": {}}]),
                 "spec.selectors[0].cel.expression: Required value", id="class-selector"),
    pytest.param(claim(spec={"devices": {"requests": [{"name": "gpu"}]}}),
                 "spec.devices.requests[0]: Required value: exactly one of `exactly` or "
                 "`firstAvailable` is required", id="claim-no-request-kind"),
    pytest.param(claim(spec={"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "c", "allocationMode": "All", "count": 2}}]}}),
                 "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be "
                 "specified when allocationMode is 'All'", id="claim-all-with-count"),
    pytest.param(claim(spec={"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "c"}}], "constraints": [{"requests": ["nic"],
                                                    "matchAttribute": "d.example.com/x"}]}}),
                 'spec.devices.constraints[0].requests[0]: Invalid value: "nic": must be the '
                 "name of a request in the claim", id="claim-constraint-unknown-request"),
    pytest.param(claim(spec={"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "c"}}], "constraints": [{"matchAttribute": "numa"}]}}),
                 'spec.devices.constraints[0].matchAttribute: Invalid value: "numa": must '
                 "include a domain", id="claim-attribute-without-domain"),
])
async def test_invalid_objects_are_refused(fake_api: FakeApiServer, obj: dict[str, Any],
                                           cause: str) -> None:
    fake_api.serve_dra()
    with pytest.raises(ApiError) as caught:
        fake_api.create(obj)
    assert caught.value.code == 422
    assert cause in caught.value.message


async def test_claim_status_rules(fake_api: FakeApiServer) -> None:
    fake_api.serve_dra()
    rtype = fake_api.resolve("resourceclaims")
    made = fake_api.create(claim())
    stale = dict(made)
    bad = {**made, "status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}
    with pytest.raises(ApiError) as caught:
        fake_api.store.update(rtype, "default", "c", bad, subresource="status")
    assert caught.value.code == 422
    assert "status.reservedFor: Forbidden: may not be specified when `allocated` is not " \
           "set" in caught.value.message
    ok = {**made, "status": {"allocation": allocation()}}
    allocated = fake_api.store.update(rtype, "default", "c", ok, subresource="status")
    with pytest.raises(ApiError) as caught:  # written on the version read before: 409
        fake_api.store.update(rtype, "default", "c", {**stale, "status": {
            "allocation": allocation("gpu-1")}}, subresource="status")
    assert caught.value.code == 409
    assert caught.value.message == (
        'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "c": the object has '
        "been modified; please apply your changes to the latest version and try again")
    with pytest.raises(ApiError) as caught:  # an allocation is never changed, only cleared
        fake_api.store.update(rtype, "default", "c", {**allocated, "status": {
            "allocation": allocation("gpu-1")}}, subresource="status")
    assert caught.value.code == 422 and "status.allocation: Invalid value" in \
        caught.value.message and "field is immutable" in caught.value.message
    with pytest.raises(ApiError) as caught:
        fake_api.store.update(rtype, "default", "c", {**allocated, "spec": claim_spec(2)})
    assert caught.value.code == 422 and "spec: Invalid value" in caught.value.message


def test_generate_name_shortens_both_parts() -> None:
    assert generate_name("worker-0", "gpu") == "worker-0-gpu-"
    long_pod, long_claim = "p" * 60, "c" * 30
    # 92 characters: each part cut to its share of 57 (60*57//92, 30*57//92), and, as
    # upstream, no hyphen after the claim's part then
    assert generate_name(long_pod, long_claim) == "p" * 37 + "-" + "c" * 18


async def test_controller_makes_claims_from_templates(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True, timing=SLOW)
    server.serve_dra()
    pod = server.create(pod_with_claims("worker-0", resourceClaimTemplateName="gpu"))
    server.kubelet.flush()  # no template yet: the pod waits
    assert "resourceClaimStatuses" not in server.get("pods", "default", "worker-0")["status"]
    server.create(template())
    assert server.list("resourceclaims") == []  # the controller has not acted yet
    server.kubelet.flush()
    made = server.list("resourceclaims")
    assert len(made) == 1
    md = made[0]["metadata"]
    assert md["name"].startswith("worker-0-gpu-") and len(md["name"]) == len("worker-0-gpu-") + 5
    assert md["annotations"] == {POD_CLAIM_NAME: "gpu"} and md["labels"] == {"team": "a"}
    assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Pod", "name": "worker-0",
                                      "uid": pod["metadata"]["uid"], "controller": True,
                                      "blockOwnerDeletion": True}]
    status = server.get("pods", "default", "worker-0")["status"]
    assert status["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": md["name"]}]
    server.patch("pods", "default", "worker-0", {"metadata": {"labels": {"x": "y"}}})
    server.kubelet.flush()
    assert len(server.list("resourceclaims")) == 1  # never made twice


async def test_kubelet_starts_a_pod_only_once_its_claim_is_reserved_for_it(
        fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True, timing=SLOW)
    server.serve_dra()
    server.create(claim("shared"))
    pod = server.create(pod_with_claims("p", resourceClaimName="shared"))
    server.bind("default", "p", "n1")
    server.kubelet.flush()
    assert server.get("pods", "default", "p")["status"]["phase"] == "Pending"
    events = server.list("events", field_selector="reason=FailedPrepareDynamicResources")
    assert len(events) == 1 and "is not allowed to use resource claim shared" in \
        events[0]["message"]
    reserve(server, "shared", pod)
    server.kubelet.flush()
    assert server.get("pods", "default", "p")["status"]["phase"] == "Running"


async def test_controller_releases_and_deletes_claims_of_pods_that_are_gone(
        fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True, timing=SLOW)
    server.serve_dra()
    server.create(template())
    server.create(claim("shared"))
    pod = server.create(pod_with_claims("p", resourceClaimTemplateName="gpu"))
    other = server.create(pod_with_claims("q", resourceClaimName="shared"))
    server.kubelet.flush()
    generated = server.get("pods", "default", "p")["status"]["resourceClaimStatuses"][0][
        "resourceClaimName"]
    reserve(server, generated, pod)
    reserve(server, "shared", other)
    server.bind("default", "p", "n1")
    server.bind("default", "q", "n1")
    server.kubelet.flush()
    assert server.get("pods", "default", "p")["status"]["phase"] == "Running"
    server.finish_pod("default", "q")  # done: its reservation goes, the claim is free
    server.delete("pods", "default", "p")  # gone: its generated claim goes too
    assert server.get("resourceclaims", "default", generated)["metadata"].get(
        "deletionTimestamp")  # the finalizer holds it until the controller deallocates
    server.kubelet.flush()
    shared = server.get("resourceclaims", "default", "shared")
    assert shared.get("status", {}) == {}  # no reservedFor, no allocation
    assert not shared["metadata"].get("finalizers")
    assert server.try_get("resourceclaims", "default", generated) is None


async def test_a_done_pods_generated_claim_is_deleted(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True, timing=SLOW)
    server.serve_dra()
    server.create(template())
    pod = server.create(pod_with_claims("p", resourceClaimTemplateName="gpu"))
    server.kubelet.flush()
    generated = server.get("pods", "default", "p")["status"]["resourceClaimStatuses"][0][
        "resourceClaimName"]
    reserve(server, generated, pod)
    server.bind("default", "p", "n1")
    server.kubelet.flush()
    server.finish_pod("default", "p")
    server.kubelet.flush()
    assert server.try_get("resourceclaims", "default", generated) is None
    assert server.get("pods", "default", "p")["status"]["phase"] == "Succeeded"
