"""Racks in the simulator: the hierarchy labels, topology on jobs, and the measures."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest
from gangsched.core.values.model import NO_TOPOLOGY, Node, TopologyRequest
from gangsched.core.values.resources import Resources
from gangsched.sim import parse, racks, results, runner
from gangsched.sim.jobs import JobRun
from gangsched.sim.parse import build
from gangsched.sim.source import WorkloadError
from gangsched.sim.source import parse as parse_text
from gangsched.sim.workload import Job, JobKind, PodTemplate
from gangsched.translate.topology import BLOCK, RACK, ZONE

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulations"


def load(text: str) -> parse.Workload:
    return build(parse_text(textwrap.dedent(text), "workload.yaml"))


def errors(text: str) -> list[str]:
    with pytest.raises(WorkloadError) as caught:
        load(text)
    return [str(e) for e in caught.value.errors]


def test_a_hierarchy_deals_the_nodes_out_rack_by_rack() -> None:
    workload = load("""\
        nodes:
          - {pool: gpu, count: 8, cpu: 8, memory: 32Gi, topology: {zones: 2, blocks: 1, racks: 2}}
          - {pool: cpu, count: 2, cpu: 8, memory: 32Gi}
        """)
    placed = [(n.name, n.labels.get(ZONE), n.labels.get(BLOCK), n.labels.get(RACK))
              for n in workload.nodes]
    assert placed == [
        ("gpu-0", "zone-0", "gpu-b0", "gpu-b0-r0"), ("gpu-1", "zone-0", "gpu-b0", "gpu-b0-r0"),
        ("gpu-2", "zone-0", "gpu-b0", "gpu-b0-r1"), ("gpu-3", "zone-0", "gpu-b0", "gpu-b0-r1"),
        ("gpu-4", "zone-1", "gpu-b1", "gpu-b1-r0"), ("gpu-5", "zone-1", "gpu-b1", "gpu-b1-r0"),
        ("gpu-6", "zone-1", "gpu-b1", "gpu-b1-r1"), ("gpu-7", "zone-1", "gpu-b1", "gpu-b1-r1"),
        ("cpu-0", None, None, None), ("cpu-1", None, None, None),
    ]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param("""\
        nodes:
          - {pool: gpu, count: 6, cpu: 8, memory: 32Gi, topology: {blocks: 2, racks: 2}}
        """, "workload.yaml:2:24: nodes[0].count: is 6, not a multiple of the 4 racks",
        id="count-not-a-multiple"),
    pytest.param("""\
        nodes:
          - {pool: gpu, count: 4, cpu: 8, memory: 32Gi, topology: {racks: 0}}
        """, "nodes[0].topology.racks: must be an integer ≥ 1, got 0", id="zero-racks"),
    pytest.param("""\
        nodes:
          - {pool: gpu, count: 4, cpu: 8, memory: 32Gi, topology: {rows: 2}}
        """, "nodes[0].topology.rows: unknown field (accepted: zones, blocks, racks)",
        id="unknown-level"),
    pytest.param("""\
        nodes:
          - {pool: gpu, count: 4, cpu: 8, memory: 32Gi}
        podGroups:
          - name: g
            minMember: 2
            topology: {required: "a rack"}
            pods: [{count: 2, duration: 1, cpu: 1}]
        """, 'podGroups[0].topology.required: invalid label key "a rack"', id="bad-key"),
    pytest.param("""\
        nodes:
          - {pool: gpu, count: 4, cpu: 8, memory: 32Gi}
        podGroups:
          - name: g
            minMember: 2
            topology: {sliceKey: rack, sliceSize: 3}
            pods: [{count: 2, duration: 1, cpu: 1}]
        """, "podGroups[0].topology.sliceSize: must not be greater than the gang's size 2",
        id="slice-larger-than-gang"),
])
def test_hierarchy_and_topology_errors_name_the_field(text: str, expected: str) -> None:
    assert any(expected in e for e in errors(text)), errors(text)


def test_jobs_carry_their_topology_requests() -> None:
    workload = load(f"""\
        nodes:
          - {{pool: n, count: 4, cpu: 8, memory: 32Gi}}
        podGroups:
          - name: g
            minMember: 2
            topology: {{required: {BLOCK}, preferred: [{RACK}]}}
            pods: [{{count: 2, duration: 1, cpu: 1}}]
        applications:
          - name: a
            taskGroups:
              - {{name: w, minMember: 2, minResource: {{cpu: 1}},
                 topology: {{sliceKey: {RACK}, sliceSize: 1}}}}
            pods: [{{taskGroup: w, count: 2, duration: 1, cpu: 1}}]
        """)
    by_name = {job.name: job for job in workload.jobs}
    assert racks.job_topology(by_name["g"]) == TopologyRequest(BLOCK, (RACK,))
    assert racks.job_topology(by_name["a"]) == TopologyRequest(None, (), RACK, 1)


def _node(name: str, rack: str | None) -> Node:
    labels = {RACK: rack} if rack is not None else {}
    return Node(name, Resources({"cpu": 8000}), labels)


def _gang(name: str, nodes: tuple[str, ...], request: TopologyRequest = NO_TOPOLOGY,
          members: int = 2) -> JobRun:
    from gangsched.core.values.model import GroupKey, PodGroupSpec

    template = PodTemplate("w", 0, members, 1.0, Resources({"cpu": 2000}))
    group = PodGroupSpec(GroupKey(f"ns/{name}"), min_member=members, topology=request)
    run = JobRun(Job(name, JobKind.POD_GROUP, 0.0, (template,), {None: members},
                     group=group), f"ns/{name}")
    run.first_gang_nodes = nodes
    return run


def test_measures_count_cross_rack_gangs_and_broken_requests() -> None:
    nodes = [_node("a", "r1"), _node("b", "r1"), _node("c", "r2"), _node("d", None)]
    runs = [
        _gang("one-rack", ("a", "b"), TopologyRequest(RACK)),
        _gang("two-racks", ("a", "c"), TopologyRequest(RACK)),
        _gang("unlabelled", ("a", "d")),
        _gang("never-ran", ()),
        _gang("single", ("c",), members=1),
    ]
    measured = racks.measure(nodes, runs, 12.5)
    assert measured == racks.Measures(gangs=3, cross_rack=2, topology_gangs=2,
                                      topology_broken=1, stranded_cpu_seconds=12.5)


def test_stranded_cpu_counts_free_room_no_single_rack_can_use() -> None:
    nodes = [_node("a", "r1"), _node("b", "r1"), _node("c", "r2"), _node("d", "r2")]
    stranded = racks.Stranded(nodes)
    waiting = [_gang("needs-12-cores", (), TopologyRequest(RACK), members=6)]
    stranded.bind("a", 6000)
    stranded.bind("c", 6000)  # each rack has 10 cores free, the cluster 20: stranded
    stranded.advance(0.0, waiting)
    stranded.advance(10.0, waiting)
    assert stranded.cpu_seconds == pytest.approx(20 * 10)
    stranded.bind("c", 6000, -1)  # rack r2 has 16 cores free: it fits, nothing stranded
    stranded.advance(20.0, waiting)
    stranded.advance(30.0, [])
    assert stranded.cpu_seconds == pytest.approx(20 * 10 + 20 * 10)


@pytest.mark.parametrize("seed", range(6))
def test_stranded_sums_kept_give_what_every_node_gives(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [Node(f"n{i}", Resources({"cpu": 8000}),
                  {k: v for k, v in ((RACK, f"r{i % 4}"), (BLOCK, f"b{i % 2}"))
                   if rng.random() < 0.9})
             for i in range(16)]
    gangs = [_gang(f"g{i}", (), TopologyRequest(key), members=rng.randint(1, 12))
             for i, key in enumerate((RACK, BLOCK, None, RACK))]
    stranded = racks.Stranded(nodes)
    bound: list[tuple[str, int]] = []
    for step in range(600):
        draw = rng.random()
        if draw < 0.55 or not bound:  # a bind, now and then past the node's room
            bound.append((rng.choice(nodes).name, rng.choice((1000, 2000, 6000))))
            stranded.bind(*bound[-1])
        elif draw < 0.8:
            stranded.bind(*bound.pop(rng.randrange(len(bound))), -1)
        else:  # the engine's own set changes under it
            stranded.down ^= {rng.choice(nodes).name}
        waiting = rng.sample(gangs, rng.randint(0, len(gangs)))
        stranded.advance(float(step), waiting)
        assert stranded.current == racks.stranded_now(stranded.free, stranded.labels,
                                                      stranded.down, waiting)
    assert stranded.cpu_seconds > 0  # the walk did strand cpu


def test_the_racks_example_reports_topology_for_both_schedulers() -> None:
    workload = parse.load(str(EXAMPLES / "racks.yaml"))
    outs = runner.run_all(workload, ["gangsched", "naive"])
    for out in outs:
        summary = results.summarise(out)
        assert summary.completed == summary.jobs
        assert summary.topology is not None
        assert summary.topology.topology_gangs == 8
        assert summary.topology.gangs == 8
        # Member by member, the naive scheduler breaks every required topology.
        if out.scheduler == "naive":
            assert summary.topology.topology_broken == 8
            assert summary.topology.stranded_cpu_seconds > 0
        assert "topology" in summary.to_json()


def test_the_plot_draws_a_row_per_node_grouped_by_rack() -> None:
    from gangsched.sim import plot
    from matplotlib.figure import Figure

    workload = parse.load(str(EXAMPLES / "racks.yaml"))
    (out,) = runner.run_all(workload, ["naive"])
    ax = Figure().subplots()
    plot._racks(ax, out, out.end)
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        f"gpu-b{b}-r{r}" for b in range(2) for r in range(4)]
    bars = ax.collections
    pods = sum(1 for run in out.jobs for p in run.history if p.started is not None)
    assert len(bars) == pods
    edged = sum(1 for bar in bars if len(bar.get_edgecolor())
                and tuple(bar.get_edgecolor()[0]) == (0.0, 0.0, 0.0, 1.0))
    crossing = sum(1 for run in out.jobs if len(racks.domains_of(
        run.first_gang_nodes, {n.name: n.labels for n in workload.nodes}, RACK)) > 1
        for p in run.history if p.started is not None and sum(run.job.gang.values()) > 1)
    assert edged == crossing > 0


def test_the_report_shows_the_topology_measures_only_when_there_are_racks() -> None:
    from gangsched.sim import report

    outs = runner.run_all(parse.load(str(EXAMPLES / "racks.yaml")), ["gangsched", "naive"])
    text = report.summary(outs[1])
    assert "topology            8 gangs ran, 8 across racks; 8 of 8 topology requests broken" \
        in text
    table = report.comparison(outs)
    assert "gangs across racks" in table and "stranded cpu·s" in table
    (plain,) = runner.run_all(parse.load(str(EXAMPLES / "deadlock.yaml")), ["gangsched"])
    assert "topology" not in report.summary(plain)
    assert results.summarise(plain).topology is None
