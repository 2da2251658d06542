"""Queues: the hierarchy, quota at every level, earmarks, zero limits, ordinary pods."""

from __future__ import annotations

import pytest
from builders import make_app, make_node, make_pod, make_queue, res
from gangsched.core.state.queues import QueueTree, format_max
from gangsched.core.values.model import QueueSpec, SortPolicy, TaskGroup
from gangsched.core.values.resources import Resources
from simworld import SimWorld

GPU = "nvidia.com/gpu"


def tree(*specs: QueueSpec) -> QueueTree:
    queues = QueueTree()
    for spec in specs:
        queues.upsert(spec)
    return queues


@pytest.mark.parametrize(
    ("specs", "name", "path"),
    [
        pytest.param((), "default", ("default",), id="implicit-default"),
        pytest.param((make_queue("a"),), "a", ("a",), id="top-level"),
        pytest.param((make_queue("root"), make_queue("a", parent="root")), "a", ("a", "root"),
                     id="leaf-to-root"),
        pytest.param((), "nowhere", 'queue "nowhere" does not exist', id="unknown"),
        pytest.param((make_queue("a", parent="gone"),), "a",
                     'queue "a" names parent "gone", which does not exist', id="missing-parent"),
        pytest.param((make_queue("a", parent="b"), make_queue("b", parent="a")), "a",
                     "queue parents form a cycle: a -> b -> a", id="cycle"),
        pytest.param((QueueSpec("a", invalid="max.cpu: bad quantity"),), "a",
                     'queue "a" is invalid: max.cpu: bad quantity', id="invalid"),
    ],
)
def test_path(specs: tuple[QueueSpec, ...], name: str, path: tuple[str, ...] | str) -> None:
    assert tree(*specs).path(name) == path


def test_default_queue_can_be_redefined() -> None:
    queues = QueueTree(SortPolicy.PRIORITY)
    spec = queues.spec("default")
    assert spec is not None
    assert spec.sort_policy is SortPolicy.PRIORITY
    queues.upsert(make_queue("default", policy=SortPolicy.FIFO, max=res(2)))
    assert queues.spec("default") == make_queue("default", policy=SortPolicy.FIFO, max=res(2))


@pytest.mark.parametrize(
    ("used", "request_", "ok", "blocking"),
    [
        pytest.param(Resources.ZERO, res(2), True, "", id="fits-everywhere"),
        pytest.param(res(3), res(2), False, "leaf", id="leaf-max"),
        pytest.param(res(1), res(5), False, "leaf", id="request-alone-over-leaf"),
        pytest.param(Resources.ZERO, res(3) + Resources({GPU: 1}), False, "leaf",
                     id="leaf-zero-gpu-limit"),
        pytest.param(Resources.ZERO, res(1, "9Gi"), False, "root", id="root-memory"),
    ],
)
def test_fits_checks_every_level(
    used: Resources, request_: Resources, ok: bool, blocking: str
) -> None:
    queues = tree(
        make_queue("root", max=res(memory="8Gi")),
        QueueSpec("leaf", parent="root", max=res(4), limited=frozenset({GPU})),
    )
    queues.charge("leaf", used)
    check = queues.fits("leaf", request_)
    assert check.ok is ok
    assert check.queue == blocking


def test_usage_is_counted_at_every_level_and_released() -> None:
    queues = tree(make_queue("root"), make_queue("a", parent="root"), make_queue("b",
                                                                             parent="root"))
    queues.charge("a", res(1), placeholder=True)
    queues.charge("b", res(2))
    assert queues.usage("root") == res(3)
    assert queues.placeholder_used["root"] == res(1)
    queues.release("a", res(1), placeholder=True)
    assert queues.usage("root") == res(2)
    assert queues.placeholder_used["root"] == Resources.ZERO


def test_a_parent_quota_applies_to_all_children_together() -> None:
    queues = tree(make_queue("root", max=res(4)), make_queue("a", parent="root"),
                  make_queue("b", parent="root"))
    queues.charge("a", res(3))
    check = queues.fits("b", res(2))
    assert (check.ok, check.queue, check.headroom) == (False, "root", res(1))


def test_earmarks_count_as_taken_except_ones_own() -> None:
    queues = tree(make_queue("q", max=res(4)))
    queues.earmark("q", res(3))
    assert not queues.fits("q", res(2)).ok
    assert queues.fits("q", res(2), own_earmark=res(3)).ok
    queues.unearmark("q", res(3))
    assert queues.fits("q", res(4)).ok


@pytest.mark.parametrize(
    ("request_", "ok", "queue"),
    [
        pytest.param(res(4), True, "", id="equal-to-max"),
        pytest.param(res(5), False, "leaf", id="over-leaf"),
        pytest.param(res(1, "9Gi"), False, "root", id="over-parent"),
        pytest.param(Resources({GPU: 1}), False, "leaf", id="over-zero-limit"),
    ],
)
def test_over_max_ignores_usage(request_: Resources, ok: bool, queue: str) -> None:
    queues = tree(
        make_queue("root", max=res(memory="8Gi")),
        QueueSpec("leaf", parent="root", max=res(4), limited=frozenset({GPU})),
    )
    queues.charge("leaf", res(4, "8Gi"))
    check = queues.over_max("leaf", request_)
    assert (check.ok, check.queue) == (ok, queue)


def test_unknown_queue_never_fits_and_says_why() -> None:
    check = QueueTree().fits("nowhere", res(1))
    assert not check.ok
    assert check.describe(res(1), "the pod") == 'queue "nowhere" does not exist'


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        pytest.param(QueueSpec("q"), "none", id="no-max"),
        pytest.param(QueueSpec("q", max=res(4, "1Gi")), "cpu=4, memory=1Gi", id="set"),
        pytest.param(QueueSpec("q", max=res(4), limited=frozenset({GPU, "cpu"})),
                     "cpu=4, nvidia.com/gpu=0", id="zero-shown"),
    ],
)
def test_format_max_shows_zero_limits(spec: QueueSpec, text: str) -> None:
    assert format_max(spec) == text


# --- through the scheduler ------------------------------------------------------------


def test_ordinary_pods_are_scheduled_inside_their_queue() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=16))
    w.add_queue(make_queue("root", max=res(3)))
    w.add_queue(make_queue("team", parent="root"))
    for i in range(4):
        w.add_pod(make_pod(f"p{i}", cpu=1, queue="team", creation=float(i)))
    w.step(0)
    assert w.bound_names() == {"p0", "p1", "p2"}
    assert w.pending_reason("p3") == "QueueQuota"
    assert "queue root has none free of max cpu=3" in w.pending_reasons[w.uid_of("p3")].message
    w.finish("p0")
    w.step(1)
    assert w.node_of("p3") == "n"


def test_zero_quota_resource_allows_none() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=16, gpu=4))
    w.add_queue(QueueSpec("cpu-only", max=res(8), limited=frozenset({GPU})))
    w.add_pod(make_pod("gpu-pod", cpu=1, queue="cpu-only",
                       requests=res(1) + Resources({GPU: 1})))
    w.add_pod(make_pod("cpu-pod", cpu=1, queue="cpu-only"))
    w.step(0)
    assert w.node_of("cpu-pod") == "n"
    assert w.node_of("gpu-pod") is None
    assert "nvidia.com/gpu=0" in w.pending_reasons[w.uid_of("gpu-pod")].message


def test_zero_quota_rejects_a_gang_that_asks_for_it() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=16, gpu=4))
    w.add_queue(QueueSpec("cpu-only", max=res(8), limited=frozenset({GPU})))
    group = TaskGroup("g", 1, res(1) + Resources({GPU: 1}))
    w.add_app(make_app("a", group, queue="cpu-only"))
    w.step(0)
    assert w.app_state("default/a") == "Rejected"
    assert "max cpu=8, nvidia.com/gpu=0" in w.scheduler.apps[make_app("a").key].message


@pytest.mark.parametrize(
    ("queue", "reason"),
    [
        pytest.param("nowhere", "QueueNotFound", id="unknown-queue"),
        pytest.param("orphan", "QueueNotFound", id="parent-missing"),
    ],
)
def test_ordinary_pod_in_a_broken_queue_says_why(queue: str, reason: str) -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_queue(make_queue("orphan", parent="gone"))
    w.add_pod(make_pod("p", queue=queue))
    w.step(0)
    assert w.pending_reason("p") == reason
    assert "exist" in w.pending_reasons[w.uid_of("p")].message


def test_a_queue_appearing_lets_its_pods_run() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_pod(make_pod("p", queue="late"))
    w.step(0)
    assert w.node_of("p") is None
    w.add_queue(make_queue("late"))
    w.step(1)
    assert w.node_of("p") == "n"


def test_queue_usage_moves_with_the_app_when_it_appears() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_queue(make_queue("q", max=res(2)))
    w.add_pod(make_pod("r", cpu=2, app="a", node="n"))  # bound before the app is seen
    s = w.scheduler
    assert s.queues.usage("default") == res(2, "1Gi", pods=1)
    w.add_app(make_app("a", queue="q"))
    assert s.queues.usage("default") == Resources.ZERO
    assert s.queues.usage("q") == res(2, "1Gi", pods=1)
    w.remove_app(make_app("a").key)
    assert s.queues.usage("q") == Resources.ZERO
    assert s.queues.usage("default") == res(2, "1Gi", pods=1)


def test_lowering_a_quota_stops_new_allocations_only() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_queue(make_queue("q", max=res(4)))
    w.add_pod(make_pod("p0", cpu=2, queue="q"))
    w.step(0)
    w.add_queue(make_queue("q", max=res(1)))
    w.add_pod(make_pod("p1", cpu="500m", queue="q"))
    w.step(1)
    assert w.node_of("p0") == "n"
    assert w.pending_reason("p1") == "QueueQuota"
