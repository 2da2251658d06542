"""Reserve, Unreserve and PreBind: run on the chosen node; PreBind's decisions precede
the pod's Binding; a refusal fails the placement and undoes the reservations."""

from __future__ import annotations

import pytest
from gangsched.core.framework import interface as fw
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.plugins.registry import DEFAULT_PLUGINS, REGISTRY
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindPod, EventType, ObjectRef, RecordEvent
from gangsched.core.values.model import Node, Pod, PodUID
from gangsched.core.values.observations import NodeObserved, PodObserved
from gangsched.core.values.resources import Resources


class Recorder:
    """Reserves (or refuses to), and asks for an Event before the bind."""

    name = "Recorder"

    def __init__(self, refuse: bool) -> None:
        self.refuse = refuse
        self.calls: list[str] = []

    def reserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        self.calls.append(f"reserve {node}")
        return fw.unschedulable("no") if self.refuse else fw.SUCCESS

    def unreserve(self, state: fw.CycleState, pod: PodInfo, node: str) -> None:
        self.calls.append(f"unreserve {node}")

    def pre_bind(self, state: fw.CycleState, pod: PodInfo, node: str) -> fw.Status:
        self.calls.append(f"pre_bind {node}")
        state.decisions.append(RecordEvent(ObjectRef("Pod", pod.namespace, pod.name, pod.uid),
                                           EventType.NORMAL, "PreBound", node))
        return fw.SUCCESS


@pytest.mark.parametrize(("refuse", "calls", "bound"), [
    pytest.param(False, ["reserve n", "pre_bind n"], True, id="reserved-then-prebound"),
    pytest.param(True, ["reserve n", "unreserve n"], False, id="refused-and-undone"),
])
def test_reserve_and_prebind(refuse: bool, calls: list[str], bound: bool) -> None:
    plugin = Recorder(refuse)
    s = Scheduler(plugins={**REGISTRY, "Recorder": lambda _: plugin},
                  default_plugins=(*DEFAULT_PLUGINS, ("Recorder", 0)))
    s.observe(NodeObserved(Node("n", Resources({"cpu": 4000, "memory": 2**34, "pods": 10}))))
    s.observe(PodObserved(Pod(PodUID("uid-p"), "default", "p", Resources({"cpu": 100}))))
    decisions = s.cycle(1.0)
    kinds = [type(d).__name__ for d in decisions if isinstance(d, BindPod | RecordEvent)]
    assert plugin.calls[:2] == calls
    assert kinds == (["RecordEvent", "BindPod"] if bound else [])
