"""Gangs that can never fit the nodes as they are: reported at once, re-checked on node
changes; a PodGroup larger than its queue's max fails; FIFO ties in natural name order."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.values.decisions import RecordEvent
from gangsched.core.values.model import GroupKey, Style
from gangsched.core.values.naming import natural_key
from simworld import SimWorld


def world(*cpus: int, **labels: str) -> SimWorld:
    w = SimWorld()
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu, labels=labels or None))
    return w


def warnings(w: SimWorld, reason: str) -> list[str]:
    return [d.message for d in w.decisions if isinstance(d, RecordEvent) and d.reason == reason]


@pytest.mark.parametrize(
    ("cpus", "groups", "reason", "words"),
    [
        pytest.param((4, 4), [("g", 3, 2)], "None", "", id="fits"),
        pytest.param((4, 4), [("g", 5, 2)], "Unsatisfiable",
                     "task group g needs 5 x cpu=2, memory=1Gi, pods=1 = cpu=10, memory=5Gi, "
                     "pods=5; the 2 nodes its constraints allow have cpu=8, memory=64Gi, "
                     "pods=220 together", id="group-above-the-whole-cluster"),
        pytest.param((4, 4), [("a", 2, 3), ("b", 2, 3)], "Unsatisfiable",
                     "the gang needs cpu=12, memory=4Gi in all; all ready, schedulable nodes "
                     "together have cpu=8, memory=64Gi (short of cpu=4)",
                     id="minimum-above-the-whole-cluster"),
        pytest.param((4, 4), [("g", 1, 6)], "Unsatisfiable",
                     "task group g needs cpu=6, memory=1Gi, pods=1 per member; the largest of "
                     "the 2 nodes its constraints allow has cpu=4, memory=32Gi, pods=110",
                     id="member-above-every-node"),
        pytest.param((3, 3, 3), [("a", 1, 2), ("b", 1, 2)], "None", "",
                     id="two-groups-each-fit"),
    ],
)
def test_an_application_that_can_never_fit_says_so_at_once(
    cpus: tuple[int, ...], groups: list[tuple[str, int, int]], reason: str, words: str,
) -> None:
    w = world(*cpus)
    app = make_app("a", *(make_group(name, count, cpu=cpu) for name, count, cpu in groups),
                   style=Style.HARD)
    w.add_app(app)
    w.settle(0)
    status = w.app_status[app.key]
    assert status.state == "Accepted"
    assert {g.blocking.reason for g in status.task_groups} <= {reason, "None"}
    if reason == "Unsatisfiable":
        assert all(g.blocking.reason == reason for g in status.task_groups)
        assert words in status.task_groups[0].blocking.message
        assert len(warnings(w, "Unsatisfiable")) == 1
        w.settle(10_000)  # a Hard gang held as a whole is not killed: its timer never starts
        assert w.app_status[app.key].state == "Accepted"
        assert len(warnings(w, "Unsatisfiable")) == 1  # said once, not every cycle
    else:
        assert not warnings(w, "Unsatisfiable")


def test_a_member_larger_than_every_node_its_selector_allows() -> None:
    w = SimWorld()
    w.add_node(make_node("small", cpu=2, labels={"pool": "gpu"}))
    w.add_node(make_node("big", cpu=16, labels={"pool": "cpu"}))
    app = make_app("a", make_group("g", 1, cpu=4, node_selector={"pool": "gpu"}))
    w.add_app(app)
    w.settle(0)
    blocking = w.app_status[app.key].task_groups[0].blocking
    assert blocking.reason == "Unsatisfiable"
    assert dict(blocking.details) == {"member": "cpu=4, memory=1Gi, pods=1",
                                      "largestNode": "cpu=2, memory=32Gi, pods=110",
                                      "nodesAllowed": "1"}


def test_added_nodes_withdraw_the_verdict_and_the_gang_runs() -> None:
    """An autoscaler adds a node: the gang is checked again, fits, and is reserved."""
    w = world(4)
    app = make_app("a", make_group("g", 3, cpu=2))
    w.add_app(app)
    w.settle(0)
    assert w.app_status[app.key].task_groups[0].blocking.reason == "Unsatisfiable"
    w.add_node(make_node("n1", cpu=4))
    w.settle(1)
    assert w.app_status[app.key].task_groups[0].blocking.reason == "None"
    assert sum(1 for p in w.placeholders(app.key) if p.node_name) == 3


@pytest.mark.parametrize(
    ("cpus", "member_cpu", "min_resources", "reason"),
    [
        pytest.param((4, 4), 2, None, "None", id="fits"),
        pytest.param((4, 4), 6, None, "Unsatisfiable", id="member-above-every-node"),
        pytest.param((4, 4), 2, res(12), "Unsatisfiable", id="min-resources-above-cluster"),
        pytest.param((2, 2), 2, None, "Unsatisfiable", id="members-together-above-cluster"),
    ],
)
def test_a_podgroup_that_can_never_fit_says_so(
    cpus: tuple[int, ...], member_cpu: int, min_resources: object, reason: str,
) -> None:
    w = world(*cpus)
    kw = {} if min_resources is None else {"min_resources": min_resources}
    w.add_group(make_podgroup("pg", 3, **kw))  # type: ignore[arg-type]
    for i in range(3):
        w.add_pod(make_pod(f"pg-{i}", cpu=member_cpu, memory="0", pod_group="pg",
                           creation=float(i)))
    w.settle(0)
    status = w.group_status[GroupKey("default/pg")]
    if reason == "None":
        assert status.phase == "Running"
    else:
        assert status.phase in ("Pending", "Inqueue")
        assert status.blocking.reason == reason
        assert "cannot run until" in status.blocking.message


def test_a_podgroup_is_judged_again_when_its_members_change() -> None:
    w = world(4, 4)
    w.add_group(make_podgroup("pg", 2))
    w.add_pod(make_pod("pg-0", cpu=2, memory="0", pod_group="pg", creation=0.0))
    w.settle(0)
    status = w.group_status[GroupKey("default/pg")]
    assert status.blocking.reason != "Unsatisfiable"  # one member of two: not judged yet
    w.add_pod(make_pod("pg-1", cpu=6, memory="0", pod_group="pg", creation=1.0))
    w.settle(1)
    status = w.group_status[GroupKey("default/pg")]
    assert status.blocking.reason == "Unsatisfiable"
    assert "the largest of the 2 nodes" in status.blocking.message


def test_a_podgroup_larger_than_its_queue_max_fails_like_an_application() -> None:
    w = world(8)
    w.add_queue(make_queue("small", max=res(2, "8Gi")))
    w.add_group(make_podgroup("pg", 2, queue="small", min_resources=res(4, "2Gi")))
    w.add_pod(make_pod("pg-0", pod_group="pg", queue="small"))
    w.settle(0)
    status = w.group_status[GroupKey("default/pg")]
    assert (status.phase, status.reason) == ("Failed", "QueueQuotaExceeded")
    assert "exceed queue small's max" in status.message
    assert len(warnings(w, "QueueQuotaExceeded")) == 1
    w.add_queue(make_queue("small", max=res(8, "8Gi")))  # the max is raised: it waits again
    w.settle(1)
    assert w.group_status[GroupKey("default/pg")].phase != "Failed"


@pytest.mark.parametrize(
    ("names", "ordered"),
    [
        pytest.param(["spark-10", "spark-2", "spark-1"], ["spark-1", "spark-2", "spark-10"],
                     id="numbers"),
        pytest.param(["b", "a10b", "a2c", "a2b"], ["a2b", "a2c", "a10b", "b"], id="mixed"),
        pytest.param(["x-02", "x-2", "x-1"], ["x-1", "x-02", "x-2"], id="leading-zero"),
        pytest.param(["abc", "abc1", "ab", ""], ["", "ab", "abc", "abc1"], id="prefixes"),
    ],
)
def test_natural_order(names: list[str], ordered: list[str]) -> None:
    assert sorted(names, key=natural_key) == ordered


def test_fifo_ties_go_in_natural_name_order() -> None:
    """Gangs submitted at the same instant: spark-2 before spark-10 (room for one)."""
    w = world(2)
    for name in ("spark-10", "spark-2"):
        w.add_app(make_app(name, make_group("g", 1, cpu=2)))
    w.settle(0)
    placed = {p.app for p in w.pods.values() if p.placeholder and p.node_name}
    assert placed == {"default/spark-2"}


def test_a_cluster_with_no_ready_node_judges_no_gang() -> None:
    """Starting up, or scaled to zero: nothing is called unsatisfiable yet."""
    w = SimWorld()
    w.add_node(make_node("n0", cpu=64, ready=False))
    app = make_app("a", make_group("g", 2, cpu=2))
    w.add_app(app)
    w.settle(0)
    assert w.app_status[app.key].task_groups[0].blocking.reason != "Unsatisfiable"
    assert not warnings(w, "Unsatisfiable")
