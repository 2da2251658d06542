"""The eight placement cases run against kube-scheduler v1.32 on a 4-node cluster (4 cpu,
8Gi each), written as the objects a user writes and run through the whole core: each
must end as kube-scheduler's column says.

| case | kube-scheduler |
|---|---|
| 5 pods, required podAntiAffinity on hostname | 4 nodes, 1 pending |
| 3 pods with required podAffinity to an anchor pod | same node as the anchor |
| 8 pods, spread maxSkew 1 on hostname, DoNotSchedule | 2/2/2/2 |
| 5 pods with the same hostPort | 4 nodes, 1 pending |
| a pod with ``spec.schedulingGates`` | left alone: its condition, nothing else |
| a pod with ``spec.nodeName`` preset | counted |
| WaitForFirstConsumer local PV on node D, a claim, a pod | pod on D, PV bound first |
| an Application whose task group has required anti-affinity (4) | 4 distinct nodes |

Each case runs under both scoring strategies, so that no result comes from the scoring's
luck (``LeastAllocated`` would spread the anti-affinity pods anyway, ``MostAllocated``
would pile them up). The shell's side of the gated pod and of the local volume (no
Binding sent, the PV updated before the Binding) is tested at HTTP level in
``tests/shell/test_shell_faults.py`` and ``tests/shell/test_shell_volumes.py``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest
from conformance import HOST, affinity, anti, node, pod, spread, term
from gangsched.core.values.decisions import (
    SCHEDULING_GATED,
    BindGang,
    BindPod,
    BindVolume,
    Decision,
    PodPending,
    RecordEvent,
)
from gangsched.core.values.model import SchedulerConfig, Scoring
from gangsched.core.values.observations import VolumeObserved
from gangsched.core.values.placement_terms import AffinityTerm, Placement
from gangsched.core.values.selectors import LabelSelector
from gangsched.translate.pods import pod_from_k8s
from gangsched.translate.render import pod_scheduled_condition
from gangsched.translate.volumes import (
    persistent_volume,
    persistent_volume_claim,
    storage_class,
)

from tests.core.builders import make_app, make_group
from tests.core.simworld import SimWorld

NODES = ("a", "b", "c", "d")
SCORINGS = [pytest.param(Scoring.BINPACK, id="most-allocated"),
            pytest.param(Scoring.SPREAD, id="least-allocated")]


def world(scoring: Scoring) -> SimWorld:
    w = SimWorld(config=SchedulerConfig(gang_scoring=scoring, pod_scoring=scoring))
    for name in NODES:
        w.add_node(node(name, cpu="4", memory="8Gi"))
    return w


def ours(obj: dict[str, Any]) -> dict[str, Any]:
    """The pod, for gangsched unless it names another scheduler."""
    obj["spec"].setdefault("schedulerName", "gangsched")
    return obj


def add(w: SimWorld, obj: dict[str, Any]) -> None:
    w.add_pod(pod_from_k8s(ours(obj)))


def every_bind(decisions: list[Decision]) -> list[BindPod]:
    found: list[BindPod] = []
    for d in decisions:
        if isinstance(d, BindGang):
            found += d.binds
        elif isinstance(d, BindPod):
            found.append(d)
    return found


def message(w: SimWorld, name: str) -> str:
    pending = w.pending_reasons.get(w.uid_of(name))
    return "" if pending is None else pending.message


@pytest.mark.parametrize("scoring", SCORINGS)
def test_required_anti_affinity_one_per_node_and_the_fifth_pending(scoring: Scoring) -> None:
    w = world(scoring)
    for i in range(5):
        add(w, pod(f"web-{i}", labels={"app": "web"}, cpu="500m",
                   affinity=anti(term(HOST, {"app": "web"}))))
    w.settle(0)
    placed = [w.node_of(f"web-{i}") for i in range(5)]
    assert sorted(n for n in placed if n) == list(NODES)
    (waiting,) = [f"web-{i}" for i, n in enumerate(placed) if n is None]
    assert message(w, waiting).startswith(
        "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules")
    condition = pod_scheduled_condition(w.pending_reasons[w.uid_of(waiting)], now=0)
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules" in (
        condition["message"])


@pytest.mark.parametrize("scoring", SCORINGS)
def test_required_pod_affinity_follows_the_anchor(scoring: Scoring) -> None:
    w = world(scoring)
    add(w, pod("anchor", labels={"role": "anchor"}, cpu="100m", nodeName="c"))
    for i in range(3):
        add(w, pod(f"follower-{i}", cpu="500m", affinity=affinity(term(HOST, {"role": "anchor"}))))
    w.settle(0)
    assert [w.node_of(f"follower-{i}") for i in range(3)] == ["c", "c", "c"]


@pytest.mark.parametrize("scoring", SCORINGS)
def test_spread_max_skew_one_on_hostname_is_two_per_node(scoring: Scoring) -> None:
    w = world(scoring)
    for i in range(8):
        add(w, pod(f"s-{i}", labels={"app": "s"}, cpu="500m",
                   topologySpreadConstraints=[spread(HOST, 1, match={"app": "s"})]))
    w.settle(0)
    assert Counter(w.node_of(f"s-{i}") for i in range(8)) == dict.fromkeys(NODES, 2)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_the_same_host_port_once_per_node_and_the_fifth_pending(scoring: Scoring) -> None:
    w = world(scoring)
    for i in range(5):
        add(w, pod(f"p-{i}", cpu="100m", ports=[{"containerPort": 80, "hostPort": 8080}]))
    w.settle(0)
    placed = [w.node_of(f"p-{i}") for i in range(5)]
    assert sorted(n for n in placed if n) == list(NODES)
    (waiting,) = [f"p-{i}" for i, n in enumerate(placed) if n is None]
    assert message(w, waiting).startswith("0/4 nodes are available: 4 node(s) didn't have "
                                          "free ports for the requested pod ports")


@pytest.mark.parametrize("scoring", SCORINGS)
def test_a_gated_pod_is_left_alone_cycle_after_cycle(scoring: Scoring) -> None:
    w = world(scoring)
    add(w, pod("gated", schedulingGates=[{"name": "example.com/quota"}]))
    decisions: list[Decision] = []
    for t in range(20):
        decisions += w.settle(float(t))
    mine = [d for d in decisions if getattr(d, "name", None) == "gated"
            or (isinstance(d, RecordEvent) and d.target.name == "gated")]
    assert {type(d) for d in mine} == {PodPending}
    assert {(d.reason, d.message) for d in mine if isinstance(d, PodPending)} == {
        (SCHEDULING_GATED, "Scheduling is blocked due to non-empty scheduling gates")}
    assert not [b for b in every_bind(decisions) if b.name == "gated"]
    assert w.bind_count.get(w.uid_of("gated"), 0) == 0


@pytest.mark.parametrize("scoring", SCORINGS)
@pytest.mark.parametrize("scheduler", ["gangsched", "default-scheduler"])
def test_a_pod_with_its_node_preset_is_counted(scoring: Scoring, scheduler: str) -> None:
    w = world(scoring)
    add(w, pod("preset", cpu="3", ports=[{"containerPort": 80, "hostPort": 9000}],
               nodeName="a", schedulerName=scheduler))
    add(w, pod("big", cpu="2", nodeSelector={HOST: "a"}))
    add(w, pod("port", cpu="100m", nodeSelector={HOST: "a"},
               ports=[{"containerPort": 80, "hostPort": 9000}]))
    w.settle(0)
    assert w.node_of("big") is None
    assert message(w, "big").startswith("0/4 nodes are available: 1 Insufficient cpu")
    assert w.node_of("port") is None
    assert "1 node(s) didn't have free ports for the requested pod ports" in message(w, "port")


def local_volume_objects() -> list[Mapping[str, Any]]:
    on_d = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": HOST, "operator": "In", "values": ["d"]}]}]}}
    return [
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner",
         "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume",
         "metadata": {"name": "local-d", "resourceVersion": "5"},
         "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"],
                  "storageClassName": "local", "local": {"path": "/mnt/disk"},
                  "nodeAffinity": on_d}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data", "namespace": "default", "uid": "uid-data",
                      "resourceVersion": "7"},
         "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "10Gi"}}}},
    ]


@pytest.mark.parametrize("scoring", SCORINGS)
def test_a_local_volume_on_d_takes_the_pod_to_d_and_is_bound_first(scoring: Scoring) -> None:
    w = world(scoring)
    sc, pv, pvc = local_volume_objects()
    w.observe(VolumeObserved(storage_class(sc)))
    w.observe(VolumeObserved(persistent_volume(pv)))
    w.observe(VolumeObserved(persistent_volume_claim(pvc)))
    add(w, pod("worker", volumes=[{"name": "data",
                                   "persistentVolumeClaim": {"claimName": "data"}}]))
    (bind,) = every_bind(w.settle(0))
    assert (bind.name, bind.node) == ("worker", "d")
    assert bind.volumes == (BindVolume("local-d", "5", "default", "data", "uid-data"),)


@pytest.mark.parametrize("scoring", SCORINGS)
def test_an_application_with_anti_affinity_is_on_four_distinct_nodes(scoring: Scoring) -> None:
    w = world(scoring)
    labels = {"app": "mpi"}
    one_per_node = Placement(labels=tuple(labels.items()),
                             anti_affinity=(AffinityTerm(HOST, LabelSelector.build(labels)),))
    app = make_app("mpi", make_group("workers", 4, cpu=1, memory="1Gi",
                                     placement=one_per_node))
    w.add_app(app)
    w.settle(0)
    reserved = [p.node_name for p in w.placeholders(app.key)]
    assert sorted(n for n in reserved if n) == list(NODES)
    for i in range(4):
        real = pod_from_k8s(ours(pod(f"mpi-{i}", labels=labels, cpu="1", memory="1Gi",
                                     affinity=anti(term(HOST, labels)))))
        w.add_pod(dataclasses.replace(real, app=app.key, task_group="workers"))
    w.settle(1)
    assert sorted(w.node_of(f"mpi-{i}") or "-" for i in range(4)) == list(NODES)
