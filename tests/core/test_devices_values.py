"""The resource.k8s.io values and how the core receives them."""

from __future__ import annotations

import pytest
from gangsched.core.devices.describe import describe
from gangsched.core.devices.results import on_node
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.devices import (
    AllocationMode,
    AllocationResult,
    ClaimSpec,
    ConsumerRef,
    Device,
    DeviceClass,
    DeviceRequest,
    DeviceResult,
    DeviceTaintEffect,
    PoolRef,
    Quantity,
    RequestSpec,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    qualified,
)
from gangsched.core.values.observations import DeviceGone, DeviceObserved, VolumeObserved

from tests.core.volume_builders import on_nodes


@pytest.mark.parametrize(("a", "b", "equal"), [
    pytest.param("1Gi", "1073741824", True, id="binary-suffix-equals-plain"),
    pytest.param("1", "1000m", True, id="milli"),
    pytest.param("80Gi", "81Gi", False, id="different"),
    pytest.param("1m", "0.0001", True, id="rounded-up-to-milli"),
    pytest.param("1m", "0.002", False, id="milli-apart"),
])
def test_quantities_compare_by_value(a: str, b: str, equal: bool) -> None:
    assert (Quantity.parse(a) == Quantity.parse(b)) is equal
    assert str(Quantity.parse(a)) == a


def test_quantity_parts() -> None:
    assert Quantity.parse("0.0001").milli == 1
    assert Quantity.of(8).milli == 8000
    assert str(Quantity(1500)) == "1500m"
    assert str(Quantity(2000)) == "2"


@pytest.mark.parametrize(("name", "driver", "expected"), [
    pytest.param("model", "gpu.example.com", "gpu.example.com/model", id="short-in-driver-domain"),
    pytest.param("nvidia.com/model", "gpu.example.com", "nvidia.com/model", id="qualified-kept"),
])
def test_qualified_names(name: str, driver: str, expected: str) -> None:
    assert qualified(name, driver) == expected


def test_enums_name_the_accepted_values() -> None:
    assert AllocationMode.from_string("") is AllocationMode.EXACT_COUNT
    assert AllocationMode.from_string("All") is AllocationMode.ALL
    with pytest.raises(ConstraintError, match="ExactCount, All"):
        AllocationMode.from_string("Some")
    with pytest.raises(ConstraintError, match="None, NoSchedule, NoExecute"):
        DeviceTaintEffect.from_string("PreferNoSchedule")


def test_claim_allocation_and_reservation() -> None:
    claim = ResourceClaim("ns", "gpu")
    assert claim.key == "ns/gpu"
    assert not claim.allocated
    assert claim.node_affinity.required_terms is None
    result = DeviceResult("gpu", "gpu.example.com", "node-1", "gpu-0")
    allocated = ResourceClaim("ns", "gpu", allocation=AllocationResult(
        (result,), node_selector=on_nodes("node-1")), reserved_for=(ConsumerRef("p", "u1"),))
    assert allocated.allocated
    assert allocated.node_affinity == on_nodes("node-1")
    assert allocated.reserved_by("u1") and not allocated.reserved_by("u2")
    assert str(result.device_id) == "gpu.example.com/node-1/gpu-0"


def test_device_objects_reach_the_catalogue_and_leave_it() -> None:
    s = Scheduler()
    devices = s.volumes.devices
    slice_ = ResourceSlice("node-1-gpus", "gpu.example.com", PoolRef("node-1"),
                           node_name="node-1", devices=(Device("gpu-0"),))
    template = ResourceClaimTemplate("ns", "one-gpu", ClaimSpec((
        DeviceRequest("gpu", RequestSpec("gpu.example.com")),)))
    for obj in (DeviceClass("gpu.example.com"), slice_, template):
        before = devices.epoch
        s.observe(DeviceObserved(obj))
        assert devices.epoch > before
    assert devices.classes["gpu.example.com"].name == "gpu.example.com"
    assert devices.slices["node-1-gpus"] is slice_
    assert devices.templates["ns/one-gpu"] is template
    s.observe(VolumeObserved(ResourceClaim("ns", "c")))
    assert "ns/c" in s.volumes.resource_claims
    s.observe(DeviceGone("ResourceSlice", "node-1-gpus"))
    s.observe(DeviceGone("ResourceClaimTemplate", "ns/one-gpu"))
    s.observe(DeviceGone("DeviceClass", "gpu.example.com"))
    s.observe(DeviceGone("Unknown", "x"))
    assert not devices.slices and not devices.templates and not devices.classes


@pytest.mark.parametrize(("claim_obj", "line"), [
    pytest.param(ResourceClaim("ns", "gpu"), "gpu: not allocated", id="not-allocated"),
    pytest.param(ResourceClaim("ns", "gpu", allocation=AllocationResult(
        (DeviceResult("req-0", "gpu.example.com", "n1", "gpu-3"),), node_selector=on_node("n1")),
        reserved_for=(ConsumerRef("p", "u1"),)),
        "gpu: allocated on node n1, reserved for the pod: req-0: gpu.example.com/n1/gpu-3",
        id="node-local"),
    pytest.param(ResourceClaim("ns", "nic", allocation=AllocationResult(
        (DeviceResult("req-0", "nic.example.com", "rack-1", "nic-0", admin_access=True),)),
        reserved_for=(ConsumerRef("a", "u2"), ConsumerRef("b", "u3"))),
        "nic: allocated on any node, not reserved for the pod, shared by 2/256 consumers: "
        "req-0: nic.example.com/rack-1/nic-0 (admin)", id="shared-any-node"),
    pytest.param(ResourceClaim("ns", "x", allocation=AllocationResult(
        node_selector=on_nodes("a", "b"))), "x: allocated on nodes matching "
        "(kubernetes.io/hostname In a,b), not reserved for the pod: ", id="selector"),
])
def test_explain_lines_for_claims(claim_obj: ResourceClaim, line: str) -> None:
    assert describe(claim_obj, "u1").line() == line
