"""A slow simulated cluster: graceful deletion, pods Running late, watches that lag.

The shipped simulations run under those latencies and keep the gang guarantee: no node
ever holds more than its allocatable, and no gang has some but not all of its minimum
bound for longer than a swap takes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.model import Node, Pod, PodPhase, PodUID
from gangsched.core.values.resources import Resources
from gangsched.sim import parse, report, results, runner
from gangsched.sim.latency import Latency
from gangsched.sim.partial import PartialGangs
from gangsched.sim.source import WorkloadError
from gangsched.sim.source import parse as parse_text
from gangsched.sim.world import World

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulations"
SLOW = Latency(grace_min=0.2, grace_max=5.0, running_after=1.0, watch_delay=0.5,
               stopped_before_gone=0.5)
NODES = "nodes:\n  - {pool: worker, count: 1, cpu: 8, memory: 32Gi}\n"


def settings(latency: str) -> str:
    return NODES + "settings:\n  latency: " + latency + "\n"


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("{gracefulDeletionSeconds: 2}", Latency(2, 2), id="one-period"),
    pytest.param("{gracefulDeletionSeconds: [0.2, 5], runningAfterSeconds: 1, "
                 "watchDelaySeconds: 0.5, stoppedBeforeGoneSeconds: 0.5}", SLOW, id="all"),
    pytest.param("{}", Latency(), id="instant"),
])
def test_latency_settings(text: str, expected: Latency) -> None:
    workload = parse.build(parse_text(settings(text), "w.yaml"))
    assert workload.settings.latency == expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("{gracefulDeletionSeconds: [5, 1]}", "[min, max]: 1 is less than 5",
                 id="reversed"),
    pytest.param("{gracefulDeletionSeconds: [1, -1]}", "gracefulDeletionSeconds[1]: must be",
                 id="negative-bound"),
    pytest.param("{gracefulDeletionSeconds: [1, 2, 3]}", "a number of seconds or [min, max]",
                 id="three"),
    pytest.param("{watchDelaySeconds: -1}", "watchDelaySeconds: must be a number", id="neg"),
    pytest.param("{lag: 1}", "latency.lag", id="unknown-field"),
])
def test_bad_latency_settings_are_named(text: str, expected: str) -> None:
    with pytest.raises(WorkloadError) as caught:
        parse.build(parse_text(settings(text), "w.yaml"))
    assert any(expected in str(e) for e in caught.value.errors), caught.value.errors


def test_a_period_is_fixed_by_uid_within_the_range() -> None:
    periods = {SLOW.grace(f"pod-{i}") for i in range(50)}
    assert all(0.2 <= p <= 5.0 for p in periods)
    assert len(periods) > 40  # spread over the range, not one value
    assert SLOW.grace("pod-7") == SLOW.grace("pod-7")


def bound_world(latency: Latency) -> tuple[World, PodUID]:
    w = World(Scheduler(), latency=latency)
    w.add_node(Node("n0", Resources.from_k8s({"cpu": "2", "pods": "10"})))
    pod = Pod(PodUID("u1"), "default", "p", Resources.from_k8s({"cpu": "2"}), node_name="n0",
              phase=PodPhase.RUNNING, ours=False)
    w.add_pod(pod)
    w.advance(latency.watch_delay)
    return w, pod.uid


def test_a_deleted_pod_keeps_its_node_until_its_graceful_deletion_ends() -> None:
    latency = Latency(grace_min=3, grace_max=3)
    w, uid = bound_world(latency)
    w.delete_pod(uid)
    assert w.pods[uid].terminating and w.pods[uid].node_name == "n0"
    assert w.scheduler.cluster.nodes["n0"].free.get("cpu") == 0
    assert w.next_due() == 3
    w.advance(2.9)
    assert uid in w.pods
    w.advance(3)
    assert uid not in w.pods
    assert w.scheduler.cluster.nodes["n0"].free.get("cpu") == 2000


def test_observations_reach_the_core_late_and_in_order() -> None:
    w, uid = bound_world(Latency(watch_delay=0.5))
    w.delete_pod(uid)  # no grace: gone at once in the world
    assert uid not in w.pods and uid in w.scheduler.pods
    w.advance(0.9)
    assert uid in w.scheduler.pods
    w.advance(1.0)
    assert uid not in w.scheduler.pods


def test_a_bound_pod_runs_after_the_kubelet_starts_it() -> None:
    w = World(Scheduler(), latency=Latency(running_after=2))
    w.add_node(Node("n0", Resources.from_k8s({"cpu": "2", "pods": "10"})))
    w.add_pod(Pod(PodUID("u1"), "default", "p", Resources.from_k8s({"cpu": "1"})))
    w.step(0)
    assert w.pods[PodUID("u1")].node_name == "n0"
    assert w.pods[PodUID("u1")].phase is PodPhase.PENDING
    w.step(2)
    assert w.pods[PodUID("u1")].phase is PodPhase.RUNNING


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_the_shipped_simulations_keep_the_gang_guarantee_under_latency(path: Path) -> None:
    workload = parse.load(str(path))
    (instant,) = runner.run_all(workload, ["gangsched"])
    (slow,) = runner.run_all(runner.with_latency(workload, SLOW), ["gangsched"])
    fast_summary, slow_summary = results.summarise(instant), results.summarise(slow)
    for summary in (fast_summary, slow_summary):
        assert summary.counters["overCommittedNodes"] == 0
        assert summary.partial_gangs.violations == 0, summary.partial_gangs
    assert fast_summary.partial_gangs.max_seconds == 0
    assert slow_summary.partial_gangs.max_seconds <= SLOW.swap_seconds
    assert slow_summary.completed == fast_summary.completed
    world = slow.backend.world  # type: ignore[union-attr]
    assert world.bind_refused.get(409, 0) == 0  # the core never binds a pod twice


def test_pod_by_pod_gangs_run_partially_and_the_summary_says_so() -> None:
    workload = parse.load(str(EXAMPLES / "deadlock.yaml"))
    gang, naive = runner.run_all(workload, ["gangsched", "naive"])
    naive_partial = results.summarise(naive).partial_gangs
    assert naive_partial.violations == 3 and naive_partial.max_seconds == 20
    assert results.summarise(gang).partial_gangs.violations == 0
    data = json.loads(json.dumps(results.summarise(naive).to_json()))
    assert data["partialGangs"] == {"maxSeconds": 20.0, "totalSeconds": 60.0,
                                    "violations": 3, "limitSeconds": 0.0}
    text = report.summary(naive)
    assert "partial gangs" in text and "max 20.0s, total 60.0s; 3 over 0s" in text


def test_the_partial_measure_counts_until_the_gang_is_first_whole() -> None:
    p = PartialGangs()
    gang = ("default/a", 1, "executors")
    p.changed(gang, 3, 1, 10.0)
    p.changed(gang, 3, 1, 12.0)
    p.changed(gang, 3, 1, 15.0)  # whole after 5 s
    p.changed(gang, 3, -1, 20.0)  # a member finished: not counted
    other = ("default/b", 1, None)
    p.changed(other, 2, 1, 30.0)
    p.end_attempt("default/b", 40.0)  # never whole: 10 s
    summary = p.summary(limit=6.0)
    assert (summary.max_seconds, summary.total_seconds, summary.violations) == (10, 15, 1)


def test_a_slow_cluster_is_documented_in_the_summary() -> None:
    text = textwrap.dedent("""\
        nodes:
          - {pool: worker, count: 1, cpu: 4, memory: 16Gi}
        settings:
          latency: {gracefulDeletionSeconds: [0.5, 2], runningAfterSeconds: 1}
        pods:
          - {name: a, duration: 10}
        """)
    workload = parse.build(parse_text(text, "w.yaml"))
    (out,) = runner.run_all(workload, ["gangsched"])
    assert "cluster latency: deletion 0.5-2s, running after 1s" in report.summary(out)
    assert results.summarise(out).to_json()["latency"] == {
        "gracefulDeletionSeconds": [0.5, 2.0], "stoppedBeforeGoneSeconds": 0.0,
        "runningAfterSeconds": 1.0,
        "watchDelaySeconds": 0.0}
