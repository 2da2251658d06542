"""The swap: a real pod takes the place of one of its task group's placeholders."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_queue, placeholder_of, res
from gangsched.core.values.decisions import BindPod, DeletePod, DeleteReason
from gangsched.core.values.model import AppSpec
from simworld import SimWorld


def reserved(cpus: tuple[int, ...], app: AppSpec, **queue: object) -> SimWorld:
    w = SimWorld()
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu, labels={"zone": f"z{i}"}))
    if queue:
        w.add_queue(make_queue("q", **queue))  # type: ignore[arg-type]
    w.add_app(app)
    w.settle(0)
    assert all(p.node_name for p in w.placeholders(app.key))
    return w


APP = make_app("a", make_group("g", 2, cpu=2))


def test_the_swap_step_by_step() -> None:
    w = reserved((4,), APP)
    first = placeholder_of(APP, "g", 0)
    w.hold_deletes.add(first)
    w.add_pod(make_pod("x", cpu=2, app="a", task_group="g"))
    out = w.step(1)
    deletes = [d for d in out if isinstance(d, DeletePod)]
    assert [(d.name, d.reason, d.message) for d in deletes] == [
        (first, DeleteReason.PLACEHOLDER_REPLACED, "replaced by pod default/x")
    ]
    assert w.pending_reason("x") == "WaitingForPlaceholder"
    w.settle(2)
    assert w.node_of("x") is None  # parked until the deletion is seen
    assert w.app_status[APP.key].task_groups[0].placeholders.replaced == 1
    w.hold_deletes.clear()
    w.delete(first)
    out = w.step(3)
    assert [(d.name, d.node, d.reason) for d in out if isinstance(d, BindPod)] == [
        ("x", "n0", "PlaceholderReplaced")
    ]


def test_a_pod_that_does_not_fit_its_placeholders_node_goes_elsewhere() -> None:
    app = make_app("a", make_group("g", 2, cpu=1))
    w = reserved((2, 8), app)
    assert {p.node_name for p in w.placeholders(app.key)} == {"n0"}
    w.add_pod(make_pod("filler", cpu=8))
    w.settle(1)
    w.add_pod(make_pod("x", cpu=3, app="a", task_group="g"))
    w.add_node(make_node("n2", cpu=4))
    w.settle(2)
    assert w.node_of("x") == "n2"
    binds = [d for d in w.decisions if isinstance(d, BindPod) and d.name == "x"]
    assert [d.reason for d in binds] == ["PlaceholderReplacedElsewhere"]
    assert len(w.placeholders(app.key)) == 1


def test_a_pod_that_fits_nowhere_stays_pending_and_takes_no_second_placeholder() -> None:
    app = make_app("a", make_group("g", 3, cpu=1))
    w = reserved((3,), app)
    w.add_pod(make_pod("x", cpu=3, app="a", task_group="g"))
    w.settle(1)
    w.settle(2)
    assert w.node_of("x") is None
    assert w.pending_reason("x") == "Capacity"
    # It took one placeholder; the gang keeps the other two.
    assert len(w.placeholders(app.key)) == 2
    assert len([d for d in w.decisions if isinstance(d, DeletePod)]) == 1


def test_the_placeholder_on_a_node_where_the_pod_fits_is_preferred() -> None:
    app = make_app("a", make_group("g", 2, cpu=1))
    w = SimWorld()
    w.add_node(make_node("n0", cpu=1))
    w.add_node(make_node("n1", cpu=4))
    w.add_app(app)
    w.settle(0)
    by_node = {p.node_name: p.name for p in w.placeholders(app.key)}
    assert set(by_node) == {"n0", "n1"}
    w.add_pod(make_pod("x", cpu=2, app="a", task_group="g"))
    w.settle(1)
    assert w.node_of("x") == "n1"
    assert [p.name for p in w.placeholders(app.key)] == [by_node["n0"]]


def test_a_pod_with_its_own_node_selector_takes_a_placeholder_on_a_matching_node() -> None:
    app = make_app("a", make_group("g", 2, cpu=2))
    w = SimWorld()
    w.add_node(make_node("n0", cpu=2, labels={"zone": "z0"}))
    w.add_node(make_node("n1", cpu=2, labels={"zone": "z1"}))
    w.add_app(app)
    w.settle(0)
    on_n0 = next(p.name for p in w.placeholders(app.key) if p.node_name == "n0")
    w.add_pod(make_pod("x", cpu=2, app="a", task_group="g", node_selector={"zone": "z1"}))
    w.settle(1)
    assert w.node_of("x") == "n1"
    assert [p.name for p in w.placeholders(app.key)] == [on_n0]  # only one was taken


def test_a_larger_pod_waits_for_quota_and_keeps_the_placeholder() -> None:
    w = reserved((8,), make_app("a", make_group("g", 2, cpu=2), queue="q"), max=res(4))
    w.add_pod(make_pod("x", cpu=3, app="a", task_group="g"))
    w.settle(1)
    assert w.pending_reason("x") == "QueueQuota"
    assert len(w.placeholders(make_app("a").key)) == 2  # the reservation is kept
    assert w.scheduler.queues.usage("q") == res(4, "2Gi", pods=2)


def test_the_swap_is_checked_against_quota_when_the_pod_binds() -> None:
    w = reserved((8,), make_app("a", make_group("g", 2, cpu=2), queue="q"), max=res(5))
    first = placeholder_of(make_app("a"), "g", 0)
    w.hold_deletes.add(first)
    w.add_pod(make_pod("x", cpu=3, app="a", task_group="g"))
    w.step(1)  # fits the quota: parked on the placeholder
    w.add_pod(make_pod("y", cpu="500m", queue="q"))
    w.step(2)  # takes the last free quota meanwhile
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(3)
    assert w.node_of("x") is None
    assert w.pending_reason("x") == "QueueQuota"
    assert w.scheduler.queues.usage("q").get("cpu") <= 5000


def test_extra_real_pods_are_scheduled_as_ordinary_pods() -> None:
    w = reserved((8,), APP)
    for i in range(4):
        w.add_pod(make_pod(f"x{i}", cpu=2, app="a", task_group="g", creation=float(i)))
    w.settle(1)
    binds = {d.name: d.reason for d in w.decisions if isinstance(d, BindPod)}
    assert [binds[f"x{i}"] for i in range(4)] == [
        "PlaceholderReplaced", "PlaceholderReplaced", "Scheduled", "Scheduled"]


def test_a_parked_pod_whose_app_is_deleted_is_not_bound() -> None:
    w = reserved((4,), APP)
    first = placeholder_of(APP, "g", 0)
    w.hold_deletes.add(first)
    w.add_pod(make_pod("x", cpu=2, app="a", task_group="g"))
    w.step(1)
    w.remove_app(APP.key)
    w.hold_deletes.clear()
    w.delete(first)
    w.settle(2)
    assert w.node_of("x") is None
    assert w.pending_reason("x") == "ApplicationNotFound"


@pytest.mark.parametrize("count", [1, 3])
def test_pods_of_the_group_replace_placeholders_in_name_order(count: int) -> None:
    app = make_app("a", make_group("g", 3, cpu=1))
    w = reserved((8,), app)
    for i in range(count):
        w.add_pod(make_pod(f"x{i}", app="a", task_group="g", creation=float(i)))
    out = w.step(1)
    deleted = [d.name for d in out if isinstance(d, DeletePod)]
    assert deleted == [placeholder_of(app, "g", i) for i in range(count)]
