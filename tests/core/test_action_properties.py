"""Invariants of the enqueue, backfill, elect/reserve actions and deadlock breaking.

The random workloads of ``workloads.py`` (with best-effort pods and NonStrict gangs that
accumulate added) run under several action lists, and after every cycle, besides the
invariants of the core (no node over allocatable, no queue over max, no pod bound twice,
Hard and PodGroup members never bound before their gang, no placeholder left after its
application ended or timed out, the same inputs giving the same decisions):

* enqueue: no placeholder is created for an Application that is not admitted, no member
  of a PodGroup that is not enqueued is assumed or bound;
* reserve: no new placement lands on a node reserved for another gang;
* deadlock: no partial gangs are left that no order lets complete while releasing one of
  them would let another complete;
* backfill: best-effort pods are bound by backfill only.
"""

from __future__ import annotations

from dataclasses import dataclass

from builders import make_app, make_pod, make_podgroup
from gangsched.core.preemption import deadlock
from gangsched.core.values.decisions import BindPod, CreatePlaceholder, Decision
from gangsched.core.values.model import AppKey, GangMode, SchedulerConfig, Scoring, SortPolicy
from gangsched.core.values.resources import Resources
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from simworld import SimWorld
from workloads import OP_KINDS, QUEUES, Cluster, Op, Runner, check_invariants, clusters

CONFIGS = {
    "default": SchedulerConfig(),
    "no-enqueue": SchedulerConfig(actions=("allocate", "backfill")),
    "elect-reserve": SchedulerConfig(
        actions=("enqueue", "elect", "allocate", "backfill", "reserve"),
        starvation_threshold=20.0, reservation_timeout=40.0, deadlock_backoff=15.0),
    "overcommit": SchedulerConfig(actions=("enqueue", "allocate", "backfill"),
                                  overcommit_factor=1.5, deadlock_backoff=5.0),
    "reserve-first": SchedulerConfig(
        actions=("elect", "reserve", "enqueue", "allocate"), starvation_threshold=0.0,
        reservation_timeout=25.0),
    "spread": SchedulerConfig(gang_scoring=Scoring.SPREAD, pod_scoring=Scoring.SPREAD),
}
NEW_PLACEMENTS = ("Scheduled", "Backfilled", "PlaceholderAllocated",
                  "PlaceholderReplacedElsewhere")
"""Bind reasons of placements chosen in the cycle (not a gang bound where it was held)."""

ops = st.lists(
    st.tuples(st.sampled_from((*OP_KINDS, "besteffort", "besteffort", "accumulate",
                               "accumulate")),
              st.integers(0, 1000), st.integers(0, 1000), st.integers(0, 1000)),
    min_size=1, max_size=30,
)


@dataclass
class ActionRunner(Runner):
    """A :class:`Runner` with best-effort pods and accumulating gangs, checking more."""

    def _besteffort(self, a: int, b: int, c: int) -> None:
        w = self.world
        app = None
        if a % 3 == 0:
            app = f"plain{b % 3}"
            if AppKey(f"default/{app}") not in w.apps:
                w.add_app(make_app(app, queue=QUEUES[c % 4], creation=self.now))
        w.add_pod(make_pod(self._name("be"), requests=Resources.ZERO, app=app,
                           queue=QUEUES[c % 4], priority=c % 3, creation=self.now))

    def _accumulate(self, a: int, b: int, c: int) -> None:
        """A NonStrict PodGroup of 3 to 5 with only some of its members: it accumulates."""
        w = self.world
        name = self._name("nsg")
        size = 3 + a % 3
        w.add_group(make_podgroup(name, size, mode=GangMode.NON_STRICT, timeout=60.0,
                                  queue=QUEUES[b % 3], creation=self.now, priority=c % 2))
        for _ in range(1 + c % size):
            w.add_pod(make_pod(self._name("m"), cpu=("500m", "1")[b % 2], pod_group=name,
                               creation=self.now))

    def step(self) -> list[Decision]:
        s = self.world.scheduler
        reserved, owners = s.cluster.reserved, s.cluster.reserved_owners
        admitted = {key for key, rt in s.apps.items() if rt.admitted}
        decisions = super().step()
        if self.check:
            if s.cluster.reserved_owners != owners:  # another target: held part of the cycle
                reserved = frozenset()
            check_actions(self.world, decisions, reserved & s.cluster.reserved, owners,
                          admitted)
        return decisions


def check_actions(w: SimWorld, decisions: list[Decision], reserved: frozenset[str],
                  owners: frozenset[str], admitted_before: set[AppKey]) -> None:
    """``reserved``: the nodes held for ``owners`` all through the cycle."""
    s = w.scheduler
    admitted = admitted_before | {key for key, rt in s.apps.items() if rt.admitted}
    for d in decisions:
        if isinstance(d, CreatePlaceholder):
            assert d.app in admitted, f"placeholder {d.name} of {d.app}, not admitted"
        if not isinstance(d, BindPod):
            continue
        pod = w.pods.get(d.uid)
        if pod is None:
            continue
        owner = pod.app or pod.pod_group
        if d.node in reserved and d.reason in NEW_PLACEMENTS:
            assert owner in owners, f"{d.name} ({d.reason}) placed on reserved node {d.node}"
        if d.reason == "Backfilled":
            assert not pod.requests and pod.pod_group is None, f"{d.name} backfilled"
    if "enqueue" in s.config.actions:
        for key, rt in s.groups.items():
            if not rt.inqueue and not rt.satisfied:
                assert not rt.assumed, f"{key} assumes members while not enqueued"
    if "allocate" in s.config.actions:
        found = deadlock.find(s)
        if found is not None:
            assert deadlock.choose(s, *found) == [], (
                f"deadlock left: {[g.describe() for g in found[0].gangs]}")


def run(cluster: Cluster, operations: list[Op], config: SchedulerConfig) -> ActionRunner:
    runner = ActionRunner(SimWorld(config=config))
    runner.setup(cluster)
    runner.run(operations)
    w = runner.world
    w.hold_deletes.clear()
    for pod in w.placeholders():
        if pod.app not in w.apps:
            w.delete_pod(pod.uid)  # the garbage collector's part (see test_properties)
    runner.now += 2000.0
    for _ in range(10):
        decisions = runner.step()
        runner.now += 100.0
        if not [d for d in decisions if isinstance(d, BindPod | CreatePlaceholder)]:
            break
    check_invariants(w)
    s = w.scheduler
    assert not any(rt.assumed for rt in s.groups.values() if rt.timed_out)
    for key, rt in s.groups.items():  # every enqueue earmark is still owed
        if rt.earmark:
            assert rt.inqueue and not rt.satisfied, f"{key} earmarks {rt.earmark}"
    for pod in w.pods.values():
        if pod.ours and pod.node_name is None and pod.active:
            assert pod.uid in w.pending_reasons, f"{pod.name} waits without a reason"
    return runner


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters(), ops, st.sampled_from(sorted(CONFIGS)))
@example(  # a gang admitted, given placeholders and released for a deadlock in one cycle
    Cluster(nodes=((2, 4, False, True),) * 4, root_cpu=None, qa_cpu=None, qb_cpu=None,
            qa_policy=SortPolicy.FIFO),
    [("accumulate", 0, 0, 0), ("member", 0, 2, 0), ("delete", 0, 0, 0),
     ("member", 0, 0, 0), ("gang", 1, 74, 210)],
    "default",
)
def test_the_actions_keep_every_invariant(cluster: Cluster, operations: list[Op],
                                          config: str) -> None:
    run(cluster, operations, CONFIGS[config])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), ops, st.sampled_from(sorted(CONFIGS)))
def test_the_actions_are_deterministic(cluster: Cluster, operations: list[Op],
                                       config: str) -> None:
    first = run(cluster, operations, CONFIGS[config])
    second = run(cluster, operations, CONFIGS[config])
    assert first.log == second.log


def test_accumulating_gangs_in_a_small_queue_never_stay_deadlocked() -> None:
    """The classic case, drawn out: NonStrict gangs of 5 in a queue of 10 cpu, holding 3,
    3, 4, ... as their members arrive. Every cycle checks that no deadlock is left."""
    runner = ActionRunner(SimWorld(config=CONFIGS["no-enqueue"]))
    runner.setup(Cluster(nodes=((8, 110, False, True),) * 2, root_cpu=None, qa_cpu=10,
                         qb_cpu=None, qa_policy=SortPolicy.FIFO))
    for held in (3, 3, 4, 4, 2):
        runner.apply(("accumulate", 2, 1, held - 1))  # queue qa, 1-cpu members
        runner.step()
    assert [e.target.name for e in runner.world.events if e.reason == "DeadlockBroken"]
