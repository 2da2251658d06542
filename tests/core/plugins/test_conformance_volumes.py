"""Conformance table: the volume plugins and DynamicResources, one row per rule.

Each row sets up nodes, storage objects and pods already placed, then offers one
pending pod to a scheduling cycle, and states where kube-scheduler v1.32 would put it
(the exact node; the nodes are name-sorted and scored by binpack, so the first feasible
node wins) or the words it would give for waiting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import (
    AnnotateClaim,
    BindPod,
    BindVolume,
    PodPending,
    ReserveClaim,
    VolumeWrite,
)
from gangsched.core.values.devices import ConsumerRef
from gangsched.core.values.model import Node, Pod, PodPhase
from gangsched.core.values.observations import (
    NodeObserved,
    PodObserved,
    ResourceClaimsServed,
    VolumeObserved,
)
from gangsched.core.values.volume_specs import VolumeObject

from tests.core.builders import make_node, make_pod
from tests.core.device_builders import claim as device_claim
from tests.core.device_builders import request
from tests.core.volume_builders import (
    FAST,
    IMMEDIATE,
    LOCAL,
    RWOP,
    RWX,
    make_claim,
    make_csinode,
    make_pv,
    make_pvc,
    with_volumes,
)


def host(name: str, **labels: str) -> Node:
    """A node labelled as the kubelet labels it (``kubernetes.io/hostname``)."""
    return make_node(name, labels={"kubernetes.io/hostname": name,
                                   **{k.replace("_", "."): v for k, v in labels.items()}})


NODES = (host("n1"), host("n2"), host("n3"))
ZONED = (make_node("n1", labels={"topology.kubernetes.io/zone": "b"}),
         make_node("n2", labels={"topology.kubernetes.io/zone": "a"}),
         make_node("n3", labels={"topology.kubernetes.io/zone": "c"}))


@dataclasses.dataclass(frozen=True)
class Case:
    objects: Sequence[VolumeObject]
    pod: Pod
    node: str | None
    """Where the pod is bound; None: it waits."""
    reason: str = ""
    """A part of the pending message (when it waits)."""
    writes: tuple[VolumeWrite, ...] = ()
    placed: Sequence[Pod] = ()
    nodes: Sequence[Node] = NODES
    dra: bool = False


def pod(*claims: str, **kwargs: tuple[str, ...]) -> Pod:
    return with_volumes(make_pod("p"), *claims, **kwargs)


def running(name: str, node: str, *claims: str, inline: tuple[str, ...] = ()) -> Pod:
    return with_volumes(make_pod(name, node=node, phase=PodPhase.RUNNING), *claims,
                        inline=inline)


BIND = "default/p"
CASES = [
    # --- VolumeBinding: bound claims --------------------------------------------------
    pytest.param(Case([LOCAL, make_pv("pv", node="n2", claim="data", phase="Bound"),
                       make_pvc("data", volume="pv")], pod("data"), "n2"),
                 id="binding-bound-pv-node-affinity-matches"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n9", claim="data", phase="Bound"),
                       make_pvc("data", volume="pv")], pod("data"), None,
                      "3 node(s) had volume node affinity conflict"),
                 id="binding-bound-pv-node-affinity-conflict"),
    pytest.param(Case([LOCAL, make_pvc("data", volume="gone")], pod("data"), None,
                      'bound to non-existent persistentvolume "gone"'),
                 id="binding-bound-to-missing-pv"),
    # --- VolumeBinding: WaitForFirstConsumer, static volumes ---------------------------
    pytest.param(Case([LOCAL, make_pv("pv-n3", node="n3"), make_pvc("data")], pod("data"),
                      "n3", writes=(BindVolume("pv-n3", "7", "default", "data",
                                               "uid-pvc-data"),)),
                 id="binding-wffc-static-pv-decides-the-node"),
    pytest.param(Case([LOCAL, make_pv("big", "20Gi"), make_pv("small", "6Gi"),
                       make_pvc("data", "5Gi")], pod("data"), "n1",
                      writes=(BindVolume("small", "7", "default", "data", "uid-pvc-data"),)),
                 id="binding-wffc-smallest-fitting-pv"),
    pytest.param(Case([LOCAL, make_pv("big", "50Gi", claim="data"), make_pv("small", "6Gi"),
                       make_pvc("data", "5Gi")], pod("data"), "n1",
                      writes=(BindVolume("big", "7", "default", "data", "uid-pvc-data"),)),
                 id="binding-wffc-prebound-pv-first"),
    pytest.param(Case([LOCAL, make_pv("mine", node="n3", claim="data", phase="Bound"),
                       make_pv("free", node="n1"), make_pvc("data")], pod("data"), "n3",
                      writes=(BindVolume("mine", "7", "default", "data", "uid-pvc-data"),)),
                 id="binding-wffc-pv-bound-to-the-claim-before-the-claim-shows-it"),
    pytest.param(Case([LOCAL, make_pv("pv", "1Gi", node="n1"), make_pvc("data", "5Gi")],
                      pod("data"), None,
                      "3 node(s) didn't find available persistent volumes to bind"),
                 id="binding-wffc-pv-too-small"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n1"), make_pvc("data", modes=RWX)],
                      pod("data"), None, "didn't find available persistent volumes to bind"),
                 id="binding-wffc-pv-lacks-access-mode"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n1", storage_class="other"),
                       make_pvc("data")], pod("data"), None,
                      "didn't find available persistent volumes to bind"),
                 id="binding-wffc-pv-of-another-class"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n1", claim="theirs", phase="Bound"),
                       make_pvc("data")], pod("data"), None,
                      "didn't find available persistent volumes to bind"),
                 id="binding-wffc-pv-claimed-by-another"),
    # --- VolumeBinding: WaitForFirstConsumer, dynamic provisioning --------------------
    pytest.param(Case([FAST, make_pvc("data", storage_class="fast")], pod("data"), "n1",
                      writes=(AnnotateClaim("default", "data", "n1"),)),
                 id="binding-wffc-provisioned-gets-selected-node"),
    pytest.param(Case([FAST, make_pvc("data", storage_class="fast", selected_node="n2")],
                      pod("data"), "n2"),
                 id="binding-wffc-provisioning-keeps-its-selected-node"),
    # --- VolumeBinding: PreFilter -----------------------------------------------------
    pytest.param(Case([IMMEDIATE, make_pvc("data", storage_class="standard")], pod("data"),
                      None, "pod has unbound immediate PersistentVolumeClaims"),
                 id="binding-immediate-unbound-waits"),
    pytest.param(Case([make_pvc("data", storage_class=None)], pod("data"), None,
                      "pod has unbound immediate PersistentVolumeClaims"),
                 id="binding-classless-unbound-waits"),
    pytest.param(Case([], pod("data"), None, 'persistentvolumeclaim "data" not found'),
                 id="binding-missing-claim-waits"),
    pytest.param(Case([make_pvc("data", storage_class="nope")], pod("data"), None,
                      'storageclass.storage.k8s.io "nope" not found'),
                 id="binding-missing-class-waits"),
    pytest.param(Case([LOCAL, make_pvc("data", terminating=True)], pod("data"), None,
                      'persistentvolumeclaim "data" is being deleted'),
                 id="binding-deleting-claim-waits"),
    pytest.param(Case([], pod(ephemeral=("p-scratch",)), None,
                      "waiting for ephemeral volume controller to create the "
                      'persistentvolumeclaim "p-scratch"'),
                 id="binding-ephemeral-claim-not-made-yet"),
    pytest.param(Case([FAST, make_pvc("p-scratch", storage_class="fast")],
                      pod(ephemeral=("p-scratch",)), "n1",
                      writes=(AnnotateClaim("default", "p-scratch", "n1"),)),
                 id="binding-ephemeral-claim-provisioned"),
    # --- VolumeRestrictions -----------------------------------------------------------
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound"),
                       make_pvc("data", modes=RWOP, volume="pv")], pod("data"), None,
                      "node has pod using PersistentVolumeClaim with the same name and "
                      "ReadWriteOncePod access mode", placed=[running("other", "n1", "data")]),
                 id="restrictions-rwop-in-use-waits"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound"),
                       make_pvc("data", modes=RWOP, volume="pv")], pod("data"), "n1",
                      placed=[running("other", "n1", "unrelated")]),
                 id="restrictions-rwop-unused-binds"),
    # --- NodeVolumeLimits -------------------------------------------------------------
    pytest.param(Case([LOCAL, make_csinode("n1", csi_example_com=1),
                       make_pv("a", claim="a", phase="Bound", driver="csi.example.com"),
                       make_pv("b", claim="b", phase="Bound", driver="csi.example.com"),
                       make_pvc("a", volume="a"), make_pvc("b", volume="b")], pod("b"), "n2",
                      placed=[running("other", "n1", "a")]),
                 id="limits-driver-count-reached-elsewhere"),
    pytest.param(Case([LOCAL, make_csinode("n1", csi_example_com=2),
                       make_pv("a", claim="a", phase="Bound", driver="csi.example.com"),
                       make_pv("b", claim="b", phase="Bound", driver="csi.example.com"),
                       make_pvc("a", volume="a"), make_pvc("b", volume="b")], pod("b"), "n1",
                      placed=[running("other", "n1", "a")]),
                 id="limits-driver-count-room-left"),
    pytest.param(Case([LOCAL, make_csinode("n1", csi_example_com=1),
                       make_pv("a", claim="a", phase="Bound", driver="csi.example.com"),
                       make_pvc("a", volume="a")], pod("a"), "n1",
                      placed=[running("other", "n1", "a")]),
                 id="limits-shared-claim-counts-once"),
    pytest.param(Case([make_csinode("n1", csi_example_com=1), make_csinode("n2"),
                       make_csinode("n3", csi_example_com=0)], pod(inline=("csi.example.com",)),
                      "n2", placed=[running("other", "n1", inline=("csi.example.com",))]),
                 id="limits-inline-csi-volumes-count"),
    pytest.param(Case([FAST, make_csinode("n1", csi_example_com=0),
                       make_pvc("data", storage_class="fast")], pod("data"), "n2",
                      writes=(AnnotateClaim("default", "data", "n2"),)),
                 id="limits-unbound-claim-counts-for-its-provisioner"),
    # --- VolumeZone -------------------------------------------------------------------
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={"topology.kubernetes.io/zone": "a"}),
                       make_pvc("data", volume="pv")], pod("data"), "n2", nodes=ZONED),
                 id="zone-pv-zone-matches-node"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={"topology.kubernetes.io/zone": "x__c"}),
                       make_pvc("data", volume="pv")], pod("data"), "n3", nodes=ZONED),
                 id="zone-pv-in-several-zones"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={"topology.kubernetes.io/zone": "x"}),
                       make_pvc("data", volume="pv")], pod("data"), None,
                      "3 node(s) had no available volume zone", nodes=ZONED),
                 id="zone-no-node-in-the-pv-zone"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={"topology.kubernetes.io/region": "eu"}),
                       make_pvc("data", volume="pv")], pod("data"), None,
                      "had no available volume zone", nodes=ZONED),
                 id="zone-node-without-the-label"),
    # --- DynamicResources -------------------------------------------------------------
    pytest.param(Case([], pod(resource_claims=("gpu",)), None,
                      "the resource.k8s.io API is not served"),
                 id="dra-api-not-served-waits"),
    pytest.param(Case([make_claim("gpu", node="n3")], pod(resource_claims=("gpu",)), "n3",
                      writes=(ReserveClaim("default", "gpu", "", "",
                                           ConsumerRef("p", "uid-default-p")),), dra=True),
                 id="dra-allocated-claim-decides-the-node-and-is-reserved"),
    pytest.param(Case([device_claim("gpu", request("req-0", "no-such-class"))],
                      pod(resource_claims=("gpu",)), None,
                      "request req-0: device class no-such-class does not exist", dra=True),
                 id="dra-unallocated-claim-of-a-missing-class-waits"),
    pytest.param(Case([device_claim("gpu")], pod(resource_claims=("gpu",)), None,
                      "device class class-a does not exist", dra=True),
                 id="dra-claim-waits-for-its-device-class"),
    pytest.param(Case([], pod(resource_claims=("gpu",)), None,
                      'resourceclaim "gpu" not found', dra=True),
                 id="dra-missing-claim-waits"),
    pytest.param(Case([], pod(unresolved=("gpu",)), None,
                      'waiting for the resourceclaim of pod claim "gpu" to be created',
                      dra=True),
                 id="dra-template-claim-not-made-yet"),
]


@pytest.mark.parametrize("case", CASES)
def test_volume_plugin_rule(case: Case) -> None:
    s = Scheduler()
    for node in case.nodes:
        s.observe(NodeObserved(node))
    s.observe(ResourceClaimsServed(case.dra))
    for obj in case.objects:
        s.observe(VolumeObserved(obj))
    for placed in case.placed:
        s.observe(PodObserved(placed))
    s.observe(PodObserved(case.pod))
    decisions = s.cycle(now=10.0)
    binds = [d for d in decisions if isinstance(d, BindPod)]
    pending = [d for d in decisions if isinstance(d, PodPending)]
    if case.node is None:
        assert binds == []
        assert pending and case.reason in pending[-1].message, pending
    else:
        assert [(b.name, b.node) for b in binds] == [("p", case.node)], pending
        assert binds[0].volumes == case.writes
