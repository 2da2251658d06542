"""Scoring one node per class: pods scored by usage keys and the spread of their own pods.

A pod whose scorers read only the nodes' usage keys, but for PodTopologySpread over the
hostname and one other key (the cluster's default constraints, or ScheduleAnyway ones of
its own), scores alike every two feasible nodes of equal usage and equal value of that
key whose hostnames hold none of its pods. ``Cluster.place`` scores the first of each
such class and those hosts' nodes one by one (``Framework.score_classes``,
``Found.classes``); the node it chooses must be the one scoring every feasible node
chooses, pod after pod, as the scan's kept classes follow the charges.
"""

from __future__ import annotations

from builders import make_node, res
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.framework.runner import Framework
from gangsched.core.placement.cluster import NO_CONSTRAINTS, ONE_POD, Cluster
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import Placement, SpreadConstraint, WhenUnsatisfiable
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from hypothesis import given, settings
from hypothesis import strategies as st

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"

_NODES = st.lists(st.tuples(st.sampled_from([4, 8]), st.integers(0, 2)), min_size=2,
                  max_size=14)
_CHARGES = st.lists(st.tuples(st.integers(0, 13), st.integers(0, 3)), max_size=12)
_PODS = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 2), st.integers(0, 2)),
                 min_size=1, max_size=16)


def _placement(group: int, kind: int) -> Placement:
    """Kind 0 and 1: the cluster's default constraints (a ReplicaSet's pod); kind 2:
    ScheduleAnyway constraints of its own over hostname and zone."""
    labels = (("app", f"g{group}"),)
    if kind < 2:
        return Placement(labels=labels, default_spread=True)
    selector = LabelSelector.build(dict(labels))
    return Placement(labels=labels, spread=(
        SpreadConstraint(2, HOST, WhenUnsatisfiable.SCHEDULE_ANYWAY, selector),
        SpreadConstraint(1, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY, selector)))


def _run(nodes: list[tuple[int, int]], charges: list[tuple[int, int]],
         pods: list[tuple[int, int, int]], classes: bool, zoneless: bool) -> list[str | None]:
    cluster = Cluster()
    for i, (cpu, zone) in enumerate(nodes):
        labels = {HOST: f"n{i:02}"}
        if not (zoneless and i == 0):
            labels[ZONE] = f"z{zone}"
        cluster.upsert_node(make_node(f"n{i:02}", cpu=cpu, labels=labels))
    for n, (index, cpu) in enumerate(charges):
        if index < len(nodes):
            cluster.charge(f"n{index:02}", f"c{n}", res(cpu) + ONE_POD)
    chosen: list[str | None] = []
    original = Framework.score_classes
    if not classes:
        Framework.score_classes = lambda *args: None  # type: ignore[method-assign]
    try:
        for n, (group, cpu, kind) in enumerate(pods):
            request = res(cpu) + Resources.from_k8s({"memory": "1Gi"}) + ONE_POD
            placement = _placement(group, kind)
            info = PodInfo.of(request, NO_CONSTRAINTS, placement,
                              namespace="default", name=f"p{n}", uid=f"p{n}")
            where = cluster.place(request, info.constraints, Scoring.BINPACK, pod=info)
            chosen.append(where)
            if where is not None:
                cluster.charge(where, f"p{n}", request,
                               PlacedPod(f"p{n}", "default", info.labels, placement, where))
    finally:
        Framework.score_classes = original  # type: ignore[method-assign]
    return chosen


@settings(max_examples=60, deadline=None)
@given(_NODES, _CHARGES, _PODS, st.booleans())
def test_a_placement_scoring_one_node_per_class_chooses_as_scoring_them_all(
        nodes: list[tuple[int, int]], charges: list[tuple[int, int]],
        pods: list[tuple[int, int, int]], zoneless: bool) -> None:
    assert _run(nodes, charges, pods, True, zoneless) == _run(nodes, charges, pods, False,
                                                              zoneless)


def test_the_hostname_weight_counts_every_feasible_node_not_the_classes() -> None:
    """40 alike nodes, n00 to n38 in zone z0 and n39 alone in z1; pods of the group on
    n00, n01, n02 (zone z0 counts 3) and n39. The spread score weighs a hostname's count
    by the feasible nodes (40: n39 scores below n03, which wins) and not by the nodes
    scored for their classes (5: n39 would score above n03 and win)."""
    cluster = Cluster()
    for i in range(40):
        cluster.upsert_node(make_node(f"n{i:02}", cpu=8, labels={
            HOST: f"n{i:02}", ZONE: "z1" if i == 39 else "z0"}))
    placement = _placement(0, 0)
    request = res(1) + Resources.from_k8s({"memory": "1Gi"}) + ONE_POD
    for host in ("n00", "n01", "n02", "n39"):
        cluster.charge(host, f"on-{host}", request, PlacedPod(
            f"on-{host}", "default", dict(placement.labels), placement, host))
    info = PodInfo.of(request, NO_CONSTRAINTS, placement, namespace="default", name="p",
                      uid="p")
    assert cluster.place(request, info.constraints, Scoring.BINPACK, pod=info) == "n03"
    original = Framework.score_classes
    Framework.score_classes = lambda *args: None  # type: ignore[method-assign]
    try:
        assert cluster.place(request, info.constraints, Scoring.BINPACK, pod=info) == "n03"
    finally:
        Framework.score_classes = original  # type: ignore[method-assign]


def test_a_class_whose_first_node_holds_pods_of_the_group_is_scored_by_its_next() -> None:
    """n00 and n01 alike (one pod of 1 cpu each, zone z0), n00's pod of the group: n00
    is scored alone, and its class by n01, which wins (packing and spreading agree)."""
    cluster = Cluster()
    for i in range(6):
        cluster.upsert_node(make_node(f"n{i:02}", cpu=8, labels={HOST: f"n{i:02}",
                                                                 ZONE: "z0"}))
    request = res(1) + Resources.from_k8s({"memory": "1Gi"}) + ONE_POD
    for host, group in (("n00", 0), ("n01", 1)):
        placement = _placement(group, 0)
        cluster.charge(host, f"on-{host}", request, PlacedPod(
            f"on-{host}", "default", dict(placement.labels), placement, host))
    info = PodInfo.of(request, NO_CONSTRAINTS, _placement(0, 0), namespace="default",
                      name="p", uid="p")
    assert cluster.place(request, info.constraints, Scoring.BINPACK, pod=info) == "n01"
