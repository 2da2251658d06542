"""The naive binder: FIFO, pod by pod, first fit, constraints honoured, no gangs."""

from __future__ import annotations

from gangsched.core.values.constraints import Taint, Toleration, TolerationOperator
from gangsched.core.values.model import AppKey, Node, Pod, PodPhase, PodUID
from gangsched.core.values.resources import Resources
from gangsched.sim.naive import NaiveBackend
from gangsched.sim.timeline import Timeline


class Bound:
    def __init__(self) -> None:
        self.where: dict[str, str | None] = {}

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        if new is not None:
            self.where[new.name] = new.node_name


def node(name: str, cpu: int, taints: tuple[Taint, ...] = ()) -> Node:
    return Node(name, Resources.from_k8s({"cpu": cpu, "memory": "8Gi", "pods": 10}),
                {"kubernetes.io/hostname": name}, taints)


def pod(name: str, cpu: int, **kw: object) -> Pod:
    return Pod(PodUID(name), "default", name, Resources.from_k8s({"cpu": cpu}), **kw)  # type: ignore[arg-type]


def test_pods_bind_one_by_one_in_arrival_order_ignoring_gangs() -> None:
    bound = Bound()
    backend = NaiveBackend(bound, Timeline())
    backend.add_node(node("a", 4))
    key = AppKey("default/app")
    backend.add_pod(pod("driver", 2, app=key, task_group="driver"))
    backend.add_pod(pod("other", 2))
    backend.add_pod(pod("executor", 2, app=key, task_group="executor"))
    backend.cycle(0.0)
    # No gang: the driver binds alone and the executor, which came last, starves.
    assert bound.where == {"driver": "a", "other": "a", "executor": None}
    backend.set_phase(PodUID("other"), PodPhase.SUCCEEDED)
    backend.cycle(1.0)
    assert bound.where["executor"] == "a"


def test_taints_and_selectors_are_honoured() -> None:
    bound = Bound()
    backend = NaiveBackend(bound, Timeline())
    backend.add_node(node("gpu", 8, (Taint("gpu", "yes"),)))
    backend.add_node(node("plain", 8))
    backend.add_pod(pod("p1", 1, node_selector={"kubernetes.io/hostname": "gpu"}))
    backend.add_pod(pod("p2", 1, node_selector={"kubernetes.io/hostname": "gpu"},
                        tolerations=(Toleration("gpu", TolerationOperator.EXISTS),)))
    backend.add_pod(pod("p3", 1))
    backend.cycle(0.0)
    assert bound.where == {"p1": None, "p2": "gpu", "p3": "plain"}


def test_a_lost_node_deletes_its_pods() -> None:
    bound = Bound()
    backend = NaiveBackend(bound, Timeline())
    backend.add_node(node("a", 4))
    backend.add_pod(pod("p", 1))
    backend.cycle(0.0)
    backend.remove_node("a")
    assert not backend.has_pod(PodUID("p"))
