"""Storage objects, resource claims and a pod's volumes, from API objects."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.values.constraints import ANY_NODE, matches_affinity
from gangsched.core.values.volume_specs import (
    AccessMode,
    BindingMode,
    ClaimRef,
    PodClaim,
    PodVolumes,
)
from gangsched.translate import fields
from gangsched.translate import volumes as tv

LOCAL_PV: dict[str, Any] = {
    "apiVersion": "v1", "kind": "PersistentVolume",
    "metadata": {"name": "local-d", "uid": "u1", "resourceVersion": "42",
                 "labels": {"topology.kubernetes.io/zone": "a"}},
    "spec": {
        "capacity": {"storage": "100Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "local": {"path": "/mnt/disk"},
        "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-d"]}]}]}},
    },
    "status": {"phase": "Available"},
}


def test_a_local_pv_reads_with_its_node_affinity() -> None:
    pv = tv.persistent_volume(LOCAL_PV)
    assert (pv.name, pv.resource_version, pv.capacity, pv.storage_class, pv.phase) == (
        "local-d", "42", 100 * 2**30, "local", "Available")
    assert pv.access_modes == {AccessMode.READ_WRITE_ONCE}
    assert matches_affinity(pv.node_affinity, {"kubernetes.io/hostname": "node-d"}, "node-d")
    assert not matches_affinity(pv.node_affinity, {"kubernetes.io/hostname": "x"}, "x")
    assert pv.claim_ref is None and pv.invalid is None
    assert pv.labels == {"topology.kubernetes.io/zone": "a"}


@pytest.mark.parametrize(("change", "message"), [
    pytest.param({"accessModes": ["ReadWriteSometimes"]},
                 "spec.accessModes[0]: unknown access mode 'ReadWriteSometimes'",
                 id="unknown-access-mode"),
    pytest.param({"capacity": {"storage": "lots"}}, 'spec.capacity.storage: invalid quantity',
                 id="bad-capacity"),
    pytest.param({"nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "Sometimes"}]}]}}},
                 "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0]",
                 id="bad-node-affinity"),
])
def test_an_unreadable_pv_is_kept_with_its_problem(change: dict[str, Any], message: str) -> None:
    pv = tv.persistent_volume({**LOCAL_PV, "spec": {**LOCAL_PV["spec"], **change}})
    assert pv.invalid is not None and message in pv.invalid


def test_a_bound_pv_names_its_claim() -> None:
    pv = tv.persistent_volume({**LOCAL_PV, "spec": {**LOCAL_PV["spec"], "claimRef": {
        "namespace": "ns", "name": "data", "uid": "c1"}}, "status": {"phase": "Bound"}})
    assert pv.claim_ref == ClaimRef("ns", "data", "c1")
    assert pv.phase == "Bound"


def test_a_pv_without_node_affinity_fits_any_node() -> None:
    spec = {k: v for k, v in LOCAL_PV["spec"].items() if k != "nodeAffinity"}
    assert tv.persistent_volume({**LOCAL_PV, "spec": spec}).node_affinity == ANY_NODE


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param({"metadata": {"namespace": "ns", "name": "c"},
                  "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOncePod"],
                           "resources": {"requests": {"storage": "1Gi"}}}},
                 ("local", 2**30, "", "Pending", ""), id="unbound"),
    pytest.param({"metadata": {"namespace": "ns", "name": "c"},
                  "spec": {"volumeName": "pv"}, "status": {"phase": "Bound"}},
                 (None, 0, "pv", "Bound", ""), id="bound-without-class"),
    pytest.param({"metadata": {"namespace": "ns", "name": "c", "annotations": {
        "volume.kubernetes.io/selected-node": "node-1"}}, "spec": {"storageClassName": ""}},
                 ("", 0, "", "Pending", "node-1"), id="provisioning-for-a-node"),
])
def test_claims(obj: dict[str, Any], expected: tuple[object, ...]) -> None:
    claim = tv.persistent_volume_claim(obj)
    assert (claim.storage_class, claim.request, claim.volume_name, claim.phase,
            claim.selected_node) == expected
    assert claim.key == "ns/c"


def test_storage_classes_and_csinodes() -> None:
    sc = tv.storage_class({"metadata": {"name": "local"}, "provisioner":
                           "kubernetes.io/no-provisioner",
                           "volumeBindingMode": "WaitForFirstConsumer"})
    assert sc.binding_mode is BindingMode.WAIT_FOR_FIRST_CONSUMER and not sc.provisions
    assert tv.storage_class({"metadata": {"name": "x"}}).binding_mode is BindingMode.IMMEDIATE
    node = tv.csi_node({"metadata": {"name": "n"}, "spec": {"drivers": [
        {"name": "ebs.csi.aws.com", "allocatable": {"count": 25}},
        {"name": "no-limit"}, "junk"]}})
    assert node.limits == {"ebs.csi.aws.com": 25}


def test_resource_claims() -> None:
    claim = tv.resource_claim({"metadata": {"namespace": "ns", "name": "gpu"}, "status": {
        "allocation": {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}}})
    assert claim.allocated
    assert matches_affinity(claim.node_affinity, {}, "n2")
    assert not matches_affinity(claim.node_affinity, {}, "n1")
    assert not tv.resource_claim({"metadata": {"namespace": "ns", "name": "g"}}).allocated


def test_a_pods_volumes() -> None:
    problems = fields.Problems()
    spec = {"volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "secrets", "csi": {"driver": "secrets-store.csi.k8s.io"}},
        {"name": "cfg", "configMap": {"name": "cfg"}},
    ], "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared-gpu"},
                          {"name": "nic", "resourceClaimTemplateName": "nic"},
                          {"name": "fpga", "resourceClaimTemplateName": "fpga"}]}
    status = {"resourceClaimStatuses": [{"name": "nic", "resourceClaimName": "p-nic-x1"}]}
    found = tv.pod_volumes("p", spec, status, problems)
    assert found == PodVolumes(
        (PodClaim("data"), PodClaim("p-scratch", ephemeral=True)),
        ("secrets-store.csi.k8s.io",), ("shared-gpu", "p-nic-x1"), ("fpga",))
    assert problems.message() is None


def test_a_claim_volume_without_a_claim_name_is_a_problem() -> None:
    problems = fields.Problems()
    tv.pod_volumes("p", {"volumes": [{"name": "d", "persistentVolumeClaim": {}}]}, {},
                   problems)
    assert problems.message() == ("spec.volumes[0].persistentVolumeClaim.claimName: "
                                  "Required value")


CLAIM: dict[str, Any] = {"metadata": {"namespace": "ns", "name": "c"}, "spec": {
    "storageClassName": "local", "resources": {"requests": {"storage": "1Gi"}}}}


def test_a_claims_selector_and_volume_mode() -> None:
    claim = tv.persistent_volume_claim({**CLAIM, "spec": {
        **CLAIM["spec"], "volumeMode": "Block", "selector": {
            "matchLabels": {"tier": "gold"},
            "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}})
    assert claim.volume_mode == "Block" and claim.invalid is None
    assert claim.selector is not None
    assert claim.selector.matches({"tier": "gold", "disk": "ssd"})
    assert not claim.selector.matches({"tier": "gold"})
    plain = tv.persistent_volume_claim(CLAIM)
    assert (plain.selector, plain.volume_mode) == (None, "Filesystem")


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"volumeMode": "Tape"}, 'spec.volumeMode: Unsupported value: "Tape"',
                 id="volume-mode"),
    pytest.param({"selector": {"matchExpressions": [{"key": "k", "operator": "Gt",
                                                      "values": ["1"]}]}},
                 'unknown operator "Gt"', id="selector-operator"),
])
def test_an_unreadable_claim_selector_or_mode_is_a_problem(spec: dict[str, Any],
                                                          message: str) -> None:
    claim = tv.persistent_volume_claim({**CLAIM, "spec": {**CLAIM["spec"], **spec}})
    assert claim.invalid is not None and message in claim.invalid


def test_a_pvs_volume_mode_and_migrated_driver() -> None:
    pv = tv.persistent_volume({**LOCAL_PV, "spec": {
        **LOCAL_PV["spec"], "volumeMode": "Block", "local": None,
        "awsElasticBlockStore": {"volumeID": "vol-1"}}})
    assert (pv.volume_mode, pv.csi_driver) == ("Block", "ebs.csi.aws.com")
    assert tv.persistent_volume(LOCAL_PV).volume_mode == "Filesystem"


@pytest.mark.parametrize(("source", "driver"), [
    pytest.param({"awsElasticBlockStore": {"volumeID": "v"}}, "ebs.csi.aws.com", id="ebs"),
    pytest.param({"gcePersistentDisk": {"pdName": "d"}}, "pd.csi.storage.gke.io", id="pd"),
    pytest.param({"azureDisk": {"diskName": "d", "diskURI": "u"}}, "disk.csi.azure.com",
                 id="azure-disk"),
    pytest.param({"csi": {"driver": "x.example.com"}}, "x.example.com", id="csi"),
])
def test_inline_in_tree_volumes_count_as_their_csi_driver(source: dict[str, Any],
                                                         driver: str) -> None:
    found = tv.pod_volumes("p", {"volumes": [{"name": "d", **source}]}, {},
                           fields.Problems())
    assert found.csi_inline == (driver,)


def test_allowed_topologies() -> None:
    sc = tv.storage_class({"metadata": {"name": "zonal"}, "provisioner": "x",
                           "allowedTopologies": [
                               {"matchLabelExpressions": [
                                   {"key": "topology.kubernetes.io/zone", "values": ["a"]}]},
                               {"matchLabelExpressions": [
                                   {"key": "topology.kubernetes.io/zone", "values": ["b"]},
                                   {"key": "disk", "values": ["ssd"]}]}]})
    zone = "topology.kubernetes.io/zone"
    assert matches_affinity(sc.allowed_topologies, {zone: "a"}, "n")
    assert matches_affinity(sc.allowed_topologies, {zone: "b", "disk": "ssd"}, "n")
    assert not matches_affinity(sc.allowed_topologies, {zone: "b"}, "n")
    assert tv.storage_class({"metadata": {"name": "any"}}).allowed_topologies == ANY_NODE
    broken = tv.storage_class({"metadata": {"name": "b"}, "allowedTopologies": "zone-a"})
    assert not matches_affinity(broken.allowed_topologies, {zone: "a"}, "n")


def test_csidrivers_and_storage_capacities() -> None:
    assert tv.csi_driver({"metadata": {"name": "d"}, "spec": {"storageCapacity": True}}) \
        .storage_capacity
    assert not tv.csi_driver({"metadata": {"name": "d"}, "spec": {}}).storage_capacity
    capacity = tv.storage_capacity({
        "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
        "metadata": {"namespace": "kube-system", "name": "csisc-1"},
        "storageClassName": "fast", "capacity": "100Gi", "maximumVolumeSize": "10Gi",
        "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}})
    assert (capacity.key, capacity.storage_class, capacity.capacity,
            capacity.maximum_volume_size) == ("kube-system/csisc-1", "fast", 100 * 2**30,
                                              10 * 2**30)
    assert capacity.node_topology is not None
    assert capacity.node_topology.matches({"topology.kubernetes.io/zone": "a"})
    bare = tv.storage_capacity({"metadata": {"namespace": "k", "name": "c"},
                                "storageClassName": "fast", "capacity": "lots"})
    assert (bare.node_topology, bare.capacity, bare.maximum_volume_size) == (None, None, None)
