"""State-aware queues: one starting application at a time, FIFO, with a fallback timeout."""

from __future__ import annotations

import pytest
from builders import PARTIAL_GANGS, make_app, make_group, make_node, make_pod, make_queue
from gangsched.core.values.model import SortPolicy
from simworld import SimWorld


def world(timeout: float = 300.0, cpu: int = 16) -> SimWorld:
    w = SimWorld(config=PARTIAL_GANGS)  # gangs too big for the node are admitted
    w.add_node(make_node("n", cpu=cpu))
    w.add_queue(make_queue("sa", policy=SortPolicy.STATE_AWARE, state_aware_timeout=timeout))
    return w


def test_gangs_are_admitted_one_at_a_time_in_creation_order() -> None:
    w = world(cpu=1)  # the first gang cannot finish reserving
    late = make_app("late", make_group("g", 1), queue="sa", creation=5)
    early = make_app("early", make_group("g", 2), queue="sa", creation=1)
    w.add_app(late)
    w.add_app(early)
    w.settle(0)
    assert len(w.placeholders(early.key)) == 2
    assert w.placeholders(late.key) == []
    blocking = w.app_status[late.key].task_groups[0].blocking
    assert blocking.reason == "StateAwareGate"
    assert blocking.details == {"startingApplication": "default/early"}
    w.add_node(make_node("m", cpu=1))
    w.settle(1)  # "early" is reserved: it stops holding the queue at once
    assert all(p.node_name for p in w.placeholders(early.key))
    assert len(w.placeholders(late.key)) == 1


def test_a_started_app_holds_the_queue_until_its_second_allocation() -> None:
    """The design's Spark example: a driver runs and asks for nothing yet; the next
    application's driver waits until the first one has an executor."""
    w = world()
    w.add_app(make_app("app1", queue="sa", creation=1))
    w.add_app(make_app("app2", queue="sa", creation=2))
    w.add_pod(make_pod("d1", app="app1"))
    w.add_pod(make_pod("d2", app="app2"))
    w.settle(0)
    assert w.app_state("default/app1") == "Starting"  # nothing pending, still starting
    assert w.node_of("d2") is None
    assert w.pending_reason("d2") == "StateAwareGate"
    w.add_pod(make_pod("e11", app="app1"))
    w.step(1)
    assert w.app_state("default/app1") == "Running"
    w.step(2)
    assert w.node_of("d2") == "n"
    assert w.app_state("default/app2") == "Starting"


def test_outside_stateaware_queues_a_lone_pod_runs_at_once() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_app(make_app("a"))
    w.add_pod(make_pod("only", app="a"))
    w.step(0)
    assert w.app_state("default/a") == "Running"


def test_an_app_that_gets_a_second_allocation_moves_on_at_once() -> None:
    w = world()
    w.add_app(make_app("a", queue="sa", creation=1))
    w.add_app(make_app("b", queue="sa", creation=2))
    w.add_pod(make_pod("a0", app="a"))
    w.add_pod(make_pod("a1", app="a", cpu=100))
    w.add_pod(make_pod("b0", app="b"))
    w.step(0)
    assert w.node_of("b0") is None
    w.add_pod(make_pod("a2", app="a"))
    w.step(1)
    assert w.app_state("default/a") == "Running"
    w.step(2)
    assert w.node_of("b0") == "n"


@pytest.mark.parametrize(
    ("timeout", "at", "b_runs"),
    [
        pytest.param(30.0, 29.0, False, id="before-the-fallback"),
        pytest.param(30.0, 30.0, True, id="at-the-fallback"),
        pytest.param(300.0, 299.0, False, id="default-timeout-not-yet"),
        pytest.param(300.0, 300.0, True, id="default-timeout"),
    ],
)
@pytest.mark.parametrize("asking", [True, False], ids=["still-asking", "asking-nothing"])
def test_fallback_timeout_frees_the_queue(
    timeout: float, at: float, b_runs: bool, asking: bool
) -> None:
    w = world(timeout)
    w.add_app(make_app("a", queue="sa", creation=1))
    w.add_app(make_app("b", queue="sa", creation=2))
    w.add_pod(make_pod("a0", app="a"))
    if asking:
        w.add_pod(make_pod("a1", app="a", cpu=100))  # never fits: a makes no progress
    w.add_pod(make_pod("b0", app="b"))
    w.step(0)
    w.step(at)
    w.step(at)
    assert (w.node_of("b0") == "n") is b_runs
    assert w.app_state("default/a") == ("Running" if b_runs else "Starting")


def test_an_app_with_nothing_to_schedule_does_not_hold_the_queue() -> None:
    w = world()
    w.add_app(make_app("idle", queue="sa", creation=1))  # accepted, no pods yet
    w.add_app(make_app("busy", queue="sa", creation=2))
    w.add_pod(make_pod("b0", app="busy"))
    w.step(0)
    w.step(1)
    assert w.node_of("b0") == "n"


def test_running_apps_are_never_held_back() -> None:
    w = world()
    w.add_app(make_app("a", queue="sa", creation=1))
    w.add_pod(make_pod("a0", app="a"))
    w.add_pod(make_pod("a1", app="a"))
    w.step(0)
    assert w.app_state("default/a") == "Running"
    w.add_app(make_app("b", queue="sa", creation=2))
    w.add_pod(make_pod("b0", app="b"))
    w.add_pod(make_pod("b1", app="b", cpu=100))
    w.step(1)
    assert w.app_state("default/b") == "Starting"
    w.add_pod(make_pod("a2", app="a"))
    w.step(2)
    assert w.node_of("a2") == "n"


def test_fifo_queue_has_no_gate() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=16))
    w.add_queue(make_queue("fifo"))
    for name in ("a", "b"):
        w.add_app(make_app(name, queue="fifo"))
        w.add_pod(make_pod(f"{name}0", app=name))
        w.add_pod(make_pod(f"{name}1", app=name, cpu=100))
    w.step(0)
    assert {w.node_of("a0"), w.node_of("b0")} == {"n"}
