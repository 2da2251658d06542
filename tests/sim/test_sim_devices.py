"""Devices in a simulation: the workload file's deviceClasses, claimTemplates, node
devices and pod claims, and the simulated cluster's claims (the resourceclaim controller
and the claim writes of a bind)."""

from __future__ import annotations

import textwrap

import pytest
from gangsched.core.values import devices as dv
from gangsched.core.values.decisions import AllocateClaim, ReserveClaim
from gangsched.core.values.model import PodUID
from gangsched.core.values.observations import Observation, VolumeGone, VolumeObserved
from gangsched.sim.claims import ClaimBook, ClaimError
from gangsched.sim.parse import build
from gangsched.sim.source import WorkloadError, parse
from gangsched.sim.workload import Workload

GPU = "gpu.example.com"
WORKLOAD = textwrap.dedent("""\
    deviceClasses:
      - {name: gpu.example.com, selectors: ["device.driver == 'gpu.example.com'"]}
    claimTemplates:
      - name: pair
        spec:
          devices:
            requests: [{name: gpus, exactly: {deviceClassName: gpu.example.com, count: 2}}]
            constraints: [{requests: [gpus], matchAttribute: gpu.example.com/domain}]
    nodes:
      - pool: gpu
        count: 2
        cpu: 8
        memory: 32Gi
        devices:
          - driver: gpu.example.com
            name: gpu
            count: 4
            attributes: {model: H100, index: 3, fast: true, cuda: {version: 12.4.0}}
            capacity: {memory: 80Gi}
            domain: {attribute: domain, size: 2}
      - {name: cpu-only, cpu: 8, memory: 32Gi}
    podGroups:
      - name: train
        minMember: 2
        pods: [{count: 2, duration: 60, cpu: 1, memory: 1Gi,
                claims: [{name: gpus, template: pair}]}]
    """)


def load(text: str) -> Workload:
    return build(parse(text, "workload.yaml"))


def errors(text: str) -> list[str]:
    with pytest.raises(WorkloadError) as caught:
        load(text)
    return [str(e) for e in caught.value.errors]


def test_devices_classes_templates_and_claims_are_read() -> None:
    workload = load(WORKLOAD)
    assert workload.uses_devices
    assert workload.device_classes == (dv.DeviceClass(GPU, (f"device.driver == '{GPU}'",)),)
    assert [s.name for s in workload.slices] == [f"gpu-0-{GPU}", f"gpu-1-{GPU}"]
    first = workload.slices[0]
    assert (first.driver, first.node_name, first.pool.name) == (GPU, "gpu-0", "gpu-0")
    assert [d.name for d in first.devices] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert [d.attributes["domain"] for d in first.devices] == [
        "gpu-0-0", "gpu-0-0", "gpu-0-1", "gpu-0-1"]
    assert first.devices[0].attributes["model"] == "H100"
    assert first.devices[0].attributes["index"] == 3
    assert first.devices[0].attributes["fast"] is True
    assert first.devices[0].attributes["cuda"] == dv.Version("12.4.0")
    spec = workload.claim_templates["pair"]
    assert spec.requests[0].exactly == dv.RequestSpec(GPU, count=2)
    assert spec.constraints == (dv.DeviceConstraint(("gpus",), match_attribute=f"{GPU}/domain"),)
    assert workload.jobs[0].pods[0].claims == (("gpus", "pair"),)


def test_a_workload_without_devices_uses_none() -> None:
    assert not load("nodes: [{pool: w, count: 1, cpu: 1, memory: 1Gi}]\n").uses_devices


@pytest.mark.parametrize("replace, expected", [
    pytest.param(("template: pair}", "template: quad}"),
                 'podGroups[0].pods[0].claims[0].template: no claim template "quad" (pair)',
                 id="unknown-template"),
    pytest.param(("count: 2}}]", "count: 0}}]"),
                 "claimTemplates[0].spec: devices.requests[0].exactly.count: must be at "
                 "least 1, got 0", id="bad-template"),
    pytest.param(("capacity: {memory: 80Gi}", "capacity: {memory: 80Qi}"),
                 'nodes[0].devices[0]: spec.devices[0].capacity.memory.value: invalid '
                 'quantity "80Qi"', id="bad-capacity"),
    pytest.param(("count: 4", "count: 129"),
                 "nodes[0].devices[0].count: is 129: a ResourceSlice holds at most 128 devices",
                 id="too-many-devices"),
    pytest.param(("selectors: [\"device.driver == 'gpu.example.com'\"]", "selectors: 3"),
                 "deviceClasses[0].selectors: must be a list of CEL expressions",
                 id="bad-selectors"),
])
def test_mistakes_are_reported_with_their_position(replace: tuple[str, str],
                                                   expected: str) -> None:
    text = WORKLOAD.replace(*replace)
    assert text != WORKLOAD
    found = errors(text)
    assert any(expected in e for e in found), found
    assert all(e.startswith("workload.yaml:") for e in found)


def claim(name: str = "c", owner: str = "pod-a") -> dv.ResourceClaim:
    return dv.ResourceClaim("default", name, owner_pod=owner,
                            spec=dv.ClaimSpec((dv.DeviceRequest("gpu", dv.RequestSpec(GPU)),)))


def allocation(device: str = "gpu-0") -> dv.AllocationResult:
    return dv.AllocationResult((dv.DeviceResult("gpu", GPU, "node-0", device),))


def test_the_claim_book_allocates_reserves_and_releases() -> None:
    seen: list[Observation] = []
    book = ClaimBook(seen.append)
    book.add((claim(),))
    made = book.claims["default/c"]
    assert made.uid and seen == [VolumeObserved(made)]
    allocate = AllocateClaim("default", "c", made.uid, made.resource_version, allocation(),
                             dv.ConsumerRef("pod-a", "uid-a"))
    book.write((allocate,))
    allocated = book.claims["default/c"]
    assert allocated.allocation == allocation() and allocated.reserved_by("uid-a")
    with pytest.raises(ClaimError) as caught:  # written on the old version: a conflict
        book.write((ReserveClaim("default", "c", made.uid, made.resource_version,
                                 dv.ConsumerRef("pod-b", "uid-b")),))
    assert caught.value.code == 409
    book.write((ReserveClaim("default", "c", made.uid, allocated.resource_version,
                             dv.ConsumerRef("pod-b", "uid-b")),))
    book.pod_finished(PodUID("uid-b"))  # one consumer left: still allocated
    assert book.claims["default/c"].allocation == allocation()
    book.pod_finished(PodUID("uid-a"))  # none left: deallocated
    assert book.claims["default/c"].allocation is None
    assert book.claims["default/c"].reserved_for == ()
    book.pod_finished(PodUID("pod-a"))  # the owner is gone: its claim is deleted
    assert "default/c" not in book.claims and seen[-1] == VolumeGone("ResourceClaim",
                                                                     "default/c")


def test_a_refused_write_undoes_the_pods_earlier_ones() -> None:
    book = ClaimBook(lambda _: None)
    book.add((claim("first"), claim("second")))
    first, second = book.claims["default/first"], book.claims["default/second"]
    ref = dv.ConsumerRef("pod-a", "uid-a")
    with pytest.raises(ClaimError) as caught:
        book.write((AllocateClaim("default", "first", first.uid, first.resource_version,
                                  allocation("gpu-0"), ref),
                    AllocateClaim("default", "second", "another-uid",
                                  second.resource_version, allocation("gpu-1"), ref)))
    assert caught.value.code == 404
    assert book.claims["default/first"].allocation is None
    assert book.claims["default/first"].reserved_for == ()
