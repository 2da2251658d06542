"""Victims: units by tier, the placement simulation, and the smallest set that fits."""

from __future__ import annotations

import dataclasses

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, res
from gangsched.core.placement.cluster import Constraints
from gangsched.core.preemption import simulation, victims
from gangsched.core.preemption.preemptors import Item, Kind, Preemptor
from gangsched.core.preemption.victims import Tier
from gangsched.core.values.model import PodPhase, SchedulerConfig, Scoring
from gangsched.core.values.observations import PodObserved
from gangsched.core.values.resources import Resources
from hypothesis import given, settings
from hypothesis import strategies as st
from simworld import SimWorld

NOTHING = SchedulerConfig(actions=("allocate",))
ONE = res(1, "1Gi", pods=1)
TWO = res(2, "1Gi", pods=1)


def world(*cpus: int) -> SimWorld:
    w = SimWorld(config=NOTHING)
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    return w


def units(w: SimWorld) -> dict[str, tuple[Tier, list[str]]]:
    found = victims.pool(w.scheduler, w.now)
    return {u.key.split("/", 1)[1]: (u.tier, sorted(ps.pod.name for ps in u.pods))
            for u in found.units}


def preemptor(*sizes: Resources, queue: str = "default", priority: int = 10,
              earmark: Resources = Resources.ZERO) -> Preemptor:
    from gangsched.core.values.decisions import ObjectRef
    return Preemptor(key="Pod/x", kind=Kind.POD, target=ObjectRef("Pod", "default", "x"),
                     queue=queue, priority=priority, creation=0.0,
                     items=[Item(size, Constraints()) for size in sizes], earmark=earmark)


# --- the pool ---------------------------------------------------------------------------


def test_every_kind_of_work_is_a_unit_of_its_tier() -> None:
    w = world(16)
    w.add_app(make_app("held", make_group("g", 2)))  # reserved, not started
    w.add_app(make_app("train", make_group("g", 2)))  # running, one above minMember
    for i in range(3):
        w.add_pod(make_pod(f"train-{i}", app="train", task_group="g", creation=i))
    w.add_app(make_app("web"))  # no task groups: each pod on its own
    w.add_pod(make_pod("web-0", app="web"))
    w.add_pod(make_pod("plain"))
    w.settle(0)
    w.settle(1)
    found = units(w)
    assert found["default/held"] == (Tier.RESERVATION,
                                      sorted(p.name for p in w.placeholders()))
    assert found["default/train"] == (Tier.GANG, ["train-0", "train-1", "train-2"])
    members = [v for k, v in found.items() if v[1][0].startswith("train-") and v[0] is Tier.POD]
    assert len(members) == 3  # each may go alone, within the group's budget of one
    assert victims.pool(w.scheduler, 1).surplus[("Application/default/train", "g")] == 1
    assert found["uid-default-web-0"] == (Tier.POD, ["web-0"])
    assert found["uid-default-plain"] == (Tier.POD, ["plain"])


def test_a_gang_not_allowed_leaves_its_chosen_members_chosen() -> None:
    w = world(16)
    w.add_app(make_app("train", make_group("g", 2)))
    for i in range(3):
        w.add_pod(make_pod(f"train-{i}", app="train", task_group="g", creation=i))
    w.add_pod(make_pod("plain"))
    w.settle(0)
    w.settle(1)
    found = {u.key: u for u in victims.pool(w.scheduler, 1).units}
    gang = found["Application/default/train"]
    member = next(u for u in found.values()
                  if u.tier is Tier.POD and u.pods[0].pod.name == "train-2")
    plain = next(u for u in found.values()
                 if u.tier is Tier.POD and u.pods[0].pod.name == "plain")

    def two_cpus(freed: victims.Freed) -> bool:
        return sum(freed.extra.values(), Resources.ZERO).get("cpu") >= 2000

    chosen = victims._greedy(
        [member, gang, plain], two_cpus, victims.Freed(lambda unit: Resources.ZERO),
        Resources.ZERO, Resources.ZERO, {"n0"}, lambda unit, freed: unit is not gang)
    assert chosen is not None
    assert chosen[0] == [member, plain]
    assert chosen[1].extra == {"n0": res(2, "2Gi", pods=2)}


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(make_pod("p", preemptible=False), id="not-preemptible"),
        pytest.param(make_pod("p", node="n0", phase=PodPhase.SUCCEEDED), id="finished"),
    ],
)
def test_some_pods_are_never_victims(pod: object) -> None:
    w = world(4)
    w.add_pod(pod)  # type: ignore[arg-type]
    w.settle(0)
    assert units(w) == {}


def test_another_schedulers_bound_pod_is_a_victim_in_no_queue() -> None:
    """kube-scheduler's SelectVictimsOnNode counts every pod on the node; such a pod is
    in no queue of gangsched's (preempt of any queue may take it, reclaim never)."""
    w = world(4)
    w.add_pod(make_pod("p", ours=False, node="n0", phase=PodPhase.RUNNING))
    w.settle(0)
    assert units(w) == {"uid-default-p": (Tier.POD, ["p"])}
    (unit,) = victims.pool(w.scheduler, 0).units
    assert unit.foreign
    assert victims.pool(w.scheduler, 0, queues={"default"}).units == []


def test_another_schedulers_nominated_pod_is_room_taken_without_an_eviction() -> None:
    """A pending pod of another scheduler holds the room of its nominated node; against
    pods of higher priority it holds none (upstream's addGENominatedPods): a unit that
    evicts nothing and costs nothing, never one of reclaim's."""
    w = world(4)
    w.add_pod(dataclasses.replace(make_pod("p", ours=False), nominated_node="n0"))
    w.settle(0)
    (unit,) = victims.pool(w.scheduler, 0).units
    assert (unit.tier, unit.foreign, unit.nominated) == (Tier.POD, True, True)
    assert unit.freed == {"n0": res(1, "1Gi", pods=1)}
    assert victims._cost([unit]) == victims._cost([])
    assert victims.pool(w.scheduler, 0, queues={"default"}).units == []


def test_a_pod_whose_bind_is_in_flight_is_no_victim() -> None:
    w = world(4)
    w.observe(PodObserved(make_pod("p")))
    w.scheduler.cycle(0)  # the bind is asked for, not carried out
    assert w.scheduler.pods[w.scheduler.pod_by_name["default/p"]].assumed
    assert units(w) == {}


def test_a_satisfied_podgroup_is_a_gang_with_members_above_min() -> None:
    w = world(8)
    w.add_group(make_podgroup("mpi", 2))
    for i in range(3):
        w.add_pod(make_pod(f"mpi-{i}", pod_group="mpi"))
    w.settle(0)
    found = units(w)
    assert found["default/mpi"] == (Tier.GANG, ["mpi-0", "mpi-1", "mpi-2"])
    assert victims.pool(w.scheduler, 0).surplus[("PodGroup/default/mpi", "default/mpi")] == 1


# --- the simulation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scoring", "extra", "expected"),
    [
        pytest.param(Scoring.BINPACK, {}, {0: "n1", 1: "n1"}, id="binpack-fullest"),
        pytest.param(Scoring.SPREAD, {}, {0: "n0", 1: "n2"}, id="spread-emptiest"),
        pytest.param(Scoring.BINPACK, {"n2": ONE}, {0: "n1", 1: "n1"},
                     id="room-freed-elsewhere-changes-nothing"),
    ],
)
def test_fit_places_greedily_as_allocate_scores(
    scoring: Scoring, extra: dict[str, Resources], expected: dict[int, str]
) -> None:
    w = world(4, 4, 4)
    w.add_pod(make_pod("busy", cpu=1, node="n1", phase=PodPhase.RUNNING))
    w.settle(0)
    assert simulation.fit(w.scheduler, [Item(ONE, Constraints())] * 2, extra, scoring) == expected


def test_fit_is_none_when_an_item_fits_nowhere() -> None:
    w = world(2)
    assert simulation.fit(w.scheduler, [Item(TWO, Constraints())] * 2, {}, Scoring.BINPACK) is None
    assert simulation.fit(w.scheduler, [Item(TWO, Constraints())] * 2, {"n0": TWO},
                       Scoring.BINPACK) == {0: "n0", 1: "n0"}


# --- selection --------------------------------------------------------------------------


def busy(w: SimWorld, *pods: tuple[str, int, int]) -> None:
    """Ordinary pods (name, cpu, priority), bound in order, the later the newer."""
    for i, (name, cpu, priority) in enumerate(pods):
        w.add_pod(make_pod(name, cpu=cpu, priority=priority, creation=i))
    w.settle(0)


def chosen(w: SimWorld, pre: Preemptor) -> list[str] | None:
    s = w.scheduler
    pool = victims.pool(s, 0)
    found = victims.select(s, pre, pool.units, 0, allowed=victims.within_budget(pool))
    return None if found is None else sorted(ps.pod.name for u in found for ps in u.pods)


@pytest.mark.parametrize(
    ("pods", "need", "expected"),
    [
        pytest.param((("x", 1, 0), ("y", 1, 0), ("z", 2, 0)), TWO, ["z"],
                     id="newest-first-one-is-enough"),
        pytest.param((("x", 1, 0), ("y", 1, 0), ("z", 2, 1)), TWO, ["x", "y"],
                     id="lower-priority-before-fewer"),
        pytest.param((("x", 2, 0), ("y", 1, 0), ("z", 1, 0)), TWO, ["y", "z"],
                     id="irreducible"),
        pytest.param((("x", 1, 0), ("y", 1, 0)), TWO, [], id="fits-already"),
        pytest.param((("x", 2, 0), ("y", 2, 0)), res(5, "1Gi", pods=1), None,
                     id="nothing-is-enough"),
    ],
)
def test_select_finds_the_cheapest_irreducible_set(
    pods: tuple[tuple[str, int, int], ...], need: Resources, expected: list[str] | None
) -> None:
    w = world(4)
    busy(w, *pods)
    assert chosen(w, preemptor(need)) == expected


def test_one_member_above_min_rather_than_the_whole_gang() -> None:
    w = world(3)
    w.add_app(make_app("train", make_group("g", 2)))
    for i in range(3):
        w.add_pod(make_pod(f"train-{i}", app="train", task_group="g", creation=i))
    w.settle(0)
    w.settle(1)
    assert chosen(w, preemptor(ONE)) == ["train-2"]
    assert chosen(w, preemptor(ONE, ONE)) == ["train-0", "train-1", "train-2"]


def test_victims_of_the_same_queue_give_back_its_quota() -> None:
    from builders import make_queue
    w = world(8)
    w.add_queue(make_queue("q", max=res(2)))
    w.add_pod(make_pod("x", queue="q"))
    w.add_pod(make_pod("y", queue="q", creation=1))
    w.settle(0)
    assert chosen(w, preemptor(ONE, queue="q")) == ["y"]
    s = w.scheduler
    pool = victims.pool(s, 0)
    assert victims.select(s, preemptor(ONE, queue="q"), pool.units, 0,
                          quota_relief=False) is None


def test_within_budget_lets_a_newcomer_take_a_place_in_its_own_group() -> None:
    w = world(3)
    w.add_app(make_app("train", make_group("g", 3)))
    for i in range(3):
        w.add_pod(make_pod(f"train-{i}", app="train", task_group="g", creation=i))
    w.settle(0)
    w.settle(1)
    s = w.scheduler
    pool = victims.pool(s, 1)
    members = [u for u in pool.units if u.tier is Tier.POD]
    key = ("Application/default/train", "g")
    nothing, one = victims.Freed(), victims.Freed()
    one.add(members[0])
    assert not victims.within_budget(pool)(members[0], nothing)
    assert victims.within_budget(pool, {key: 1})(members[0], nothing)
    assert not victims.within_budget(pool, {key: 1})(members[1], one)
    one.remove(members[0])
    assert victims.within_budget(pool, {key: 1})(members[1], one)


# --- counting places instead of simulating ---------------------------------------------

_shapes = st.sampled_from([res(1, "1Gi", pods=1), res(2, "1Gi", pods=1), res(3, "2Gi", pods=1),
                           res(1, "6Gi", pods=1), res(0, "0", pods=1)])


@settings(max_examples=200, deadline=None)
@given(nodes=st.lists(st.tuples(st.integers(0, 8), st.integers(1, 4)), min_size=1, max_size=6),
       used=st.lists(st.integers(0, 5), max_size=6),
       items=st.lists(_shapes, min_size=0, max_size=12),
       extra=st.dictionaries(st.integers(0, 5), st.integers(0, 4), max_size=3),
       reserved=st.sets(st.integers(0, 5), max_size=2), ours=st.booleans())
def test_counting_places_agrees_with_the_placement_simulation(
    nodes: list[tuple[int, int]], used: list[int], items: list[Resources],
    extra: dict[int, int], reserved: set[int], ours: bool
) -> None:
    w = SimWorld(config=NOTHING)
    for i, (cpu, slots) in enumerate(nodes):
        w.add_node(make_node(f"n{i}", cpu=cpu, memory="8Gi", pods=slots))
    for i, cpu in enumerate(used):  # running pods take some of the room
        if i < len(nodes) and 0 < cpu <= nodes[i][0]:
            w.add_pod(make_pod(f"r{i}", cpu=cpu, node=f"n{i}", phase=PodPhase.RUNNING))
    freed = {f"n{i}": res(cpu, "1Gi", pods=1) for i, cpu in extra.items() if i < len(nodes)}
    wanted = [Item(size, Constraints()) for size in items]
    s = w.scheduler
    held = [f"n{i}" for i in sorted(reserved) if i < len(nodes)]
    if held:  # nodes held for a starving gang: closed to others, open to it
        s.cluster.reserve(held, ["default/gang"], "default/gang")
    owners = frozenset({"default/gang"} if ours else ())
    counted = simulation.enough_places(s, wanted, freed, owners)
    placed = simulation.fit(s, wanted, freed, Scoring.BINPACK, owners)
    if counted is not None:
        assert counted == (placed is not None)
    if len(set(items)) <= 1:
        assert counted is not None  # one shape: the count decides


# --- the preemptor a pod on its own makes ------------------------------------------------


def test_a_pod_on_its_own_makes_its_preemptor_again_when_it_changes() -> None:
    from gangsched.core.preemption.preemptors import for_pod
    w = world(1)
    w.add_pod(make_pod("big", cpu=4, uid="u", priority=1))
    w.settle(0)
    s = w.scheduler
    ps = s.pods[next(iter(s.pending))]
    first = for_pod(s, ps, 0)
    assert first is not None and for_pod(s, ps, 0) is first  # the same version: kept
    w.add_pod(make_pod("big", cpu=4, uid="u", priority=7, queue="q"))
    w.settle(1)
    again = for_pod(s, ps, 1)
    assert again is not None and again is not first
    assert (again.priority, again.queue) == (7, "q")
    w.add_pod(make_pod("big", cpu=2, uid="u", priority=7, queue="q"))
    w.settle(2)
    resized = for_pod(s, ps, 2)
    assert resized is not None and resized.total == res(2, "1Gi", pods=1)


def test_the_search_on_each_node_leaves_the_cluster_as_it_found_it() -> None:
    """onnode.select takes the candidates out of the placed-pod index and their node's
    host ports for its checks, and puts every one back, victims included."""
    from gangsched.core.preemption import onnode
    from gangsched.core.preemption.preemptors import for_pod
    from gangsched.core.values.placement_terms import HostPort, Placement

    w = world(4, 4)
    port = Placement(labels=(("app", "web"),), ports=(HostPort(8080),))
    for i in range(2):
        w.add_pod(make_pod(f"low-{i}", cpu=1, placement=port))
    w.settle(0)
    w.add_pod(make_pod("high", cpu=1, priority=10, placement=port))
    w.settle(1)
    s = w.scheduler
    cluster = s.cluster
    before = (dict(cluster.pod_index.pods), {n: dict(st.ports) for n, st in cluster.nodes.items()},
              {n: st.free for n, st in cluster.nodes.items()})
    pre = for_pod(s, s.pods[s.pod_by_name["default/high"]], 1)
    assert pre is not None and onnode.wanted(s, pre)
    choice = onnode.select(s, pre, victims.pool(s, 1).units)
    assert choice is not None
    node, chosen = choice
    assert [ps.pod.name for u in chosen for ps in u.pods] == [
        next(p.name for p in w.pods.values() if p.node_name == node and p.name != "high")]
    after = (dict(cluster.pod_index.pods), {n: dict(st.ports) for n, st in cluster.nodes.items()},
             {n: st.free for n, st in cluster.nodes.items()})
    assert after == before
