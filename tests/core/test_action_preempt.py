"""The ``preempt`` action: within a queue, whole-gang-aware, never more than needed."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from contention import Contention, Op, Setup, ops, setups, works
from gangsched.core.preemption.evictions import HOLD
from gangsched.core.values.decisions import (
    DeletePod,
    DeleteReason,
    EvictPod,
    NominatePod,
    RecordEvent,
)
from gangsched.core.values.model import AppKey, PodPhase, SchedulerConfig, SortPolicy
from gangsched.core.values.resources import Resources
from hypothesis import HealthCheck, given, settings
from simworld import SimWorld

PREEMPT_ONLY = SchedulerConfig(actions=("allocate", "preempt"))


def world(nodes: int = 1, cpu: int = 4, config: SchedulerConfig = PREEMPT_ONLY) -> SimWorld:
    w = SimWorld(config=config)
    w.add_queue(make_queue("q", policy=SortPolicy.FIFO))
    w.add_queue(make_queue("other", policy=SortPolicy.FIFO))
    for i in range(nodes):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    return w


def fill(w: SimWorld, *names: str, cpu: int = 1, queue: str = "q", priority: int = 0,
         preemptible: bool = True) -> None:
    """Ordinary pods that run before anything else, the newest last."""
    for i, name in enumerate(names):
        w.add_pod(make_pod(name, cpu=cpu, queue=queue, priority=priority, creation=i,
                           preemptible=preemptible))
    w.settle(0)


def gang(w: SimWorld, name: str, *groups: tuple[str, int], cpu: int = 1, priority: int = 0,
         queue: str = "q", creation: float = 0.0, pods: bool = True) -> None:
    """An Application gang whose real pods (``priority``) come with it."""
    w.add_app(make_app(name, *(make_group(g, n, cpu=cpu) for g, n in groups), queue=queue,
                       creation=creation))
    if pods:
        for g, n in groups:
            for i in range(n):
                w.add_pod(make_pod(f"{name}-{g}-{i}", cpu=cpu, app=name, task_group=g,
                                   priority=priority, creation=creation))


def asked(w: SimWorld) -> set[str]:
    """Pods the core asked to evict."""
    return {d.name for d in w.decisions if isinstance(d, EvictPod)}


def evicted(w: SimWorld) -> set[str]:
    """Pods the world evicted (asked, and not refused or held)."""
    done = set(w.evicted)
    return {d.name for d in w.decisions if isinstance(d, EvictPod) and d.uid in done}


def released(w: SimWorld) -> set[str]:
    return {d.name for d in w.decisions if isinstance(d, DeletePod)
            and d.reason in (DeleteReason.PREEMPTED, DeleteReason.RECLAIMED)}


def events(w: SimWorld, reason: str, kind: str | None = None) -> list[RecordEvent]:
    return [e for e in w.reasons(reason) if kind is None or e.target.kind == kind]


def run(w: SimWorld, start: float = 1.0, cycles: int = 8) -> None:
    for i in range(cycles):
        w.step(start + i)


def running(w: SimWorld, prefix: str) -> set[str]:
    return {p.name for p in w.pods.values()
            if p.name.startswith(prefix) and p.node_name and not p.placeholder}


# --- which victims, and how many -------------------------------------------------------


@pytest.mark.parametrize(
    ("low", "need", "victims"),
    [
        pytest.param(("a", "b", "c", "d"), 2, {"c", "d"}, id="two-of-four-newest-first"),
        pytest.param(("a", "b", "c", "d"), 1, {"d"}, id="one-is-enough"),
        pytest.param(("a", "b"), 2, set(), id="free-room-first"),
    ],
)
def test_a_higher_priority_gang_evicts_only_what_it_needs(
    low: tuple[str, ...], need: int, victims: set[str]
) -> None:
    w = world()
    fill(w, *low)
    gang(w, "hi", ("g", need), priority=10, creation=10)
    run(w)
    assert evicted(w) == victims
    assert running(w, "hi-") == {f"hi-g-{i}" for i in range(need)}
    assert w.app_state("default/hi") == "Running"


@pytest.mark.parametrize("kind", ["gang", "podgroup"])
def test_with_every_action_a_gang_held_by_enqueue_preempts_and_is_admitted(kind: str) -> None:
    w = world(config=SchedulerConfig())
    fill(w, "a", "b", "c", "d")
    if kind == "gang":
        gang(w, "hi", ("g", 2), priority=10, creation=10)
    else:
        w.add_group(make_podgroup("hi", 2, queue="q", creation=10))
        for i in range(2):
            w.add_pod(make_pod(f"hi-g-{i}", pod_group="hi", priority=10, creation=10))
    run(w)
    assert evicted(w) == {"c", "d"}
    assert running(w, "hi-") == {"hi-g-0", "hi-g-1"}
    assert not w.scheduler.evictions.plans


@pytest.mark.parametrize("config", [
    pytest.param(SchedulerConfig(), id="every-action"),
    pytest.param(PREEMPT_ONLY, id="without-enqueue"),
])
def test_a_podgroup_whose_min_resources_exceed_the_cluster_preempts_nothing(
        config: SchedulerConfig) -> None:
    """Volcano's PodGroup ``minMember: 1``, ``minResources.cpu: 30`` on 16 cpu, above 16
    low-priority pods: its member alone would fit after one eviction, but the gang's
    declared minimum never fits. Nothing is evicted, nothing bound, and its pod says why
    with the numbers."""
    w = world(nodes=4, config=config)
    fill(w, *(f"low-{i}" for i in range(16)))
    w.add_group(make_podgroup("big", 1, queue="q", creation=10,
                              min_resources=Resources({"cpu": 30000})))
    w.add_pod(make_pod("big-0", pod_group="big", priority=100, creation=10))
    run(w)
    assert asked(w) == set()
    assert running(w, "big-") == set()
    found = w.pending_reasons[w.uid_of("big-0")]
    assert found.reason == "Unsatisfiable"
    assert "needs cpu=30 in all" in found.message and "cpu=16" in found.message


def test_preemption_frees_a_podgroups_declared_minimum() -> None:
    """``minResources.cpu: 3`` with one 1-cpu member on a full 4-cpu node: evicting one
    pod would let the member in, but the gang declared 3 cpu: three go."""
    w = world()
    fill(w, "a", "b", "c", "d")
    w.add_group(make_podgroup("hi", 1, queue="q", creation=10,
                              min_resources=Resources({"cpu": 3000})))
    w.add_pod(make_pod("hi-0", pod_group="hi", priority=10, creation=10))
    run(w)
    assert evicted(w) == {"b", "c", "d"}
    assert running(w, "hi-") == {"hi-0"}


def test_victims_are_told_and_the_preemptor_says_preempting() -> None:
    w = world()
    fill(w, "a", "b", "c", "d")
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    w.hold_deletes.update({"c", "d"})  # their evictions hang: the plan stays visible
    w.step(1)  # its members are pending: no placeholder to wait for, it preempts at once
    w.step(2)
    assert {e.target.name for e in events(w, "Preempted", "Pod")} == {"c", "d"}
    message = events(w, "Preempted", "Pod")[0].message
    assert message == "evicted to make room for application default/hi (priority 10) in queue q"
    (preempting,) = events(w, "Preempting", "Application")
    assert "2 pods are being evicted" in preempting.message
    blocking = w.app_status["default/hi"].task_groups[0].blocking
    assert blocking.reason == "Preempting"
    assert blocking.details["victims"] == "default/c, default/d"
    assert blocking.details["action"] == "preempt"


def test_placeholders_of_a_gang_that_has_not_started_go_first() -> None:
    w = world()
    fill(w, "a", "b")  # low-priority ordinary pods would do too, but lose work
    gang(w, "low", ("g", 2), pods=False, creation=1)
    w.settle(0.5)
    assert w.app_status["default/low"].reserved == "2/2"
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    run(w)
    assert evicted(w) == set()
    assert len(released(w)) == 2
    assert running(w, "hi-") == {"hi-g-0", "hi-g-1"}
    low = w.app_status["default/low"]
    assert (low.state, low.reserved) == ("Accepted", "0/2")  # held again, reserves later
    assert "reservation (2 placeholders) was released" in events(w, "Preempted")[0].message
    w.delete("a")
    w.delete("b")
    run(w, 20)
    assert w.app_status["default/low"].reserved == "2/2"


def test_members_a_gang_holds_in_memory_are_given_back_not_evicted() -> None:
    w = world()
    fill(w, "a", "b")
    gang(w, "low", ("g", 3), creation=1)  # its pods exist: two held on n0, one waits
    w.settle(0.5)
    assert w.bound_names() & {"low-g-0", "low-g-1", "low-g-2"} == set()
    assert w.app_status["default/low"].reserved == "2/3"
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    run(w)
    assert asked(w) == set()  # nothing evicted: no work lost
    assert running(w, "hi-") == {"hi-g-0", "hi-g-1"}
    assert {w.node_of(f"low-g-{i}") for i in range(3)} == {None}  # still there, pending
    low = w.app_status["default/low"]
    assert (low.state, low.reserved) == ("Accepted", "0/3")  # held again, reserves later
    assert "was released" in events(w, "Preempted", "Application")[0].message


@pytest.mark.parametrize(
    ("members", "victims"),
    [
        pytest.param(2, {"low-g-0", "low-g-1"}, id="at-min-member-the-whole-gang"),
        pytest.param(3, {"low-g-2"}, id="above-min-member-one-pod"),
    ],
)
def test_a_running_gang_is_never_sliced_below_min_member(members: int,
                                                         victims: set[str]) -> None:
    w = world(cpu=3)
    gang(w, "low", ("g", 2), pods=False)
    for i in range(members):
        w.add_pod(make_pod(f"low-g-{i}", app="low", task_group="g", creation=i))
    w.settle(0)
    w.settle(0.5)
    assert running(w, "low-") == {f"low-g-{i}" for i in range(members)}
    w.add_pod(make_pod("urgent", cpu=1, queue="q", priority=10, creation=10))
    if members == 2:
        w.add_pod(make_pod("urgent2", cpu=1, queue="q", priority=10, creation=10))
    run(w)
    assert evicted(w) == victims
    assert w.node_of("urgent") == "n0"


def test_a_pod_that_is_not_preemptible_is_never_a_victim() -> None:
    w = world()
    fill(w, "a", "b", "c", "d", preemptible=False)
    gang(w, "hi", ("g", 1), priority=10, creation=10)
    run(w)
    assert evicted(w) == set()
    assert w.pending_reason("hi-g-0") == "WaitingForGang"
    assert w.app_status["default/hi"].task_groups[0].blocking.reason == "Capacity"


def test_a_gang_with_a_pod_that_is_not_preemptible_is_never_taken_whole() -> None:
    w = world(cpu=2)
    w.add_app(make_app("low", make_group("g", 2), queue="q"))
    w.add_pod(make_pod("low-0", app="low", task_group="g"))
    w.add_pod(make_pod("low-1", app="low", task_group="g", preemptible=False))
    w.settle(0)
    w.settle(0.5)
    assert running(w, "low-") == {"low-0", "low-1"}
    w.add_pod(make_pod("urgent", queue="q", priority=10))
    run(w)
    assert asked(w) == set()
    assert w.pending_reason("urgent") == "Capacity"


@pytest.mark.parametrize(
    ("priority", "queue"),
    [
        pytest.param(0, "q", id="equal-priority"),
        pytest.param(10, "other", id="another-queue"),
    ],
)
def test_only_lower_priority_work_of_the_same_queue_is_taken(priority: int, queue: str) -> None:
    w = world()
    fill(w, "a", "b", "c", "d")
    w.add_pod(make_pod("p", queue=queue, priority=priority, creation=10))
    run(w)
    assert evicted(w) == set()
    assert w.pending_reason("p") == "Capacity"


def test_a_gang_held_for_quota_preempts_in_its_own_queue() -> None:
    w = world(cpu=16)
    w.add_queue(make_queue("q", policy=SortPolicy.FIFO, max=res(4, "64Gi")))
    fill(w, "a", "b", "c", "d")
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    w.step(1)  # held for quota: no placeholders, so it preempts at once
    assert w.app_status["default/hi"].task_groups[0].blocking.reason == "Preempting"
    run(w, 2)
    assert evicted(w) == {"c", "d"}
    assert running(w, "hi-") == {"hi-g-0", "hi-g-1"}


def test_a_podgroup_takes_a_lower_priority_podgroup_whole() -> None:
    w = world(cpu=4)
    w.add_group(make_podgroup("low", 2, queue="q"))
    for i in range(2):
        w.add_pod(make_pod(f"low-{i}", cpu=2, pod_group="low"))
    w.settle(0)
    w.add_group(make_podgroup("hi", 1, queue="q", creation=5))
    w.add_pod(make_pod("hi-0", cpu=2, pod_group="hi", priority=10, creation=5))
    run(w)
    assert evicted(w) == {"low-0", "low-1"}
    assert w.node_of("hi-0") == "n0"


# --- within one gang --------------------------------------------------------------------


def spark(w: SimWorld, executors: int, min_executors: int = 2) -> None:
    w.add_app(make_app("spark", make_group("driver", 1), make_group("exec", min_executors)))
    w.add_pod(make_pod("driver", app="spark", task_group="driver", priority=5))
    for i in range(executors):
        w.add_pod(make_pod(f"exec-{i}", app="spark", task_group="exec", priority=1,
                           creation=i))
    w.settle(0)
    w.settle(0.5)


@pytest.mark.parametrize(
    ("group", "victims"),
    [
        pytest.param("exec", {"exec-2"}, id="same-group-takes-its-place"),
        pytest.param("driver", {"exec-2"}, id="other-group-above-min"),
    ],
)
def test_a_higher_priority_task_takes_a_lower_priority_tasks_place(
    group: str, victims: set[str]
) -> None:
    w = world()
    spark(w, executors=3)
    w.add_pod(make_pod("urgent", app="spark", task_group=group, priority=9, creation=5))
    run(w)
    assert evicted(w) == victims
    assert w.node_of("urgent") == "n0"
    assert "pod default/exec-2 was evicted" in events(w, "Preempted", "Application")[0].message


def test_a_task_never_takes_a_place_that_drops_a_group_below_min_member() -> None:
    w = world(cpu=3)
    spark(w, executors=2)
    # Priority 3: above the executors (1), below the driver (5). The executors are at
    # their minMember, and the driver's place is not for a lower priority pod.
    w.add_pod(make_pod("urgent", app="spark", task_group="driver", priority=3, creation=5))
    run(w)
    assert asked(w) == set()
    assert w.pending_reason("urgent") == "Capacity"


# --- nominated room, failures -----------------------------------------------------------


def test_the_room_freed_is_held_for_the_preemptor_until_it_is_placed() -> None:
    w = world()
    fill(w, "a", "b", "c", "d")
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    w.hold_deletes.add("d")  # c goes at once, d hangs
    w.step(1)  # accepted; its members are pending, so it preempts at once
    w.step(2)
    assert (asked(w), evicted(w)) == ({"c", "d"}, {"c"})
    w.add_pod(make_pod("sneaky", queue="other", priority=20, creation=11))
    run(w, 3, cycles=3)
    assert w.node_of("sneaky") is None  # c's room is held for hi
    nominated = HOLD + "Application/default/hi"
    # c's cpu, and the memory and pod slots both members need (they were free already)
    assert w.scheduler.cluster.nodes["n0"].pods[nominated] == res(1, "2Gi", pods=2)
    w.hold_deletes.clear()
    w.delete("d")  # the eviction completes late
    run(w, 10, cycles=3)
    assert running(w, "hi-") == {"hi-g-0", "hi-g-1"}
    assert w.node_of("sneaky") is None
    assert not w.scheduler.evictions.plans
    assert nominated not in w.scheduler.cluster.nodes["n0"].pods


def test_a_refused_eviction_drops_the_plan_spares_the_others_and_backs_off() -> None:
    w = world(nodes=2, cpu=2)
    w.add_app(make_app("web", queue="q"))
    for i, node in enumerate(("n0", "n0", "n1", "n1")):
        w.add_pod(make_pod(f"web-{i}", app="web", node=node, creation=i,
                           phase=PodPhase.RUNNING))
    w.settle(0)
    w.disruption_budgets["default/web"] = 3  # one of the four may go, not two
    gang(w, "hi", ("g", 1), cpu=2, priority=10, creation=10)
    run(w, 1, cycles=3)
    assert (asked(w), evicted(w)) == ({"web-2", "web-3"}, {"web-3"})
    (failed,) = events(w, "PreemptionFailed")
    assert "evicting pod default/web-2 was refused (429, a PodDisruptionBudget forbids it)" \
        in failed.message
    assert failed.message.endswith("tries again in 30s")
    assert not w.scheduler.evictions.plans
    assert all(ps.evicting is None for ps in w.scheduler.pods.values())
    run(w, 5, cycles=5)
    assert len([d for d in w.decisions if isinstance(d, EvictPod)]) == 2  # backing off
    run(w, 40, cycles=3)  # tries again: the budget still refuses
    assert len(events(w, "PreemptionFailed")) == 2
    assert "tries again in 60s" in events(w, "PreemptionFailed")[1].message
    assert running(w, "hi-") == set()
    assert len(running(w, "web-")) == 3


def test_victims_that_never_go_end_the_plan_after_the_nomination_timeout() -> None:
    config = SchedulerConfig(actions=("allocate", "preempt"), nomination_timeout=60)
    w = world(config=config)
    fill(w, "a", "b", "c", "d")
    w.hold_deletes.add("d")
    gang(w, "hi", ("g", 1), priority=10, creation=10)
    run(w, 1, cycles=3)
    assert (asked(w), evicted(w)) == ({"d"}, set())
    assert w.scheduler.evictions.plans
    run(w, 70, cycles=1)
    assert not w.scheduler.evictions.plans
    (timed_out,) = events(w, "PreemptionTimedOut")
    assert "1 victims were not gone after 60s" in timed_out.message
    assert w.scheduler.pods[w.uid_of("d")].evicting is None  # a candidate again later


def test_nothing_is_evicted_when_the_preemptor_cannot_fit_even_then() -> None:
    w = world()
    fill(w, "a", "b", "c", "d")
    gang(w, "huge", ("g", 1), cpu=8, priority=10, creation=10)
    run(w)
    assert evicted(w) == set()
    assert w.app_status["default/huge"].task_groups[0].blocking.reason == "Unsatisfiable"


def test_without_the_preempt_action_nothing_is_evicted() -> None:
    w = world(config=SchedulerConfig(actions=("allocate",)))
    fill(w, "a", "b", "c", "d")
    gang(w, "hi", ("g", 2), priority=10, creation=10)
    run(w)
    assert evicted(w) == set()
    assert w.scheduler.apps[AppKey("default/hi")].blocking["g"].reason == "Capacity"


# --- properties -------------------------------------------------------------------------


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, works, ops)
def test_preemption_keeps_every_invariant_and_never_evicts_for_nothing(
    setup: Setup, background: list[Op], operations: list[Op]
) -> None:
    run_ = Contention(setup, ("allocate", "backfill", "preempt"))
    run_.background(background)
    run_.run(operations)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, works, ops)
def test_preempt_and_reclaim_together_keep_every_invariant(
    setup: Setup, background: list[Op], operations: list[Op]
) -> None:
    run_ = Contention(setup, ("enqueue", "allocate", "backfill", "preempt", "reclaim"))
    run_.background(background)
    run_.run(operations)


def _nominations(w: SimWorld) -> list[tuple[str, str | None]]:
    return [(d.name, d.node) for d in w.decisions if isinstance(d, NominatePod)]


def test_a_single_pod_preemptor_is_nominated_where_its_room_is_made() -> None:
    w = world(nodes=2)
    fill(w, "a", "b", "c", "d", "e", "f", "g", "h")
    w.hold_deletes.add("h")  # the victim hangs: the plan stays under way
    w.add_pod(make_pod("urgent", cpu=1, queue="q", priority=9, creation=20))
    run(w, 1, cycles=3)
    assert asked(w) == {"h"}
    assert _nominations(w) == [("urgent", w.node_of("h"))]


def test_a_nomination_that_comes_to_nothing_is_cleared() -> None:
    config = SchedulerConfig(actions=("allocate", "preempt"), nomination_timeout=60)
    w = world(config=config)
    fill(w, "a", "b", "c", "d")
    w.hold_deletes.add("d")
    w.add_pod(make_pod("urgent", cpu=1, queue="q", priority=9, creation=20))
    run(w, 1, cycles=3)
    run(w, 70, cycles=1)
    assert _nominations(w)[:2] == [("urgent", "n0"), ("urgent", None)]
