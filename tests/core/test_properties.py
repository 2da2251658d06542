"""Invariants over random workloads, checked after every cycle (see ``workloads.py``)."""

from __future__ import annotations

from gangsched.core.decisions import BindPod, CreatePlaceholder, DeletePod
from gangsched.core.model import PlaceholderPolicy, SchedulerConfig, Scoring
from hypothesis import HealthCheck, given, settings
from simworld import SimWorld
from workloads import Cluster, Op, Runner, check_invariants, clusters, ops

ACTIONS = (BindPod, CreatePlaceholder, DeletePod)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def run(cluster: Cluster, operations: list[Op], config: SchedulerConfig | None = None) -> Runner:
    runner = Runner(SimWorld(config=config))
    runner.setup(cluster)
    runner.run(operations)
    w = runner.world
    w.hold_deletes.clear()
    for pod in w.placeholders():
        if pod.app not in w.apps:
            # The garbage collector's part (placeholders are owned by their Application):
            # a core restarted after the app went never knew it, so cannot release it.
            w.delete_pod(pod.uid)
    runner.now += 2000.0  # every timer expires, every held deletion is asked for again
    for _ in range(10):  # until the world is quiet: nothing bound, created or deleted
        decisions = runner.step()
        runner.now += 100.0  # past any bind backoff
        if not [d for d in decisions if isinstance(d, ACTIONS)]:
            break
    check_invariants(w)  # nothing held any more: no placeholder is left over
    for pod in w.pods.values():  # every pod still waiting says why
        if pod.ours and pod.node_name is None and pod.active:
            assert pod.uid in w.pending_reasons, f"{pod.name} waits without a reason"
    return runner


@SETTINGS
@given(clusters(), ops)
def test_invariants_hold_after_every_cycle(cluster: Cluster, operations: list[Op]) -> None:
    run(cluster, operations)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), ops)
def test_invariants_hold_with_spread_scoring(cluster: Cluster, operations: list[Op]) -> None:
    run(cluster, operations, SchedulerConfig(gang_scoring=Scoring.SPREAD,
                                             pod_scoring=Scoring.SPREAD,
                                             percentage_of_nodes_to_score=1))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), ops)
def test_invariants_hold_with_a_placeholder_for_every_member(
    cluster: Cluster, operations: list[Op]
) -> None:
    run(cluster, operations, SchedulerConfig(placeholders=PlaceholderPolicy.ALWAYS))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), ops)
def test_same_observations_and_times_give_the_same_decisions(
    cluster: Cluster, operations: list[Op]
) -> None:
    first = run(cluster, operations)
    second = run(cluster, operations)
    assert first.log == second.log
