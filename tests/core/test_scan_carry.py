"""A bin-packing scan carried over to the next pod of its shape finds what a fresh scan finds.

``Cluster._binpack_scan`` keeps the last scan of each pod shape and, for the next pod of
that shape, judges again only the nodes charged or released since and the topology
domains where a neighbour-dependent filter's verdicts changed (the spread and
inter-pod affinity digests). Each sequence below is placed twice, from the same
cluster: once as the cluster runs, once with every scan made afresh; every placement
must choose the same node. The pods come in runs of one shape (as a gang's members
do), with other shapes, releases and node changes in between; the cluster has enough
nodes (120 and more) that a scan stops at kube-scheduler's sample of feasible nodes
and a carried scan must be cut back or carried on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from builders import make_node, res
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement import cluster as core_cluster
from gangsched.core.placement.cluster import ONE_POD, Cluster
from gangsched.core.placement.scan import scan
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import (
    AffinityTerm,
    HostPort,
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.selectors import LabelSelector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def _placement(kind: int, app: str) -> Placement:
    labels = (("app", app),)
    selector = LabelSelector.build({"app": app})
    if kind == 1:  # one per node
        return Placement(labels=labels, anti_affinity=(AffinityTerm(HOST, selector),))
    if kind == 2:  # one per zone
        return Placement(labels=labels, anti_affinity=(AffinityTerm(ZONE, selector),))
    if kind == 3:  # spread over zones, strictly
        return Placement(labels=labels, spread=(SpreadConstraint(
            1, ZONE, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector),))
    if kind == 4:  # spread over nodes, strictly, and over zones by score
        return Placement(labels=labels, spread=(
            SpreadConstraint(2, HOST, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector),
            SpreadConstraint(1, ZONE, WhenUnsatisfiable.SCHEDULE_ANYWAY, selector)))
    if kind == 5:  # together in a zone (the first of the group goes anywhere)
        return Placement(labels=labels, affinity=(AffinityTerm(ZONE, selector),))
    if kind == 6:  # a host port
        return Placement(labels=labels, ports=(HostPort(8080),))
    if kind == 7:  # a ReplicaSet's pod: the default spread constraints score it
        return Placement(labels=labels, default_spread=True)
    return Placement(labels=labels)


Op = tuple[str, int, int, int]
"""("place", kind, app, count) a run of pods of one shape; ("release", index, _, _) the
index-th pod placed so far (modulo) goes; ("grow", node, cpu, _) a node's allocatable
changes; ("label", node, zone, _) a node moves to another zone."""

_OPS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 7), st.integers(0, 3), st.integers(1, 12)),
    st.tuples(st.just("release"), st.integers(0, 10_000), st.just(0), st.just(0)),
    st.tuples(st.just("grow"), st.integers(0, 199), st.integers(1, 8), st.just(0)),
    st.tuples(st.just("label"), st.integers(0, 199), st.integers(0, 4), st.just(0)),
), min_size=1, max_size=14)


@contextmanager
def fresh_scans(on: bool) -> Iterator[None]:
    """Every bin-packing scan made afresh (``on``), as before scans were carried."""
    original = core_cluster.Cluster._binpack_scan
    if on:
        core_cluster.Cluster._binpack_scan = (  # type: ignore[method-assign]
            lambda self, fwk, cycle, info, nodes, start, sample, judge:
            scan(nodes, start, len(nodes), sample, judge))
    try:
        yield
    finally:
        core_cluster.Cluster._binpack_scan = original  # type: ignore[method-assign]


def _run(nodes: int, cpus: list[int], ops: list[Op], fresh: bool) -> list[str | None]:
    with fresh_scans(fresh):
        cluster = Cluster(percentage_of_nodes_to_score=10)
        zones = {}
        for i in range(nodes):
            name = f"n{i:03}"
            zones[name] = f"z{i % 5}"
            cluster.upsert_node(make_node(name, cpu=cpus[i % len(cpus)],
                                          labels={HOST: name, ZONE: zones[name]}))
        placed: list[tuple[str, str, object]] = []
        chosen: list[str | None] = []
        serial = 0
        for op, a, b, c in ops:
            if op == "place":
                placement = _placement(a, f"app{b}")
                request = res(1 + a % 2) + ONE_POD
                for _ in range(c):
                    uid = f"p{serial}"
                    serial += 1
                    info = PodInfo(request, Constraints(), placement, "default", uid, uid,
                                   labels=placement.label_map)
                    where = cluster.place(request, info.constraints, Scoring.BINPACK, pod=info)
                    chosen.append(where)
                    if where is not None:
                        cluster.charge(where, uid, request, PlacedPod(
                            uid, "default", placement.label_map, placement, where))
                        placed.append((uid, where, request))
            elif op == "release" and placed:
                uid, where, request = placed.pop(a % len(placed))
                cluster.release(where, uid, request)  # type: ignore[arg-type]
            elif op == "grow" and a < nodes:
                name = f"n{a:03}"
                cluster.upsert_node(make_node(name, cpu=b, labels={HOST: name,
                                                                   ZONE: zones[name]}))
            elif op == "label" and a < nodes:
                name = f"n{a:03}"
                zones[name] = f"z{b}"
                state = cluster.nodes[name]
                cluster.upsert_node(make_node(
                    name, cpu=state.node.allocatable.get("cpu") // 1000,
                    labels={HOST: name, ZONE: zones[name]}))
        return chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(120, 200), st.lists(st.integers(2, 8), min_size=1, max_size=5), _OPS)
def test_a_carried_scan_chooses_what_a_fresh_scan_chooses(
        nodes: int, cpus: list[int], ops: list[Op]) -> None:
    assert _run(nodes, cpus, ops, fresh=False) == _run(nodes, cpus, ops, fresh=True)


@pytest.mark.parametrize("kind", range(8))
def test_a_long_run_of_one_shape_is_carried_and_chooses_as_afresh(kind: int) -> None:
    """Enough pods of one shape to fill the sample's nodes and carry on past them."""
    ops: list[Op] = [("place", kind, 0, 60), ("release", 7, 0, 0), ("release", 3, 0, 0),
                     ("place", kind, 0, 60), ("place", (kind + 3) % 8, 1, 30),
                     ("place", kind, 0, 90)]
    carried = _run(150, [2, 4, 3], ops, fresh=False)
    assert carried == _run(150, [2, 4, 3], ops, fresh=True)
    # one per zone (5 zones), one zone's room: few; the others fill past the sample
    assert sum(where is not None for where in carried) > (4 if kind in (2, 5) else 100)


def test_the_carry_is_used() -> None:
    """Not a scan afresh each time: most pods of a run are placed from a carried scan."""
    from gangsched.core.placement import scan as scans

    carried = []
    original = core_cluster.carry

    def counted(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        carried.append(found is not None)
        return found

    core_cluster.carry = counted  # type: ignore[assignment]
    try:
        _run(150, [4], [("place", 1, 0, 40), ("place", 3, 1, 40)], fresh=False)
    finally:
        core_cluster.carry = original
    assert scans.carry is original
    assert sum(carried) >= 70


def test_ports_hidden_by_a_preemption_search_are_judged_again() -> None:
    """A preemption search takes its candidates' host ports off their nodes for a while
    (``onnode._Hidden``) and tells the node book (``ports_changed``): a scan carried over
    in that while, and after it, judges those nodes as a fresh scan does."""
    def run(fresh: bool) -> list[str | None]:
        with fresh_scans(fresh):
            cluster = Cluster(percentage_of_nodes_to_score=10)
            for i in range(120):
                cluster.upsert_node(make_node(f"n{i:03}", cpu=4, labels={HOST: f"n{i:03}"}))
            placement = Placement(labels=(("app", "web"),), ports=(HostPort(8080),))
            request = res(1) + ONE_POD

            def place(uid: str) -> str | None:
                info = PodInfo(request, Constraints(), placement, "default", uid, uid,
                               labels=placement.label_map)
                return cluster.place(request, info.constraints, Scoring.BINPACK, pod=info)

            held = PlacedPod("held", "default", placement.label_map, placement, "n000")
            cluster.charge("n000", "held", request, held)
            chosen = [place("p0")]  # n000's port is taken
            ports = cluster.nodes["n000"].ports.pop("held")
            cluster.ports_changed("n000")
            chosen.append(place("p1"))  # free for the search's while: n000 again
            cluster.nodes["n000"].ports["held"] = ports
            cluster.ports_changed("n000")
            chosen.append(place("p2"))  # taken again
            return chosen

    carried = run(fresh=False)
    assert carried == run(fresh=True)
    assert carried[1] == "n000" and carried[0] != "n000" and carried[2] != "n000"


@pytest.mark.parametrize("kind", [1, 3, 4, 7])
def test_a_carried_scan_keeps_its_nodes_ascending_with_their_keys(kind: int) -> None:
    """Scoring reads a carried scan's orders and usage keys (``CycleState.orders``,
    ``usage_keys``) and looks nodes up in them by bisection: they stay ascending, one per
    node found, each the node's own."""
    seen = []
    original = core_cluster.carry

    def checked(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        if found is not None:
            assert found.orders == sorted(found.orders)
            assert found.orders == [state.order for state in found.nodes]
            assert found.keys == [state.usage_key for state in found.nodes]
            seen.append(len(found.nodes))
        return found

    core_cluster.carry = checked  # type: ignore[assignment]
    try:
        _run(150, [2, 4, 3], [("place", kind, 0, 60), ("release", 7, 0, 0),
                              ("place", kind, 0, 60), ("place", 7, 1, 30)], fresh=False)
    finally:
        core_cluster.carry = original
    assert len(seen) > 50
