"""The scheduler as a whole: ordinary pods, bind failures, bad input, determinism."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from builders import (
    ALWAYS,
    make_app,
    make_group,
    make_node,
    make_pod,
    make_podgroup,
    make_queue,
    res,
)
from gangsched.core.scheduler import Scheduler
from gangsched.core.state.outbox import Outbox
from gangsched.core.values.decisions import (
    BindPod,
    Decision,
    EventType,
    EvictPod,
    ObjectRef,
    PodPending,
    RecordEvent,
    SetQueueStatus,
)
from gangsched.core.values.model import AppKey, GroupKey, PodUID, SchedulerConfig, SortPolicy
from gangsched.core.values.observations import (
    AppGone,
    BindFailed,
    NodeGone,
    PodGone,
    PodGroupGone,
    PodObserved,
    QueueGone,
)
from gangsched.core.values.resources import Resources
from simworld import SimWorld


@pytest.mark.parametrize(
    ("policy", "order"),
    [
        pytest.param(SortPolicy.PRIORITY, ["high", "old", "young"], id="priority"),
        pytest.param(SortPolicy.FIFO, ["old", "young", "high"], id="fifo"),
    ],
)
def test_ordinary_pods_are_placed_in_queue_order(policy: SortPolicy, order: list[str]) -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=2))
    w.add_queue(make_queue("q", policy=policy))
    w.add_pod(make_pod("young", queue="q", creation=2.0))
    w.add_pod(make_pod("old", queue="q", creation=1.0))
    w.add_pod(make_pod("high", queue="q", creation=3.0, priority=10))
    w.step(0)
    assert w.bound_names() == set(order[:2])
    assert w.pending_reason(order[2]) == "Capacity"


def test_the_default_queue_sorts_by_priority_unless_configured() -> None:
    w = SimWorld(config=SchedulerConfig(default_queue_policy=SortPolicy.FIFO))
    w.add_node(make_node("n", cpu=1))
    w.add_pod(make_pod("old", creation=1.0))
    w.add_pod(make_pod("high", creation=2.0, priority=10))
    w.step(0)
    assert w.bound_names() == {"old"}


def test_an_invalid_pod_is_reported_and_everything_else_continues() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_pod(make_pod("bad", invalid="spec.tolerations[0].effect: unknown effect 'Never'"))
    w.add_pod(make_pod("good"))
    w.settle(0)
    reason = w.pending_reasons[w.uid_of("bad")]
    assert (reason.reason, reason.message) == (
        "InvalidPod", "spec.tolerations[0].effect: unknown effect 'Never'")
    assert w.node_of("good") == "n"


def test_pending_reasons_are_sent_only_when_they_change() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=1))
    w.add_pod(make_pod("p", cpu=2))
    w.settle(0)
    w.settle(1)
    assert len([d for d in w.decisions if isinstance(d, PodPending)]) == 1


class _Appends(Outbox):
    """An outbox that remembers every decision appended to it, in order."""

    __slots__ = ("appended",)

    def __init__(self) -> None:
        super().__init__()
        self.appended: list[Decision] = []

    def append(self, decision: Decision) -> None:
        self.appended.append(decision)
        super().append(decision)


def test_a_cycle_returns_its_outbox_and_moves_no_bind_nor_pending_report() -> None:
    """What the shell reads while a cycle runs (``Scheduler.out``, see
    ``gangsched.shell.early``): the cycle returns what its outbox holds, and every bind
    and pending report appended to it stays there, in the order it was appended."""
    w = SimWorld()
    w.add_node(make_node("n", cpu=3))
    w.add_app(make_app("a", make_group("g", 2)))
    w.add_pod(make_pod("r0", app="a", task_group="g"))
    w.add_pod(make_pod("r1", app="a", task_group="g"))
    w.add_pod(make_pod("plain"))
    w.add_pod(make_pod("big", cpu=8))
    kept: list[object] = []
    for now in range(4):
        out = w.scheduler.out = _Appends()
        decisions = w.step(float(now))
        assert len(out) == 0  # taken
        watched = [d for d in out.appended if isinstance(d, (BindPod, PodPending))]
        assert [d for d in decisions if isinstance(d, (BindPod, PodPending))] == watched
        kept += watched
    assert any(isinstance(d, BindPod) for d in kept)
    assert any(isinstance(d, PodPending) for d in kept)


# --- bind failures -----------------------------------------------------------------------


def test_a_failed_bind_releases_the_assumption_and_backs_off() -> None:
    w = SimWorld(config=SchedulerConfig(bind_backoff_initial=2, bind_backoff_max=5))
    w.add_node(make_node("n", cpu=1))
    w.add_pod(make_pod("p"))
    w.fail_binds["p"] = 500
    w.step(0)
    s = w.scheduler
    assert s.cluster.nodes["n"].used.get("cpu") == 0  # released at once
    w.add_pod(make_pod("other"))
    w.step(1)
    reason = w.pending_reasons[w.uid_of("p")]  # sent with the next cycle
    assert (reason.reason, reason.message) == (
        "BindFailed", "binding to node n failed (500): injected failure")
    assert w.node_of("other") == "n"  # the capacity went to someone else meanwhile
    w.delete("other")
    w.fail_binds["p"] = 503
    w.step(2)  # backoff 2s from t=0: tried again at t=2, fails again
    w.step(5)  # second backoff 4s from t=2: not yet
    assert w.node_of("p") is None
    w.step(6)
    assert w.node_of("p") == "n"


@pytest.mark.parametrize(
    ("backoff_max", "failures", "retry_after"),
    [
        pytest.param(60.0, 1, 1.0, id="first"),
        pytest.param(60.0, 3, 4.0, id="doubles"),
        pytest.param(3.0, 3, 3.0, id="capped"),
    ],
)
def test_backoff_schedule(backoff_max: float, failures: int, retry_after: float) -> None:
    s = Scheduler(SchedulerConfig(bind_backoff_initial=1, bind_backoff_max=backoff_max))
    w = SimWorld(s)
    w.add_node(make_node("n"))
    w.add_pod(make_pod("p"))
    now = 0.0
    for _ in range(failures):
        w.fail_binds["p"] = 500
        w.step(now)
        ps = s.pods[w.uid_of("p")]
        now = ps.backoff_until
    assert ps.backoff_until - s.now == retry_after


def test_409_means_already_bound_no_backoff_and_no_second_bind() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=2))
    w.add_pod(make_pod("p"))
    w.fail_binds["p"] = 409
    w.settle(0)
    assert [e.message for e in w.events if e.reason == "BindFailed"] == [
        "binding to node n failed (409): injected failure"]
    assert w.uid_of("p") not in w.pending_reasons
    ps = w.scheduler.pods[w.uid_of("p")]
    assert (ps.backoff_until, ps.failures) == (0.0, 0)
    assert w.bind_count[w.uid_of("p")] == 1
    assert w.scheduler.cluster.nodes["n"].used.get("cpu") == 1000


def test_404_means_the_pod_is_gone() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_pod(make_pod("p"))
    w.fail_binds["p"] = 404
    w.settle(0)
    assert w.scheduler.pods == {}
    assert w.scheduler.cluster.nodes["n"].used.get("cpu") == 0


def test_a_failed_placeholder_bind_is_allocated_again() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    app = make_app("a", make_group("g", 2))
    w.add_app(app)
    w.step(0)
    name = sorted(p.name for p in w.placeholders(app.key))[0]
    w.fail_binds[name] = 500
    w.settle(1)
    w.settle(3)
    assert all(p.node_name for p in w.placeholders(app.key))


def test_a_placeholder_whose_bind_failed_after_the_reservation_holds_its_place_again() -> None:
    w = SimWorld(config=ALWAYS)
    w.add_node(make_node("n", cpu=8))
    app = make_app("a", make_group("g", 3))
    w.add_app(app)
    w.add_pod(make_pod("r0", app="a", task_group="g"))
    w.step(0)
    names = sorted(p.name for p in w.placeholders(app.key))
    w.fail_binds[names[2]] = 500  # fails in the cycle in which the gang starts
    w.settle(1)
    assert w.app_state("default/a") == "Running"
    w.settle(3)
    assert w.node_of(names[2]) == "n"


def test_a_failed_gang_member_bind_is_retried_as_an_ordinary_pod() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_group(make_podgroup("pg", 2))
    w.add_pod(make_pod("m0", pod_group="pg"))
    w.add_pod(make_pod("m1", pod_group="pg"))
    w.fail_binds["m1"] = 500
    w.step(0)
    assert w.node_of("m0") == "n"
    w.step(2)
    assert w.node_of("m1") == "n"
    reasons = [d.reason for d in w.decisions if isinstance(d, BindPod) and d.name == "m1"]
    assert reasons == ["GangSatisfied", "Scheduled"]


# --- robustness --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "observation",
    [
        pytest.param(PodGone(PodUID("nobody")), id="pod-gone-unknown"),
        pytest.param(NodeGone("nowhere"), id="node-gone-unknown"),
        pytest.param(AppGone(AppKey("default/none")), id="app-gone-unknown"),
        pytest.param(PodGroupGone(GroupKey("default/none")), id="group-gone-unknown"),
        pytest.param(QueueGone("none"), id="queue-gone-unknown"),
        pytest.param(BindFailed(PodUID("nobody"), "n", 500), id="bind-failed-unknown"),
        pytest.param(PodObserved(make_pod("x", node="ghost")), id="pod-on-unknown-node"),
    ],
)
def test_observations_about_unknown_objects_are_harmless(observation: object) -> None:
    s = Scheduler()
    s.observe(observation)  # type: ignore[arg-type]
    s.observe_all([observation])  # type: ignore[list-item]
    s.cycle(0)


def test_the_core_never_reads_a_clock() -> None:
    source = Path(__file__).parents[2] / "operator" / "gangsched" / "core"
    for path in sorted(source.rglob("*.py")):
        text = path.read_text()
        for forbidden in ("import time", "import random", "datetime", "import asyncio"):
            assert forbidden not in text, f"{path.name} uses {forbidden}"


SCENARIO = textwrap.dedent('''
    import sys
    sys.path[:0] = [sys.argv[1]]
    from builders import make_app, make_group, make_node, make_pod, make_podgroup
    from simworld import SimWorld
    w = SimWorld()
    for i in range(6):
        w.add_node(make_node(f"n{i}", cpu=4))
    for a in range(5):
        w.add_app(make_app(f"a{a}", make_group("g", 3), make_group("h", 2, cpu=2)))
        for i in range(4):
            w.add_pod(make_pod(f"a{a}-{i}", app=f"a{a}", task_group="gh"[i % 2]))
    for g in range(3):
        w.add_group(make_podgroup(f"pg{g}", 2))
        for i in range(3):
            w.add_pod(make_pod(f"pg{g}-{i}", pod_group=f"pg{g}"))
    for t in range(6):
        w.step(float(t))
    print(repr(w.decisions))
''')


def test_decisions_do_not_depend_on_hash_randomisation() -> None:
    here = str(Path(__file__).parent)
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run([sys.executable, "-c", SCENARIO, here], env=env,
                                capture_output=True, text=True, check=True)
        outputs.add(result.stdout)
    assert len(outputs) == 1
    assert "BindPod" in outputs.pop()


def test_events_name_their_object() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_app(make_app("a", make_group("g", 1), invalid="broken"))
    w.step(0)
    event = next(d for d in w.decisions if isinstance(d, RecordEvent))
    assert (event.target.kind, event.target.namespace, event.target.name) == (
        "Application", "default", "a")
    assert event.message == "New -> Rejected: broken"


def test_queue_deleted_under_running_pods_stops_new_allocations() -> None:
    w = SimWorld()
    w.add_node(make_node("n", cpu=8))
    w.add_queue(make_queue("q", max=res(4)))
    w.add_pod(make_pod("p0", queue="q"))
    w.step(0)
    w.remove_queue("q")
    w.add_pod(make_pod("p1", queue="q"))
    w.step(1)
    assert w.node_of("p0") == "n"
    assert w.pending_reason("p1") == "QueueNotFound"


@pytest.mark.parametrize(
    ("app", "group"),
    [
        pytest.param(None, None, id="no-gang"),
        pytest.param("missing", None, id="missing-app"),
        pytest.param("missing", "pg", id="missing-app-and-a-group"),
        pytest.param("a", None, id="accepted-gang"),
        pytest.param(None, "pg", id="pod-group"),
    ],
)
def test_an_invalid_pod_says_so_wherever_it_belongs(app: str | None, group: str | None) -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_app(make_app("a", make_group("g", 1)))
    w.add_group(make_podgroup("pg", 1))
    w.add_pod(make_pod("bad", app=app, pod_group=group, task_group="g",
                       invalid="conflicting gang membership"))
    w.settle(0)
    assert w.pending_reason("bad") == "InvalidPod"
    assert w.pending_reasons[w.uid_of("bad")].message == "conflicting gang membership"


def test_an_invalid_pod_does_not_keep_its_app_running() -> None:
    w = SimWorld()
    w.add_node(make_node("n"))
    w.add_app(make_app("a", waiting_timeout=5))
    w.add_pod(make_pod("good", app="a"))
    w.add_pod(make_pod("bad", app="a", invalid="spec.containers: required"))
    w.settle(0)
    w.finish("good")
    w.step(1)
    w.step(6)
    assert w.app_state("default/a") == "Completed"


@pytest.mark.parametrize("over, under", [
    pytest.param("a", "b", id="over-share-queue-sorts-first"),
    pytest.param("b", "a", id="over-share-queue-sorts-last"),
])
def test_freed_capacity_goes_to_the_queue_furthest_below_its_share(over: str,
                                                                    under: str) -> None:
    """With two queues waiting, the one below its deserved share is served first,
    whatever the names' order: reclaim then has nothing to undo."""
    w = SimWorld(config=SchedulerConfig(actions=("allocate",)))
    w.add_node(make_node("n0", cpu=4))
    w.add_queue(make_queue("a"))
    w.add_queue(make_queue("b"))
    for i in range(4):
        w.add_pod(make_pod(f"{over}-run-{i}", cpu=1, queue=over, creation=i))
    w.settle(0.0)
    for i in range(2):
        w.add_pod(make_pod(f"{over}-more-{i}", cpu=1, queue=over, creation=10 + i))
        w.add_pod(make_pod(f"{under}-wait-{i}", cpu=1, queue=under, creation=20 + i))
    w.settle(1.0)
    w.finish(f"{over}-run-0")
    w.settle(2.0)
    assert w.pod(f"{under}-wait-0").node_name == "n0"
    assert w.pod(f"{over}-more-0").node_name is None


@pytest.mark.parametrize("first, second", [("a", "b"), ("b", "a")])
def test_queues_waiting_together_share_the_room_in_one_cycle(first: str, second: str) -> None:
    """Room that two waiting queues both want is handed out unit by unit to whichever is
    furthest below its deserved share at that moment, not queue after queue: each ends
    the cycle at its share (weights 3:1 here), and reclaim has nothing to take back."""
    w = SimWorld()  # the default actions, reclaim among them
    for i in range(2):
        w.add_node(make_node(f"n{i}", cpu=4))
    w.add_queue(make_queue("a", weight=3))
    w.add_queue(make_queue("b"))
    for i in range(8):  # every pod of `first` sorts before every pod of `second`
        w.add_pod(make_pod(f"{first}-{i}", cpu=1, queue=first, creation=i))
        w.add_pod(make_pod(f"{second}-{i}", cpu=1, queue=second, creation=10 + i))
    w.step(0.0)
    bound = w.bound_names()
    assert len({n for n in bound if n.startswith("a-")}) == 6
    assert len({n for n in bound if n.startswith("b-")}) == 2
    for t in range(1, 25):
        w.step(float(t))
    assert not [d for d in w.decisions if isinstance(d, EvictPod)]
    assert w.bound_names() == bound


def test_the_count_of_changes_follows_decisions_but_not_statuses() -> None:
    """``Scheduler.changes`` moves with every decision other than a status (a status that
    tells of a change of state stirs, which counts), and a decision taken back from the
    cycle's list leaves the count no lower."""
    s = Scheduler()
    target = ObjectRef("Pod", "default", "p", "u")
    base = s.changes
    s.out.append(SetQueueStatus("root", Resources.ZERO, Resources.ZERO, Resources.ZERO, None,
                                Resources.ZERO, {}))
    assert s.changes == base
    s.event(target, EventType.NORMAL, "Seen", "one")
    assert s.changes == base + 1
    s.out.retract(lambda d: isinstance(d, RecordEvent))  # taken back
    s.event(target, EventType.NORMAL, "Seen", "two")
    s.event(target, EventType.NORMAL, "Seen", "three")
    assert s.changes >= base + 3
    counted = s.changes
    s.stir()
    assert s.changes == counted + 1
    s.cycle(1.0)
    assert s.changes >= counted + 1


def test_pods_of_one_shape_share_their_request_and_constraints() -> None:
    """The caches of the core are keyed by requests and constraints: pods that ask the
    same share one object of each, so that a lookup finds its key by identity."""
    w = SimWorld()
    w.add_node(make_node("n0", cpu=1))
    for name in ("a", "b"):
        w.add_pod(make_pod(name, cpu=2, node_selector={"disk": "ssd"}))
    w.add_pod(make_pod("c", cpu=3, node_selector={"disk": "ssd"}))
    a, b, c = (w.scheduler.pods[w.uid_of(name)] for name in "abc")
    assert a.request is b.request and a.constraints is b.constraints
    assert c.request is not a.request and c.request != a.request
    assert c.constraints is a.constraints


def test_a_pod_gone_leaves_no_preemptor_referring_back_to_it() -> None:
    """A pod waiting on its own keeps the preemptor made of it, which refers back to the
    pod: once the pod is gone the pair is not left for the cyclic collector to find."""
    config = SchedulerConfig(actions=("allocate", "preempt"))
    w = SimWorld(config=config)
    w.add_node(make_node("n0", cpu=1))
    w.add_pod(make_pod("low", cpu=1, node="n0", priority=0, preemptible=False))
    w.add_pod(make_pod("high", cpu=1, priority=10))
    w.step(0.0)
    ps = w.scheduler.pods[w.uid_of("high")]
    assert ps.preemptor is not None  # made when preempt looked for victims
    w.delete("high")
    assert ps.preemptor is None


def test_pods_waiting_for_room_are_kept_apart_for_the_preemptors() -> None:
    """Finding the preemptors costs the pods waiting for room, not the whole backlog:
    the scheduler keeps those said to wait for Capacity or QueueQuota apart, and the
    search drops those that moved on."""
    from gangsched.core.preemption.preemptors import find

    w = SimWorld()
    w.add_node(make_node("n0", cpu=2))
    w.add_pod(make_pod("fits", cpu=2))
    w.add_pod(make_pod("waits", cpu=2, creation=1.0))
    w.add_app(make_app("spark", make_group("exec", 9, cpu=1)))  # never fits: held
    w.add_pod(make_pod("driver", cpu=1, app="spark", task_group="exec", creation=2.0))
    w.step(0.0)
    s = w.scheduler
    waits, fits = w.uid_of("waits"), w.uid_of("fits")
    assert waits in s.waiting_for_room and fits not in s.waiting_for_room
    assert w.uid_of("driver") not in s.waiting_for_room  # it waits for its gang
    assert [pre.pod.pod.name for pre in find(s, 0.0) if pre.pod is not None] == ["waits"]
    w.add_node(make_node("n1", cpu=2))
    w.settle(1.0)
    assert w.pods[waits].node_name == "n1"
    assert [pre for pre in find(s, 1.0) if pre.pod is not None] == []
    assert waits not in s.waiting_for_room


def test_a_gangs_pending_pods_are_ordered_once_while_they_stay_the_same() -> None:
    from gangsched.core.state.records import AppRuntime, in_order

    w = SimWorld()
    w.add_app(make_app("spark", make_group("exec", 3)))
    for name, priority, creation in (("c", 0, 1.0), ("a", 5, 2.0), ("b", 0, 0.5)):
        w.add_pod(make_pod(name, app="spark", task_group="exec", priority=priority,
                           creation=creation))
    s = w.scheduler
    rt: AppRuntime = s.apps[AppKey("default/spark")]
    pending = [s.pods[w.uid_of(name)] for name in ("c", "a", "b")]
    first = in_order(rt, pending)
    assert [ps.pod.name for ps in first] == ["a", "b", "c"]
    kept = rt.pending_order
    assert [ps.pod.name for ps in in_order(rt, list(pending))] == ["a", "b", "c"]
    assert rt.pending_order is kept  # the same pods in the same order: not sorted again
    assert [ps.pod.name for ps in in_order(rt, pending[:2])] == ["a", "c"]
    assert rt.pending_order is not kept
