"""Conformance of the structured allocator with kube-scheduler 1.36's.

Each case is one allocation on one node; the expected result is what upstream's
allocator decides for the same input. A case whose id starts with ``upstream:`` is a
case of ``staging/src/k8s.io/dynamic-resource-allocation/structured/internal/
allocatortesting/allocator_testing.go`` (same name, same input, same answer); the others
follow the same code paths (``allocator_incubating.go``) for what that table does not
cover the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from gangsched.core.devices.allocator import CANNOT_ALLOCATE, Allocator
from gangsched.core.devices.catalog import DeviceCatalog
from gangsched.core.devices.results import on_node
from gangsched.core.values.constraints import NodeAffinity, TolerationOperator
from gangsched.core.values.devices import (
    ClaimConfig,
    Device,
    DeviceClass,
    DeviceID,
    DeviceTaint,
    DeviceTaintEffect,
    DeviceToleration,
    OpaqueConfig,
    ResourceClaim,
    ResourceSlice,
    Version,
)
from gangsched.core.values.model import Node
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.device_builders import (
    CLASS_A,
    CLASS_B,
    DRIVER_A,
    DRIVER_B,
    REGION,
    claim,
    device,
    distinct,
    first_available,
    label_selector,
    make_class,
    make_slice,
    match,
    node,
    request,
    spec,
)

Result = tuple[str, str, str, str]
"""(request, driver, pool, device)."""


@dataclass
class Case:
    claims: Sequence[ResourceClaim]
    slices: Sequence[ResourceSlice] = (make_slice(),)
    classes: Sequence[DeviceClass] = (make_class(),)
    node: Node = field(default_factory=node)
    taken: Sequence[DeviceID] = ()
    expect: list[list[Result]] | None = None
    error: str = ""
    selector: NodeAffinity | str | None = "local"
    admin: bool = False


def _r(device_name: str = "device-1", req: str = "req-0", pool: str = "pool-1",
       driver: str = DRIVER_A) -> Result:
    return (req, driver, pool, device_name)


def _id(name: str = "device-1", pool: str = "pool-1", driver: str = DRIVER_A) -> DeviceID:
    return DeviceID(driver, pool, name)


def _v(name: str, version: str) -> Device:
    return device(name, attributes={"driverVersion": Version(version)})


MEMORY = 'device.capacity["driver-a"].memory.compareTo(quantity("{}")) >= 0'
NUMA = "driver-a/numa"
TAINT = DeviceTaint("taint-key", "taint-value", DeviceTaintEffect.NO_SCHEDULE)
TOLERATE = DeviceToleration("taint-key", TolerationOperator.EXISTS,
                            effect=DeviceTaintEffect.NO_SCHEDULE)

CASES = {
    "upstream:simple": Case([claim()], expect=[[_r()]]),
    "upstream:other-node": Case(
        [claim()], slices=[make_slice("slice-1", driver=DRIVER_B),
                           make_slice("slice-2", node="node-2", pool="pool-2")],
        node=node("node-2", "region-2"), expect=[[_r(pool="pool-2")]]),
    "upstream:small-and-large": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1, MEMORY.format("1Gi")),
               request("req-1", CLASS_A, 1, MEMORY.format("2Gi")))],
        slices=[make_slice("slice-1", device("device-1", memory="1Gi"),
                           device("device-2", memory="2Gi"))],
        expect=[[_r("device-1"), _r("device-2", "req-1")]]),
    "upstream:small-and-large-backtrack-requests": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1, MEMORY.format("1Gi")),
               request("req-1", CLASS_A, 1, MEMORY.format("2Gi")))],
        slices=[make_slice("slice-1", device("device-2", memory="2Gi"),
                           device("device-1", memory="1Gi"))],
        expect=[[_r("device-1"), _r("device-2", "req-1")]]),
    "upstream:small-and-large-backtrack-claims": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1, MEMORY.format("1Gi"))),
         claim("claim-1", request("req-1", CLASS_A, 1, MEMORY.format("2Gi")))],
        slices=[make_slice("slice-1", device("device-2", memory="2Gi"),
                           device("device-1", memory="1Gi"))],
        expect=[[_r("device-1")], [_r("device-2", "req-1")]]),
    "upstream:devices-split-across-different-slices": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2))],
        slices=[make_slice("slice-1"), make_slice("slice-2", pool="pool-2")],
        expect=[[_r(), _r(pool="pool-2")]]),
    "upstream:obsolete-slice": Case(
        [claim()], slices=[make_slice("slice-1-obsolete", device("device-1"), count=2),
                           make_slice("slice-1-new", device("device-2"), count=2,
                                      generation=1)]),
    "upstream:duplicate-slice": Case(
        [claim()], slices=[make_slice("slice-1", count=2), make_slice("slice-1-2", count=2)],
        error="invalid resource pools were encountered"),
    "upstream:no-slices": Case([claim()], slices=[]),
    "upstream:not-enough-suitable-devices": Case(
        [claim("claim-0", request("req-0"), request("req-1"))]),
    "upstream:unknown-class": Case(
        [claim("claim-0", request("req-0", "unknown-class"))],
        error="request req-0: device class unknown-class does not exist"),
    "upstream:all-devices-single": Case(
        [claim("claim-0", request(all_devices=True))], expect=[[_r()]]),
    "upstream:all-devices-many": Case(
        [claim("claim-0", request(all_devices=True))],
        slices=[make_slice("slice-1"), make_slice("slice-1b", pool="pool-2")],
        expect=[[_r(), _r(pool="pool-2")]]),
    "upstream:all-devices-of-the-incomplete-pool": Case(
        [claim("claim-0", request(all_devices=True))], slices=[make_slice(count=2)],
        error="claim default/claim-0, request req-0: asks for all devices, but resource "
              "pool driver-a/pool-1 is currently being updated"),
    "upstream:all-devices-plus-another": Case(
        [claim("claim-0", request(all_devices=True)),
         claim("claim-1", request("req-0", CLASS_B))],
        classes=[make_class(), make_class(CLASS_B, DRIVER_B)],
        slices=[make_slice("slice-1"), make_slice("slice-1b", driver=DRIVER_B)],
        expect=[[_r()], [_r(driver=DRIVER_B)]]),
    "all-devices-none-free": Case(
        [claim("claim-0", request(all_devices=True))],
        slices=[make_slice("slice-1", device("device-1"), device("device-2"))],
        taken=[_id("device-2")]),
    "exact-count-three-of-four": Case(
        [claim("claim-0", request("req-0", CLASS_A, 3))],
        slices=[make_slice("slice-1", *(device(f"device-{i}") for i in range(1, 5)))],
        taken=[_id("device-2")],
        expect=[[_r("device-1"), _r("device-3"), _r("device-4")]]),
    "incomplete-pool-not-used-for-exact-count": Case(
        [claim()], slices=[make_slice(count=2)]),
    "upstream:network-attached-device": Case(
        [claim()], slices=[make_slice(selector=label_selector(REGION, "region-1"))],
        expect=[[_r()]], selector=label_selector(REGION, "region-1")),
    "upstream:unsuccessful-allocation-network-attached-device": Case(
        [claim()], slices=[make_slice(selector=label_selector(REGION, "region-1"))],
        node=node("node-2", "region-2")),
    "upstream:local-and-network-attached-devices": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2))],
        slices=[make_slice("slice-1", selector=label_selector(REGION, "region-1")),
                make_slice("slice-1b", pool="pool-2")],
        expect=[[_r(), _r(pool="pool-2")]]),
    "all-nodes-slice-has-no-selector": Case(
        [claim()], slices=[make_slice(all_nodes=True)], expect=[[_r()]], selector=None),
    "per-device-node-selection": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1", node="node-2"),
                                      device("device-2", node="node-1"), per_device=True)],
        expect=[[_r("device-2")]]),
    "upstream:several-different-drivers": Case(
        [claim("claim-0", request()), claim("claim-0b", request("req-0", CLASS_B))],
        classes=[make_class(), make_class(CLASS_B, DRIVER_B)],
        slices=[make_slice("slice-1", device("device-1"), device("device-2")),
                make_slice("slice-1b", driver=DRIVER_B)],
        expect=[[_r()], [_r(driver=DRIVER_B)]]),
    "upstream:already-allocated-devices": Case(
        [claim()], taken=[_id("device-1"), _id("device-2")]),
    "upstream:admin-access-enabled": Case(
        [claim("claim-0", request(admin=True))], taken=[_id("device-1"), _id("device-2")],
        expect=[[_r()]], admin=True),
    "upstream:with-constraint": Case(
        [claim("claim-0", request("req-0"), request("req-1"),
               constraints=(match(NUMA), match("driver-a/driverVersion"),
                            match("driver-a/stringAttribute"), match("driver-a/boolAttribute")))],
        slices=[make_slice("slice-1", *(device(n, attributes={
            "driverVersion": Version("1.0.0"), "numa": 1,
            "stringAttribute": "stringAttributeValue", "boolAttribute": True})
            for n in ("device-1", "device-2")))],
        expect=[[_r("device-1"), _r("device-2", "req-1")]]),
    "upstream:with-constraint-non-existent-attribute": Case(
        [claim("claim-0", request(), constraints=(match("driver-a/NonExistentAttribute"),))]),
    "upstream:with-constraint-not-matching-int-attribute": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2), constraints=(match(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 1}),
                           device("device-2", attributes={"numa": 2}))]),
    "upstream:with-constraint-not-matching-int-attribute-all-devices": Case(
        [claim("claim-0", request(all_devices=True), constraints=(match(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 1}),
                           device("device-2", attributes={"numa": 2}))],
        error="claim default/claim-0, request req-0: cannot add device "
              "driver-a/pool-1/device-2 because a claim constraint would not be satisfied"),
    "upstream:with-constraint-not-matching-version-attribute": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2),
               constraints=(match("driver-a/driverVersion"),))],
        slices=[make_slice("slice-1", _v("device-1", "1.0.0"),
                           _v("device-2", "2.0.0"))]),
    "upstream:with-constraint-for-request": Case(
        [claim("claim-0", request("req-0"), request("req-1"),
               constraints=(match("driver-a/driverVersion", "req-0"),))],
        slices=[make_slice("slice-1", _v("device-1", "1.0.0"),
                           _v("device-2", "2.0.0"))],
        expect=[[_r("device-1"), _r("device-2", "req-1")]]),
    "match-attribute-picks-the-numa-with-two-free": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2), constraints=(match(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 0}),
                           device("device-2", attributes={"numa": 1}),
                           device("device-3", attributes={"numa": 0}),
                           device("device-4", attributes={"numa": 1}))],
        taken=[_id("device-3")], expect=[[_r("device-2"), _r("device-4")]]),
    "match-attribute-int-and-string-differ": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2), constraints=(match(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 1}),
                           device("device-2", attributes={"numa": "1"}))]),
    "distinct-attribute": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2), constraints=(distinct(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 0}),
                           device("device-2", attributes={"numa": 0}),
                           device("device-3", attributes={"numa": 1}))],
        expect=[[_r("device-1"), _r("device-3")]]),
    "distinct-attribute-unsatisfiable": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2), constraints=(distinct(NUMA),))],
        slices=[make_slice("slice-1", device("device-1", attributes={"numa": 0}),
                           device("device-2", attributes={"numa": 0}))]),
    "upstream:prioritized-list-first-unavailable": Case(
        [claim("claim-0", first_available("req-0", spec(CLASS_B, name="subreq-0"),
                                          spec(CLASS_A, name="subreq-1")))],
        classes=[make_class(), make_class(CLASS_B, DRIVER_B)],
        expect=[[_r(req="req-0/subreq-1")]]),
    "first-available-takes-the-first-that-fits": Case(
        [claim("claim-0", first_available("req-0", spec(CLASS_A, 2, name="two"),
                                          spec(CLASS_A, 1, name="one")))],
        slices=[make_slice("slice-1", device("device-1"), device("device-2"))],
        expect=[[_r("device-1", "req-0/two"), _r("device-2", "req-0/two")]]),
    "first-available-falls-back-when-taken": Case(
        [claim("claim-0", first_available("req-0", spec(CLASS_A, 2, name="two"),
                                          spec(CLASS_A, 1, name="one")))],
        slices=[make_slice("slice-1", device("device-1"), device("device-2"))],
        taken=[_id("device-1")], expect=[[_r("device-2", "req-0/one")]]),
    "semver-selector": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1,
                                  'device.attributes["driver-a"].driverVersion'
                                  '.isGreaterThan(semver("1.5.0"))'))],
        slices=[make_slice("slice-1", _v("device-1", "1.2.0"),
                           _v("device-2", "2.0.0"))],
        expect=[[_r("device-2")]]),
    "string-and-bool-selectors-on-class": Case(
        [claim()], classes=[make_class(CLASS_A, DRIVER_A,
                                       'device.attributes["driver-a"].model == "a100"',
                                       'device.attributes["driver-a"].healthy')],
        slices=[make_slice("slice-1",
                           device("device-1", attributes={"model": "a100", "healthy": False}),
                           device("device-2", attributes={"model": "a100", "healthy": True}))],
        expect=[[_r("device-2")]]),
    "selector-missing-attribute-is-a-runtime-error": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1,
                                  'device.attributes["driver-a"].model == "x"'))],
        error="claim default/claim-0: selector #0 on device driver-a/pool-1/device-1: "
              "CEL runtime error: no such key: model"),
    "selector-that-does-not-compile": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1, "device.driver =="))],
        error="claim default/claim-0: selector #0: CEL compile error"),
    "selector-not-bool": Case(
        [claim("claim-0", request("req-0", CLASS_A, 1, "device.driver"))],
        error="could not be converted to bool"),
    "upstream:partitionable-devices-single-device": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1", counters={"memory": "4Gi"}),
                                      counters={"gpu-0": {"memory": "8Gi"}})],
        expect=[[_r()]]),
    "partitionable-counters-exhausted": Case(
        [claim("claim-0", request("req-0", CLASS_A, 2))],
        slices=[make_slice("slice-1", device("whole", counters={"memory": "8Gi"}),
                           device("half-1", counters={"memory": "4Gi"}),
                           device("half-2", counters={"memory": "4Gi"}),
                           counters={"gpu-0": {"memory": "8Gi"}})],
        expect=[[_r("half-1"), _r("half-2")]]),
    "partitionable-counters-taken-by-allocated": Case(
        [claim()],
        slices=[make_slice("slice-1", device("whole", counters={"memory": "8Gi"}),
                           device("half-1", counters={"memory": "4Gi"}),
                           device("half-2", counters={"memory": "4Gi"}),
                           counters={"gpu-0": {"memory": "8Gi"}})],
        taken=[_id("half-1")], expect=[[_r("half-2")]]),
    "taint-not-tolerated": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1", taints=(TAINT,)))]),
    "taint-tolerated": Case(
        [claim("claim-0", request(tolerations=(TOLERATE,)))],
        slices=[make_slice("slice-1", device("device-1", taints=(TAINT,)))],
        expect=[[_r()]]),
    "taint-effect-none-ignored": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1", taints=(
            DeviceTaint("k", "v", DeviceTaintEffect.NONE),)))], expect=[[_r()]]),
    "capacity-request-within": Case(
        [claim("claim-0", request(capacity={"memory": "10Gi"}))],
        slices=[make_slice("slice-1", device("device-1", memory="8Gi"),
                           device("device-2", memory="16Gi"))],
        expect=[[_r("device-2")]]),
    "binding-conditions-refused": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1",
                                                       binding_conditions=("ready",)))]),
    "multiple-allocations-refused": Case(
        [claim()], slices=[make_slice("slice-1", device("device-1",
                                                       allow_multiple_allocations=True))]),
    "too-many-devices": Case(
        [claim("claim-0", request("req-0", CLASS_A, 33))],
        error="claim default/claim-0: number of requested devices 33 exceeds the claim "
              "limit of 32"),
    "two-claims-never-share-a-device": Case(
        [claim("claim-0"), claim("claim-1")],
        slices=[make_slice("slice-1", device("device-1"), device("device-2"))],
        expect=[[_r("device-1")], [_r("device-2")]]),
}


@pytest.mark.parametrize("case", [pytest.param(c, id=k) for k, c in CASES.items()])
def test_allocator_conformance(case: Case) -> None:
    catalog = DeviceCatalog()
    for obj in (*case.classes, *case.slices):
        catalog.upsert(obj)
    taken = {device_id: "other/claim" for device_id in case.taken}
    outcome = Allocator(catalog, taken=taken).allocate(case.node, case.claims)
    if case.error:
        assert outcome.allocations is None
        assert case.error in outcome.error
        return
    assert outcome.error == ""
    if case.expect is None:
        assert outcome.allocations is None
        assert outcome.reason == CANNOT_ALLOCATE
        return
    assert outcome.allocations is not None
    got = [[(r.request, r.driver, r.pool, r.device) for r in a.devices]
           for a in outcome.allocations]
    assert got == case.expect
    for allocation in outcome.allocations:
        assert all(r.admin_access is (True if case.admin else None) for r in allocation.devices)
        expected = on_node(case.node.name) if case.selector == "local" else case.selector
        assert allocation.node_selector == expected


def test_class_and_claim_config_are_copied() -> None:
    catalog = DeviceCatalog()
    opaque = OpaqueConfig(DRIVER_A, '{"sharing":"time-slicing"}')
    mine = OpaqueConfig(DRIVER_A, '{"mine":1}')
    catalog.upsert(DeviceClass(CLASS_A, ('device.driver == "driver-a"',), (opaque,)))
    catalog.upsert(make_slice("slice-1", device("device-1"), device("device-2")))
    spec_claim = claim("claim-0", request("req-0"), request("req-1"))
    spec_claim = ResourceClaim(spec_claim.namespace, spec_claim.name, spec_claim.uid, "1",
                               type(spec_claim.spec)(spec_claim.spec.requests, (),
                                                     (ClaimConfig(mine, ("req-1",)),)))
    outcome = Allocator(catalog).allocate(node(), [spec_claim])
    assert outcome.allocations is not None
    config = outcome.allocations[0].config
    assert [(c.source, c.opaque, c.requests) for c in config] == [
        ("FromClass", opaque, ()), ("FromClaim", mine, ("req-1",))]


def test_selector_errors_never_raise_and_compile_once() -> None:
    catalog = DeviceCatalog()
    catalog.upsert(make_class())
    catalog.upsert(make_slice("slice-1", *(device(f"device-{i}", attributes={"numa": i})
                                           for i in range(4))))
    selector = 'device.attributes["driver-a"].numa == 3'
    for _ in range(3):
        outcome = Allocator(catalog).allocate(node(), [claim("claim-0", request(
            "req-0", CLASS_A, 1, selector))])
        assert outcome.allocations is not None
    # 4 devices, one class selector and one claim selector each, evaluated once.
    assert catalog.selectors.evaluations == 8


@settings(max_examples=40, deadline=None)
@given(st.sets(st.integers(min_value=0, max_value=11)), st.integers(min_value=1, max_value=4),
       st.lists(st.sets(st.integers(min_value=0, max_value=11)), max_size=4))
def test_kept_free_counts_agree_with_the_search(taken: set[int], count: int,
                                                changes: list[set[int]]) -> None:
    """The per-node free counts of simple requests, kept up to date as devices are taken
    and given back, decide as the search does."""
    catalog = DeviceCatalog()
    catalog.upsert(make_class())
    nodes = [node(f"node-{n}") for n in range(3)]
    for n in range(3):
        devices = (device(f"device-{i}", attributes={"big": i % 2 == 0}) for i in range(4))
        catalog.upsert(make_slice(f"slice-{n}", *devices, node=f"node-{n}", pool=f"pool-{n}"))
    ids = [DeviceID(DRIVER_A, f"pool-{i // 4}", f"device-{i % 4}") for i in range(12)]
    wanted = claim("claim-0", request("req-0", CLASS_A, count,
                                      'device.attributes["driver-a"].big'))
    for step in [taken, *changes]:
        for i, device_id in enumerate(ids):
            if i in step and device_id not in catalog.taken:
                catalog._take(device_id, "other/claim")
            elif i not in step and device_id in catalog.taken:
                catalog._release(device_id)
        selectors = ('device.attributes["driver-a"].big',)
        quick = catalog.matching.fits(catalog.pools(), catalog.selectors,
                                      catalog.classes[CLASS_A], selectors, count, nodes)
        searched = [Allocator(catalog).reason(n, [wanted]) == "" for n in nodes]
        assert quick == searched


def test_a_search_that_cannot_end_soon_stops_with_a_reason() -> None:
    """32 of 40 devices sharing a value no 32 of them share: C(40, 32) combinations."""
    catalog = DeviceCatalog()
    catalog.upsert(make_class())
    catalog.upsert(make_slice("slice-1", *(device(f"device-{i}", attributes={"numa": i % 2})
                                           for i in range(40))))
    wanted = claim("claim-0", request("req-0", CLASS_A, 32), constraints=(match(NUMA),))
    outcome = Allocator(catalog).allocate(node(), [wanted])
    assert outcome.allocations is None
    assert outcome.error == "timed out trying to allocate devices"
