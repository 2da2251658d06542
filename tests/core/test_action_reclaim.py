"""The ``reclaim`` action and deserved shares: across queues, back to the deserved share."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_queue, res
from contention import Contention, Op, Setup, ops, setups, works
from gangsched.core.preemption.shares import Claim, deserved, fill
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import DeletePod, DeleteReason, EvictPod
from gangsched.core.values.model import PodPhase, SchedulerConfig
from gangsched.core.values.resources import Resources
from hypothesis import HealthCheck, given, settings
from simworld import SimWorld

RECLAIM_ONLY = SchedulerConfig(actions=("allocate", "reclaim"))


# --- deserved shares --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("amount", "claims", "expected"),
    [
        pytest.param(10, [("a", 1, 0, 10), ("b", 1, 0, 10)], {"a": 5, "b": 5}, id="equal"),
        pytest.param(12, [("a", 3, 0, 12), ("b", 1, 0, 12)], {"a": 9, "b": 3}, id="weights"),
        pytest.param(10, [("a", 3, 0, 10), ("b", 1, 0, 10)], {"a": 8, "b": 2},
                     id="remainder-by-name"),
        pytest.param(10, [("a", 1, 0, 2), ("b", 1, 0, 10)], {"a": 2, "b": 8},
                     id="a-capped-queue-leaves-the-rest"),
        pytest.param(10, [("a", 1, 6, 10), ("b", 1, 0, 10)], {"a": 8, "b": 2},
                     id="guaranteed-first-then-weights"),
        pytest.param(10, [("a", 1, 8, 10), ("b", 1, 8, 10)], {"a": 8, "b": 8},
                     id="guarantees-beyond-the-amount-are-kept"),
        pytest.param(10, [("a", 1, 6, 3), ("b", 1, 0, 0)], {"a": 3, "b": 0},
                     id="nothing-beyond-what-is-asked"),
    ],
)
def test_fill_gives_floors_then_weights_up_to_caps(
    amount: int, claims: list[tuple[str, int, int, int]], expected: dict[str, int]
) -> None:
    assert fill(amount, [Claim(*c) for c in claims]) == expected


def shares_of(*queues: object, pods: tuple[tuple[str, int, bool], ...] = (),
              nodes: int = 2) -> dict[str, Resources]:
    """Deserved cpu per queue; pods are (queue, cpu, bound)."""
    s = Scheduler(SchedulerConfig())
    w = SimWorld(s, auto_run=True)
    for queue in queues:
        w.add_queue(queue)  # type: ignore[arg-type]
    for i in range(nodes):
        w.add_node(make_node(f"n{i}", cpu=4, memory="16Gi"))
    for i, (queue, cpu, bound) in enumerate(pods):
        w.add_pod(make_pod(f"p{i}", cpu=cpu, memory="1Gi", queue=queue,
                           node="n0" if bound else None))
    return {name: Resources({"cpu": r.get("cpu")}) for name, r in deserved(s, 0).items()}


def test_queues_without_work_deserve_nothing_and_the_others_share_by_weight() -> None:
    found = shares_of(make_queue("a", weight=3), make_queue("b"), make_queue("idle"),
                      pods=(("a", 8, False), ("b", 8, False)))
    assert found["a"] == res(6) and found["b"] == res(2)
    assert found["idle"] == Resources.ZERO


def test_a_parent_splits_its_own_share_between_its_children() -> None:
    found = shares_of(
        make_queue("org", max=res(4)), make_queue("x", parent="org"),
        make_queue("y", parent="org", weight=3), make_queue("solo"),
        pods=(("x", 4, False), ("y", 4, False), ("solo", 8, False)))
    assert found["org"] == res(4)
    assert (found["x"], found["y"], found["solo"]) == (res(1), res(3), res(4))


# --- the action -------------------------------------------------------------------------


def world(*queues: object, nodes: int = 2, config: SchedulerConfig = RECLAIM_ONLY) -> SimWorld:
    w = SimWorld(config=config)
    for queue in queues:
        w.add_queue(queue)  # type: ignore[arg-type]
    for i in range(nodes):
        w.add_node(make_node(f"n{i}", cpu=4))
    return w


def fill_queue(w: SimWorld, queue: str, count: int, cpu: int = 1) -> None:
    for i in range(count):
        w.add_pod(make_pod(f"{queue}{i}", cpu=cpu, queue=queue, creation=i))
    w.settle(0)


def asked(w: SimWorld) -> set[str]:
    return {d.name for d in w.decisions if isinstance(d, EvictPod)}


def run(w: SimWorld, start: float = 1.0, cycles: int = 8) -> None:
    for i in range(cycles):
        w.step(start + i)


def bound(w: SimWorld, prefix: str) -> set[str]:
    return {p.name for p in w.pods.values()
            if p.name.startswith(prefix) and p.node_name and not p.placeholder}


def gang(w: SimWorld, name: str, queue: str, members: int, cpu: int = 1,
         creation: float = 10.0) -> None:
    w.add_app(make_app(name, make_group("g", members, cpu=cpu), queue=queue,
                       creation=creation))
    for i in range(members):
        w.add_pod(make_pod(f"{name}-{i}", cpu=cpu, app=name, task_group="g",
                           creation=creation))


def test_a_queue_below_its_share_takes_back_room_from_one_above_it() -> None:
    w = world(make_queue("a"), make_queue("b"))
    fill_queue(w, "a", 8)
    gang(w, "job", "b", 2, cpu=2)
    run(w)
    assert asked(w) == {"a4", "a5", "a6", "a7"}  # the newest, on one node
    assert bound(w, "job-") == {"job-0", "job-1"}
    assert len(bound(w, "a")) == 4  # a keeps its deserved share: half of 8 cpu
    event = w.reasons("Reclaimed")[0]
    assert event.message == ("evicted to make room for application default/job (priority 0)"
                             " in queue b, below its deserved share (cpu 0 used of 4 deserved)")
    assert w.reasons("Preempting")[0].message.startswith("reclaim: 4 pods are being evicted")


@pytest.mark.parametrize(
    ("a", "b", "members", "victims"),
    [
        pytest.param(make_queue("a", weight=3), make_queue("b"), 1, 2, id="weights-cap-it"),
        pytest.param(make_queue("a", weight=3), make_queue("b"), 2, 0,
                     id="more-than-the-share-takes-nothing"),
        pytest.param(make_queue("a", reclaimable=False), make_queue("b"), 1, 0,
                     id="not-reclaimable"),
        pytest.param(make_queue("a"), make_queue("b", guaranteed=res(6)), 3, 6,
                     id="guaranteed-first"),
    ],
)
def test_what_may_be_reclaimed(a: object, b: object, members: int, victims: int) -> None:
    w = world(a, b)
    fill_queue(w, "a", 8)
    gang(w, "job", "b", members, cpu=2)
    run(w)
    assert len(asked(w)) == victims
    assert len(bound(w, "job-")) == (members if victims else 0)


def test_a_victim_queue_is_never_pushed_below_its_share() -> None:
    # a and b each use one node; c asks for 2 cpu: a and b deserve 3, c 2.
    w = world(make_queue("a"), make_queue("b"), make_queue("c"))
    fill_queue(w, "a", 4)
    fill_queue(w, "b", 4)
    w.add_pod(make_pod("c-big", cpu=2, queue="c", creation=10))
    run(w)
    assert asked(w) == set()  # two pods of one node would leave a (or b) with 2 of 3
    w.delete("c-big")
    for i in range(2):
        w.add_pod(make_pod(f"c-small-{i}", cpu=1, queue="c", creation=11))
    run(w, 20)
    assert asked(w) == {"a3", "b3"}  # one pod from each
    assert bound(w, "c-small") == {"c-small-0", "c-small-1"}


def test_victims_are_looked_for_node_by_node_too() -> None:
    # Newest first would take a3 (n0) and three of n1's: no node with 4 cpu free, and a
    # may lose only 4 pods. Taking n1's four makes room.
    w = world(make_queue("a"), make_queue("b"))
    for name, node, creation in (("a0", "n0", 0), ("a1", "n0", 0), ("a2", "n0", 0),
                                 ("a3", "n0", 5), ("a4", "n1", 1), ("a5", "n1", 2),
                                 ("a6", "n1", 3), ("a7", "n1", 4)):
        w.add_pod(make_pod(name, queue="a", node=node, creation=creation,
                           phase=PodPhase.RUNNING))
    w.settle(0)
    gang(w, "job", "b", 2, cpu=2)
    run(w)
    assert asked(w) == {"a4", "a5", "a6", "a7"}
    assert bound(w, "job-") == {"job-0", "job-1"}


def test_reservations_of_gangs_that_have_not_started_go_first() -> None:
    w = world(make_queue("a"), make_queue("b"))
    fill_queue(w, "a", 4)  # n0
    w.add_app(make_app("held", make_group("g", 4), queue="a", creation=5))  # n1, no pods yet
    w.settle(0.5)
    assert w.app_status["default/held"].reserved == "4/4"
    gang(w, "job", "b", 2, cpu=2)
    run(w)
    assert asked(w) == set()
    assert {d.reason for d in w.decisions if isinstance(d, DeletePod)
            and d.name.startswith("held-")} == {DeleteReason.RECLAIMED}
    assert bound(w, "job-") == {"job-0", "job-1"}
    assert w.app_status["default/held"].reserved == "0/4"


def test_a_running_gang_of_the_other_queue_goes_whole_or_not_at_all() -> None:
    w = world(make_queue("a"), make_queue("b"), nodes=1)
    gang(w, "train", "a", 4, creation=0)
    w.settle(0)
    w.settle(0.5)
    assert len(bound(w, "train-")) == 4
    w.add_pod(make_pod("b0", queue="b", creation=10))
    run(w)
    # b deserves 1 cpu of 4 (a asks 4, b 1): the whole gang would push a below its share.
    assert asked(w) == set()


def test_without_the_reclaim_action_queues_do_not_take_from_each_other() -> None:
    w = world(make_queue("a"), make_queue("b"), config=SchedulerConfig(actions=("allocate",)))
    fill_queue(w, "a", 8)
    gang(w, "job", "b", 2, cpu=2)
    run(w)
    assert asked(w) == set()


# --- properties -------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, works, ops)
def test_reclaim_keeps_every_invariant_and_every_queue_its_share(
    setup: Setup, background: list[Op], operations: list[Op]
) -> None:
    run_ = Contention(setup, ("allocate", "backfill", "reclaim"))
    run_.background(background)
    run_.run(operations)


# --- pods of one kind judged together ---------------------------------------------------


def _pods_of_a_kind_around_a_plan(alike: bool, planned: bool = True,
                                  ) -> tuple[list[object], dict[str, object]]:
    """Queue a waits with pods of one kind that only n0 takes, where queue b's pods may
    not go (fruitless), and (``planned``) between them in order a pod any node takes,
    for which b's pods on n1 may go (a plan). What reclaim decides, and what it records
    per pod."""
    from gangsched.core.actions import reclaim

    w = SimWorld(config=RECLAIM_ONLY)
    w.add_queue(make_queue("a"))
    w.add_queue(make_queue("b"))
    for name in ("n0", "n1"):
        w.add_node(make_node(name, cpu=4, memory="16Gi", labels={"name": name}))
    for i in range(8):
        node = "n0" if i < 4 else "n1"
        w.add_pod(make_pod(f"b{i}", cpu=1, memory="1Gi", queue="b", node=node,
                           phase=PodPhase.RUNNING, preemptible=node == "n1"))
    for name, creation in (("k-1", 1.0), ("k-2", 1.5), ("any", 2.0), ("k-3", 3.0),
                           ("k-4", 4.0)):
        if name == "any" and not planned:
            continue
        w.add_pod(make_pod(name, cpu=1, memory="1Gi", queue="a", creation=creation,
                           node_selector={"name": "n0"} if name != "any" else None))
    original = reclaim._alike
    if not alike:
        reclaim._alike = lambda found: (list(found), {})  # type: ignore[assignment]
    try:
        decided = w.step(10.0)
    finally:
        reclaim._alike = original  # type: ignore[assignment]
    tried = {key: record for (action, key), record in w.scheduler.evictions.tried.items()
             if action == "reclaim"}
    return decided, tried


def test_pods_of_one_kind_are_judged_as_the_first_until_a_plan_then_each_in_turn() -> None:
    decided, tried = _pods_of_a_kind_around_a_plan(alike=True)
    assert (decided, tried) == _pods_of_a_kind_around_a_plan(alike=False)
    assert sum(isinstance(d, EvictPod) for d in decided) == 1  # room for "any" only
    records = {key.removeprefix("Pod/uid-default-"): record for key, record in tried.items()}
    assert sorted(records) == ["k-1", "k-2", "k-3", "k-4"]
    before_plan = (records["k-1"], records["k-2"])
    after_plan = (records["k-3"], records["k-4"])
    assert before_plan[0] == before_plan[1] and after_plan[0] == after_plan[1]
    assert before_plan[0] != after_plan[0]  # judged again, in the state the plan left


def test_pods_of_one_kind_judged_fruitless_are_recorded_as_the_first() -> None:
    decided, tried = _pods_of_a_kind_around_a_plan(alike=True, planned=False)
    assert (decided, tried) == _pods_of_a_kind_around_a_plan(alike=False, planned=False)
    assert not any(isinstance(d, EvictPod) for d in decided)
    assert len(tried) == 4 and len(set(tried.values())) == 1
