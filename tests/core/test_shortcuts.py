"""The shortcuts that keep a cycle's cost to what changed decide nothing differently.

Each workload runs twice, from the same observations at the same times: once as the
scheduler runs, once with every shortcut turned off, so that each action does the full
work it did before the shortcuts existed (every preemptor searched, every fit
simulated). The decisions of every cycle must be the same, in the same order.

Shortcuts covered: a whole cycle skipped when nothing was observed since a cycle that
decided and changed nothing, and no instant it depended on has come
(``Scheduler.skip_quiet``); the deserved shares computed once while nothing changes in
a cycle (``shares.deserved``), from what each waiting gang asks counted without
building its preemptor (``shares.app_ask``); a pod that fit nowhere told from the
verdicts kept node by node that it still fits nowhere, without a pass over the nodes
(``Cluster.unplaceable``, under spread scoring); a bin-packing scan started past the
nodes that had no room for the shape and have had none given back since, and no scan
nor PreFilter when that is every node (``Cluster._watermark``); a pod of the same shape
as the last that fit nowhere told the same, with no node touched since, without a scan
nor a tally (``Cluster._refusal_key``: turned off, no refusal is kept); a pod on its
own that fit nowhere, with nothing changed since that may let it fit, left out of
allocate's units (``ordinary.dormant``); what a held gang without placeholders still
needs counted again only when a member or its spec changed (``enqueue._remaining``);
allocate passing over such a gang while its pods were told all there is to tell
(``app_allocation.still_held``);
``preempt`` skipped when no waiting work outranks running work
(``preempt.may_matter``); ``reclaim``
skipped when no reclaimable queue is above its deserved share of anything
(``reclaim.may_give_back``), its victim pool made of those queues' pods only
(``reclaim.givers``), giving up on a preemptor that even every candidate's room could
not cover (``reclaim._hopeless``) or that cannot fit as things are
(``reclaim._too_many``), repeating a search of the same shape that found nothing
(``reclaim._searched``), searching where no candidate may go even alone
(``reclaim._none_may_go``; and before the pool of candidates is made, when no pod of the
victim queues may: ``reclaim._none_can_go``), or judging again a preemptor of a shape
already judged since the last plan (``reclaim._shape``: turned off, every preemptor is
a shape of its own), judging single pods of one kind (queue, request, constraints,
priority) as the first of them was until a plan is made (``reclaim._alike``: turned
off, each is judged in turn); a GangGroup's preemptor kept while no PodGroup of it and no member
changes (``preemptors._kept_gang``); a fruitless search not tried again ten seconds
later when nothing at all changed and no refused eviction came to its end
(``evictions.unchanged_since``); a placement scoring one node of each usage key when
only capacity filters and only resources score (``Framework.usage_scored``: turned off,
every feasible node is scored); a bin-packing scan carried over from the last pod of the
same shape (``Cluster._binpack_scan``: turned off, every scan is made afresh; see also
``test_scan_carry.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup
from contention import Contention, Op, Setup, ops, setups, works
from gangsched.core.actions import enqueue, preempt, reclaim
from gangsched.core.framework.runner import Framework
from gangsched.core.gangs import app_allocation, ordinary, reservation
from gangsched.core.placement import cluster as core_cluster
from gangsched.core.placement.scan import scan
from gangsched.core.preemption import evictions, preemptors, shares
from gangsched.core.preemption.preemptors import Preemptor, for_app
from gangsched.core.scheduler import Scheduler
from gangsched.core.state.records import AppRuntime
from gangsched.core.state.session import Session
from gangsched.core.values.decisions import BindPod, Decision
from gangsched.core.values.model import GroupKey, PodPhase, SchedulerConfig, Scoring
from gangsched.core.values.resources import Resources
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simworld import SimWorld, actions_run
from test_action_properties import CONFIGS as ACTION_CONFIGS
from test_action_properties import ActionRunner
from test_action_properties import ops as action_ops
from workloads import Cluster, clusters

DEFAULT = SchedulerConfig().actions

def _preemptor_total(s: Session, rt: AppRuntime) -> Resources | None:
    pre = for_app(s, rt, 0.0)
    return None if pre is None else pre.total


REFERENCE: dict[tuple[object, str], object] = {
    (shares, "app_ask"): _preemptor_total,
    (preempt, "may_matter"): lambda s: True,
    (shares, "deserved"): shares.compute_deserved,
    (core_cluster.Cluster, "unplaceable"): lambda *args: None,
    (core_cluster.Cluster, "_watermark"): lambda *args: 0,
    (core_cluster.Cluster, "_refusal_key"): lambda *args: None,
    (ordinary, "dormant"): lambda *args: False,
    (app_allocation, "still_held"): lambda *args: None,
    (enqueue, "_remaining"): lambda rt, observed, reals: reservation.remaining_ask(
        rt.spec, observed, reservation.taken(reals)),
    (reclaim, "may_give_back"): lambda *args: True,
    (reclaim, "givers"): lambda *args: None,
    (reclaim, "_hopeless"): lambda *args: False,
    (reclaim, "_too_many"): lambda *args: False,
    (reclaim, "_searched"): lambda *args: False,
    (reclaim, "_none_may_go"): lambda *args: False,
    (reclaim, "_none_can_go"): lambda *args: False,
    (reclaim, "_shape"): lambda s, pre: (pre.key,),
    (reclaim, "_alike"): lambda found: (list(found), {}),
    (reclaim, "_refused"): lambda *args: lambda queue, need: False,
    (preemptors, "_kept_gang"): lambda *args: None,
    (evictions, "unchanged_since"): lambda *args: False,
    (Framework, "usage_scored"): lambda *args: False,
    (core_cluster.Cluster, "_binpack_scan"):
        lambda self, fwk, cycle, info, nodes, start, sample, judge, distinct=False: scan(
            nodes, start, len(nodes), sample, judge),
}
"""The shortcuts, each replaced by the answer that makes the action do the full work."""


@contextmanager
def without_shortcuts() -> Iterator[None]:
    originals = {key: getattr(*key) for key in REFERENCE}
    for (module, name), replacement in REFERENCE.items():
        setattr(module, name, replacement)
    Scheduler.skip_quiet = False
    try:
        yield
    finally:
        Scheduler.skip_quiet = True
        for (module, name), original in originals.items():
            setattr(module, name, original)


def _both(run: Callable[[], list[list[Decision]]]) -> None:
    fast = run()
    with without_shortcuts():
        full = run()
    assert len(fast) == len(full)
    for cycle, (got, want) in enumerate(zip(fast, full, strict=True)):
        assert got == want, f"cycle {cycle} decided differently with the shortcuts"


@contextmanager
def counting(owner: object, name: str) -> Iterator[list[int]]:
    """Count the calls of ``owner.name`` within the block (the list's one item)."""
    original = getattr(owner, name)
    count = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return original(*args, **kwargs)

    setattr(owner, name, counted)
    try:
        yield count
    finally:
        setattr(owner, name, original)


def _contended(setup: Setup, background: list[Op], operations: list[Op],
               actions: tuple[str, ...]) -> list[list[Decision]]:
    run = Contention(setup, actions)
    seen: list[list[Decision]] = []
    for kind, a, b, c in background:
        run.add(kind, a, b, c, priority=c % 2)
    for op in [*operations, ("tick", 3, 0, 0), ("tick", 3, 0, 0)]:
        run.apply(op)
        seen.append(run.world.step(run.now))
        seen.append(run.world.step(run.now))
    return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setups, works, ops)
def test_preempt_and_reclaim_decide_the_same_with_and_without_shortcuts(
    setup: Setup, background: list[Op], operations: list[Op]
) -> None:
    _both(lambda: _contended(setup, background, operations, DEFAULT))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), action_ops, st.sampled_from(sorted(ACTION_CONFIGS)))
def test_mixed_workloads_decide_the_same_with_and_without_shortcuts(
    cluster: Cluster, operations: list[tuple[str, int, int, int]], config: str
) -> None:
    def run() -> list[list[Decision]]:
        runner = ActionRunner(SimWorld(config=ACTION_CONFIGS[config]))
        runner.check = False
        runner.setup(cluster)
        seen: list[list[Decision]] = []
        for index, op in enumerate(operations):
            runner.apply(op)
            seen.append(runner.step())
            for pause in IDLE[index % len(IDLE)]:  # cycles with nothing observed
                runner.now += pause
                seen.append(runner.step())
            runner.now += 7.0
        return seen
    _both(run)


IDLE = ((), (0.0,), (1.0, 3.0), (5.0, 0.5, 20.0), (60.0,))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), action_ops)
def test_what_a_waiting_gang_asks_is_what_its_preemptor_asks(
    cluster: Cluster, operations: list[tuple[str, int, int, int]]
) -> None:
    asked: list[tuple[Resources | None, Resources | None]] = []
    original = shares.app_ask

    def both(s: Session, rt: AppRuntime) -> Resources | None:
        found = original(s, rt)
        asked.append((found, _preemptor_total(s, rt)))
        return found

    shares.app_ask = both  # type: ignore[assignment]
    try:
        runner = ActionRunner(SimWorld(config=SchedulerConfig()))
        runner.check = False
        runner.setup(cluster)
        for op in operations:
            runner.apply(op)
            runner.step()
            runner.now += 7.0
    finally:
        shares.app_ask = original  # type: ignore[assignment]
    for found, wanted in asked:
        assert found == wanted
"""Pauses before cycles that observe nothing new, by operation: a cycle at the same
instant, and cycles as timers (backoffs, timeouts) come due or not yet."""


@pytest.mark.parametrize(("waiting", "running", "searched"), [
    pytest.param(0, 0, False, id="same-priority"),
    pytest.param(0, 5, False, id="waiting-below-running"),
    pytest.param(5, 0, True, id="waiting-outranks-running"),
])
def test_preempt_looks_for_preemptors_only_when_some_work_outranks_running_work(
    waiting: int, running: int, searched: bool
) -> None:
    w = SimWorld(config=SchedulerConfig(actions=("allocate", "preempt")))
    w.add_node(make_node("n0", cpu=2))
    w.add_pod(make_pod("running", cpu=2, priority=running))
    w.step(0.0)
    w.add_pod(make_pod("waiting", cpu=2, priority=waiting))
    calls: list[float] = []
    original = preempt.find

    def find(s: Scheduler, now: float) -> list[Preemptor]:
        calls.append(now)
        return original(s, now)

    preempt.find = find  # type: ignore[assignment]
    try:
        w.step(1.0)
    finally:
        preempt.find = original  # type: ignore[assignment]
    assert bool(calls) is searched


def test_a_cycle_woken_by_preempts_retry_runs_preempt_only() -> None:
    """A fruitless preemption is tried again ``placeholder_retry`` seconds later once
    anything changed (here a pod observed again at 5.0), and not while nothing does: the
    cycle woken for the retry runs preempt, not allocate before it (it would find what
    it found in the last cycle, over the whole backlog); an observation runs both."""
    w = SimWorld(config=SchedulerConfig(actions=("allocate", "preempt")))
    w.add_node(make_node("n0", cpu=2))
    w.add_pod(make_pod("running", cpu=2, preemptible=False))
    w.step(0.0)
    w.add_pod(make_pod("waiting", cpu=2, priority=5))
    with actions_run(w) as calls:
        for now in (1.0, 2.0, 3.0):
            w.step(now)
        w.add_pod(make_pod("running", cpu=2, preemptible=False))  # observed again
        for now in (5.0, 11.0, 12.0, 22.0, 40.0):
            w.step(now)
        w.add_pod(make_pod("other", cpu=1))
        w.step(41.0)
    assert calls == [("allocate", 1.0), ("preempt", 1.0),  # the new pod: a fruitless search
                     ("allocate", 2.0), ("preempt", 2.0),  # after a cycle that decided
                     ("allocate", 5.0), ("preempt", 5.0),  # 3.0 is quiet; an observation
                     ("preempt", 11.0),  # the retry, ten seconds after the search at 1.0
                     ("allocate", 41.0), ("preempt", 41.0)]  # nothing changed after 11.0


def test_under_spread_scoring_the_tally_answers_for_pods_that_fit_nowhere_only() -> None:
    """Spread scoring asks the kept tally before a pass over the nodes (bin-packing's
    scan starts past the full nodes and needs no such help): after room is freed, the
    pod that fits there is placed, and the next is told from the tally that it fits
    nowhere, with no pass of its own."""
    placed: list[int] = []

    def run() -> list[list[Decision]]:
        w = SimWorld(config=SchedulerConfig(pod_scoring=Scoring.SPREAD))
        for i in range(3):
            w.add_node(make_node(f"n{i}", cpu=2))
            w.add_pod(make_pod(f"run{i}", cpu=2))
        seen = [w.step(0.0)]
        for i in range(3):
            w.add_pod(make_pod(f"wait{i}", cpu=2))
        seen.append(w.step(1.0))
        w.delete("run1")
        with counting(core_cluster.Cluster, "place") as passes:
            seen.append(w.step(2.0))
        placed.append(passes[0])
        return seen

    _both(run)
    assert [sum(isinstance(d, BindPod) for d in cycle) for cycle in run()] == [3, 0, 1]
    assert placed[0] == 1 and placed[1] == 3  # with the tally, without it


def test_a_refusal_answers_for_the_same_shape_until_a_node_is_touched() -> None:
    """A pod of the same shape as the last one that fit nowhere fits nowhere either, for
    the same reasons, while no node is touched: no scan. A placement in between touches
    a node, and the next such pod is scanned for again."""
    scans: list[int] = []

    def run() -> list[list[Decision]]:
        w = SimWorld()
        w.add_node(make_node("n0", cpu=2))
        w.add_node(make_node("n1", cpu=3))
        for node in ("n0", "n1"):
            w.add_pod(make_pod(f"run-{node}", cpu=2, node=node))
        seen = [w.step(0.0)]
        for index, (name, cpu) in enumerate((("big0", 2), ("small", 1), ("big1", 2),
                                             ("big2", 2))):
            w.add_pod(make_pod(name, cpu=cpu, creation=float(index)))
        with counting(core_cluster.Cluster, "place") as passes:
            seen.append(w.step(1.0))
        scans.append(passes[0])
        return seen

    _both(run)
    binds = [d.name for d in run()[1] if isinstance(d, BindPod)]
    assert binds == ["small"]
    assert scans[0] == 3 and scans[1] == 4  # big2 told by big1's refusal; all scanned


def test_pods_that_fit_nowhere_wait_out_of_allocate_until_something_changes() -> None:
    """The cycle that observes a bind tries nothing of the pods that fit nowhere before
    it (no room was freed since); a pod that ends frees room, and they are tried."""
    tried: list[int] = []

    def run() -> list[list[Decision]]:
        w = SimWorld()
        w.add_node(make_node("n0", cpu=3))
        w.add_pod(make_pod("small", cpu=1, creation=0.0))
        for index in range(3):
            w.add_pod(make_pod(f"big{index}", cpu=3, creation=1.0 + index))
        seen = [w.step(0.0)]  # small is bound, the big ones fit nowhere
        with counting(ordinary, "place") as calls:
            seen.append(w.step(1.0))  # observes small's bind
            tried.append(calls[0])
            w.delete("small")
            seen.append(w.step(2.0))
            tried.append(calls[0])
        return seen

    _both(run)
    assert tried[0] == 0 and tried[1] >= 1  # dormant, then woken by the room freed
    assert tried[2] == 3  # without the shortcut: each tried in the cycle after the bind


def test_a_held_gang_is_passed_over_until_something_of_it_changes() -> None:
    """A gang that enqueue holds, with no placeholder, is visited by allocate to tell its
    pods that they wait for the gang; until a member, its spec or a plan changes, the
    next visit would tell them the same, and is skipped."""
    visits: list[int] = []

    def run() -> list[list[Decision]]:
        w = SimWorld()
        w.add_node(make_node("n0", cpu=2))
        w.add_app(make_app("spark", make_group("exec", 3, cpu=1)))  # never fits 2 cpu
        w.add_pod(make_pod("spark-0", cpu=1, app="spark", task_group="exec"))
        w.add_pod(make_pod("busy", cpu=1))
        with counting(reservation, "reserve") as calls:
            seen = [w.step(0.0), w.step(1.0)]  # the second observes busy's bind
            visits.append(calls[0])
            w.add_pod(make_pod("spark-1", cpu=1, app="spark", task_group="exec"))
            seen.append(w.step(2.0))
            visits.append(calls[0])
        return seen

    _both(run)
    assert visits[:2] == [1, 2]  # skipped in the cycle that observes the bind
    assert visits[2:] == [2, 3]  # without the shortcut: visited in each cycle


def test_a_gangs_preemptor_follows_every_change_of_its_members() -> None:
    """``for_groups`` keeps what it found of a gang while nothing of it changes: a
    member bound, a member charged in the core only, a member gone or a new one each
    show in the next answer, as a fresh look gives it."""
    w = SimWorld()
    w.add_group(make_podgroup("pg", 3))
    for name in ("m0", "m1", "m2", "m3"):
        w.add_pod(make_pod(name, cpu=64, pod_group="pg"))  # no node can take them
    s = w.scheduler
    grt = s.groups[GroupKey("default/pg")]

    def asked() -> list[int]:
        kept = preemptors.for_groups(s, [grt], 0.0)
        grt.preemptor = None
        fresh = preemptors.for_groups(s, [grt], 0.0)
        counts = [len(p.items) if p is not None else -1 for p in (kept, fresh)]
        assert counts[0] == counts[1]
        return counts

    assert asked() == [3, 3]
    assert preemptors.for_groups(s, [grt], 0.0) is preemptors.for_groups(s, [grt], 0.0)
    w.add_node(make_node("big", cpu=128))
    w.add_pod(make_pod("m0", cpu=64, pod_group="pg", node="big", phase=PodPhase.RUNNING))
    assert asked() == [2, 2]  # one bound: two missing
    s.charge(s.pods[s.pod_by_name["default/m1"]], "big")  # held in the core only
    assert asked() == [1, 1]
    s.uncharge(s.pods[s.pod_by_name["default/m1"]])
    assert asked() == [2, 2]
    w.delete("m2")
    w.delete("m3")
    assert asked() == [-1, -1]  # two missing, one pending: it cannot complete
    w.add_pod(make_pod("m4", cpu=64, pod_group="pg"))
    assert asked() == [2, 2]


def test_a_fruitless_search_is_not_tried_again_while_nothing_changes() -> None:
    """Ten seconds after a fruitless search, the preemptor may search again only if
    anything changed since (an observation, a charge, a decision...) or a refused
    eviction came to its end: otherwise it would read what it read."""
    w = SimWorld(config=SchedulerConfig(actions=("allocate", "preempt")))
    w.add_node(make_node("n0", cpu=2))
    w.add_pod(make_pod("running", cpu=2, preemptible=False))
    w.step(0.0)
    w.add_pod(make_pod("waiting", cpu=2, priority=5))
    for now in (1.0, 2.0, 11.0, 30.0):  # the search, its retry at 11.0, then quiet
        w.step(now)
    s = w.scheduler
    pre = preemptors.build(s, preemptors.pod_key(w.uid_of("waiting")), 30.0)
    assert pre is not None
    state = evictions.signature(s, 30.0)
    assert not evictions.may_try(s, evictions.PREEMPT, pre, 30.0, state)
    s.evictions.refusals_end.append(25.0)  # an eviction refused until 25.0
    assert evictions.may_try(s, evictions.PREEMPT, pre, 30.0, state)
    s.evictions.refusals_end.clear()
    w.add_pod(make_pod("running", cpu=2, preemptible=False))  # observed again
    assert evictions.may_try(s, evictions.PREEMPT, pre, 30.0, state)
