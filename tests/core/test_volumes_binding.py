"""Volume bindings across pods and cycles: assume, write, confirm, roll back, gangs."""

from __future__ import annotations

import dataclasses

import pytest
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindGang, BindPod, BindVolume, PodPending
from gangsched.core.values.model import Node, PodPhase
from gangsched.core.values.observations import (
    BindFailed,
    NodeObserved,
    PodGroupObserved,
    PodObserved,
    VolumeBindFailed,
    VolumeObserved,
)
from gangsched.core.values.volume_specs import ClaimRef

from tests.core.builders import make_node, make_pod, make_podgroup
from tests.core.volume_builders import FAST, LOCAL, make_pv, make_pvc, with_volumes


def host(name: str, cpu: int = 4) -> Node:
    return make_node(name, cpu, labels={"kubernetes.io/hostname": name})


def cluster(*objects: object, nodes: tuple[str, ...] = ("n1", "n2", "n3")) -> Scheduler:
    s = Scheduler()
    for name in nodes:
        s.observe(NodeObserved(host(name)))
    for obj in objects:
        s.observe(VolumeObserved(obj))  # type: ignore[arg-type]
    return s


def binds(decisions: list[object]) -> dict[str, BindPod]:
    """Every bind asked for, a gang's included."""
    found: dict[str, BindPod] = {}
    for d in decisions:
        for b in d.binds if isinstance(d, BindGang) else (d,):
            if isinstance(b, BindPod):
                found[b.name] = b
    return found


def pending(decisions: list[object]) -> dict[str, PodPending]:
    return {d.name: d for d in decisions if isinstance(d, PodPending)}


def test_two_pods_in_one_cycle_never_take_the_same_volume() -> None:
    s = cluster(LOCAL, make_pv("only", node="n2"), make_pvc("a"), make_pvc("b"))
    s.observe(PodObserved(with_volumes(make_pod("pa", creation=1.0), "a")))
    s.observe(PodObserved(with_volumes(make_pod("pb", creation=2.0), "b")))
    out = s.cycle(now=10.0)
    assert binds(out)["pa"].volumes == (BindVolume("only", "7", "default", "a", "uid-pvc-a"),)
    assert "pb" not in binds(out)
    assert "didn't find available persistent volumes" in pending(out)["pb"].message


def test_a_gang_is_assumed_on_distinct_volumes_and_bound_as_one_with_every_write() -> None:
    s = cluster(LOCAL, make_pv("pv-1", node="n1"), make_pv("pv-2", node="n2"),
                make_pvc("m0"), make_pvc("m1"))
    s.observe(PodGroupObserved(make_podgroup("job", 2)))
    for i in range(2):
        s.observe(PodObserved(with_volumes(make_pod(f"w{i}", pod_group="job"), f"m{i}")))
    out = s.cycle(now=10.0)
    (gang,) = [d for d in out if isinstance(d, BindGang)]  # all writes before any Binding
    assert [d for d in out if isinstance(d, BindPod)] == []
    assert {b.name: (b.node, b.volumes) for b in gang.binds} == {
        "w0": ("n1", (BindVolume("pv-1", "7", "default", "m0", "uid-pvc-m0"),)),
        "w1": ("n2", (BindVolume("pv-2", "7", "default", "m1", "uid-pvc-m1"),))}


def test_a_gang_without_volumes_is_bound_pod_by_pod() -> None:
    s = cluster()
    s.observe(PodGroupObserved(make_podgroup("job", 2)))
    for i in range(2):
        s.observe(PodObserved(make_pod(f"w{i}", pod_group="job")))
    out = s.cycle(now=10.0)
    assert [d.name for d in out if isinstance(d, BindPod)] == ["w0", "w1"]
    assert not [d for d in out if isinstance(d, BindGang)]


@pytest.mark.parametrize("volumes", [
    pytest.param(("pv-1",), id="one-volume-for-two-members"),
    pytest.param((), id="no-volume-at-all"),
])
def test_a_gang_whose_volumes_do_not_all_fit_binds_nothing_and_holds_nothing(
    volumes: tuple[str, ...]
) -> None:
    s = cluster(LOCAL, *[make_pv(v, node="n1") for v in volumes], make_pvc("m0"),
                make_pvc("m1"))
    s.observe(PodGroupObserved(make_podgroup("job", 2)))
    for i in range(2):
        s.observe(PodObserved(with_volumes(make_pod(f"w{i}", pod_group="job"), f"m{i}")))
    out = s.cycle(now=10.0)
    assert binds(out) == {}
    assert s.volumes.assumed_volume == {}
    assert s.volumes.by_pod == {}


def test_a_failed_volume_write_frees_the_volume_and_the_pod_tries_again_later() -> None:
    s = cluster(LOCAL, make_pv("pv", node="n2"), make_pvc("data"))
    p = with_volumes(make_pod("p"), "data")
    s.observe(PodObserved(p))
    first = binds(s.cycle(now=10.0))["p"]
    assert s.volumes.assumed_volume == {"pv": "default/data"}
    s.observe(VolumeBindFailed(p.uid, first.node, 409, "persistentvolume pv changed"))
    out = s.cycle(now=10.5)
    assert s.volumes.assumed_volume == {}
    assert pending(out)["p"].reason == "VolumeBindFailed"
    assert binds(out) == {}
    again = binds(s.cycle(now=30.0))
    assert again["p"].node == "n2"
    assert again["p"].volumes == first.volumes


def test_a_failed_pod_bind_gives_its_volumes_back() -> None:
    s = cluster(LOCAL, make_pv("pv", node="n2"), make_pvc("data"))
    p = with_volumes(make_pod("p"), "data")
    s.observe(PodObserved(p))
    first = binds(s.cycle(now=10.0))["p"]
    s.observe(BindFailed(p.uid, first.node, 500, "boom"))
    s.cycle(now=10.5)
    assert s.volumes.assumed_volume == {}


def test_an_assumption_ends_when_the_api_shows_it_done() -> None:
    pv = make_pv("pv", node="n2")
    s = cluster(LOCAL, pv, make_pvc("data"))
    p = with_volumes(make_pod("p"), "data")
    s.observe(PodObserved(p))
    s.cycle(now=10.0)
    s.observe(VolumeObserved(dataclasses.replace(
        pv, claim_ref=ClaimRef("default", "data", "uid-pvc-data"), phase="Bound")))
    assert s.volumes.assumed_claim == {}
    s.observe(VolumeObserved(make_pvc("data", volume="pv")))
    s.observe(PodObserved(dataclasses.replace(p, node_name="n2", phase=PodPhase.RUNNING)))
    s.cycle(now=11.0)
    assert s.volumes.users == {"default/data": {p.uid}}


def test_a_provisioning_claim_is_annotated_once_for_one_node() -> None:
    s = cluster(FAST, make_pvc("data", storage_class="fast"))
    s.observe(PodObserved(with_volumes(make_pod("p1", creation=1.0), "data")))
    s.observe(PodObserved(with_volumes(make_pod("p2", creation=2.0, cpu=4), "data")))
    out = s.cycle(now=10.0)
    assert binds(out)["p1"].node == "n1"
    # the second pod shares the claim being provisioned for n1: only n1 will do
    assert "p2" not in binds(out)


def test_a_volume_appearing_lets_a_waiting_pod_go() -> None:
    s = cluster(LOCAL, make_pvc("data"))
    s.observe(PodObserved(with_volumes(make_pod("p"), "data")))
    assert binds(s.cycle(now=10.0)) == {}
    s.observe(VolumeObserved(make_pv("pv", node="n3")))
    assert binds(s.cycle(now=11.0))["p"].node == "n3"


def test_room_nominated_for_another_schedulers_pod_is_taken_until_the_nomination_goes() -> None:
    s = cluster(nodes=("n1", "n2"))
    theirs = dataclasses.replace(make_pod("theirs", cpu=3, ours=False), nominated_node="n1")
    s.observe(PodObserved(theirs))
    s.observe(PodObserved(make_pod("ours", cpu=2)))
    assert binds(s.cycle(now=10.0))["ours"].node == "n2"
    s.observe(PodObserved(dataclasses.replace(theirs, nominated_node=None)))
    s.observe(PodObserved(make_pod("next", cpu=4)))
    assert binds(s.cycle(now=11.0))["next"].node == "n1"


def test_at_the_swap_a_real_pod_whose_volume_is_elsewhere_is_placed_on_the_volumes_node() -> None:
    from simworld import SimWorld

    from tests.core.builders import make_app, make_group

    w = SimWorld()
    for name in ("n1", "n2"):
        w.add_node(host(name))
    for obj in (LOCAL, make_pv("pv", node="n2"), make_pvc("data")):
        w.observe(VolumeObserved(obj))
    w.add_app(make_app("job", make_group("worker", 1)))
    w.settle(1)
    (placeholder,) = [p for p in w.pods.values() if p.placeholder]
    assert placeholder.node_name == "n1"  # binpack: the first node
    real = with_volumes(make_pod("worker-0", app="job", task_group="worker"), "data")
    w.add_pod(real)
    w.settle(2)
    assert w.node_of("worker-0") == "n2"  # where its volume is, not the placeholder's node
    assert [e.message for e in w.reasons("PlaceholderReplaced")] == [
        "did not fit on node n1 after its placeholder left; placed elsewhere"]


def test_a_profile_without_volume_binding_leaves_claims_alone() -> None:
    from gangsched.core.values.model import SchedulerConfig
    from gangsched.core.values.profile import PluginSet, ProfileConfig

    config = SchedulerConfig(profile=ProfileConfig(PluginSet(disabled=("VolumeBinding",))))
    s = Scheduler(config)
    s.observe(NodeObserved(host("n1")))
    for obj in (LOCAL, make_pv("pv", node="n1"), make_pvc("data")):
        s.observe(VolumeObserved(obj))
    s.observe(PodObserved(with_volumes(make_pod("p"), "data", "missing")))
    bound = binds(s.cycle(now=1.0))
    assert bound["p"].node == "n1" and bound["p"].volumes == ()
    assert s.volumes.assumed_claim == {}
