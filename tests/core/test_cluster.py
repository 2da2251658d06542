"""Nodes, usage and placement: filters, scoring, accounting, diagnosis."""

from __future__ import annotations

import pytest
from builders import make_node, make_pod, res
from gangsched.core.cluster import ONE_POD, Cluster, Constraints, static_failure
from gangsched.core.constraints import (
    ANY_NODE,
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
    Taint,
    TaintEffect,
    Toleration,
    TolerationOperator,
)
from gangsched.core.framework.runner import Framework
from gangsched.core.model import Node, PodPhase, SchedulerConfig, Scoring
from gangsched.core.observations import NodeGone, NodeObserved, PodGone, PodObserved
from gangsched.core.resources import Resources
from gangsched.core.scheduler import Scheduler
from hypothesis import given, settings
from hypothesis import strategies as st
from simworld import SimWorld

NO_SCHEDULE = Taint("dedicated", "gpu", TaintEffect.NO_SCHEDULE)
NO_EXECUTE = Taint("maintenance", "", TaintEffect.NO_EXECUTE)
PREFER = Taint("spot", "", TaintEffect.PREFER_NO_SCHEDULE)
TOLERATE_GPU = Toleration("dedicated", TolerationOperator.EQUAL, "gpu", TaintEffect.NO_SCHEDULE)
TOLERATE_ALL = Toleration("", TolerationOperator.EXISTS)
ZONE_A = NodeAffinity((NodeSelectorTerm((SelectorRequirement("zone", SelectorOperator.IN,
                                                             ("a",)),)),))


def constraints(
    selector: dict[str, str] | None = None,
    tolerations: tuple[Toleration, ...] = (),
    affinity: NodeAffinity = ANY_NODE,
) -> Constraints:
    return Constraints.build(selector or {}, tolerations, affinity)


@pytest.mark.parametrize(
    ("node", "wanted", "failure"),
    [
        pytest.param(make_node("n"), constraints(), None, id="plain-node-fits"),
        pytest.param(make_node("n", ready=False), constraints(), "NodeReady", id="not-ready"),
        pytest.param(make_node("n", unschedulable=True), constraints(), "NodeUnschedulable",
                     id="cordoned"),
        pytest.param(make_node("n", labels={"disk": "ssd"}), constraints({"disk": "ssd"}), None,
                     id="node-selector-match"),
        pytest.param(make_node("n", labels={"disk": "hdd"}), constraints({"disk": "ssd"}),
                     "NodeAffinity", id="node-selector-mismatch"),
        pytest.param(make_node("n"), constraints({"disk": "ssd"}), "NodeAffinity",
                     id="node-selector-label-missing"),
        pytest.param(make_node("n", labels={"zone": "a"}), constraints(affinity=ZONE_A), None,
                     id="affinity-match"),
        pytest.param(make_node("n", labels={"zone": "b"}), constraints(affinity=ZONE_A),
                     "NodeAffinity", id="affinity-mismatch"),
        pytest.param(make_node("n", taints=(NO_SCHEDULE,)), constraints(), "TaintToleration",
                     id="noschedule-untolerated"),
        pytest.param(make_node("n", taints=(NO_SCHEDULE,)),
                     constraints(tolerations=(TOLERATE_GPU,)), None, id="noschedule-tolerated"),
        pytest.param(make_node("n", taints=(NO_EXECUTE,)),
                     constraints(tolerations=(TOLERATE_GPU,)), "TaintToleration",
                     id="noexecute-untolerated"),
        pytest.param(make_node("n", taints=(NO_EXECUTE,)),
                     constraints(tolerations=(TOLERATE_ALL,)), None,
                     id="noexecute-tolerated-by-exists"),
        pytest.param(make_node("n", taints=(PREFER,)), constraints(), None,
                     id="prefernoschedule-does-not-filter"),
        pytest.param(make_node("n", ready=False, unschedulable=True), constraints(),
                     "NodeReady", id="first-failure-is-named"),
    ],
)
def test_static_filters(node: Node, wanted: Constraints, failure: str | None) -> None:
    assert static_failure(node, wanted) == failure
    cluster = Cluster()
    cluster.upsert_node(node)
    placed = cluster.place(res(1) + ONE_POD, wanted, Scoring.BINPACK)
    assert placed == (None if failure else "n")


@pytest.mark.parametrize(
    ("request_", "fits"),
    [
        pytest.param(res(4, "8Gi"), True, id="exactly-allocatable"),
        pytest.param(res(5), False, id="too-much-cpu"),
        pytest.param(res(1, "9Gi"), False, id="too-much-memory"),
        pytest.param(res(1) + Resources({"nvidia.com/gpu": 1}), False,
                     id="extended-resource-node-lacks"),
        pytest.param(res(1) + Resources({"pods": 2}), False, id="no-pod-slot-left"),
    ],
)
def test_resource_filter(request_: Resources, fits: bool) -> None:
    cluster = Cluster()
    cluster.upsert_node(make_node("n", cpu=4, memory="8Gi", pods=2))
    assert (cluster.place(request_ + ONE_POD, constraints(), Scoring.BINPACK) == "n") is fits


@pytest.mark.parametrize(
    ("scoring", "expected"),
    [
        pytest.param(Scoring.BINPACK, "full", id="binpack-fills-the-fullest"),
        pytest.param(Scoring.SPREAD, "empty", id="spread-picks-the-emptiest"),
    ],
)
def test_scoring(scoring: Scoring, expected: str) -> None:
    cluster = Cluster()
    cluster.upsert_node(make_node("empty", cpu=8))
    cluster.upsert_node(make_node("full", cpu=8))
    cluster.charge("full", "x", res(6) + ONE_POD)
    assert cluster.place(res(1) + ONE_POD, constraints(), scoring) == expected


def test_ties_go_to_the_first_node_by_name() -> None:
    cluster = Cluster()
    for name in ("c", "a", "b"):
        cluster.upsert_node(make_node(name))
    assert cluster.place(res(1) + ONE_POD, constraints(), Scoring.BINPACK) == "a"


def test_usage_counts_every_bound_pod_including_other_schedulers() -> None:
    s = Scheduler()
    s.observe(NodeObserved(make_node("n", cpu=4)))
    s.observe(PodObserved(make_pod("theirs", cpu=2, ours=False, node="n",
                                   phase=PodPhase.RUNNING)))
    s.observe(PodObserved(make_pod("ours", cpu=1, node="n", phase=PodPhase.RUNNING)))
    assert s.cluster.nodes["n"].used == res(3, "2Gi", pods=2)
    assert s.queues.usage("default") == res(1, "1Gi", pods=1)  # other schedulers: no quota
    s.observe(PodObserved(make_pod("theirs", cpu=2, ours=False, node="n",
                                   phase=PodPhase.SUCCEEDED)))
    assert s.cluster.nodes["n"].used == res(1, "1Gi", pods=1)  # finished pods free capacity
    s.observe(PodGone(make_pod("ours").uid))
    assert s.cluster.nodes["n"].used == Resources.ZERO


def test_a_pending_pod_of_another_scheduler_is_never_placed() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_pod(make_pod("theirs", ours=False))
    w.settle(0)
    assert w.node_of("theirs") is None
    assert w.bind_count == {}


def test_two_placements_in_one_cycle_never_overcommit() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=4))
    for i in range(3):
        w.add_pod(make_pod(f"p{i}", cpu=2))
    w.step(0)
    assert sorted(p.name for p in w.bound()) == ["p0", "p1"]
    assert w.pending_reason("p2") == "Capacity"


def test_a_node_removed_and_added_back_keeps_the_usage_of_pods_still_on_it() -> None:
    s = Scheduler()
    w = SimWorld(s)
    w.add_node(make_node("n", cpu=2))
    w.add_pod(make_pod("p0", cpu=2))
    w.step(0)
    s.observe(NodeGone("n"))  # the pods on it are not deleted yet
    s.observe(NodeObserved(make_node("n", cpu=2)))
    w.add_pod(make_pod("p1", cpu=2))
    w.settle(1)
    assert w.node_of("p1") is None
    assert s.cluster.nodes["n"].used == res(2, "1Gi", pods=1)
    w.delete("p0")
    w.step(2)
    assert w.node_of("p1") == "n"


def test_removing_a_node_deletes_its_pods_and_they_are_placed_again() -> None:
    w = SimWorld()
    w.add_node(make_node("a", cpu=2))
    w.add_pod(make_pod("p", cpu=2))
    w.step(0)
    w.remove_node("a")
    w.add_node(make_node("b", cpu=2))
    w.add_pod(make_pod("q", cpu=2))
    w.step(1)
    assert w.node_of("q") == "b"


@pytest.mark.parametrize(
    ("change", "fits_after"),
    [
        pytest.param({"ready": True}, True, id="becomes-ready"),
        pytest.param({"ready": False}, False, id="still-not-ready"),
        pytest.param({"ready": True, "unschedulable": True}, False, id="ready-but-cordoned"),
    ],
)
def test_node_updates_retry_pods_blocked_on_it(change: dict[str, bool], fits_after: bool) -> None:
    w = SimWorld()
    w.add_node(make_node("n", ready=False))
    w.add_pod(make_pod("p"))
    w.step(0)
    assert w.pending_reason("p") == "Constraints"
    w.add_node(make_node("n", **change))  # type: ignore[arg-type]
    w.step(1)
    assert (w.node_of("p") == "n") is fits_after


def test_a_node_growing_retries_pods_blocked_on_capacity() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=1))
    w.add_pod(make_pod("p", cpu=2))
    w.step(0)
    assert w.pending_reason("p") == "Capacity"
    w.add_node(make_node("n", cpu=4))
    w.step(1)
    assert w.node_of("p") == "n"


def test_diagnosis_names_the_filters_and_the_closest_node() -> None:
    cluster = Cluster()
    cluster.upsert_node(make_node("a", cpu=2, taints=(NO_SCHEDULE,)))
    cluster.upsert_node(make_node("b", cpu=2, ready=False))
    cluster.upsert_node(make_node("c", cpu=2))
    cluster.upsert_node(make_node("d", cpu=3))
    diagnosis = cluster.diagnose(res(4) + ONE_POD, constraints())
    assert dict(diagnosis.by_filter) == {"TaintToleration": 1, "NodeReady": 1,
                                         "NodeResourcesFit": 2}
    assert diagnosis.best_shortfall == res(1)
    assert not diagnosis.constraint_bound
    assert diagnosis.message() == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {dedicated: gpu}, "
        "1 node(s) were not ready, 2 Insufficient cpu. The closest node is short of cpu=1.")


def test_diagnosis_of_an_empty_cluster() -> None:
    diagnosis = Cluster().diagnose(res(1), constraints())
    assert diagnosis.message() == "0/0 nodes are available: no nodes in the cluster."


@pytest.mark.parametrize("scoring", [Scoring.BINPACK, Scoring.SPREAD])
def test_sampling_still_finds_the_only_node_that_fits(scoring: Scoring) -> None:
    cluster = Cluster(percentage_of_nodes_to_score=1)
    for i in range(20):
        cluster.upsert_node(make_node(f"n{i:02}", cpu=2))
    cluster.upsert_node(make_node("z-big", cpu=16))
    for _ in range(3):
        assert cluster.place(res(4) + ONE_POD, constraints(), scoring) == "z-big"
        cluster.charge("z-big", f"p{_}", res(4) + ONE_POD)
    assert cluster.place(res(5) + ONE_POD, constraints(), scoring) is None


def test_binpack_watermark_is_dropped_when_capacity_is_freed() -> None:
    cluster = Cluster()
    cluster.upsert_node(make_node("a", cpu=2))
    cluster.upsert_node(make_node("b", cpu=4))
    cluster.charge("a", "x", res(2))
    assert cluster.place(res(2), constraints(), Scoring.BINPACK) == "b"
    cluster.release("a", "x", res(2))
    assert cluster.place(res(2), constraints(), Scoring.BINPACK) == "a"


def test_charge_and_release_are_idempotent() -> None:
    cluster = Cluster()
    cluster.upsert_node(make_node("n", cpu=4))
    cluster.charge("n", "x", res(1))
    cluster.charge("n", "x", res(1))
    assert cluster.nodes["n"].used == res(1)
    cluster.release("n", "x", res(1))
    cluster.release("n", "x", res(1))
    assert cluster.nodes["n"].used == Resources.ZERO
    assert cluster.nodes["n"].free == make_node("n", cpu=4).allocatable


def test_a_pod_bound_to_an_unknown_node_is_counted_when_the_node_appears() -> None:
    s = Scheduler(SchedulerConfig())
    s.observe(PodObserved(make_pod("p", cpu=3, node="late", phase=PodPhase.RUNNING)))
    s.observe(NodeObserved(make_node("late", cpu=4)))
    assert s.cluster.nodes["late"].used == res(3, "1Gi", pods=1)
    assert s.cluster.capacity() == make_node("late", cpu=4).allocatable
    assert s.cluster.used() == res(3, "1Gi", pods=1)


def test_a_changed_request_is_charged_in_place() -> None:
    s = Scheduler()
    s.observe(NodeObserved(make_node("n", cpu=4)))
    s.observe(PodObserved(make_pod("p", cpu=1, node="n", phase=PodPhase.RUNNING)))
    s.observe(PodObserved(make_pod("p", cpu=3, node="n", phase=PodPhase.RUNNING)))
    assert s.cluster.nodes["n"].used == res(3, "1Gi", pods=1)
    assert s.queues.usage("default") == res(3, "1Gi", pods=1)
    s.observe(PodGone(make_pod("p").uid))
    assert s.cluster.nodes["n"].used == Resources.ZERO
    assert s.queues.usage("default") == Resources.ZERO


# --- Scoring one node per usage key ----------------------------------------------------

_SHAPES = st.sampled_from([2, 4, 8])
_CHARGES = st.lists(st.tuples(st.integers(0, 11), st.integers(0, 3), st.integers(0, 2)),
                    max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.lists(_SHAPES, min_size=1, max_size=12), _CHARGES,
       st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3)), min_size=1, max_size=6),
       st.sampled_from([Scoring.BINPACK, Scoring.SPREAD]))
def test_a_placement_scoring_one_node_per_usage_key_chooses_as_scoring_them_all(
        shapes: list[int], charges: list[tuple[int, int, int]],
        pods: list[tuple[int, int]], scoring: Scoring) -> None:
    """Nodes of equal allocatable and usage score alike for the resource scorers, so
    ``Cluster.place`` scores the first of each (``Framework.usage_scored``): it must
    choose what scoring every feasible node chooses. Zero-cpu charges make nodes whose
    room is equal but whose scoring defaults differ."""

    def run(usage_scored: bool) -> list[str | None]:
        cluster = Cluster()
        for i, cpu in enumerate(shapes):
            cluster.upsert_node(make_node(f"n{i:02}", cpu=cpu))
        for n, (index, cpu, memory) in enumerate(charges):
            if index < len(shapes):
                cluster.charge(f"n{index:02}", f"c{n}",
                               res(cpu) + Resources.from_k8s({"memory": f"{memory}Gi"})
                               + ONE_POD)
        chosen = []
        original = Framework.usage_scored
        if not usage_scored:
            Framework.usage_scored = lambda *args: False  # type: ignore[method-assign]
        try:
            for n, (cpu, memory) in enumerate(pods):
                request = res(cpu) + Resources.from_k8s({"memory": f"{memory}Gi"}) + ONE_POD
                where = cluster.place(request, constraints(), scoring)
                chosen.append(where)
                if where is not None:
                    cluster.charge(where, f"p{n}", request)
        finally:
            Framework.usage_scored = original  # type: ignore[method-assign]
        return chosen

    assert run(True) == run(False)
