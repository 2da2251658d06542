"""resource.k8s.io objects into the core's device values (v1 and v1beta1), bad input into
precise problems, and allocations back into ``status.allocation``."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.values import devices as dv
from gangsched.core.values.constraints import TolerationOperator
from gangsched.translate.device_claims import (
    allocation_to_k8s,
    resource_claim,
    resource_claim_template,
)
from gangsched.translate.devices import device_class, resource_slice

GPU = "gpu.example.com"


def slice_json(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-0-gpus"},
            "spec": {"driver": GPU, "nodeName": "node-0",
                     "pool": {"name": "node-0", "generation": 3, "resourceSliceCount": 2},
                     **spec}}


def claim_json(spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None,
               **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns", "uid": "u1",
                         "resourceVersion": "42", **meta},
            "spec": spec if spec is not None else {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": GPU}}]}},
            **({"status": status} if status is not None else {})}


def test_a_slice_with_its_pool_devices_attributes_capacity_and_taints() -> None:
    found = resource_slice(slice_json(devices=[{
        "name": "gpu-0",
        "attributes": {"index": {"int": 0}, "model": {"string": "A100"},
                       "nvlink": {"bool": True}, "driverVersion": {"version": "1.2.3"},
                       "siblings": {"ints": [1, 2]}},
        "capacity": {"memory": {"value": "80Gi"}},
        "taints": [{"key": "unhealthy", "value": "ecc", "effect": "NoExecute"}],
        "consumesCounters": [{"counterSet": "gpu-0-set", "counters": {
            "memory": {"value": "40Gi"}}}]}],
        sharedCounters=[{"name": "gpu-0-set", "counters": {"memory": {"value": "80Gi"}}}]))
    assert found.invalid is None
    assert (found.name, found.driver, found.node_name) == ("node-0-gpus", GPU, "node-0")
    assert found.pool == dv.PoolRef("node-0", 3, 2)
    (device,) = found.devices
    assert device.attributes == {"index": 0, "model": "A100", "nvlink": True,
                                 "driverVersion": dv.Version("1.2.3")}  # lists: not read
    assert device.capacity["memory"].value == dv.Quantity.parse("80Gi")
    assert device.taints == (dv.DeviceTaint("unhealthy", "ecc",
                                            dv.DeviceTaintEffect.NO_EXECUTE),)
    assert device.consumes_counters == (dv.CounterConsumption(
        "gpu-0-set", {"memory": dv.Quantity.parse("40Gi")}),)
    assert found.shared_counters == (dv.CounterSet("gpu-0-set",
                                                   {"memory": dv.Quantity.parse("80Gi")}),)


def test_a_v1beta1_device_keeps_its_fields_under_basic() -> None:
    found = resource_slice(slice_json(devices=[{"name": "gpu-0", "basic": {
        "attributes": {"index": {"int": 1}}, "capacity": {"memory": {"value": "1Gi"}}}}]))
    assert found.devices[0].attributes == {"index": 1}
    assert found.devices[0].capacity["memory"].value.milli == 2**30 * 1000


def test_a_slice_for_every_node_and_one_per_device() -> None:
    assert resource_slice(slice_json(nodeName=None, allNodes=True)).all_nodes
    per_device = resource_slice(slice_json(nodeName=None, perDeviceNodeSelection=True,
                                           devices=[{"name": "d", "nodeName": "node-3"}]))
    assert per_device.per_device_node_selection and per_device.devices[0].node_name == "node-3"
    selected = resource_slice(slice_json(nodeName=None, nodeSelector={"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}))
    assert selected.node_selector is not None and selected.node_selector.required_terms


@pytest.mark.parametrize("spec, problem", [
    pytest.param({"devices": [{"name": "d", "attributes": {"a": {"int": 1, "string": "x"}}}]},
                 "spec.devices[0].attributes.a: exactly one of int, bool, string, version is "
                 "required, got int, string", id="two-values"),
    pytest.param({"devices": [{"name": "d", "capacity": {"memory": {"value": "12Qi"}}}]},
                 'spec.devices[0].capacity.memory.value: invalid quantity "12Qi"',
                 id="bad-quantity"),
    pytest.param({"devices": [{"name": "d", "taints": [{"key": "k", "effect": "Evict"}]}]},
                 "spec.devices[0].taints[0].effect: unknown device taint effect 'Evict'",
                 id="bad-taint-effect"),
    pytest.param({"pool": {"name": "p", "resourceSliceCount": 0}},
                 "spec.pool.resourceSliceCount: must be at least 1, got 0", id="no-slices"),
    pytest.param({"devices": "gpu-0"}, "spec.devices: expected a list, got string",
                 id="devices-not-a-list"),
    pytest.param({"driver": None}, "spec.driver: Required value", id="no-driver"),
])
def test_a_bad_slice_is_observed_with_the_problem(spec: dict[str, Any], problem: str) -> None:
    found = resource_slice(slice_json(**spec))
    assert found.invalid is not None and problem in found.invalid, found.invalid
    assert found.name == "node-0-gpus"


def test_a_device_class() -> None:
    found = device_class({"metadata": {"name": GPU}, "spec": {
        "selectors": [{"cel": {"expression": f"device.driver == '{GPU}'"}}],
        "config": [{"opaque": {"driver": GPU, "parameters": {"sharing": "TimeSlicing"}}}]}})
    assert found == dv.DeviceClass(GPU, (f"device.driver == '{GPU}'",), (
        dv.OpaqueConfig(GPU, '{"sharing":"TimeSlicing"}'),))
    bad = device_class({"metadata": {"name": "x"}, "spec": {"selectors": [{"cel": {}}]}})
    assert bad.invalid == "spec.selectors[0].cel.expression: Required value"


def test_a_claim_with_every_kind_of_request() -> None:
    found = resource_claim(claim_json({"devices": {
        "requests": [
            {"name": "gpus", "exactly": {
                "deviceClassName": GPU, "count": 2,
                "selectors": [{"cel": {"expression": "device.attributes['x'].y"}}],
                "tolerations": [{"key": "unhealthy", "operator": "Exists",
                                 "effect": "NoSchedule"}],
                "capacity": {"requests": {"memory": "10Gi"}}}},
            {"name": "all", "exactly": {"deviceClassName": GPU, "allocationMode": "All",
                                        "adminAccess": True}},
            {"name": "nic", "firstAvailable": [
                {"name": "fast", "deviceClassName": "nic"},
                {"name": "slow", "deviceClassName": "nic", "count": 2}]}],
        "constraints": [{"requests": ["gpus", "nic"],
                         "matchAttribute": "gpu.example.com/domain"},
                        {"distinctAttribute": "gpu.example.com/index"}],
        "config": [{"requests": ["gpus"], "opaque": {"driver": GPU, "parameters": {}}}]}},
        ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-1",
                          "controller": True}], deletionTimestamp="2026-01-01T00:00:00Z"))
    assert found.invalid is None
    assert (found.key, found.uid, found.resource_version) == ("ns/c", "u1", "42")
    assert found.deleting and found.owner_pod == "pod-1"
    gpus, every, nic = found.spec.requests
    assert gpus.exactly == dv.RequestSpec(
        GPU, selectors=("device.attributes['x'].y",), count=2,
        tolerations=(dv.DeviceToleration("unhealthy", TolerationOperator.EXISTS,
                                         effect=dv.DeviceTaintEffect.NO_SCHEDULE),),
        capacity={"memory": dv.Quantity.parse("10Gi")})
    assert every.exactly is not None and every.exactly.allocation_mode is dv.AllocationMode.ALL
    assert every.exactly.admin_access
    assert [(s.name, s.count) for s in nic.first_available] == [("fast", 1), ("slow", 2)]
    assert found.spec.constraints == (
        dv.DeviceConstraint(("gpus", "nic"), match_attribute="gpu.example.com/domain"),
        dv.DeviceConstraint(distinct_attribute="gpu.example.com/index"))
    assert found.spec.config == (dv.ClaimConfig(dv.OpaqueConfig(GPU, "{}"), ("gpus",)),)


def test_a_v1beta1_request_is_flat() -> None:
    found = resource_claim(claim_json({"devices": {"requests": [
        {"name": "gpu", "deviceClassName": GPU, "allocationMode": "ExactCount", "count": 3}]}}))
    assert found.spec.requests[0].exactly == dv.RequestSpec(GPU, count=3)


@pytest.mark.parametrize("spec, problem", [
    pytest.param({"devices": {"requests": [{"name": "gpu"}]}},
                 "spec.devices.requests[0]: exactly one of `exactly` or `firstAvailable` is "
                 "required", id="no-kind"),
    pytest.param({"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": GPU, "allocationMode": "Some"}}]}},
                 "spec.devices.requests[0].exactly.allocationMode: unknown allocationMode "
                 "'Some'", id="bad-mode"),
    pytest.param({"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": GPU, "count": 0}}]}},
                 "spec.devices.requests[0].exactly.count: must be at least 1, got 0",
                 id="zero-count"),
    pytest.param({"devices": {"requests": [{"name": "gpu", "exactly": {}}]}},
                 "spec.devices.requests[0].exactly.deviceClassName: Required value",
                 id="no-class"),
    pytest.param({"devices": {"constraints": [{"requests": ["gpu"]}]}},
                 "spec.devices.constraints[0]: exactly one of `matchAttribute` or "
                 "`distinctAttribute` is required", id="constraint-without-attribute"),
    pytest.param({"devices": {"requests": 7}},
                 "spec.devices.requests: expected a list, got number 7", id="requests-number"),
])
def test_a_bad_claim_is_observed_with_the_problem(spec: dict[str, Any], problem: str) -> None:
    found = resource_claim(claim_json(spec))
    assert found.invalid is not None and problem in found.invalid, found.invalid
    assert found.key == "ns/c"


ALLOCATION = {
    "devices": {
        "results": [{"request": "gpus", "driver": GPU, "pool": "node-0", "device": "gpu-0"},
                    {"request": "nic/fast", "driver": "nic", "pool": "node-0",
                     "device": "eth1", "adminAccess": True,
                     "tolerations": [{"operator": "Exists", "key": "k"}],
                     "consumedCapacity": {"bandwidth": "10G"},
                     "shareID": "5f0c7b2e-0d0b-4bde-9f3c-0123456789ab"}],
        "config": [{"source": "FromClass", "requests": ["gpus"],
                    "opaque": {"driver": GPU, "parameters": {"a": 1}}}]},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["node-0"]}]}]},
}


def test_an_allocation_and_its_consumers_round_trip() -> None:
    found = resource_claim(claim_json(status={"allocation": ALLOCATION, "reservedFor": [
        {"resource": "pods", "name": "p", "uid": "pod-1"}]}))
    assert found.invalid is None and found.allocated and found.reserved_by("pod-1")
    assert found.reserved_for == (dv.ConsumerRef("p", "pod-1"),)
    assert found.allocation is not None
    assert [str(r.device_id) for r in found.allocation.devices] == [
        f"{GPU}/node-0/gpu-0", "nic/node-0/eth1"]
    assert allocation_to_k8s(found.allocation) == ALLOCATION


def test_an_allocation_for_every_node_has_no_node_selector() -> None:
    assert allocation_to_k8s(dv.AllocationResult((dv.DeviceResult("gpu", GPU, "p", "d"),))) \
        == {"devices": {"results": [{"request": "gpu", "driver": GPU, "pool": "p",
                                     "device": "d"}]}}


def test_a_template() -> None:
    found = resource_claim_template({"metadata": {"name": "single-gpu", "namespace": "ns"},
                                     "spec": {"spec": {"devices": {"requests": [
                                         {"name": "gpu", "exactly": {"deviceClassName": GPU}}]}}}})
    assert found.key == "ns/single-gpu" and found.invalid is None
    assert found.spec.requests == (dv.DeviceRequest("gpu", dv.RequestSpec(GPU)),)
    bad = resource_claim_template({"metadata": {"name": "t", "namespace": "ns"},
                                   "spec": {"spec": {"devices": {"requests": [{"name": "g"}]}}}})
    assert bad.invalid is not None and bad.invalid.startswith("spec.spec.devices.requests[0]")


@pytest.mark.parametrize("obj", [7, "x", [], {"metadata": 3, "spec": [], "status": "s"}])
def test_garbage_never_crashes(obj: Any) -> None:
    raw = obj if isinstance(obj, dict) else {"spec": obj}
    for reader in (resource_claim, resource_slice, device_class, resource_claim_template):
        found = reader(raw)
        assert found.invalid is not None and found.invalid.startswith(
            ("metadata", "spec")), found.invalid
