"""Random contended workloads for the preempt and reclaim property tests.

A cluster is first filled with work (ordinary pods, gang Applications, PodGroups; some
not preemptible) in two queues, then more work of every priority arrives in both, while
pods finish, evictions hang, disruption budgets appear and time passes.

Every plan is checked where it is decided (``evictions.carry_out`` is wrapped): its
victims may be taken (preemptible, bound, lower priority in the same queue for preempt; a
reclaimable queue above its deserved share for reclaim), no gang is sliced below
``minMember``, the preemptor fits once they are gone, and no victim could be spared.
After every cycle, the core invariants hold (``workloads.check_invariants``), and a plan
that ended without its preemptor placed ended with a ``PreemptionFailed`` or
``PreemptionTimedOut`` event: no victim is evicted for nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.preemption import evictions, shares, simulation, victims
from gangsched.core.preemption.preemptors import Kind, Preemptor, build
from gangsched.core.preemption.victims import Tier, Unit
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import Decision, RecordEvent
from gangsched.core.values.model import PodUID, SchedulerConfig, SortPolicy
from gangsched.core.values.resources import Resources
from hypothesis import strategies as st
from simworld import SimWorld
from workloads import check_invariants

QUEUES = ("a", "b")
FAILURES = ("PreemptionFailed", "PreemptionTimedOut")


@dataclass(frozen=True)
class Setup:
    nodes: tuple[int, ...]
    weights: tuple[int, int]
    guaranteed_b: int
    reclaimable_a: bool
    policy: SortPolicy


Op = tuple[str, int, int, int]

setups = st.builds(
    Setup,
    nodes=st.lists(st.integers(2, 6), min_size=1, max_size=3).map(tuple),
    weights=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    guaranteed_b=st.integers(0, 4),
    reclaimable_a=st.booleans(),
    policy=st.sampled_from((SortPolicy.FIFO, SortPolicy.PRIORITY)),
)
KINDS = ("pod", "pod", "gang", "gang", "group", "finish", "hang", "budget", "tick", "tick")
works = st.lists(st.tuples(st.sampled_from(("pod", "gang", "group")), st.integers(0, 1000),
                           st.integers(0, 1000), st.integers(0, 1000)), max_size=8)
ops = st.lists(st.tuples(st.sampled_from(KINDS), st.integers(0, 1000), st.integers(0, 1000),
                         st.integers(0, 1000)), min_size=1, max_size=25)


@dataclass
class Contention:
    setup: Setup
    actions: tuple[str, ...]
    world: SimWorld = field(init=False)
    now: float = 0.0
    counter: int = 0
    plans: int = 0
    """Plans decided and checked."""
    unplaced: dict[str, float] = field(default_factory=dict)
    """Plans that ended without their preemptor placed, awaiting their failure event."""
    failures: set[str] = field(default_factory=set)
    """Preemptors (``Kind/ns/name``) with a failure event so far."""

    def __post_init__(self) -> None:
        config = SchedulerConfig(actions=self.actions, eviction_backoff=10.0,
                                 nomination_timeout=60.0)
        self.world = SimWorld(config=config)
        w, setup = self.world, self.setup
        w.add_queue(make_queue("a", weight=setup.weights[0], policy=setup.policy,
                               reclaimable=setup.reclaimable_a))
        w.add_queue(make_queue("b", weight=setup.weights[1], policy=setup.policy,
                               guaranteed=res(setup.guaranteed_b) if setup.guaranteed_b
                               else Resources.ZERO))
        for i, cpu in enumerate(setup.nodes):
            w.add_node(make_node(f"n{i}", cpu=cpu, memory="64Gi"))

    # --- work ----------------------------------------------------------------------------

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def add(self, kind: str, a: int, b: int, c: int, *, priority: int) -> None:
        w = self.world
        queue = QUEUES[a % 2]
        cpu = 1 + b % 2
        preemptible = c % 5 != 0
        if kind == "pod":
            w.add_pod(make_pod(self._name("p"), cpu=cpu, queue=queue, priority=priority,
                               creation=self.now, preemptible=preemptible))
        elif kind == "gang":
            name = self._name("app")
            size = 1 + c % 3
            groups = [make_group("g", size, cpu=cpu)]
            w.add_app(make_app(name, *groups, queue=queue, creation=self.now))
            for _ in range(size + (b // 2) % 2):  # sometimes one above minMember
                w.add_pod(make_pod(self._name("r"), cpu=cpu, app=name, task_group="g",
                                   priority=priority, creation=self.now,
                                   preemptible=preemptible))
        else:
            name = self._name("pg")
            size = 1 + c % 3
            w.add_group(make_podgroup(name, size, queue=queue, creation=self.now))
            for _ in range(size):
                w.add_pod(make_pod(self._name("m"), cpu=cpu, pod_group=name,
                                   priority=priority, creation=self.now,
                                   preemptible=preemptible))

    def background(self, items: list[Op]) -> None:
        for kind, a, b, c in items:
            self.add(kind, a, b, c, priority=c % 2)
        for _ in range(3):
            self.step()

    def apply(self, op: Op) -> None:
        kind, a, b, c = op
        w = self.world
        bound = sorted(p.name for p in w.pods.values()
                       if p.node_name and p.ours and p.active and not p.placeholder)
        if kind in ("pod", "gang", "group"):
            self.add(kind, a, b, c, priority=c % 6)
        elif kind == "finish" and bound:
            w.finish(bound[a % len(bound)])
        elif kind == "hang" and bound:
            w.hold_deletes.add(bound[a % len(bound)])
        elif kind == "budget" and w.apps:
            key = sorted(w.apps)[a % len(w.apps)]
            running = [p for p in w.pods.values() if p.app == key and p.node_name]
            w.disruption_budgets[key] = len(running)
        elif kind == "tick":
            self.now += (1.0, 5.0, 30.0, 70.0)[a % 4]
            if a % 4 == 3:
                w.hold_deletes.clear()

    # --- running and checking ------------------------------------------------------------

    def run(self, operations: list[Op]) -> None:
        with self._checked():
            for op in operations:
                self.apply(op)
                self.step()
            self.world.hold_deletes.clear()
            for _ in range(6):
                self.now += 70.0
                self.step()
                self.step()
        assert not self.unplaced, f"plans ended with no placement and no failure: {self.unplaced}"

    def step(self) -> list[Decision]:
        w = self.world
        s = w.scheduler
        before = set(s.evictions.plans)
        decisions = w.step(self.now)
        for d in decisions:
            if isinstance(d, RecordEvent) and d.reason in FAILURES:
                self.failures.add(f"{d.target.kind}/{d.target.namespace}/{d.target.name}")
        for key in sorted(self.unplaced):
            if _target(s, key) in self.failures or self.now - self.unplaced[key] > 1000:
                del self.unplaced[key]
        for key in sorted(before - set(s.evictions.plans)):
            pre = build(s, key, self.now)
            if pre is not None and pre.items and _target(s, key) not in self.failures:
                self.unplaced[key] = self.now
        check_invariants(w, frozenset(w.hold_deletes))
        return decisions

    @contextmanager
    def _checked(self) -> Iterator[None]:
        original = evictions.carry_out

        def carry_out(s: Scheduler, pre: Preemptor, units: list[Unit], action: str,
                      now: float, why: str,
                      room: dict[str, Resources] | None = None) -> evictions.Plan:
            check_plan(s, pre, units, action, now)
            self.plans += 1
            return original(s, pre, units, action, now, why, room)

        evictions.carry_out = carry_out  # type: ignore[assignment]
        try:
            yield
        finally:
            evictions.carry_out = original  # type: ignore[assignment]


def _target(s: Scheduler, key: str) -> str:
    kind, _, rest = key.partition("/")
    if kind == Kind.POD.value:
        ps = s.pods.get(PodUID(rest))
        return f"Pod/{ps.pod.ref}" if ps is not None else key
    return key


def check_plan(s: Scheduler, pre: Preemptor, units: list[Unit], action: str,
               now: float) -> None:
    """Everything a plan must be when it is decided (see the module docstring)."""
    assert units, "a plan with no victims"
    pool = victims.pool(s, now)
    taken_per_budget: dict[tuple[str, str], int] = {}
    for unit in units:
        for ps in unit.pods:
            pod = ps.pod
            assert pod.preemptible and pod.active and not pod.terminating
            assert pod.ours or (unit.foreign and (pod.node_name == ps.node or unit.nominated))
            assert ps.node is not None and ps.evicting is None and not ps.assumed
        if action == evictions.PREEMPT:
            assert unit.queue == pre.queue or unit.foreign, (unit.key, unit.queue, pre.queue)
            assert unit.priority < pre.priority, (unit.key, unit.priority, pre.priority)
        else:
            assert unit.queue != pre.queue
            spec = s.queues.spec(unit.queue)
            assert spec is None or spec.reclaimable
        if unit.tier is Tier.GANG:
            whole = next(u for u in pool.units if u.key == unit.key and u.tier is Tier.GANG)
            assert {p.uid for p in whole.pods} == {p.uid for p in unit.pods}
        if unit.budget is not None:
            taken_per_budget[unit.budget] = taken_per_budget.get(unit.budget, 0) + 1
    for budget, taken in taken_per_budget.items():
        joining = 0
        if pre.pod is not None and budget[0] in pre.gangs:
            joining = int(budget[1] in (pre.pod.pod.task_group or "", str(pre.pod.pod.pod_group)))
        assert taken <= pool.surplus.get(budget, 0) + joining, f"{budget} sliced below min"
    relief = action == evictions.PREEMPT
    assert _fits(s, pre, units, relief), "the preemptor does not fit even with its victims"
    for unit in units:
        rest = [u for u in units if u is not unit]
        assert not _fits(s, pre, rest, relief), f"{unit.key} could have been spared"
    if action == evictions.RECLAIM:  # no victim queue below its deserved cpu
        deserved = shares.deserved(s, now)
        leaving: dict[str, Resources] = {}
        for plan in s.evictions.plans.values():
            for uid in plan.victims:
                ps = s.pods.get(uid)
                if ps is not None and ps.charged_queue is not None:
                    queue = ps.charged_queue
                    leaving[queue] = leaving.get(queue, Resources.ZERO) + ps.request
        for unit in units:
            for ps in unit.pods:
                leaving[unit.queue] = leaving.get(unit.queue, Resources.ZERO) + ps.request
        for queue in {u.queue for u in units}:
            left = s.queues.usage(queue) - leaving[queue]
            assert left.get("cpu") >= deserved.get(queue, Resources.ZERO).get("cpu"), queue

def _fits(s: Scheduler, pre: Preemptor, units: list[Unit], relief: bool) -> bool:
    extra: dict[str, Resources] = {}
    freed = Resources.ZERO
    for unit in units:
        for node, amount in unit.freed.items():
            extra[node] = extra.get(node, Resources.ZERO) + amount
        for ps in unit.pods:
            if relief and ps.charged_queue == pre.queue:
                freed = freed + ps.request
    if not s.queues.fits(pre.queue, pre.total, own_earmark=pre.earmark + freed).ok:
        return False
    scoring = simulation.scoring_for(s, pre)
    return simulation.fit(s, pre.items, extra, scoring, pre.owners) is not None

