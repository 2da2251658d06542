"""Preemption as kube-scheduler's DefaultPreemption does it: each row is written as the
Kubernetes objects a user writes, translated as the operator translates them, and run
through the whole core (the ``preempt`` action included). Each row's id names the
upstream function it follows:

* ``PodEligibleToPreemptOthers`` (``defaultpreemption/default_preemption.go``): who may
  preempt at all;
* ``SelectVictimsOnNode`` (same file): every filter runs again with the victims gone,
  lower-priority pods of every scheduler are candidates, and the victims are reprieved
  highest priority first (for a gang, the same rule: every member must pass every
  filter with its victims gone);
* ``pickOneNodeForPreemption`` (``preemption/preemption.go``) with
  ``filterPodsWithPDBViolation``: the node whose victims violate the fewest
  PodDisruptionBudgets wins, and a budget is broken only when nothing else makes room;
* ``addGENominatedPods`` (``runtime/framework.go``): a nominated pod holds its room only
  against pods of no higher priority than its own.

Where gangsched keeps a deliberate difference (priority preemption stays within a queue),
the row asserts the documented behaviour.
"""

from __future__ import annotations

from typing import Any

import pytest
from conformance import HOST, anti, node, pod, term
from gangsched.core.values.decisions import DeletePod, EvictPod
from gangsched.core.values.model import PodUID, SchedulerConfig
from gangsched.core.values.observations import EvictionFailed
from gangsched.shell import explain
from gangsched.translate.labels import LABEL_POD_GROUP
from gangsched.translate.pods import pod_from_k8s

from tests.core.builders import make_podgroup, make_queue
from tests.core.simworld import SimWorld

DEFAULT_SCHEDULER = "default-scheduler"


class World(SimWorld):
    """A world whose Eviction API refuses the pods in ``protected`` (a 429, as a
    PodDisruptionBudget with no disruptions allowed would)."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        super().__init__(config=config or SchedulerConfig())
        self.protected: set[str] = set()

    def _evict(self, d: EvictPod) -> None:
        if d.name in self.protected and d.uid in self.pods:
            self.observe(EvictionFailed(d.uid, 429, "Cannot evict pod as it would violate "
                                        "the pod's disruption budget."))
            return
        super()._evict(d)


def world(*nodes: str, cpu: str = "4") -> World:
    w = World()
    for name in nodes:
        w.add_node(node(name, cpu=cpu, memory="8Gi"))
    return w


def ours(obj: dict[str, Any], *, priority: int = 0, scheduler: str = "gangsched",
         queue: str | None = None) -> dict[str, Any]:
    obj["spec"]["schedulerName"] = scheduler
    obj["spec"]["priority"] = priority
    if queue is not None:
        obj["metadata"]["labels"]["gangsched.io/queue"] = queue
    return obj


def running(obj: dict[str, Any], where: str) -> dict[str, Any]:
    obj["spec"]["nodeName"] = where
    obj["status"] = {"phase": "Running"}
    return obj


def add(w: SimWorld, obj: dict[str, Any]) -> None:
    w.add_pod(pod_from_k8s(obj))


def evicted(w: SimWorld) -> set[str]:
    """Pods the core asked to go: evicted, or deleted as a last resort."""
    return ({d.name for d in w.decisions if isinstance(d, EvictPod)}
            | {d.name for d in w.decisions if isinstance(d, DeletePod)})


def deleted(w: SimWorld) -> set[str]:
    return {d.name for d in w.decisions if isinstance(d, DeletePod)}


def run(w: SimWorld, start: float = 1.0, cycles: int = 6) -> None:
    for i in range(cycles):
        w.settle(start + i, cycles=3)


# --- PodEligibleToPreemptOthers ---------------------------------------------------------


@pytest.mark.parametrize(("policy", "preempts"), [
    pytest.param("Never", False, id="PodEligibleToPreemptOthers-preemptionPolicy-Never"),
    pytest.param("PreemptLowerPriority", True, id="control-PreemptLowerPriority"),
    pytest.param(None, True, id="control-policy-unset"),
])
def test_preemption_policy(policy: str | None, preempts: bool) -> None:
    """A pod whose ``spec.preemptionPolicy`` is ``Never`` never preempts, whatever its
    priority: it waits for room (``PodEligibleToPreemptOthers``)."""
    w = world("n0")
    add(w, running(ours(pod("low", cpu="3")), "n0"))
    w.settle(0)
    extra = {} if policy is None else {"preemptionPolicy": policy}
    add(w, ours(pod("high", cpu="2", **extra), priority=1000))
    run(w)
    assert evicted(w) == ({"low"} if preempts else set())
    assert (w.node_of("high") == "n0") is preempts


def test_nominated_pod_waits_for_its_terminating_victims() -> None:
    """PodEligibleToPreemptOthers: a pod nominated to a node on which a lower-priority
    pod is still terminating does not preempt again (not on another node either): the
    room it preempted for is on its way."""
    w = world("n0", "n1")
    going = running(ours(pod("going", cpu="3")), "n0")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    add(w, going)
    add(w, running(ours(pod("other", cpu="3")), "n1"))
    w.settle(0)
    high = ours(pod("high", cpu="2"), priority=100)
    high["status"] = {"nominatedNodeName": "n0"}
    add(w, high)
    run(w)
    assert evicted(w) == set()
    assert w.node_of("high") is None
    w.delete("going")  # the victim's deletion completes: the pod takes its room
    run(w, start=10)
    assert w.node_of("high") == "n0"
    assert evicted(w) == set()


# --- SelectVictimsOnNode ----------------------------------------------------------------


def test_victims_are_chosen_with_every_filter_run_again() -> None:
    """SelectVictimsOnNode: a preemptor with required anti-affinity to a high-priority
    ``db`` pod on n1 gains nothing from evicting on n1 (the ``db`` pod stays); it
    evicts on n2 and binds there. The n1 victim would be the cheaper by capacity alone
    (the newest of the lowest priority)."""
    w = world("n1", "n2", cpu="2")
    add(w, running(ours(pod("db", cpu="500m", labels={"app": "db"}), priority=1000), "n1"))
    add(w, running(ours(pod("low-n2", cpu="1500m")), "n2"))
    add(w, running(ours(pod("low-n1", cpu="1500m")), "n1"))
    w.settle(0)
    add(w, ours(pod("web", cpu="1", affinity=anti(term(HOST, {"app": "db"}))), priority=100))
    run(w)
    assert evicted(w) == {"low-n2"}
    assert w.node_of("web") == "n2"
    assert w.node_of("low-n1") == "n1" and w.node_of("db") == "n1"


def test_a_gang_that_would_not_fit_with_its_victims_gone_evicts_nothing() -> None:
    """SelectVictimsOnNode's rule (the filters run again with the victims gone), for a
    gang: two members (one per node by size) that each repel the high-priority ``db``
    pod. Capacity alone says that evicting both low pods makes room; but a member
    placed on n1 fails its anti-affinity, so the gang would not run and nothing is
    evicted (upstream, the first member would take n2 and the second find no node: a
    gang is all or nothing)."""
    w = world("n1", "n2", cpu="2")
    w.add_group(make_podgroup("pair", 2, priority=100))
    add(w, running(ours(pod("db", cpu="500m", labels={"app": "db"}), priority=1000), "n1"))
    add(w, running(ours(pod("low-n1", cpu="1500m")), "n1"))
    add(w, running(ours(pod("low-n2", cpu="1500m")), "n2"))
    w.settle(0)
    for i in range(2):
        add(w, ours(pod(f"pair-{i}", cpu="1500m", labels={LABEL_POD_GROUP: "pair"},
                        affinity=anti(term(HOST, {"app": "db"}))), priority=100))
    run(w)
    assert evicted(w) == set()
    assert w.node_of("pair-0") is None and w.node_of("pair-1") is None


def test_a_gang_whose_members_repel_each_other_takes_one_node_each() -> None:
    """SelectVictimsOnNode's rule for a gang whose two members repel each other on the
    hostname: capacity alone would free one node for both; with every filter run again
    the second member needs a node of its own, so the low pod of each node goes, and
    the members bind one per node (as upstream would, one pod after the other)."""
    w = world("n1", "n2")
    w.add_group(make_podgroup("pair", 2, priority=100))
    add(w, running(ours(pod("low-n1", cpu="4")), "n1"))
    add(w, running(ours(pod("low-n2", cpu="4")), "n2"))
    w.settle(0)
    for i in range(2):
        add(w, ours(pod(f"pair-{i}", cpu="1", labels={LABEL_POD_GROUP: "pair", "app": "pair"},
                        affinity=anti(term(HOST, {"app": "pair"}))), priority=100))
    run(w)
    assert evicted(w) == {"low-n1", "low-n2"}
    assert {w.node_of("pair-0"), w.node_of("pair-1")} == {"n1", "n2"}


def test_a_host_port_wait_preempts_the_pod_holding_the_port() -> None:
    """SelectVictimsOnNode (NodePorts run with the victims gone): a pod that waits for a
    host port, not for capacity, evicts the lower-priority pod holding it."""
    w = world("n0")
    add(w, running(ours(pod("holder", cpu="100m",
                            ports=[{"containerPort": 80, "hostPort": 8080}])), "n0"))
    w.settle(0)
    add(w, ours(pod("web", cpu="100m", ports=[{"containerPort": 80, "hostPort": 8080}]),
                priority=100))
    run(w)
    assert evicted(w) == {"holder"}
    assert w.node_of("web") == "n0"


def test_an_anti_affinity_wait_preempts_the_matching_pod() -> None:
    """SelectVictimsOnNode (InterPodAffinity runs with the victims gone): a pod whose
    required anti-affinity excludes every node evicts the lower-priority pod it repels."""
    w = world("n0")
    add(w, running(ours(pod("cache", cpu="100m", labels={"app": "cache"})), "n0"))
    w.settle(0)
    add(w, ours(pod("web", cpu="100m", affinity=anti(term(HOST, {"app": "cache"}))),
                priority=100))
    run(w)
    assert evicted(w) == {"cache"}
    assert w.node_of("web") == "n0"


def test_other_schedulers_pods_are_victims() -> None:
    """SelectVictimsOnNode: every pod on the node of lower priority is a candidate,
    whichever scheduler placed it."""
    w = world("n0")
    add(w, running(ours(pod("theirs", cpu="3"), scheduler=DEFAULT_SCHEDULER), "n0"))
    w.settle(0)
    add(w, ours(pod("high", cpu="2"), priority=100))
    run(w)
    assert evicted(w) == {"theirs"}
    assert w.node_of("high") == "n0"


def test_victims_are_reprieved_highest_priority_first() -> None:
    """SelectVictimsOnNode: with every lower-priority pod gone the preemptor fits; the
    victims are then given back highest priority first while it still fits, so the
    lowest-priority pod goes even though it is the oldest."""
    w = world("n0")
    add(w, running(ours(pod("p1", cpu="1"), priority=1), "n0"))
    add(w, running(ours(pod("p3", cpu="1"), priority=3), "n0"))
    add(w, running(ours(pod("p2", cpu="1"), priority=2), "n0"))
    w.settle(0)
    add(w, ours(pod("high", cpu="2", affinity=anti(term(HOST, {"app": "none"}))),
                priority=10))
    run(w)
    assert evicted(w) == {"p1"}
    assert w.node_of("high") == "n0"


# --- PodDisruptionBudgets: pickOneNodeForPreemption, filterPodsWithPDBViolation ----------


def test_a_node_without_budget_violations_is_preferred() -> None:
    """pickOneNodeForPreemption: the candidate with the fewest PDB violations wins. A
    victim whose eviction a budget refused counts as violating: the next attempt takes
    the other node's pod and leaves the protected one running."""
    w = world("n1", "n2")
    add(w, running(ours(pod("guarded", cpu="3")), "n1"))
    add(w, running(ours(pod("free", cpu="3")), "n2"))
    w.protected.add("guarded")
    w.settle(0)
    add(w, ours(pod("high", cpu="2", affinity=anti(term(HOST, {"app": "none"}))),
                priority=100))
    run(w, cycles=80)
    assert w.node_of("high") == "n2"
    assert w.node_of("guarded") == "n1"
    assert "guarded" not in deleted(w)


def test_a_budget_is_violated_only_as_a_last_resort() -> None:
    """filterPodsWithPDBViolation and SelectVictimsOnNode: when only a pod a budget
    protects makes room, upstream deletes it anyway (preemption does not go through the
    Eviction API). gangsched asks the Eviction API first; once the budget has refused,
    it deletes the pod, and the preemptor binds."""
    w = world("n0")
    add(w, running(ours(pod("guarded", cpu="3")), "n0"))
    w.protected.add("guarded")
    w.settle(0)
    add(w, ours(pod("high", cpu="2"), priority=100))
    run(w, cycles=80)
    assert deleted(w) == {"guarded"}
    assert w.node_of("high") == "n0"


# --- queues: a deliberate difference -----------------------------------------------------


def test_priority_preemption_stays_within_a_queue_and_explain_says_so() -> None:
    """Upstream has no queues. gangsched's priority preemption takes only from the
    preemptor's own queue (another queue's room comes back by reclaim, which follows the
    queue shares); ``explain`` says so when work waits for room."""
    w = World(config=SchedulerConfig(actions=("enqueue", "allocate", "preempt")))
    w.add_queue(make_queue("a"))
    w.add_queue(make_queue("b"))
    w.add_node(node("n0", cpu="4", memory="8Gi"))
    add(w, running(ours(pod("low-b", cpu="3"), queue="b"), "n0"))
    w.settle(0)
    add(w, ours(pod("high-a", cpu="2"), priority=100, queue="a"))
    run(w)
    assert evicted(w) == set()
    assert w.node_of("high-a") is None
    waiting = {"kind": "Application", "metadata": {"namespace": "default", "name": "a"},
               "status": {"state": "Accepted", "taskGroups": [{
                   "name": "main", "minMember": 1, "blockingReason": {
                       "reason": "Capacity", "message": "0/1 nodes are available"}}]}}
    lines = [line.strip() for line in explain.format_explanation(waiting).splitlines()]
    assert ("preemption: only lower-priority work of its own queue, or of other schedulers, "
            "is preempted for it; other queues give room back by reclaim, as far as the "
            "queue shares allow") in lines


# --- nominated pods: addGENominatedPods --------------------------------------------------


@pytest.mark.parametrize(("priority", "binds"), [
    pytest.param(100, True, id="addGENominatedPods-higher-priority-takes-the-room"),
    pytest.param(0, False, id="addGENominatedPods-equal-priority-leaves-it"),
])
def test_another_schedulers_nominated_pod(priority: int, binds: bool) -> None:
    """A pending pod of another scheduler nominated to a node holds its room only
    against pods of no higher priority than its own (upstream adds nominated pods of
    priority >= the incoming pod's before filtering)."""
    w = world("n0")
    nominated = ours(pod("nominated", cpu="3"), scheduler=DEFAULT_SCHEDULER)
    nominated["status"] = {"nominatedNodeName": "n0"}
    add(w, nominated)
    w.settle(0)
    add(w, ours(pod("incoming", cpu="2"), priority=priority))
    run(w)
    assert (w.node_of("incoming") == "n0") is binds
    assert evicted(w) == set()
    assert PodUID("uid-default-nominated") in w.pods
