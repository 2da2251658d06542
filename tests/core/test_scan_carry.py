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
from gangsched.core.framework.nodeinfo import NodeState
from gangsched.core.framework.podindex import PlacedPod
from gangsched.core.framework.podinfo import Constraints, PodInfo
from gangsched.core.placement import carried as core_carried
from gangsched.core.placement import cluster as core_cluster
from gangsched.core.placement.cluster import ONE_POD, Cluster
from gangsched.core.placement.scan import Found, RunJudge, scan
from gangsched.core.placement.zoned import ZonedCarry
from gangsched.core.values.model import Scoring
from gangsched.core.values.placement_terms import (
    AffinityTerm,
    HostPort,
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


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
            lambda self, fwk, cycle, info, nodes, start, sample, judge, distinct=False:
            scan(nodes, start, len(nodes), sample, judge))
    try:
        yield
    finally:
        core_cluster.Cluster._binpack_scan = original  # type: ignore[method-assign]


def _place_run(cluster: Cluster, placement: Placement, request: Resources, count: int,
               serial: int, chosen: list[str | None],
               placed: list[tuple[str, str, Resources]]) -> int:
    """Place ``count`` pods of one shape, one after another, each charged where it goes
    (its choice added to ``chosen``, the pod to ``placed``); the next serial."""
    for _ in range(count):
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
    return serial


def _run(nodes: int, cpus: list[int], ops: list[Op], fresh: bool) -> list[str | None]:
    with fresh_scans(fresh):
        cluster = Cluster(percentage_of_nodes_to_score=10)
        zones = {}
        for i in range(nodes):
            name = f"n{i:03}"
            zones[name] = f"z{i % 5}"
            cluster.upsert_node(make_node(name, cpu=cpus[i % len(cpus)],
                                          labels={HOST: name, ZONE: zones[name]}))
        placed: list[tuple[str, str, Resources]] = []
        chosen: list[str | None] = []
        serial = 0
        for op, a, b, c in ops:
            if op == "place":
                serial = _place_run(cluster, _placement(a, f"app{b}"),
                                    res(1 + a % 2) + ONE_POD, c, serial, chosen, placed)
            elif op == "release" and placed:
                uid, where, request = placed.pop(a % len(placed))
                cluster.release(where, uid, request)
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
    """Not a scan afresh each time: most pods of a run are placed from a carried scan
    (one per node), or from one kept per zone (a strict spread over zones)."""
    from gangsched.core.placement import scan as scans

    carried: list[bool] = []
    kept: list[bool] = []
    original, update = core_carried.carry, core_carried.zoned.update

    def counted(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        carried.append(found is not None)
        return found

    def updated(*args: object, **kwargs: object) -> bool:
        ready = update(*args, **kwargs)  # type: ignore[arg-type]
        kept.append(ready)
        return ready

    core_carried.carry = counted  # type: ignore[assignment]
    core_carried.zoned.update = updated  # type: ignore[assignment]
    try:
        _run(150, [4], [("place", 1, 0, 40), ("place", 3, 1, 40)], fresh=False)
    finally:
        core_carried.carry = original
        core_carried.zoned.update = update
    assert scans.carry is original
    assert sum(carried) >= 35 and sum(kept) >= 35


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
    node found, each the node's own (a scan kept per zone's as well)."""
    seen = []
    original, select = core_carried.carry, core_carried.zoned.select

    def check(found: Found) -> None:
        assert found.orders == sorted(found.orders)
        assert found.orders == [state.order for state in found.nodes]
        assert found.keys == [state.usage_key for state in found.nodes]
        seen.append(len(found.nodes))

    def checked(*args: object, **kwargs: object) -> object:
        found = original(*args, **kwargs)  # type: ignore[arg-type]
        if found is not None:
            check(found)
        return found

    def selected(*args: object, **kwargs: object) -> Found:
        found = select(*args, **kwargs)  # type: ignore[arg-type]
        check(found)
        return found

    core_carried.carry = checked  # type: ignore[assignment]
    core_carried.zoned.select = selected  # type: ignore[assignment]
    try:
        _run(150, [2, 4, 3], [("place", kind, 0, 60), ("release", 7, 0, 0),
                              ("place", kind, 0, 60), ("place", 7, 1, 30)], fresh=False)
    finally:
        core_carried.carry = original
        core_carried.zoned.select = select
    assert len(seen) > 50


def _zoned_placement(kind: int, app: str) -> Placement:
    """Pods a strict spread over zones admits by their zone alone: alone (0), with a
    required anti-affinity on racks, whose digest turns a rack away as they land (1),
    with a soft spread over hostnames that scores every node found (2), with a
    required anti-affinity on hostname (4); and, kept as a whole, with a second strict
    constraint (3)."""
    labels = (("app", app),)
    selector = LabelSelector.build({"app": app})
    zone = SpreadConstraint(1, ZONE, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector)
    if kind in (1, 4):
        return Placement(labels=labels, spread=(zone,),
                         anti_affinity=(AffinityTerm(RACK if kind == 1 else HOST, selector),))
    if kind == 2:
        return Placement(labels=labels, spread=(zone, SpreadConstraint(
            1, HOST, WhenUnsatisfiable.SCHEDULE_ANYWAY, selector)))
    if kind == 3:
        return Placement(labels=labels, spread=(zone, SpreadConstraint(
            3, HOST, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector)))
    return Placement(labels=labels, spread=(zone,))


_ZONED_OPS = st.lists(st.one_of(
    st.tuples(st.just("place"), st.integers(0, 4), st.integers(0, 2), st.integers(1, 40)),
    st.tuples(st.just("release"), st.integers(0, 10_000), st.integers(1, 6), st.just(0)),
    st.tuples(st.just("grow"), st.integers(0, 299), st.integers(1, 8), st.just(0)),
), min_size=1, max_size=10)


@contextmanager
def checked_domains(on: bool) -> Iterator[None]:
    """Before each selection from a scan kept per zone (``on``): each value's list holds
    exactly the nodes of that value from the start up to its stop that the judge (every
    filter but the spread) passes, in order, each with its own usage key."""
    select = core_carried.zoned.select

    def checked(kept: ZonedCarry, nodes: list[NodeState], sample: int, judge: RunJudge,
                *args: object, **kwargs: object) -> Found:
        for value, domain in kept.domains.items():
            ours = [state for state in nodes
                    if state.labels.get(kept.key) == value
                    and kept.low <= state.order < domain.stop]
            passing = judge.all(ours)
            assert domain.nodes == passing
            assert domain.orders == [state.order for state in passing]
            assert domain.keys == [state.usage_key for state in passing]
            assert domain.stop >= kept.low
        return select(kept, nodes, sample, judge, *args, **kwargs)  # type: ignore[arg-type]

    if on:
        core_carried.zoned.select = checked  # type: ignore[assignment]
    try:
        yield
    finally:
        core_carried.zoned.select = select


def _run_zoned(nodes: int, zones: int, cpus: list[int], ops: list[Op],
               fresh: bool) -> list[str | None]:
    """As :func:`_run`, on ``zones`` zones (every 7th node has none, every 11th the
    empty value) and racks of 6 nodes, with releases of several pods at once; each
    scan kept per zone is checked against a fresh judgement of its nodes."""
    with fresh_scans(fresh), checked_domains(not fresh):
        cluster = Cluster(percentage_of_nodes_to_score=10)

        def labels_of(i: int) -> dict[str, str]:
            name = f"n{i:03}"
            if i % 7 == 3:
                return {HOST: name, RACK: f"r{i // 6}"}
            return {HOST: name, RACK: f"r{i // 6}",
                    ZONE: "" if i % 11 == 5 else f"z{i % zones}"}

        for i in range(nodes):
            cluster.upsert_node(make_node(f"n{i:03}", cpu=cpus[i % len(cpus)],
                                          labels=labels_of(i)))
        placed: list[tuple[str, str, Resources]] = []
        chosen: list[str | None] = []
        serial = 0
        for op, a, b, c in ops:
            if op == "place":
                serial = _place_run(cluster, _zoned_placement(a, f"app{b}"),
                                    res(1 + b % 2) + ONE_POD, c, serial, chosen, placed)
            elif op == "release":
                for _ in range(min(b, len(placed))):
                    uid, where, request = placed.pop(a % len(placed))
                    cluster.release(where, uid, request)
            elif op == "grow" and a < nodes:
                cluster.upsert_node(make_node(f"n{a:03}", cpu=b, labels=labels_of(a)))
        return chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(120, 300), st.integers(2, 12), st.lists(st.integers(2, 8), min_size=1,
                                                            max_size=4), _ZONED_OPS)
def test_a_scan_kept_per_zone_chooses_what_a_fresh_scan_chooses(
        nodes: int, zones: int, cpus: list[int], ops: list[Op]) -> None:
    assert (_run_zoned(nodes, zones, cpus, ops, fresh=False)
            == _run_zoned(nodes, zones, cpus, ops, fresh=True))


@pytest.mark.parametrize("kind", range(5))
def test_long_runs_kept_per_zone_choose_as_afresh(kind: int) -> None:
    """Runs long enough to turn every zone away and back many times, the sample cut in
    the middle of the zones' nodes, with releases and a node grown between them."""
    ops: list[Op] = [("place", kind, 0, 40), ("release", 5, 3, 0), ("place", kind, 0, 40),
                     ("grow", 17, 8, 0), ("place", (kind + 1) % 5, 1, 30),
                     ("place", kind, 0, 60), ("release", 2, 6, 0), ("place", kind, 2, 40)]
    for zones in (3, 10):
        kept = _run_zoned(260, zones, [2, 4, 3], ops, fresh=False)
        assert kept == _run_zoned(260, zones, [2, 4, 3], ops, fresh=True)
        assert sum(where is not None for where in kept) > 100


def test_a_label_with_too_many_values_is_not_kept_per_value() -> None:
    """A strict spread over hostnames admits by one label too, but walking every value
    at each placement would cost more than the scan it spares: it is carried whole."""
    selected = []
    select = core_carried.zoned.select

    def counted(*args: object, **kwargs: object) -> Found:
        selected.append(1)
        return select(*args, **kwargs)  # type: ignore[arg-type]

    core_carried.zoned.select = counted  # type: ignore[assignment]
    try:
        cluster = Cluster(percentage_of_nodes_to_score=10)
        for i in range(core_carried.MAX_DOMAINS + 60):
            cluster.upsert_node(make_node(f"n{i:03}", cpu=4, labels={HOST: f"n{i:03}"}))
        selector = LabelSelector.build({"app": "a"})
        placement = Placement(labels=(("app", "a"),), spread=(SpreadConstraint(
            1, HOST, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector),))
        request = res(1) + ONE_POD
        for n in range(5):
            info = PodInfo(request, Constraints(), placement, "default", f"p{n}", f"p{n}",
                           labels=placement.label_map)
            where = cluster.place(request, info.constraints, Scoring.BINPACK, pod=info)
            assert where is not None
            cluster.charge(where, f"p{n}", request, PlacedPod(
                f"p{n}", "default", placement.label_map, placement, where))
    finally:
        core_carried.zoned.select = select
    assert not selected
