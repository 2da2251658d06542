"""Pending pods kept by shape follow every change that moves a pod's queue or request.

The queue shares and the queue statuses count pending pods from
:class:`~gangsched.core.state.pendings.PendingShapes`; each case changes a pending pod, or what
decides its queue, and compares the kept counts with a walk over the pending pods. The
same pods are kept by kind (an Application's, a PodGroup's, neither), from which
``allocate`` makes its units.
"""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue
from gangsched.core.values.model import AppKey, GroupKey, Pod, PodUID
from gangsched.core.values.resources import Resources
from simworld import SimWorld
from workloads import pending_counts, pending_kinds, walked_kinds


def world() -> SimWorld:
    w = SimWorld()
    for name in ("qa", "qb"):
        w.add_queue(make_queue(name))
    return w


def counted(w: SimWorld) -> dict[tuple[str, str, bool], int]:
    kept, walked = pending_counts(w.scheduler)
    assert kept == walked
    return {(queue, request.format_short(), invalid): count
            for (queue, request, invalid), count in kept.items()}


def test_a_pending_pod_moved_to_another_queue_is_counted_there() -> None:
    w = world()
    w.add_pod(make_pod("p", cpu=64, queue="qa", uid="u"))
    w.step(0)
    assert counted(w) == {("qa", "cpu=64, memory=1Gi, pods=1", False): 1}
    w.add_pod(make_pod("p", cpu=64, queue="qb", uid="u"))
    w.step(1)
    assert counted(w) == {("qb", "cpu=64, memory=1Gi, pods=1", False): 1}


@pytest.mark.parametrize(("before", "after", "counted_before", "counted_after"), [
    pytest.param(make_pod("p", cpu=64, uid="u"), make_pod("p", cpu=65, uid="u"),
                 ("default", "cpu=64, memory=1Gi, pods=1", False),
                 ("default", "cpu=65, memory=1Gi, pods=1", False), id="resized"),
    pytest.param(make_pod("p", cpu=64, uid="u", invalid="bad quantity"),
                 make_pod("p", cpu=64, uid="u"),
                 ("default", "cpu=64, memory=1Gi, pods=1", True),
                 ("default", "cpu=64, memory=1Gi, pods=1", False), id="made-valid"),
])
def test_a_pending_pod_changed_is_counted_as_it_is_now(
    before: Pod, after: Pod, counted_before: tuple[str, str, bool],
    counted_after: tuple[str, str, bool],
) -> None:
    w = world()
    w.add_pod(before)
    w.step(0)
    assert counted(w) == {counted_before: 1}
    w.add_pod(after)
    w.step(1)
    assert counted(w) == {counted_after: 1}


def test_pods_follow_their_application_and_podgroup_as_they_come_and_go() -> None:
    w = world()
    w.add_pod(make_pod("a", cpu=64, app="spark", queue="qa"))
    w.add_pod(make_pod("m", cpu=64, pod_group="pg", queue="qa"))
    w.step(0)
    assert counted(w) == {("qa", "cpu=64, memory=1Gi, pods=1", False): 2}
    w.add_app(make_app("spark", make_group("g", 1, cpu=64), queue="qb"))
    w.add_group(make_podgroup("pg", 1, queue="qb"))
    w.step(1)
    assert counted(w) == {("qb", "cpu=64, memory=1Gi, pods=1", False): 2}
    w.remove_app(AppKey("default/spark"))
    w.remove_group(GroupKey("default/pg"))
    w.step(2)
    assert counted(w) == {("qa", "cpu=64, memory=1Gi, pods=1", False): 2}


def test_a_pod_that_leaves_pending_is_no_longer_counted() -> None:
    w = world()
    w.add_node(make_node("n0", cpu=64, memory="16Gi"))
    for name in ("p", "q", "r"):
        w.add_pod(make_pod(name, cpu=64))
    w.step(0)  # one is bound, two wait
    assert counted(w) == {("default", "cpu=64, memory=1Gi, pods=1", False): 2}
    w.delete("q")
    w.step(1)
    assert counted(w) == {("default", "cpu=64, memory=1Gi, pods=1", False): 1}


def test_a_pod_that_joins_or_leaves_a_gang_is_kept_with_its_kind() -> None:
    w = world()
    w.add_pod(make_pod("p", cpu=64, uid="u"))
    w.add_pod(make_pod("m", cpu=64, pod_group="pg", uid="v"))
    w.step(0)
    assert pending_kinds(w.scheduler) == walked_kinds(w.scheduler) == {
        "app": set(), "group": {"v"}, "plain": {"u"}, "requestless": set()}
    w.add_pod(make_pod("p", cpu=64, app="spark", uid="u"))  # relabelled into an app
    w.add_pod(make_pod("m", cpu=64, uid="v"))  # out of its PodGroup
    w.step(1)
    assert pending_kinds(w.scheduler) == walked_kinds(w.scheduler) == {
        "app": {"u"}, "group": set(), "plain": {"v"}, "requestless": set()}
    assert w.scheduler.pods[PodUID("v")].pending_reason is not None  # tried as a pod alone
    w.delete("p")
    w.step(2)
    assert pending_kinds(w.scheduler) == {"app": set(), "group": set(), "plain": {"v"},
                                          "requestless": set()}


def test_a_pod_that_stops_or_starts_requesting_is_kept_with_the_requestless_or_not() -> None:
    w = world()
    w.add_pod(make_pod("p", uid="u", requests=Resources.ZERO))
    w.add_pod(make_pod("m", uid="v", pod_group="pg", requests=Resources.ZERO))
    w.step(0)
    assert pending_kinds(w.scheduler)["requestless"] == {"u"}  # a PodGroup's never is
    w.add_pod(make_pod("p", cpu=1, uid="u"))
    w.step(1)
    assert pending_kinds(w.scheduler) == walked_kinds(w.scheduler)
    assert pending_kinds(w.scheduler)["requestless"] == set()
    w.add_pod(make_pod("p", uid="u", requests=Resources.ZERO))
    w.step(2)
    assert pending_kinds(w.scheduler)["requestless"] == {"u"}
