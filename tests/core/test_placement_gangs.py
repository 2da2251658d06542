"""Placement through the profile, end to end in the core: scheduling gates, gangs whose
task groups carry pod (anti-)affinity and spread, and the swap of a real pod that does
not fit where its placeholder was."""

from __future__ import annotations

import dataclasses

import pytest
from builders import make_app, make_group, make_node, make_pod, make_podgroup
from gangsched.core.values.constraints import SelectorOperator, SelectorRequirement
from gangsched.core.values.decisions import (
    SCHEDULING_GATED,
    SCHEDULING_GATED_MESSAGE,
    BindPod,
    PodPending,
    RecordEvent,
)
from gangsched.core.values.model import GroupKey
from gangsched.core.values.placement_terms import (
    AffinityTerm,
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.selectors import LabelSelector
from simworld import SimWorld

HOST = "kubernetes.io/hostname"
GATED = Placement(gates=("example.com/quota",))


def world(nodes: int = 4, cpu: int = 4) -> SimWorld:
    w = SimWorld()
    for i in range(nodes):
        w.add_node(make_node(f"n{i}", cpu=cpu, labels={HOST: f"n{i}"}))
    return w


def one_per_node(labels: dict[str, str]) -> Placement:
    term = AffinityTerm(HOST, LabelSelector.build(labels))
    return Placement(labels=tuple(sorted(labels.items())), anti_affinity=(term,))


# --- scheduling gates --------------------------------------------------------------------

def test_a_gated_pod_gets_only_the_schedulinggated_condition() -> None:
    w = world()
    w.add_pod(make_pod("gated", placement=GATED))
    decisions = w.settle(0) + w.settle(10)
    mine = [d for d in decisions if getattr(d, "name", None) == "gated"
            or (isinstance(d, RecordEvent) and d.target.name == "gated")]
    assert mine == [PodPending(w.uid_of("gated"), "default", "gated", SCHEDULING_GATED,
                               SCHEDULING_GATED_MESSAGE)]
    assert w.node_of("gated") is None


def test_a_pod_whose_gates_are_removed_is_scheduled() -> None:
    w = world()
    w.add_pod(make_pod("gated", placement=GATED))
    w.settle(0)
    w.add_pod(dataclasses.replace(w.pod("gated"), placement=Placement()))
    w.settle(1)
    assert w.node_of("gated") is not None


def test_a_gated_gang_member_has_not_arrived() -> None:
    w = world()
    w.add_group(make_podgroup("pg", 2))
    w.add_pod(make_pod("pg-0", pod_group="pg"))
    w.add_pod(make_pod("pg-1", pod_group="pg", placement=GATED))
    decisions = w.settle(0)
    assert not [d for d in decisions if isinstance(d, BindPod)]
    assert w.pending_reason("pg-0") == "WaitingForGang"
    assert w.pending_reason("pg-1") == SCHEDULING_GATED
    w.add_pod(dataclasses.replace(w.pod("pg-1"), placement=Placement()))
    w.settle(1)
    assert {w.node_of("pg-0"), w.node_of("pg-1")} != {None}
    assert w.group_status[GroupKey("default/pg")].phase in ("Scheduled", "Running")


# --- gangs with pod affinity -------------------------------------------------------------

@pytest.mark.parametrize(
    ("nodes", "members", "placed"),
    [pytest.param(4, 4, 4, id="one-per-node-on-distinct-nodes"),
     pytest.param(4, 5, 4, id="a-fifth-member-finds-no-node")],
)
def test_anti_affinity_placeholders_are_reserved_on_distinct_nodes(
        nodes: int, members: int, placed: int) -> None:
    w = world(nodes)
    group = make_group("w", members, cpu=1, placement=one_per_node({"app": "mpi"}))
    app = make_app("mpi", group)
    w.add_app(app)
    w.settle(0)
    on = [p.node_name for p in w.placeholders(app.key) if p.node_name]
    assert len(on) == len(set(on)) == placed


def test_real_pods_count_against_placeholders_of_the_same_labels() -> None:
    """An ordinary pod with the gang's labels and anti-affinity avoids the placeholders'
    nodes: placeholders count as the pods they stand for."""
    w = world(3)
    app = make_app("mpi", make_group("w", 2, cpu=1, placement=one_per_node({"app": "mpi"})))
    w.add_app(app)
    w.settle(0)
    taken = {p.node_name for p in w.placeholders(app.key)}
    w.add_pod(make_pod("other", placement=one_per_node({"app": "mpi"})))
    w.settle(1)
    assert w.node_of("other") not in taken and w.node_of("other") is not None


def test_spread_placeholders_balance_the_nodes() -> None:
    w = world(2, cpu=8)
    labels = {"app": "spread"}
    constraint = SpreadConstraint(1, HOST, WhenUnsatisfiable.DO_NOT_SCHEDULE,
                                  LabelSelector.build(labels))
    placement = Placement(labels=tuple(labels.items()), spread=(constraint,))
    app = make_app("spread", make_group("w", 4, cpu=1, placement=placement))
    w.add_app(app)
    w.settle(0)
    on = [p.node_name for p in w.placeholders(app.key)]
    assert sorted(on) == ["n0", "n0", "n1", "n1"]


def test_a_real_pod_that_does_not_fit_its_placeholders_node_goes_elsewhere() -> None:
    """The swap checks the real pod's own constraints: here it must not share a node with
    a pod labelled ``db``, which runs where its placeholder was."""
    w = world(2)
    app = make_app("job", make_group("w", 1, cpu=1))
    w.add_app(app)
    w.settle(0)
    (placeholder,) = w.placeholders(app.key)
    w.add_pod(make_pod("db", placement=Placement(labels=(("role", "db"),)),
                       node=placeholder.node_name))
    avoid = AffinityTerm(HOST, LabelSelector((), (SelectorRequirement(
        "role", SelectorOperator.IN, ("db",)),)))
    w.add_pod(make_pod("job-w-0", app="job", task_group="w",
                       placement=Placement(anti_affinity=(avoid,))))
    decisions = w.settle(1)
    assert w.node_of("job-w-0") not in (None, placeholder.node_name)
    assert any(isinstance(d, RecordEvent) and d.reason == "PlaceholderReplaced"
               and "did not fit" in d.message for d in decisions)
