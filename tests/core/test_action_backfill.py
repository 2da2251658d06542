"""The backfill action: best-effort pods on any feasible node, after the gangs."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.values.decisions import BindPod
from gangsched.core.values.model import GangMode, SchedulerConfig
from gangsched.core.values.resources import Resources
from simworld import SimWorld

NONE = Resources.ZERO
NO_BACKFILL = SchedulerConfig(actions=("enqueue", "allocate"))


def world(*nodes: tuple[int, int], config: SchedulerConfig | None = None) -> SimWorld:
    """Nodes given as (cpu, pod slots)."""
    w = SimWorld(config=config)
    for i, (cpu, slots) in enumerate(nodes):
        w.add_node(make_node(f"n{i}", cpu=cpu, pods=slots))
    return w


def best_effort(name: str, **kw: object) -> object:
    return make_pod(name, requests=NONE, **kw)  # type: ignore[arg-type]


def bind_reason(decisions: list[object], name: str) -> str | None:
    for d in decisions:
        if isinstance(d, BindPod) and d.name == name:
            return d.reason
    return None


@pytest.mark.parametrize(
    ("config", "reason"),
    [pytest.param(None, "Backfilled", id="backfill"),
     pytest.param(NO_BACKFILL, "Scheduled", id="allocate-places-it-without-backfill")],
)
def test_a_best_effort_pod_is_placed(config: SchedulerConfig | None, reason: str) -> None:
    w = world((4, 110), config=config)
    w.add_pod(best_effort("be"))  # type: ignore[arg-type]
    decisions = w.step(0)
    assert bind_reason(decisions, "be") == reason


def test_best_effort_pods_go_where_the_least_is_requested() -> None:
    """Scored as kube-scheduler scores them: a pod without requests counts as 100m cpu
    and 200Mi memory, so best-effort pods spread out over equal nodes."""
    w = world((8, 10), (8, 10))
    w.add_pod(make_pod("busy", cpu=1, node="n0"))
    w.add_pod(best_effort("be-first", creation=0.0))  # type: ignore[arg-type]
    w.step(0)
    assert w.node_of("be-first") == "n1"
    for i in range(4):
        w.add_pod(best_effort(f"be-{i}", creation=float(i + 1)))  # type: ignore[arg-type]
    w.step(1)
    per_node = [sum(1 for p in w.pods.values() if p.node_name == n and p.name.startswith("be"))
                for n in ("n0", "n1", "n2")]
    assert per_node == [0, 5, 0]


def test_best_effort_pods_spread_over_equal_nodes() -> None:
    w = world((8, 10), (8, 10))
    for i in range(4):
        w.add_pod(best_effort(f"be-{i}", creation=float(i)))  # type: ignore[arg-type]
    w.step(0)
    per_node = [sum(1 for p in w.pods.values() if p.node_name == n) for n in ("n0", "n1")]
    assert per_node == [2, 2]


def test_gangs_take_pod_slots_before_best_effort_pods() -> None:
    """One pod slot left: the gang's member gets it, though the best-effort pod came first."""
    w = world((8, 3))
    w.add_pod(make_pod("a", cpu=1, node="n0"))
    w.add_pod(best_effort("be", creation=0))  # type: ignore[arg-type]
    w.add_group(make_podgroup("pg", 2, creation=1))
    for i in range(2):
        w.add_pod(make_pod(f"pg-{i}", pod_group="pg", creation=1))
    w.step(0)
    assert {w.node_of("pg-0"), w.node_of("pg-1")} == {"n0"}
    assert w.node_of("be") is None and w.pending_reason("be") == "Capacity"


@pytest.mark.parametrize(
    ("pod_kw", "group_mode"),
    [pytest.param({"pod_group": "pg"}, GangMode.STRICT, id="podgroup-member"),
     pytest.param({"pod_group": "pg"}, GangMode.NON_STRICT, id="nonstrict-member"),
     pytest.param({"app": "gang", "task_group": "g"}, None, id="gang-application-member")],
)
def test_members_of_gangs_in_progress_are_never_backfilled(
    pod_kw: dict[str, str], group_mode: GangMode | None
) -> None:
    w = world((8, 110))
    if group_mode is not None:
        w.add_group(make_podgroup("pg", 2, mode=group_mode))
    else:
        w.add_app(make_app("gang", make_group("g", 2, cpu=100)))  # never reserved
    w.add_pod(best_effort("lonely", **pod_kw))  # type: ignore[arg-type]
    decisions = w.settle(0)
    assert bind_reason(decisions, "lonely") is None
    assert w.node_of("lonely") is None


def test_a_best_effort_pod_of_a_plain_application_moves_it_along() -> None:
    w = world((4, 110))
    w.add_app(make_app("web"))
    w.add_pod(best_effort("web-0", app="web"))  # type: ignore[arg-type]
    decisions = w.settle(0)
    assert bind_reason(decisions, "web-0") == "Backfilled"
    assert w.app_state("default/web") == "Running"


@pytest.mark.parametrize(
    ("queue_max", "selector", "reason"),
    [pytest.param(Resources({"pods": 1}), None, "QueueQuota", id="pod-slot-quota"),
     pytest.param(None, {"zone": "mars"}, "Constraints", id="no-feasible-node")],
)
def test_a_best_effort_pod_that_cannot_be_placed_says_why(
    queue_max: Resources | None, selector: dict[str, str] | None, reason: str
) -> None:
    w = world((4, 110))
    w.add_queue(make_queue("q", max=queue_max))
    if queue_max is not None:
        w.add_pod(best_effort("first", queue="q"))  # type: ignore[arg-type]
        w.step(0)
    w.add_pod(best_effort("be", queue="q", node_selector=selector))  # type: ignore[arg-type]
    w.step(1)
    assert w.node_of("be") is None and w.pending_reason("be") == reason


def test_a_pod_that_requests_something_is_not_best_effort() -> None:
    w = world((4, 110))
    w.add_pod(make_pod("small", requests=res(cpu="10m")))
    decisions = w.step(0)
    assert bind_reason(decisions, "small") == "Scheduled"


def test_best_effort_pods_leave_reserved_nodes_alone() -> None:
    config = SchedulerConfig(actions=("enqueue", "elect", "allocate", "backfill", "reserve"),
                             starvation_threshold=0)
    w = world((4, 110), (4, 110), config=config)
    w.add_pod(make_pod("hog", cpu=4, memory="0", node="n0"))
    w.add_app(make_app("big", make_group("g", 6, cpu=1)))
    w.step(0)  # elected at once; n1, with room, is held for it
    assert w.scheduler.cluster.reserved == frozenset({"n0", "n1"})
    w.add_pod(best_effort("be"))  # type: ignore[arg-type]
    w.step(1)
    assert w.node_of("be") is None and w.pending_reason("be") == "Reservation"
