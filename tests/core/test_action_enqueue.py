"""The enqueue action: a gang enters scheduling only once its minimum fits."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.values.decisions import CreatePlaceholder
from gangsched.core.values.model import AppKey, GroupKey, SchedulerConfig, SortPolicy
from gangsched.core.values.resources import Resources
from simworld import SimWorld

NO_ENQUEUE = SchedulerConfig(actions=("allocate", "backfill"))


def world(*cpus: int, config: SchedulerConfig | None = None,
          queue_max: Resources | None = None, policy: SortPolicy = SortPolicy.FIFO) -> SimWorld:
    w = SimWorld(config=config)
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    w.add_queue(make_queue("q", max=queue_max, policy=policy))
    return w


def created(w: SimWorld, key: str) -> int:
    return sum(1 for d in w.decisions if isinstance(d, CreatePlaceholder) and d.app == key)


# --- Applications --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpus", "queue_max", "factor", "admitted", "reason"),
    [
        pytest.param((8,), None, 1.0, True, "None", id="fits"),
        pytest.param((2,), None, 1.0, False, "Unsatisfiable", id="cluster-too-small"),
        pytest.param((2, 1), None, 1.0, False, "Unsatisfiable", id="sum-of-nodes-too-small"),
        pytest.param((2,), None, 2.0, True, "None", id="overcommit-lets-it-in"),
        pytest.param((8,), res(5), 1.0, False, "QueueQuota", id="queue-headroom"),
        pytest.param((4,), res(5), 4.0, False, "QueueQuota", id="quota-is-never-overcommitted"),
    ],
)
def test_an_application_is_admitted_only_when_its_minimum_fits(
    cpus: tuple[int, ...], queue_max: Resources | None, factor: float, admitted: bool,
    reason: str,
) -> None:
    w = world(*cpus, queue_max=queue_max, config=SchedulerConfig(overcommit_factor=factor))
    if queue_max is not None:  # 2 cpu of the queue's max are used: 3 left
        w.add_pod(make_pod("other", cpu=2, memory="0", queue="q", node="n0"))
    app = make_app("a", make_group("driver", 1), make_group("worker", 3), queue="q")
    w.add_app(app)
    w.add_pod(make_pod("a-0", app="a", task_group="driver"))
    w.settle(0)
    status = w.app_status[app.key]
    assert (created(w, app.key) == 3) is admitted  # the driver exists: no placeholder
    if not admitted:  # held: no placeholders, and the real pod says it waits for its gang
        assert status.state == "Accepted"
        assert {g.blocking.reason for g in status.task_groups} == {reason}
        assert w.placeholders(app.key) == []
        assert w.pending_reason("a-0") == "WaitingForGang"


def test_a_held_application_says_what_it_needs_and_what_is_short() -> None:
    w = world(4)  # 2 of 4 cpu used: a 3-cpu gang could fit the nodes, but not now
    w.add_pod(make_pod("other", cpu=2, memory="0", node="n0"))
    app = make_app("a", make_group("g", 3), queue="q")
    w.add_app(app)
    w.settle(0)
    blocking = w.app_status[app.key].task_groups[0].blocking
    assert blocking.reason == "Capacity"
    assert blocking.message == (
        "the cluster's capacity left for new gangs (allocatable - used - what enqueued gangs "
        "still need) is short of cpu; the gang needs cpu=3, memory=3Gi, pods=3")
    assert dict(blocking.details) == {"needed": "cpu=3, memory=3Gi, pods=3", "short": "cpu",
                                      "overcommitFactor": "1"}


def test_a_held_gangs_status_is_not_reworded_as_capacity_moves() -> None:
    """How much is left moves with every bind and every pod that ends; a held gang's
    status (and its write to the API server) changes only when what it waits for does."""
    w = world(4)
    w.add_pod(make_pod("other", cpu=2, memory="0", node="n0"))
    app = make_app("a", make_group("g", 3), queue="q")
    w.add_app(app)
    w.settle(0)
    before = w.app_status[app.key]
    w.add_pod(make_pod("more", cpu=1, memory="1Gi", node="n0"))  # less left, still short
    w.settle(1)
    assert w.app_status[app.key] is before
    w.delete("more")
    w.delete("other")  # now it fits
    w.settle(2)
    assert w.app_status[app.key].reserved == "3/3"


def test_what_an_enqueued_gang_still_needs_is_not_promised_twice() -> None:
    """Two gangs that each fit the free capacity, but not both: the second waits."""
    w = world(4)
    first = make_app("first", make_group("g", 3), queue="q", creation=1)
    second = make_app("second", make_group("g", 3), queue="q", creation=2)
    w.add_app(first)
    w.add_app(second)
    w.step(0)
    assert created(w, first.key) == 3 and created(w, second.key) == 0
    blocking = w.app_status[second.key].task_groups[0].blocking
    assert (blocking.reason, blocking.details["short"]) == ("Capacity", "cpu")


def test_a_held_gang_is_admitted_as_soon_as_room_appears() -> None:
    w = world(2)
    app = make_app("a", make_group("g", 3), queue="q")
    w.add_app(app)
    w.settle(0)
    w.add_node(make_node("n1", cpu=2))
    w.settle(1)
    assert w.app_status[app.key].reserved == "3/3"


def test_a_held_gang_blocks_nothing() -> None:
    """A later, smaller gang and an ordinary pod go ahead of a gang that does not fit."""
    w = world(4)
    big = make_app("big", make_group("g", 6), queue="q", creation=1)
    small = make_app("small", make_group("g", 2), queue="q", creation=2)
    w.add_app(big)
    w.add_app(small)
    w.add_pod(make_pod("solo", queue="q", creation=3))
    w.settle(0)
    assert w.app_status[big.key].reserved == "0/6" and w.placeholders(big.key) == []
    assert w.app_status[small.key].reserved == "2/2"
    assert w.node_of("solo") == "n0"


def test_without_enqueue_an_application_is_admitted_by_quota_only() -> None:
    w = world(2, config=NO_ENQUEUE)
    app = make_app("a", make_group("g", 3), queue="q")
    w.add_app(app)
    w.settle(0)
    assert len(w.placeholders(app.key)) == 3  # one of them waits for capacity
    assert w.app_status[app.key].reserved == "2/3"


def test_a_held_gang_does_not_hold_its_stateaware_queue() -> None:
    w = world(2, policy=SortPolicy.STATE_AWARE)
    big = make_app("big", make_group("g", 3), queue="q", creation=1)
    small = make_app("small", make_group("g", 1), queue="q", creation=2)
    w.add_app(big)
    w.add_app(small)
    w.settle(0)
    assert w.placeholders(big.key) == []
    assert w.app_status[small.key].reserved == "1/1"


# --- PodGroups ----------------------------------------------------------------------------


def members(w: SimWorld, group: str, count: int, cpu: int = 1) -> None:
    for i in range(count):
        w.add_pod(make_pod(f"{group}-{i}", cpu=cpu, pod_group=group, creation=float(i)))


@pytest.mark.parametrize(
    ("min_resources", "queue_max", "config", "phase", "reason", "pod_reason"),
    [
        pytest.param(res(3), None, None, "Running", "None", "", id="fits"),
        # 6 cpu on a 4-cpu cluster: the PodGroup says it can never fit as the nodes are,
        # and so do its pods, with the numbers (minResources are a gate, as Volcano's).
        pytest.param(res(6), None, None, "Pending", "Unsatisfiable", "Unsatisfiable",
                     id="min-resources-too-big"),
        pytest.param(res(3), res(4), None, "Pending", "QueueQuota", "QueueQuota",
                     id="queue-headroom"),
        pytest.param(res(6), None, SchedulerConfig(overcommit_factor=2.0), "Inqueue",
                     "Unsatisfiable", "", id="overcommitted-then-waits-for-room"),
        pytest.param(res(6), None, NO_ENQUEUE, "Pending", "Unsatisfiable", "Unsatisfiable",
                     id="without-enqueue"),
    ],
)
def test_a_podgroup_is_pending_until_enqueued(
    min_resources: Resources, queue_max: Resources | None, config: SchedulerConfig | None,
    phase: str, reason: str, pod_reason: str,
) -> None:
    w = world(4, queue_max=queue_max, config=config)
    if queue_max is not None:  # 2 cpu of the queue's max are used: 2 left
        w.add_pod(make_pod("other", cpu=2, memory="0", queue="q", node="n0"))
    w.add_group(make_podgroup("pg", 3, queue="q", min_resources=min_resources))
    members(w, "pg", 3, cpu=2 if min_resources == res(6) else 1)
    w.settle(0)
    status = w.group_status[GroupKey("default/pg")]
    assert (status.phase, status.blocking.reason) == (phase, reason)
    if phase == "Pending":  # not one member assumed
        assert status.assumed == 0 and not w.bound_names() - {"other"}
        assert w.pending_reason("pg-0") == pod_reason
        said = w.pending_reasons[w.uid_of("pg-0")].message
        if pod_reason == "Unsatisfiable":
            assert said.startswith("PodGroup default/pg needs cpu=6 in all; all ready, "
                                   "schedulable nodes together have cpu=4"), said
        else:
            assert "PodGroup default/pg is not enqueued" in said


def test_an_enqueued_podgroup_earmarks_its_minimum() -> None:
    """Inqueue, with no member yet: its minimum is promised, so a later gang waits."""
    w = world(8, queue_max=res(4))
    w.add_group(make_podgroup("pg", 3, queue="q", min_resources=res(3), creation=1))
    w.settle(0)
    assert w.group_status[GroupKey("default/pg")].phase == "Inqueue"
    app = make_app("late", make_group("g", 2), queue="q", creation=2)
    w.add_app(app)
    w.settle(1)
    assert w.app_status[app.key].task_groups[0].blocking.reason == "QueueQuota"
    members(w, "pg", 3)
    w.settle(2)
    assert w.group_status[GroupKey("default/pg")].phase == "Running"
    assert w.scheduler.groups[GroupKey("default/pg")].earmark.is_zero()



def test_a_ganggroup_enters_as_one() -> None:
    """Each PodGroup fits alone; together they do not: neither enters."""
    w = world(4)
    both = ("default/ps", "default/workers")
    w.add_group(make_podgroup("ps", 1, queue="q", min_resources=res(2), gang_group=both))
    w.add_group(make_podgroup("workers", 2, queue="q", min_resources=res(3), gang_group=both))
    members(w, "ps", 1)
    members(w, "workers", 2)
    w.settle(0)
    for name in ("ps", "workers"):
        assert w.group_status[GroupKey(f"default/{name}")].phase == "Pending"
    w.add_node(make_node("n1", cpu=4))
    w.settle(1)
    for name in ("ps", "workers"):
        assert w.group_status[GroupKey(f"default/{name}")].phase == "Running"


def test_an_enqueued_podgroup_stays_enqueued_after_a_restart() -> None:
    w = world(4)
    w.add_group(make_podgroup("pg", 3, queue="q", min_resources=res(3)))
    members(w, "pg", 2)
    w.settle(0)
    assert w.group_status[GroupKey("default/pg")].phase == "Inqueue"
    w.add_pod(make_pod("hog", cpu=3, queue="q"))  # the room is gone meanwhile
    w.settle(1)
    w.restart()
    w.settle(2)
    assert w.group_status[GroupKey("default/pg")].phase == "Inqueue"
    assert w.scheduler.groups[GroupKey("default/pg")].inqueue


def test_enqueue_considers_held_gangs_in_queue_order() -> None:
    w = world(3)
    w.add_queue(make_queue("q", policy=SortPolicy.PRIORITY))
    low = make_app("low", make_group("g", 3), queue="q", creation=1)
    high = make_app("high", make_group("g", 3), queue="q", creation=2, priority=10)
    w.add_app(low)
    w.add_app(high)
    w.step(0)
    assert created(w, high.key) == 3 and created(w, low.key) == 0
    assert w.scheduler.apps[AppKey("default/low")].admitted is False


# --- demand shown to cluster autoscalers ---------------------------------------------------


@pytest.mark.parametrize(("demand", "queue_max", "shown"), [
    pytest.param(True, None, 2, id="held-for-capacity-shows-its-placeholders"),
    pytest.param(False, None, 0, id="off-by-default"),
    pytest.param(True, res(4), 0, id="held-for-quota-shows-nothing"),
])
def test_a_gang_held_for_capacity_shows_its_demand_as_pending_placeholders(
    demand: bool, queue_max: Resources | None, shown: int
) -> None:
    w = world(4, queue_max=queue_max, config=SchedulerConfig(demand_placeholders=demand))
    w.add_app(make_app("big", make_group("worker", 2, cpu=3), queue="q"))
    w.settle(1)
    assert created(w, "default/big") == shown
    placeholders = [p for p in w.pods.values() if p.placeholder]
    assert len(placeholders) == shown
    assert all(p.node_name is None for p in placeholders)  # they hold nothing
    for p in placeholders:
        assert w.pending_reason(p.name) == "Capacity"
    assert w.scheduler.apps[AppKey("default/big")].admitted is False
    if shown:
        w.add_node(make_node("n1", cpu=4))  # the autoscaler added a node
        w.settle(2)
        assert sorted(w.node_of(p.name) or "" for p in placeholders) == ["n0", "n1"]
        assert created(w, "default/big") == shown  # the same placeholders, placed


# --- restart ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("demand", "queue_max", "admitted", "reason"), [
    pytest.param(False, None, True, "Capacity",
                 id="found-with-pending-placeholders-keeps-its-admission"),
    pytest.param(True, None, False, "Capacity",
                 id="demand-on-held-for-capacity-its-placeholders-say-so"),
    pytest.param(True, res(4), False, "QueueQuota",
                 id="demand-on-held-for-quota-its-placeholders-say-so"),
    pytest.param(False, res(4), True, "QueueQuota",
                 id="admitted-but-over-quota-its-placeholders-say-so"),
])
def test_a_gang_found_with_only_pending_placeholders_after_a_restart(
    demand: bool, queue_max: Resources | None, admitted: bool, reason: str
) -> None:
    """Admitted, its placeholders created but none placed yet when the room went (real
    pods took both nodes) and the core restarted: each placeholder says why it waits;
    once the room is back they are placed, none made or bound twice."""
    w = world(2, 2, queue_max=queue_max, config=SchedulerConfig(demand_placeholders=demand))
    app = make_app("a", make_group("w", 2, cpu=2), queue="q")
    w.add_app(app)
    w.step(0)
    assert w.scheduler.apps[app.key].admitted
    assert created(w, app.key) == 2
    for i in range(2):
        w.add_pod(make_pod(f"hog{i}", cpu=2, memory="0", queue="q", node=f"n{i}"))
    w.restart()
    w.settle(1)
    assert w.scheduler.apps[app.key].admitted is admitted
    placeholders = w.placeholders(app.key)
    assert len(placeholders) == 2 and all(p.node_name is None for p in placeholders)
    assert [w.pending_reason(p.name) for p in placeholders] == [reason, reason]
    for i in range(2):
        w.delete(f"hog{i}")
    w.settle(2)
    assert sorted(w.node_of(p.name) or "" for p in placeholders) == ["n0", "n1"]
    assert created(w, app.key) == 2
    assert all(w.bind_count.get(p.uid) == 1 for p in placeholders)
