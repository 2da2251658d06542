"""Topology-aware gang placement, end to end in the core: a conformance table over the
gang kinds (an Application's task group, with and without placeholders; a PodGroup;
a self-affine task group), each row a positive and a negative case; the planner's
choices on their own; and a property that a gang never spans two domains of its
required key.

The cluster of most rows is the issue's: four nodes of 4 cpu in two racks; small pods
of another scheduler fill rack r1 so that it has room for two members of 1.5 cpu and
r2 for four, and make r1 the first pick of bin-packing (MostAllocated).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.framework.podinfo import PodInfo
from gangsched.core.placement import domain_search as topology
from gangsched.core.placement import domains
from gangsched.core.placement.cluster import Cluster
from gangsched.core.values.decisions import EvictPod
from gangsched.core.values.model import (
    PodPhase,
    SchedulerConfig,
    Scoring,
    SortPolicy,
    TopologyRequest,
)
from gangsched.core.values.placement_terms import AffinityTerm, Placement
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from hypothesis import given, settings
from hypothesis import strategies as st
from simworld import SimWorld

RACK = "rack"
BLOCK = "block"
HOST = "kubernetes.io/hostname"
RACKS = {"n0": "r1", "n1": "r1", "n2": "r2", "n3": "r2"}
BLOCKS = {"r1": "b1", "r2": "b1", "r3": "b2"}


def racks(used: dict[str, str] | None = None, layout: dict[str, str] | None = None,
          cpu: int = 4) -> SimWorld:
    """Nodes ``layout`` (node -> rack, blocks from :data:`BLOCKS`) with filler pods of
    another scheduler using ``used`` cpu (node -> amount)."""
    w = SimWorld()
    for name, rack in (layout or RACKS).items():
        w.add_node(make_node(name, cpu=cpu, labels={HOST: name, RACK: rack,
                                                     BLOCK: BLOCKS.get(rack, "b9")}))
    for name, amount in (used or {}).items():
        w.add_pod(make_pod(f"filler-{name}", cpu=amount, node=name, ours=False,
                           phase=PodPhase.RUNNING))
    return w


ISSUE = {"n0": "2500m", "n1": "2500m"}
"""r1 has room for two members of 1.5 cpu, r2 for four; r1 is bin-packing's first pick."""
FULL = {"n0": "2500m", "n1": "2500m", "n2": "2500m"}
"""r1 room for two, r2 for three: no rack holds four."""


def member_labels(gang: str) -> tuple[tuple[str, str], ...]:
    return (("gang", gang),)


def self_affine(gang: str, key: str = RACK) -> Placement:
    """Required pod affinity to the gang's own pods on ``key``."""
    return Placement(labels=member_labels(gang),
                     affinity=(AffinityTerm(key, LabelSelector.build({"gang": gang})),))


def app_gang(w: SimWorld, asked: TopologyRequest, *, count: int = 4, cpu: str = "1500m",
             placement: Placement | None = None, pods: bool = True) -> None:
    """An Application with one task group of ``count`` members; its pods exist from the
    start (``pods``) or come after the placeholders."""
    group = make_group("workers", count, cpu=cpu, memory="1Gi",
                       placement=placement or Placement(labels=member_labels("train")),
                       topology=asked)
    w.add_app(make_app("train", group))
    if pods:
        add_members(w, count, cpu, placement or Placement(labels=member_labels("train")))


def add_members(w: SimWorld, count: int, cpu: str, placement: Placement,
                start: int = 0) -> None:
    for i in range(start, start + count):
        w.add_pod(make_pod(f"train-{i}", cpu=cpu, app="train", task_group="workers",
                           placement=placement))


def group_gang(w: SimWorld, asked: TopologyRequest, *, count: int = 4,
               cpu: str = "1500m") -> None:
    w.add_group(dataclasses.replace(make_podgroup("train", count), topology=asked))
    for i in range(count):
        w.add_pod(make_pod(f"train-{i}", cpu=cpu, pod_group="train",
                           placement=Placement(labels=member_labels("train"))))


def app_with_placeholders(w: SimWorld, asked: TopologyRequest, **kw: object) -> None:
    """The placeholders first; the real pods once they are placed."""
    app_gang(w, asked, pods=False, **kw)  # type: ignore[arg-type]
    w.settle(0)
    add_members(w, 4, str(kw.get("cpu", "1500m")), Placement(labels=member_labels("train")))


def self_affine_app(w: SimWorld, asked: TopologyRequest) -> None:
    """The issue's stuck case: no topology field, required pod affinity to itself."""
    app_gang(w, asked, placement=self_affine("train"))


GANGS: list[Callable[[SimWorld, TopologyRequest], None]] = [app_gang, group_gang,
                                                           app_with_placeholders]
GANG_IDS = ["application", "podgroup", "placeholders"]


def where(w: SimWorld, key: str = RACK, count: int = 4) -> list[str | None]:
    """The ``key`` value of each member's node (None: not bound)."""
    found: list[str | None] = []
    for i in range(count):
        node = w.node_of(f"train-{i}")
        found.append(None if node is None else w.nodes[node].labels[key])
    return found


def blocking(w: SimWorld) -> tuple[str, str]:
    """The gang's blocking reason and message, from its status."""
    for status in w.app_status.values():
        for group in status.task_groups:
            if group.blocking.reason != "None":
                return group.blocking.reason, group.blocking.message
    for key, status in w.group_status.items():
        if key == "default/train":
            return status.blocking.reason, status.blocking.message
    return "None", ""


# --- the conformance table -----------------------------------------------------------

@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_required_places_the_whole_gang_in_the_rack_that_holds_it(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    w = racks(ISSUE)
    gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    assert where(w) == ["r2"] * 4


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_without_a_topology_bin_packing_splits_the_gang(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """The negative of the row above: the same gang asking nothing lands where
    bin-packing puts each member, across both racks (the issue's split)."""
    w = racks(ISSUE)
    gang(w, TopologyRequest())
    w.settle(1, cycles=12)
    assert sorted(str(r) for r in where(w)) == ["r1", "r1", "r2", "r2"]


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_required_waits_and_names_the_domains_when_no_rack_holds_it(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    w = racks(FULL)
    gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    assert where(w) == [None] * 4
    reason, message = blocking(w)
    assert reason == topology.REASON
    assert "rack=r1" in message and "rack=r2" in message
    assert "no single domain of rack" in message


def test_a_gang_whose_placeholders_are_yet_to_come_is_refused_at_once() -> None:
    w = racks(FULL)
    app_gang(w, TopologyRequest(required=RACK), pods=False)
    w.step(0)
    reason, message = blocking(w)
    assert reason == topology.REASON and "rack=r2" in message


def test_self_affinity_lands_whole_in_the_rack_that_holds_it() -> None:
    """The issue's stuck case: placeholders used to go to r1 and stay there."""
    w = racks(ISSUE)
    app_gang(w, TopologyRequest(), placement=self_affine("train"), pods=False)
    w.settle(0)
    add_members(w, 4, "1500m", self_affine("train"))
    w.settle(1, cycles=12)
    assert where(w) == ["r2"] * 4


def test_affinity_to_other_pods_is_no_topology_of_the_gang() -> None:
    """The negative: affinity to someone else's pods is not self-affinity."""
    other = Placement(labels=member_labels("train"),
                      affinity=(AffinityTerm(RACK, LabelSelector.build({"app": "db"})),))
    assert domains.effective(TopologyRequest(), other, "default").empty
    own = self_affine("train")
    assert domains.effective(TopologyRequest(), own, "default").required == RACK
    elsewhere = Placement(labels=member_labels("train"), affinity=(
        AffinityTerm(RACK, LabelSelector.build({"gang": "train"}), namespaces=("other",)),))
    assert domains.effective(TopologyRequest(), elsewhere, "default").empty


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_preferred_takes_the_rack_when_one_holds_the_gang(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    w = racks(ISSUE)
    gang(w, TopologyRequest(preferred=(RACK, BLOCK)))
    w.settle(1, cycles=12)
    assert where(w) == ["r2"] * 4


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_preferred_escalates_to_the_block_when_no_rack_holds_the_gang(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """r1 and r2 (block b1) hold two members each, r3 (block b2) one: no rack holds
    four, block b1 does; r3 is bin-packing's first pick."""
    layout = {"n0": "r1", "n1": "r2", "n2": "r3"}
    w = racks({"n0": "1", "n1": "1", "n2": "2500m"}, layout)
    gang(w, TopologyRequest(preferred=(RACK, BLOCK)))
    w.settle(1, cycles=12)
    assert where(w, BLOCK) == ["b1"] * 4
    assert sorted(str(r) for r in where(w)) == ["r1", "r1", "r2", "r2"]


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_preferred_places_anywhere_when_no_block_holds_the_gang(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """The negative: preferred never holds a gang back; required at the block would."""
    layout = {"n0": "r1", "n1": "r2", "n2": "r3"}
    w = racks({"n0": "2500m", "n1": "1", "n2": "1"}, layout)
    gang(w, TopologyRequest(preferred=(RACK, BLOCK)))
    w.settle(1, cycles=12)
    assert None not in where(w) and set(where(w, BLOCK)) == {"b1", "b2"}


def test_required_stops_the_escalation() -> None:
    layout = {"n0": "r1", "n1": "r2", "n2": "r3"}
    w = racks({"n0": "2500m", "n1": "1", "n2": "1"}, layout)
    app_gang(w, TopologyRequest(required=BLOCK, preferred=(RACK, BLOCK)))
    w.settle(1, cycles=12)
    assert where(w) == [None] * 4
    assert "no single domain of rack or block" in blocking(w)[1]


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_slices_share_a_rack_inside_the_block(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """Block b1 has racks r1 (room for three, bin-packing's first pick) and r2 (room
    for two): slices of two must each share a rack, so r1 takes two, not three."""
    layout = {"n0": "r1", "n1": "r1", "n2": "r2", "n3": "r3"}
    w = racks({"n0": "1", "n1": "2500m", "n2": "1", "n3": "1"}, layout)
    gang(w, TopologyRequest(required=BLOCK, slice_key=RACK, slice_size=2))
    w.settle(1, cycles=12)
    assert where(w, BLOCK) == ["b1"] * 4
    placed = where(w)
    assert sorted(str(r) for r in placed) == ["r1", "r1", "r2", "r2"]


@pytest.mark.parametrize("gang", GANGS, ids=GANG_IDS)
def test_slices_refuse_a_block_whose_racks_cannot_hold_a_slice_each(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """Block b1 has room for four, but spread one, one and two over three racks: the
    slices of two cannot all share a rack."""
    layout = {"n0": "r1", "n1": "r2", "n2": "r4", "n3": "r3"}
    w = racks({"n0": "2500m", "n1": "2500m", "n2": "1", "n3": "4"}, layout)
    w.add_node(make_node("n2", labels={HOST: "n2", RACK: "r4", BLOCK: "b1"}))
    gang(w, TopologyRequest(required=BLOCK, slice_key=RACK, slice_size=2))
    w.settle(1, cycles=12)
    assert where(w) == [None] * 4
    assert "slices of 2" in blocking(w)[1]


@pytest.mark.parametrize("gang", [app_gang, group_gang], ids=["application", "podgroup"])
def test_a_recreated_member_goes_back_into_its_gangs_rack(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    w = racks(ISSUE)
    gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    assert where(w) == ["r2"] * 4
    recreate_member(w, 3)
    w.settle(10, cycles=12)
    assert where(w) == ["r2"] * 4


@pytest.mark.parametrize("gang", [app_gang, group_gang], ids=["application", "podgroup"])
def test_a_pod_outside_the_gang_takes_the_fullest_rack_meanwhile(
        gang: Callable[[SimWorld, TopologyRequest], None]) -> None:
    """The negative: in the room the recreated member finds, a pod of the same size
    that is no member of the gang goes where bin-packing puts it, rack r1."""
    w = racks(ISSUE)
    gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    w.delete("train-3")
    w.add_pod(make_pod("stranger", cpu="1500m"))
    w.settle(10, cycles=12)
    assert w.nodes[str(w.node_of("stranger"))].labels[RACK] == "r1"


def test_a_recreated_member_after_a_restart_goes_back_into_its_gangs_rack() -> None:
    """The domain is derived from the members bound: a new core finds it."""
    w = racks(ISSUE)
    group_gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    w.restart()
    recreate_member(w, 0)
    w.settle(10, cycles=12)
    assert where(w) == ["r2"] * 4


def recreate_member(w: SimWorld, index: int) -> None:
    """Delete member ``index`` and create it again, pending, under a new uid: r1 (the
    fuller rack, with room for it) is where bin-packing alone would put it."""
    old = w.pod(f"train-{index}")
    w.delete(old.name)
    fresh = dataclasses.replace(old, uid=f"{old.uid}-again", node_name=None,
                                phase=PodPhase.PENDING)
    w.add_pod(fresh)


# --- the planner on its own --------------------------------------------------------------

def cluster_of(free: dict[str, dict[str, int]]) -> Cluster:
    """Racks (rack -> node -> free cpu of 4) as a bare cluster."""
    cluster = Cluster()
    for rack, nodes in sorted(free.items()):
        for name, cpu in sorted(nodes.items()):
            cluster.upsert_node(make_node(name, cpu=4, labels={RACK: rack}))
            if cpu < 4:
                cluster.charge(name, f"used-{name}", res(cpu=4 - cpu))
    return cluster


def members(count: int, cpu: str = "1") -> list[PodInfo]:
    return [PodInfo(res(cpu=cpu) + Resources({"pods": 1})) for _ in range(count)]


def test_the_tightest_rack_that_fits_wins_ties_by_name() -> None:
    cluster = cluster_of({"r1": {"a": 4, "b": 4}, "r2": {"c": 3}, "r3": {"d": 3},
                          "r4": {"e": 1}})
    found = topology.plan(cluster, TopologyRequest(required=RACK), members(3), (),
                          Scoring.BINPACK)
    assert isinstance(found, topology.Plan)
    assert found.domain == domains.Domain(RACK, "r2")
    assert found.nodes == ("c", "c", "c")


@settings(max_examples=60, deadline=None)
@given(
    free=st.lists(st.integers(min_value=0, max_value=4), min_size=4, max_size=24),
    rack_of=st.lists(st.integers(min_value=0, max_value=2), min_size=24, max_size=24),
    shapes=st.lists(st.sampled_from(["500m", "1", "1500m"]), min_size=1, max_size=12),
    asked=st.sampled_from([TopologyRequest(required=RACK), TopologyRequest(preferred=(RACK,)),
                           TopologyRequest()]),
    scoring=st.sampled_from([Scoring.BINPACK, Scoring.SPREAD]),
    sample=st.sampled_from([None, 1, 2, 3]),
)
def test_members_alike_share_their_scan_and_plan_the_same(
        free: list[int], rack_of: list[int], shapes: list[str], asked: TopologyRequest,
        scoring: Scoring, sample: int | None) -> None:
    """Members alike share their scan (a member like the one before starts where that
    one found room; scored by usage keys, they read the nodes found from a window kept
    up to date with each charge): the plan (nodes, domain, or the refusal and its
    words) is the one of scanning every member from the first node. Runs of alike
    members and changes of shape both occur, and scans that stop at ``sample`` feasible
    nodes (None: every node) as on a large cluster."""
    cluster = cluster_of({f"r{rack}": {} for rack in range(3)} | {
        f"r{rack}": {f"n{i:02d}": cpu for i, cpu in enumerate(free) if rack_of[i] == rack}
        for rack in range(3)})
    gang = [PodInfo(res(cpu=cpu) + Resources({"pods": 1})) for cpu in sorted(shapes)]
    gang += [PodInfo(res(cpu=cpu) + Resources({"pods": 1})) for cpu in shapes]
    with pytest.MonkeyPatch.context() as patched:
        if sample is not None:
            patched.setattr(Cluster, "sample_size", property(lambda self: sample))
        carried = topology.plan(cluster, asked, gang, (), scoring)
        patched.setattr(topology, "CARRY_SKIPS", False)
        scanned = topology.plan(cluster, asked, gang, (), scoring)
    assert carried == scanned


def test_a_plan_changes_nothing_in_the_cluster() -> None:
    cluster = cluster_of({"r1": {"a": 2, "b": 1}, "r2": {"c": 2}})
    before = {name: state.free for name, state in cluster.nodes.items()}
    epoch = cluster.pod_index.epoch
    for asked in (TopologyRequest(required=RACK), TopologyRequest(preferred=(RACK,)),
                  TopologyRequest(slice_key=RACK, slice_size=2)):
        topology.plan(cluster, asked, members(3), (), Scoring.BINPACK)
    assert {name: state.free for name, state in cluster.nodes.items()} == before
    assert cluster.pod_index.epoch == epoch


def test_members_placed_already_fix_the_domain() -> None:
    cluster = cluster_of({"r1": {"a": 4}, "r2": {"c": 2}})
    found = topology.plan(cluster, TopologyRequest(required=RACK), members(2), ("c",),
                          Scoring.BINPACK)
    assert isinstance(found, topology.Plan) and found.domain == domains.Domain(RACK, "r2")
    refused = topology.plan(cluster, TopologyRequest(required=RACK), members(3), ("c",),
                            Scoring.BINPACK)
    assert isinstance(refused, topology.Refusal)
    spanning = topology.plan(cluster, TopologyRequest(required=RACK), members(1), ("a", "c"),
                             Scoring.BINPACK)
    assert isinstance(spanning, topology.Refusal)
    assert "span r1, r2" in spanning.message()


def test_a_refusal_details_every_domain_tried() -> None:
    cluster = cluster_of({"r1": {"a": 1}, "r2": {"b": 2, "c": 2, "d": 1}})
    found = topology.plan(cluster, TopologyRequest(required=RACK), members(3, "1500m"), (),
                          Scoring.BINPACK)
    assert isinstance(found, topology.Refusal)
    details = found.details()
    assert set(details) == {"domain rack=r1", "domain rack=r2"}
    assert "room for 0 of its 3 members" in details["domain rack=r1"]
    assert "room for 2 of its 3 members" in details["domain rack=r2"]
    mixed = members(2, "1500m") + members(1, "2")  # two shapes: free room is summed
    found = topology.plan(cluster, TopologyRequest(required=RACK), mixed, (),
                          Scoring.BINPACK)
    assert isinstance(found, topology.Refusal)
    assert "short of" in found.details()["domain rack=r1"]
    assert "Insufficient cpu" in found.details()["domain rack=r2"]


def test_members_see_one_another_in_the_simulation() -> None:
    """One member per node (required anti-affinity on hostname): rack r1 has room for
    three by capacity but only two nodes, so the gang of three goes to r2."""
    cluster = Cluster()
    for name, rack in (("a", "r1"), ("b", "r1"), ("c", "r2"), ("d", "r2"), ("e", "r2")):
        cluster.upsert_node(make_node(name, cpu=8, labels={RACK: rack, HOST: name}))
    for name in ("c", "d", "e"):
        cluster.charge(name, f"used-{name}", res(cpu=2))
    labels = (("gang", "g"),)
    spread = Placement(labels=labels,
                       anti_affinity=(AffinityTerm(HOST, LabelSelector.build(dict(labels))),))
    for alike in (True, False):  # counted one per node; simulated (shapes differ)
        gang = [PodInfo.of(res(cpu=1 if alike or i else 2) + Resources({"pods": 1}),
                           placement=spread) for i in range(3)]
        found = topology.plan(cluster, TopologyRequest(required=RACK), gang, (),
                              Scoring.BINPACK)
        assert isinstance(found, topology.Plan)
        assert found.domain == domains.Domain(RACK, "r2")
        assert sorted(str(n) for n in found.nodes) == ["c", "d", "e"]
        refused = topology.plan(cluster, TopologyRequest(required=RACK), gang + gang[1:2],
                                (), Scoring.BINPACK)
        assert isinstance(refused, topology.Refusal)
        why = refused.details()["domain rack=r2"]
        assert ("one per kubernetes.io/hostname domain" in why if alike
                else "didn't match pod anti-affinity rules" in why), why


def test_levels() -> None:
    assert domains.levels(TopologyRequest()) == (None,)
    assert domains.levels(TopologyRequest(required=BLOCK, preferred=(RACK, BLOCK, "zone"))) \
        == (RACK, BLOCK)
    assert domains.levels(TopologyRequest(preferred=(RACK, BLOCK))) == (RACK, BLOCK, None)


# --- the property ------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(
    free=st.lists(st.integers(min_value=0, max_value=8), min_size=2, max_size=8),
    rack_of=st.lists(st.integers(min_value=0, max_value=3), min_size=8, max_size=8),
    sizes=st.lists(st.integers(min_value=1, max_value=5), min_size=1, max_size=3),
    kind=st.sampled_from(["application", "podgroup"]),
)
def test_a_gang_never_spans_two_domains_of_its_required_key(
        free: list[int], rack_of: list[int], sizes: list[int], kind: str) -> None:
    """Whatever the room, gangs asking for a rack are either bound whole in one rack or
    not at all."""
    w = SimWorld()
    for i, cpu in enumerate(free):
        w.add_node(make_node(f"n{i}", cpu=8, labels={RACK: f"r{rack_of[i]}"}))
        if cpu < 8:
            w.add_pod(make_pod(f"filler-{i}", cpu=8 - cpu, node=f"n{i}", ours=False,
                               phase=PodPhase.RUNNING))
    asked = TopologyRequest(required=RACK)
    for g, size in enumerate(sizes):
        name = f"g{g}"
        if kind == "application":
            group = make_group("w", size, cpu="1500m", memory="1Gi", topology=asked)
            w.add_app(make_app(name, group))
            for i in range(size):
                w.add_pod(make_pod(f"{name}-{i}", cpu="1500m", app=name, task_group="w"))
        else:
            w.add_group(dataclasses.replace(make_podgroup(name, size), topology=asked))
            for i in range(size):
                w.add_pod(make_pod(f"{name}-{i}", cpu="1500m", pod_group=name))
    w.settle(1, cycles=10)
    for g, size in enumerate(sizes):
        nodes = [w.node_of(f"g{g}-{i}") for i in range(size)]
        bound = [n for n in nodes if n is not None]
        assert len({w.nodes[n].labels[RACK] for n in bound}) <= 1
        if kind == "podgroup":
            assert len(bound) in (0, size)


def test_two_task_groups_each_in_a_rack_do_not_take_each_others_room() -> None:
    """Each task group is planned when its first member is placed, after the room the
    other took. r2 holds five members, r3 six: the driver's tightest rack is r2, and
    the five workers, planned before the driver took its place, would count on r2 too."""
    w = racks({"n0": "10", "n1": "2500m"}, {"n0": "r1", "n1": "r2", "n2": "r3"}, cpu=10)
    asked = TopologyRequest(required=RACK)
    driver = make_group("driver", 1, cpu="1500m", memory="1Gi", topology=asked)
    workers = make_group("workers", 5, cpu="1500m", memory="1Gi", topology=asked)
    w.add_app(make_app("train", driver, workers))
    w.add_pod(make_pod("train-d", cpu="1500m", app="train", task_group="driver"))
    add_members(w, 5, "1500m", Placement())
    w.settle(1, cycles=12)
    assert w.nodes[str(w.node_of("train-d"))].labels[RACK] == "r2"
    assert where(w, count=5) == ["r3"] * 5


# --- preemption ----------------------------------------------------------------------------

@pytest.mark.parametrize("required", [True, False], ids=["rack", "anywhere"])
def test_preemption_evicts_only_in_a_rack_where_the_whole_gang_then_fits(
        required: bool) -> None:
    """Rack r1 can free only 2 cpu per node (the rest is not preemptible), too little
    for the gang of 4 x 2 cpu; r2 can free everything. r1's victims are the cheapest
    (lowest priority): without a topology some of them go; with one, none do."""
    w = SimWorld(config=SchedulerConfig(actions=("allocate", "preempt")))
    w.add_queue(make_queue("q", policy=SortPolicy.FIFO))
    for name, rack in RACKS.items():
        w.add_node(make_node(name, cpu=4, labels={HOST: name, RACK: rack}))
    for name in ("n0", "n1"):
        w.add_pod(make_pod(f"keep-{name}", cpu=2, node=name, phase=PodPhase.RUNNING,
                           queue="q", preemptible=False))
        w.add_pod(make_pod(f"cheap-{name}", cpu=2, node=name, phase=PodPhase.RUNNING,
                           queue="q", priority=-1))
    for name in ("n2", "n3"):
        for i in range(2):
            w.add_pod(make_pod(f"low-{name}-{i}", cpu=2, node=name, phase=PodPhase.RUNNING,
                               queue="q", creation=i))
    asked = TopologyRequest(required=RACK) if required else TopologyRequest()
    w.add_app(make_app("train", make_group("workers", 4, cpu=2, topology=asked), queue="q"))
    for i in range(4):
        w.add_pod(make_pod(f"train-{i}", cpu=2, app="train", task_group="workers",
                           priority=10, queue="q"))
    for i in range(10):
        w.step(1.0 + i)
    gone = {d.name for d in w.decisions if isinstance(d, EvictPod)}
    if required:
        assert gone == {"low-n2-0", "low-n2-1", "low-n3-0", "low-n3-1"}
        assert where(w) == ["r2"] * 4
    else:
        assert gone & {"cheap-n0", "cheap-n1"}


# --- cost ----------------------------------------------------------------------------------

def test_gangs_without_a_topology_never_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = topology.plan

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(topology, "plan", counted)
    for gang in GANGS:
        w = racks(ISSUE)
        gang(w, TopologyRequest())
        w.settle(1, cycles=12)
        recreate_member(w, 3)
        w.settle(10, cycles=12)
    assert calls == []
    w = racks(ISSUE)
    app_gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=12)
    assert calls  # (the count sees plans)


def test_a_refused_gang_is_simulated_again_only_once_room_is_freed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    simulated: list[int] = []
    original = topology._simulate

    def counted(*args: Any, **kwargs: Any) -> Any:
        simulated.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(topology, "_simulate", counted)
    w = racks(FULL)
    group_gang(w, TopologyRequest(required=RACK))
    w.settle(1, cycles=3)
    first = len(simulated)
    for i in range(5):
        w.step(2.0 + i)
    assert len(simulated) == first
    w.delete("filler-n2")
    w.settle(10, cycles=6)
    assert where(w) == ["r2"] * 4


# --- gang groups and the swap ----------------------------------------------------------

def test_each_podgroup_of_a_gang_group_keeps_to_its_own_rack() -> None:
    """Two PodGroups bound together, each requiring a rack: a (three members) lands
    whole in r2, the only rack that holds it; then b (one member) goes to the rack it
    strands the fewest places in: r2, left with one place, rather than r1 with two."""
    w = racks(ISSUE)
    asked = TopologyRequest(required=RACK)
    for name, other, count in (("a", "b", 3), ("b", "a", 1)):
        w.add_group(dataclasses.replace(
            make_podgroup(name, count, gang_group=(f"default/{other}",)), topology=asked))
        for i in range(count):
            w.add_pod(make_pod(f"{name}-{i}", cpu="1500m", pod_group=name))
    w.settle(1, cycles=12)
    assert [w.nodes[str(w.node_of(f"a-{i}"))].labels[RACK] for i in range(3)] == ["r2"] * 3
    assert w.nodes[str(w.node_of("b-0"))].labels[RACK] == "r2"


def test_a_member_that_does_not_fit_its_placeholders_node_stays_in_the_rack() -> None:
    """r1 holds one placeholder of 1.5 cpu, not two: both go to n2 in r2. The real
    members ask 2.5 cpu, more than their task group's minResource: the second does not
    fit n2 once its placeholder is gone, and is placed elsewhere inside r2 (n3), not on
    n0 in r1, which has room for it and is the fuller node."""
    w = racks({"n0": "1500m", "n1": "4"})
    group = make_group("workers", 2, cpu="1500m", memory="1Gi",
                       topology=TopologyRequest(required=RACK))
    w.add_app(make_app("train", group))
    w.settle(0, cycles=4)
    homes = {p.node_name for p in w.placeholders()}
    assert {w.nodes[str(n)].labels[RACK] for n in homes} == {"r2"}
    assert len(homes) == 1  # bin-packing: both on one node of r2
    for i in range(2):
        w.add_pod(make_pod(f"train-{i}", cpu="2500m", app="train", task_group="workers"))
    w.settle(1, cycles=12)
    assert where(w, count=2) == ["r2", "r2"]


@settings(max_examples=30, deadline=None)
@given(moves=st.lists(st.tuples(st.integers(min_value=0, max_value=5),
                                st.integers(min_value=0, max_value=4), st.booleans()),
                      max_size=30))
def test_places_kept_as_usage_moves_equal_a_fresh_count(
        moves: list[tuple[int, int, bool]]) -> None:
    """Per domain, the places kept from the touch log equal a count made afresh."""
    cluster = Cluster()
    for i in range(6):
        cluster.upsert_node(make_node(f"n{i}", cpu=8, labels={RACK: f"r{i % 3}"}))
    shape = res(cpu="1500m") + Resources({"pods": 1})
    info = PodInfo(shape)

    def ask(index: domains.DomainIndex) -> dict[str, int] | None:
        return index.places(RACK, shape, info.constraints, cluster.candidates(info.constraints),
                            cluster.sorted_nodes(), cluster.node_epoch, cluster.touches,
                            cluster.nodes)

    kept = domains.DomainIndex()
    ask(kept)
    held: dict[str, str] = {}
    for step, (node, cpu, add) in enumerate(moves):
        name = f"n{node}"
        if add or not held:
            uid = f"p{step}"
            cluster.charge(name, uid, res(cpu=cpu))
            held[uid] = name
        else:
            uid = sorted(held)[step % len(held)]
            cluster.release(held.pop(uid), uid, Resources.ZERO)
        assert ask(kept) == ask(domains.DomainIndex())
