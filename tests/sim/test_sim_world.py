"""World's compatible extensions: the pod listener, the name index, keep_decisions."""

from __future__ import annotations

from gangsched.core.scheduler import Scheduler
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    Node,
    Pod,
    PodPhase,
    PodUID,
    SchedulingPolicy,
    TaskGroup,
)
from gangsched.core.values.resources import Resources
from gangsched.sim.world import World

CPU = Resources.from_k8s({"cpu": 1, "memory": "1Gi"})


class Recorder:
    def __init__(self) -> None:
        self.changes: list[tuple[str | None, str | None]] = []

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        def state(pod: Pod | None) -> str | None:
            return None if pod is None else f"{pod.name}@{pod.node_name}:{pod.phase.value}"

        self.changes.append((state(old), state(new)))


def world(listener: Recorder | None = None, *, keep: bool = True) -> World:
    w = World(Scheduler(), listener=listener, keep_decisions=keep)
    w.add_node(Node("n1", Resources.from_k8s({"cpu": 8, "memory": "8Gi", "pods": 10})))
    return w


def test_the_listener_sees_every_pod_change() -> None:
    recorder = Recorder()
    w = world(recorder)
    w.add_pod(Pod(PodUID("u1"), "default", "p1", CPU))
    w.step(1.0)
    w.finish("p1")
    w.delete_pod(PodUID("u1"))
    assert recorder.changes == [
        (None, "p1@None:Pending"),
        ("p1@None:Pending", "p1@n1:Running"),
        ("p1@n1:Running", "p1@n1:Succeeded"),
        ("p1@n1:Succeeded", None),
    ]


def test_lookups_by_name_use_the_index_and_still_see_pods_put_directly() -> None:
    w = world()
    w.add_pod(Pod(PodUID("u1"), "default", "p1", CPU))
    assert w.uid_of("p1") == "u1" and w.find("p2") is None
    w.pods[PodUID("u2")] = Pod(PodUID("u2"), "ns", "p2", CPU)  # as an older test might do
    assert w.pod("p2", "ns").uid == "u2"


def test_placeholders_are_created_once_by_name() -> None:
    w = world(keep=False)
    app = AppSpec(AppKey("default/a"), uid="a", task_groups=(TaskGroup("g", 2, CPU),),
                  policy=SchedulingPolicy())
    w.add_app(app)
    w.add_pod(Pod(PodUID("r1"), "default", "a-0", CPU, app=app.key, task_group="g"))
    for t in range(5):
        w.step(float(t))
    assert w.decisions == []  # keep_decisions=False
    assert len(w.placeholders(app.key)) == 1  # one of two swapped for the real pod
    assert w.pods[PodUID("r1")].phase is PodPhase.RUNNING
