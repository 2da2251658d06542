"""kube-scheduler parity of the volume plugins, round 2: one row per rule, with the
upstream function it follows.

Each row sets up nodes and storage objects, offers one pending pod to a scheduling
cycle, and states where kube-scheduler would put it (the nodes are name-sorted and
scored by binpack, so the first feasible node wins) and the PreBind writes, or the words
it gives for waiting. Rows whose objects are written as Kubernetes JSON go through the
translation as the operator's do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.constraints import (
    SelectorOperator,
    SelectorRequirement,
    matches_affinity,
)
from gangsched.core.values.decisions import (
    AnnotateClaim,
    BindPod,
    BindVolume,
    PodPending,
    VolumeWrite,
)
from gangsched.core.values.model import Node, Pod
from gangsched.core.values.observations import NodeObserved, PodObserved, VolumeObserved
from gangsched.core.values.selectors import LabelSelector
from gangsched.core.values.volume_specs import BindingMode, StorageClass, VolumeObject
from gangsched.translate import volumes as tv
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.core.builders import make_node, make_pod
from tests.core.volume_builders import (
    FAST,
    LOCAL,
    in_zones,
    make_capacity,
    make_csinode,
    make_driver,
    make_pv,
    make_pvc,
    with_volumes,
)

GA_ZONE = "topology.kubernetes.io/zone"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def zoned(label: str = GA_ZONE) -> tuple[Node, ...]:
    """n1 in zone b, n2 in zone a, n3 in zone c (each also labelled with its hostname)."""
    return tuple(make_node(name, labels={"kubernetes.io/hostname": name, label: zone})
                 for name, zone in (("n1", "b"), ("n2", "a"), ("n3", "c")))


HOSTS = tuple(make_node(n, labels={"kubernetes.io/hostname": n}) for n in ("n1", "n2", "n3"))
ZONED = zoned()
ZONE_A_ONLY = StorageClass("fast", "csi.example.com", BindingMode.WAIT_FOR_FIRST_CONSUMER,
                           in_zones("a"))
GOLD = LabelSelector.build({"tier": "gold"})


@dataclasses.dataclass(frozen=True)
class Case:
    objects: Sequence[VolumeObject]
    node: str | None
    """Where the pod is bound; None: it waits."""
    reason: str = ""
    writes: tuple[VolumeWrite, ...] = ()
    nodes: Sequence[Node] = ZONED
    pod: Pod = dataclasses.field(default_factory=lambda: with_volumes(make_pod("p"), "data"))


def annotate(node: str) -> tuple[VolumeWrite, ...]:
    return (AnnotateClaim("default", "data", node),)


def bind(volume: str) -> tuple[VolumeWrite, ...]:
    return (BindVolume(volume, "7", "default", "data", "uid-pvc-data"),)


def pv_json(name: str, source: dict[str, Any], claim: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                     "storageClassName": "gp", **source,
                     "claimRef": {"namespace": "default", "name": claim}},
            "status": {"phase": "Bound"}}


EBS = {"awsElasticBlockStore": {"volumeID": "vol-1"}}
NOT_FOUND = "didn't find available persistent volumes to bind"
NO_SPACE = "node(s) did not have enough free storage"
NO_ZONE = "node(s) had no available volume zone"

CASES = [
    # --- 5. allowedTopologies (binder.go checkVolumeProvisions: MatchTopologySelectorTerms)
    pytest.param(Case([ZONE_A_ONLY, make_pvc("data", storage_class="fast")], "n2",
                      writes=annotate("n2")),
                 id="5-allowed-topologies-provision-only-in-zone-a"),
    pytest.param(Case([ZONE_A_ONLY, make_pvc("data", storage_class="fast")], None,
                      f"3 node(s) {NOT_FOUND}", nodes=HOSTS),
                 id="5-allowed-topologies-no-node-in-zone-waits"),
    pytest.param(Case([FAST, make_pvc("data", storage_class="fast")], "n1",
                      writes=annotate("n1")),
                 id="5-no-allowed-topologies-any-node"),
    # --- 6. static PVs (component-helpers storage/volume FindMatchingVolume; binder.go
    # GetPodVolumes and isPVCFullyBound for a claim pre-bound by spec.volumeName) --------
    pytest.param(Case([LOCAL, make_pv("plain", "6Gi", node="n1"),
                       make_pv("gold", "20Gi", node="n3", labels={"tier": "gold"}),
                       make_pvc("data", selector=GOLD)], "n3", writes=bind("gold")),
                 id="6-selector-match-labels"),
    pytest.param(Case([LOCAL, make_pv("plain", "6Gi", node="n1"),
                       make_pv("gold", "20Gi", node="n3", labels={"tier": "gold"}),
                       make_pvc("data", selector=LabelSelector.build(match_expressions=[
                           SelectorRequirement("tier", SelectorOperator.EXISTS, ())]))],
                      "n3", writes=bind("gold")),
                 id="6-selector-match-expressions"),
    pytest.param(Case([LOCAL, make_pv("plain", node="n1"),
                       make_pvc("data", selector=GOLD)], None, NOT_FOUND),
                 id="6-selector-no-pv-matches-waits"),
    pytest.param(Case([LOCAL, make_pv("mine", node="n2", claim="data"),
                       make_pvc("data", selector=GOLD)], "n2", writes=bind("mine")),
                 id="6-prebound-pv-is-not-held-to-the-selector"),
    pytest.param(Case([LOCAL, make_pv("fs", "6Gi", node="n1"),
                       make_pv("raw", "20Gi", node="n3", mode="Block"),
                       make_pvc("data", mode="Block")], "n3", writes=bind("raw")),
                 id="6-volume-mode-block-claim-takes-block-pv"),
    pytest.param(Case([LOCAL, make_pv("raw", node="n1", mode="Block"),
                       make_pv("fs", "20Gi", node="n3"), make_pvc("data")], "n3",
                      writes=bind("fs")),
                 id="6-volume-mode-filesystem-claim-skips-block-pv"),
    pytest.param(Case([LOCAL, make_pv("mine", node="n1", claim="data", mode="Block"),
                       make_pvc("data")], None, NOT_FOUND),
                 id="6-prebound-pv-of-another-volume-mode-waits"),
    pytest.param(Case([LOCAL, make_pv("mine", "1Gi", node="n1", claim="data"),
                       make_pv("free", "20Gi", node="n3"), make_pvc("data")], "n3",
                      writes=bind("free")),
                 id="6-prebound-pv-too-small-a-free-one-is-taken"),
    pytest.param(Case([LOCAL, make_pv("mine", node="n1", claim="data"),
                       make_pv("free", "20Gi", node="n3"), make_pvc("data")], "n1",
                      writes=bind("mine")),
                 id="6-prebound-pv-fitting-wins-over-free-ones"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n2"),
                       dataclasses.replace(make_pvc("data", volume="pv"), phase="Pending")],
                      None, "pod has unbound immediate PersistentVolumeClaims"),
                 id="6-claim-pre-bound-not-yet-bound-by-the-controller-waits"),
    pytest.param(Case([LOCAL, make_pv("pv", node="n2", claim="data", phase="Bound"),
                       make_pvc("data", volume="pv")], "n2"),
                 id="6-claim-bound-by-the-controller-goes-where-its-pv-is"),
    pytest.param(Case([LOCAL, make_pv("going", "6Gi", node="n1", terminating=True),
                       make_pv("staying", "20Gi", node="n3"), make_pvc("data")], "n3",
                      writes=bind("staying")),
                 id="6-pv-being-deleted-skipped"),
    # --- 7. CSIStorageCapacity (binder.go hasEnoughCapacity, capacitySufficient) -------
    pytest.param(Case([FAST, make_driver("csi.example.com"),
                       make_capacity("cap-a", "fast", zone="a", capacity="100Gi"),
                       make_capacity("cap-b", "fast", zone="b", capacity="1Gi"),
                       make_pvc("data", storage_class="fast")], "n2", writes=annotate("n2")),
                 id="7-capacity-only-where-published"),
    pytest.param(Case([FAST, make_driver("csi.example.com"),
                       make_capacity("cap", "fast", capacity="1Gi"),
                       make_pvc("data", storage_class="fast")], None, f"3 {NO_SPACE}"),
                 id="7-capacity-too-small-everywhere-waits"),
    pytest.param(Case([FAST, make_driver("csi.example.com"),
                       make_capacity("cap", "fast", capacity="100Gi", maximum="1Gi"),
                       make_pvc("data", storage_class="fast")], None, NO_SPACE),
                 id="7-maximum-volume-size-wins-over-capacity"),
    pytest.param(Case([FAST, make_driver("csi.example.com"),
                       make_capacity("cap", "other", capacity="100Gi"),
                       make_pvc("data", storage_class="fast")], None, NO_SPACE),
                 id="7-capacity-of-another-class-does-not-count"),
    pytest.param(Case([FAST, make_driver("csi.example.com"),
                       make_capacity("cap", "fast", capacity="100Gi", topology=False),
                       make_pvc("data", storage_class="fast")], None, NO_SPACE),
                 id="7-capacity-without-node-topology-serves-no-node"),
    pytest.param(Case([FAST, make_driver("csi.example.com", capacity=False),
                       make_pvc("data", storage_class="fast")], "n1", writes=annotate("n1")),
                 id="7-driver-not-tracking-capacity-is-not-checked"),
    pytest.param(Case([FAST, make_pvc("data", storage_class="fast")], "n1",
                      writes=annotate("n1")),
                 id="7-provisioner-without-csidriver-is-not-checked"),
    # --- 8. VolumeZone (volume_zone.go Filter, translateToGALabel) ----------------------
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={GA_ZONE: "a"}),
                       make_pvc("data", volume="pv")], "n1", nodes=HOSTS),
                 id="8-node-without-topology-labels-is-not-refused"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={BETA_ZONE: "a"}),
                       make_pvc("data", volume="pv")], "n2"),
                 id="8-pv-beta-zone-matches-node-ga-zone"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={BETA_ZONE: "x"}),
                       make_pvc("data", volume="pv")], None, f"3 {NO_ZONE}"),
                 id="8-pv-beta-zone-elsewhere-waits"),
    pytest.param(Case([LOCAL, make_pv("pv", claim="data", phase="Bound",
                                      labels={GA_ZONE: "a"}),
                       make_pvc("data", volume="pv")], None, f"3 {NO_ZONE}",
                      nodes=zoned(BETA_ZONE)),
                 id="8-pv-ga-zone-against-node-beta-only-conflicts-as-upstream"),
    # --- 9. NodeVolumeLimits of migrated in-tree volumes (nodevolumelimits/csi.go) ------
    pytest.param(Case([LOCAL, make_csinode("n1", ebs_csi_aws_com=1),
                       tv.persistent_volume(pv_json("old", EBS, "old")),
                       tv.persistent_volume(pv_json("new", EBS, "data")),
                       make_pvc("old", volume="old"), make_pvc("data", volume="new")], "n2",
                      nodes=HOSTS),
                 id="9-in-tree-ebs-pvs-count-against-ebs-csi-limit"),
    pytest.param(Case([StorageClass("gp", "kubernetes.io/aws-ebs",
                                    BindingMode.WAIT_FOR_FIRST_CONSUMER),
                       make_csinode("n1", ebs_csi_aws_com=0),
                       make_pvc("data", storage_class="gp")], "n2", writes=annotate("n2"),
                      nodes=HOSTS),
                 id="9-in-tree-provisioner-claim-counts-against-csi-limit"),
    pytest.param(Case([make_csinode("n1", pd_csi_storage_gke_io=0)], "n2", nodes=HOSTS,
                      pod=dataclasses.replace(make_pod("p"), volumes=tv.pod_volumes(
                          "p", {"volumes": [{"name": "d", "gcePersistentDisk": {
                              "pdName": "disk-1"}}]}, {}, tv.fields.Problems()))),
                 id="9-inline-gce-pd-counts-against-pd-csi-limit"),
]


def _placed(s: Scheduler, placed: Sequence[tuple[str, str, str]]) -> None:
    for name, node, claim in placed:
        s.observe(PodObserved(with_volumes(make_pod(name, node=node), claim)))


@pytest.mark.parametrize("case", CASES)
def test_volume_parity(case: Case) -> None:
    s = Scheduler()
    for node in case.nodes:
        s.observe(NodeObserved(node))
    for obj in case.objects:
        s.observe(VolumeObserved(obj))
    if any(getattr(o, "name", "") == "old" for o in case.objects):
        _placed(s, [("other", "n1", "old")])
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


ZONES = ("a", "b", "c")


@settings(max_examples=100, deadline=None)
@given(node_zones=st.lists(st.sampled_from(ZONES), min_size=1, max_size=4),
       allowed=st.lists(st.sampled_from(ZONES), max_size=2, unique=True),
       tracked=st.booleans(),
       published=st.lists(st.tuples(st.sampled_from(ZONES), st.integers(1, 20)), max_size=3),
       requests=st.lists(st.integers(1, 20), min_size=1, max_size=4),
       volumes=st.lists(st.tuples(st.integers(0, 3), st.booleans(), st.booleans()),
                        max_size=4))
def test_every_write_is_one_upstream_would_make(
    node_zones: list[str], allowed: list[str], tracked: bool,
    published: list[tuple[str, int]], requests: list[int],
    volumes: list[tuple[int, bool, bool]],
) -> None:
    """Whatever the nodes, classes, capacities and PVs: a claim is only annotated for a
    node the class's allowedTopologies admit and, for a tracking driver, with published
    room; a static PV is only bound to a claim whose selector and volume mode it meets."""
    nodes = [make_node(f"n{i}", labels={"kubernetes.io/hostname": f"n{i}", GA_ZONE: zone})
             for i, zone in enumerate(node_zones)]
    zone_of = {n.name: n.labels[GA_ZONE] for n in nodes}
    fast = StorageClass("fast", "csi.example.com", BindingMode.WAIT_FOR_FIRST_CONSUMER,
                        in_zones(*allowed) if allowed else in_zones(*ZONES))
    objects: list[VolumeObject] = [fast, LOCAL, make_driver("csi.example.com",
                                                            capacity=tracked)]
    objects += [make_capacity(f"cap{i}", "fast", zone=zone, capacity=f"{gi}Gi")
                for i, (zone, gi) in enumerate(published)]
    pvs = {f"pv{i}": make_pv(f"pv{i}", "10Gi", node=f"n{node % len(nodes)}",
                             labels={"tier": "gold"} if gold else {},
                             mode="Block" if block else "Filesystem")
           for i, (node, gold, block) in enumerate(volumes)}
    objects += list(pvs.values())
    claims = {}
    for i, gi in enumerate(requests):
        local = i % 2 == 1
        claims[f"c{i}"] = make_pvc(f"c{i}", f"{gi}Gi", storage_class="local" if local else "fast",
                                   selector=GOLD if i % 3 == 0 else None,
                                   mode="Block" if i % 4 == 3 else "Filesystem")
    objects += list(claims.values())
    s = Scheduler()
    for node in nodes:
        s.observe(NodeObserved(node))
    for obj in objects:
        s.observe(VolumeObserved(obj))
    for name in claims:
        s.observe(PodObserved(with_volumes(make_pod(f"p-{name}"), name)))
    for d in s.cycle(now=10.0):
        if not isinstance(d, BindPod):
            continue
        for w in d.volumes:
            claim = claims[w.claim]
            if isinstance(w, AnnotateClaim):
                assert matches_affinity(fast.allowed_topologies, {GA_ZONE: zone_of[w.node]},
                                        w.node)
                if tracked:
                    assert any(zone == zone_of[w.node] and gi * 2**30 >= claim.request
                               for zone, gi in published)
            else:
                assert isinstance(w, BindVolume)
                volume = pvs[w.volume]
                assert volume.volume_mode == claim.volume_mode
                assert claim.selector is None or claim.selector.matches(volume.labels)
                assert volume.capacity >= claim.request
