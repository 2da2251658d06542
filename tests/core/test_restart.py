"""Restart recovery: a fresh core fed the world as it stands carries on where the old one was.

Nothing is bound twice, no placeholder is duplicated or leaked (their names are a pure
function of the application, so the new core finds the old ones), and timers continue
from the times persisted in the objects' status instead of starting again.
"""

from __future__ import annotations

import dataclasses

import pytest
from builders import (
    PARTIAL_GANGS,
    make_app,
    make_group,
    make_node,
    make_pod,
    make_podgroup,
    placeholder_of,
)
from gangsched.core.values.decisions import (
    BindPod,
    CreatePlaceholder,
    DeletePod,
    DeleteReason,
    SetAppStatus,
)
from gangsched.core.values.model import AppSpec, GangMode, GroupKey, Style
from simworld import SimWorld
from workloads import check_invariants

ORDERS = [pytest.param(False, id="objects-first"), pytest.param(True, id="pods-first")]


def gang_world(app: AppSpec, *cpus: int) -> SimWorld:
    w = SimWorld(config=PARTIAL_GANGS)  # gangs are admitted even when they cannot fit
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    w.add_app(app)
    return w


def assert_clean(w: SimWorld) -> None:
    check_invariants(w)
    names = [(p.namespace, p.name) for p in w.pods.values()]
    assert len(names) == len(set(names)), "a pod name exists twice"


@pytest.mark.parametrize("pods_first", ORDERS)
def test_restart_while_reserving(pods_first: bool) -> None:
    app = make_app("a", make_group("g", 3, cpu=2), style=Style.HARD, placeholder_timeout=100)
    w = gang_world(app, 4)
    w.add_pod(make_pod("r0", cpu=2, app="a", task_group="g"))
    w.settle(10)
    assert w.app_status[app.key].placeholder_timer_start == 10
    assert w.app_status[app.key].reserved == "2/3"
    w.restart(pods_first=pods_first)
    out = w.settle(50)
    assert [d for d in out if isinstance(d, CreatePlaceholder)] == []  # all three exist
    assert w.scheduler.apps[app.key].timer_start == 10  # not restarted at 50
    assert_clean(w)
    w.add_node(make_node("n1", cpu=2))
    w.settle(60)
    assert w.app_state("default/a") == "Running"
    assert w.node_of("r0") is not None
    assert_clean(w)


@pytest.mark.parametrize("pods_first", ORDERS)
def test_the_timeout_counts_from_before_the_restart(pods_first: bool) -> None:
    app = make_app("a", make_group("g", 3, cpu=2), style=Style.HARD, placeholder_timeout=100)
    w = gang_world(app, 4)
    w.settle(10)
    w.restart(pods_first=pods_first)
    w.settle(109)
    assert w.app_state("default/a") == "Accepted"
    w.step(110)
    assert w.app_state("default/a") == "Killed"
    w.settle(111)
    assert w.placeholders(app.key) == []
    assert_clean(w)


@pytest.mark.parametrize("pods_first", ORDERS)
def test_restart_in_the_middle_of_swaps(pods_first: bool) -> None:
    app = make_app("a", make_group("g", 3, cpu=1))
    w = gang_world(app, 8)
    w.settle(0)
    names = [placeholder_of(app, "g", i) for i in range(3)]
    w.hold_deletes.update(names[:2])  # two deletions asked for, not done yet
    for i in range(2):
        w.add_pod(make_pod(f"r{i}", app="a", task_group="g", creation=float(i)))
    w.step(1)
    assert w.bound_names() == set(names)
    w.restart(pods_first=pods_first)
    w.hold_deletes.clear()
    w.settle(2)
    w.settle(20)  # the old deletions were lost: the real pods take placeholders again
    assert {w.node_of("r0"), w.node_of("r1")} == {"n0"}
    assert len(w.placeholders(app.key)) == 1
    assert max(w.bind_count.values()) == 1
    assert_clean(w)


def test_a_placeholder_lost_at_restart_is_recreated_under_the_same_name() -> None:
    app = make_app("a", make_group("g", 2, cpu=1))
    w = gang_world(app, 8)
    w.settle(0)
    name = placeholder_of(app, "g", 1)
    w.restart()
    w.delete(name)
    out = w.settle(1)
    assert [d.name for d in out if isinstance(d, CreatePlaceholder)] == [name]
    assert sorted(p.name for p in w.placeholders(app.key)) == [
        placeholder_of(app, "g", 0), name]


@pytest.mark.parametrize("pods_first", ORDERS)
def test_the_waiting_timer_survives_a_restart(pods_first: bool) -> None:
    app = make_app("a", make_group("g", 2, cpu=1), waiting_timeout=30)
    w = gang_world(app, 8)
    w.add_pod(make_pod("r0", app="a", task_group="g"))
    w.settle(0)
    w.finish("r0")
    w.step(10)
    assert w.app_state("default/a") == "Waiting"
    w.restart(pods_first=pods_first)
    w.step(20)
    assert w.app_state("default/a") == "Waiting"
    w.step(40)
    assert w.app_state("default/a") == "Completed"
    w.settle(41)
    assert w.placeholders(app.key) == []
    assert_clean(w)


def test_leftover_placeholders_of_a_finished_app_are_released_after_a_restart() -> None:
    app = make_app("a", make_group("g", 2, cpu=1), placeholder_timeout=5, style=Style.HARD)
    w = gang_world(app, 1)
    w.settle(0)
    w.hold_deletes.update(placeholder_of(app, "g", i) for i in range(2))
    w.step(5)
    assert w.app_state("default/a") == "Killed"
    w.hold_deletes.clear()
    w.restart()
    out = w.step(6)
    assert sorted(d.name for d in out if isinstance(d, DeletePod)) == [
        placeholder_of(app, "g", i) for i in range(2)]
    assert w.placeholders(app.key) == []


@pytest.mark.parametrize("mode", [GangMode.STRICT, GangMode.NON_STRICT])
def test_podgroup_timer_survives_a_restart(mode: GangMode) -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=2))
    w.add_group(make_podgroup("pg", 3, mode=mode, timeout=60))
    for i in range(3):
        w.add_pod(make_pod(f"m{i}", pod_group="pg"))
    w.step(10)
    assert w.group_status[GroupKey("default/pg")].schedule_start == 10
    w.restart()
    w.step(69)
    assert not w.scheduler.groups[GroupKey("default/pg")].timed_out
    w.step(70)
    assert w.scheduler.groups[GroupKey("default/pg")].timed_out
    assert w.bound_names() == set()


def test_a_satisfied_podgroup_stays_satisfied_after_a_restart() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_group(make_podgroup("pg", 2))
    for i in range(2):
        w.add_pod(make_pod(f"m{i}", pod_group="pg"))
    w.settle(0)
    w.restart()
    w.add_pod(make_pod("m2", pod_group="pg"))
    w.settle(1)
    assert w.node_of("m2") == "n"  # an ordinary pod now, although its gang of one is short
    assert_clean(w)


def test_a_podgroup_with_bound_members_counts_as_satisfied_without_status() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_pod(make_pod("m0", pod_group="pg", node="n"))  # bound before we ever ran
    w.add_group(make_podgroup("pg", 3))
    w.add_pod(make_pod("m1", pod_group="pg"))
    w.settle(0)
    assert w.node_of("m1") == "n"


# --- the last status write lost ------------------------------------------------------------
#
# A crash can come before the status write that follows a change: the new core then sees
# the pods as they are, with an older status (or none).


def lose_status(w: SimWorld, app: AppSpec, stale: SetAppStatus | None) -> None:
    if stale is None:
        del w.app_status[app.key]
    else:
        w.app_status[app.key] = stale


TWO_GROUPS = make_app("train", make_group("ps", 1, cpu=1), make_group("worker", 4, cpu=2))


@pytest.mark.parametrize("stale", [pytest.param(False, id="no-status"),
                                   pytest.param(True, id="accepted-status")])
def test_restart_after_a_swap_whose_status_was_lost(stale: bool) -> None:
    app = TWO_GROUPS
    w = gang_world(app, 4, 4, 4)
    w.settle(0)
    before = w.app_status[app.key]
    assert before.reserved == "5/5"
    w.add_pod(make_pod("ps-0", app="train", task_group="ps"))
    w.settle(1)
    assert w.node_of("ps-0") is not None
    lose_status(w, app, before if stale else None)
    w.restart()
    out = w.settle(2)
    assert [d for d in out if isinstance(d, CreatePlaceholder)] == []  # ps-0 holds its place
    assert w.scheduler.apps[app.key].reserved
    for i in range(4):
        w.add_pod(make_pod(f"worker-{i}", cpu=2, app="train", task_group="worker"))
    w.settle(3)
    assert all(w.node_of(f"worker-{i}") for i in range(4))
    assert w.placeholders(app.key) == []
    assert w.app_state("default/train") == "Running"
    assert_clean(w)


def test_the_timer_starts_at_the_restart_when_its_start_was_lost() -> None:
    app = make_app("big", make_group("worker", 8, cpu=2), style=Style.HARD,
                   placeholder_timeout=100)
    w = gang_world(app, 4, 4, 4)
    w.settle(0)
    assert w.app_status[app.key].reserved == "6/8"
    lose_status(w, app, None)
    w.restart()
    w.settle(50)
    assert w.scheduler.apps[app.key].timer_start == 50
    w.step(149)
    assert w.app_state("default/big") == "Accepted"
    w.step(150)
    assert w.app_state("default/big") == "Killed"
    w.settle(151)
    assert w.placeholders(app.key) == []


def test_a_running_gang_whose_status_was_lost_runs_and_completes() -> None:
    app = make_app("a", make_group("g", 2, cpu=1), waiting_timeout=10)
    w = gang_world(app, 8)
    for i in range(2):
        w.add_pod(make_pod(f"r{i}", app="a", task_group="g"))
    w.settle(0)
    lose_status(w, app, None)
    w.restart()
    w.settle(1)
    assert w.app_state("default/a") == "Running"
    assert w.placeholders(app.key) == []
    w.finish("r0")
    w.finish("r1")
    w.step(2)
    w.step(12)
    assert w.app_state("default/a") == "Completed"


def test_a_placeholder_of_an_older_spec_found_without_status_is_released() -> None:
    old = make_app("a", make_group("g", 3, cpu=1))
    w = gang_world(old, 8)
    w.settle(0)
    new = dataclasses.replace(old, task_groups=(make_group("g", 2, cpu=1),))
    w.apps[new.key] = new  # changed while the operator was down
    lose_status(w, new, None)
    w.restart()
    out = w.settle(1)
    assert w.app_state("default/a") == "Accepted"
    assert [(d.name, d.reason) for d in out if isinstance(d, DeletePod)] == [
        (placeholder_of(old, "g", 2), DeleteReason.ORPHANED)]
    assert sorted(p.name for p in w.placeholders(new.key)) == [
        placeholder_of(old, "g", 0), placeholder_of(old, "g", 1)]


# --- reservations held in memory -------------------------------------------------------------
#
# Pending members are reserved in the core only: a restart forgets them, and the new core
# reserves them again from the pending pods. Nothing is bound before the whole gang can be.


@pytest.mark.parametrize("pods_first", ORDERS)
def test_a_reservation_held_in_memory_is_made_again_after_a_restart(pods_first: bool) -> None:
    app = make_app("a", make_group("g", 3, cpu=2), style=Style.HARD, placeholder_timeout=100)
    w = gang_world(app, 4)
    for i in range(3):
        w.add_pod(make_pod(f"r{i}", cpu=2, app="a", task_group="g"))
    w.settle(10)
    assert w.bound_names() == set()  # two held on n0, in memory only
    assert w.app_status[app.key].reserved == "2/3"
    w.restart(pods_first=pods_first)
    out = w.settle(50)
    assert [d for d in out if isinstance(d, BindPod | CreatePlaceholder)] == []
    assert len(w.scheduler.apps[app.key].assumed) == 2
    assert w.scheduler.apps[app.key].timer_start == 10  # not restarted at 50
    assert_clean(w)
    w.add_node(make_node("n1", cpu=2))
    w.settle(60)
    assert all(w.node_of(f"r{i}") for i in range(3))
    assert w.placeholders(app.key) == []
    assert w.app_state("default/a") == "Running"
    assert_clean(w)


@pytest.mark.parametrize("carried_out", [pytest.param(1, id="one-of-three"),
                                         pytest.param(2, id="two-of-three")])
@pytest.mark.parametrize("status_written", [pytest.param(False, id="status-lost"),
                                            pytest.param(True, id="status-written")])
def test_a_crash_between_the_binds_of_a_gang_leaves_no_gang_half_started(
    carried_out: int, status_written: bool
) -> None:
    app = make_app("a", make_group("g", 3, cpu=1), style=Style.HARD)
    w = gang_world(app, 2, 1)  # room for the gang and nothing else
    for i in range(3):
        w.add_pod(make_pod(f"r{i}", app="a", task_group="g"))
    decisions = w.scheduler.cycle(0)
    binds = [d for d in decisions if isinstance(d, BindPod)]
    assert sorted(d.name for d in binds) == ["r0", "r1", "r2"]
    assert [d for d in decisions if isinstance(d, CreatePlaceholder)] == []
    # The operator dies after some of the binds (and, or not, the status write).
    w.apply(binds[:carried_out])
    if status_written:
        w.apply([d for d in decisions if isinstance(d, SetAppStatus)])
    w.add_pod(make_pod("other", cpu=1, creation=2))  # newer: competes for the room left
    w.restart()
    out = w.settle(2)
    again = sorted(d.name for d in out if isinstance(d, BindPod))
    assert again == sorted(d.name for d in binds[carried_out:])
    assert w.node_of("other") is None
    assert all(w.node_of(f"r{i}") for i in range(3))
    assert w.placeholders(app.key) == []
    assert w.app_state("default/a") == "Running"
    assert_clean(w)
