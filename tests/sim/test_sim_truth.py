"""The timeline tells every transition the core made and what happened to each pod; the
comparison holds both runs to the same horizon; repeated events are grouped."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from gangsched.core.values.resources import Resources
from gangsched.sim import digest, report, results, runner
from gangsched.sim.engine import RunOutput
from gangsched.sim.parse import build, load
from gangsched.sim.source import parse
from gangsched.sim.timeline import Entry
from gangsched.sim.usage import Usage

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulations"


def simulate(text: str, *schedulers: str) -> list[RunOutput]:
    workload = build(parse(textwrap.dedent(text), "test.yaml"))
    return runner.run_all(workload, list(schedulers or ["gangsched"]))


SOFT = """\
    settings: {scheduler: {actions: [allocate]}}
    nodes:
      - {name: n1, cpu: 4, memory: 16Gi}
    applications:
      - name: soft
        style: Soft
        placeholderTimeoutSeconds: 60
        taskGroups:
          - {name: driver, minMember: 1, minResource: {cpu: 1, memory: 1Gi}}
          - {name: executor, minMember: 4, minResource: {cpu: 1, memory: 1Gi}}
        pods:
          - {taskGroup: driver, count: 1, duration: 100, cpu: 1, memory: 1Gi}
          - {taskGroup: executor, count: 2, after: driver, duration: 100, cpu: 1, memory: 1Gi}
"""


def test_states_passed_through_within_one_cycle_are_shown() -> None:
    """A Soft placeholder timeout: Accepted -> Resuming -> Running in one cycle at t=60."""
    (out,) = simulate(SOFT)
    at_60 = [e.text.split(":")[0] for e in out.timeline.entries
             if e.t == 60 and e.source == "gangsched"]
    assert at_60 == ["Accepted -> Resuming", "Resuming -> Running"]
    assert results.summarise(out).counters["placeholderTimeouts"] == 1


def test_preempted_pods_are_worded_as_preempted_with_by_whom() -> None:
    (out,) = runner.run_all(load(str(EXAMPLES / "preempt-reclaim.yaml")), ["gangsched"])
    sim = [e.text for e in out.timeline.entries if e.source == "sim"]
    assert not any("lost with node" in text for text in sim)
    preempted = [t for t in sim if " was preempted: " in t]
    reclaimed = [t for t in sim if " was reclaimed: " in t]
    assert len(preempted) == 2 and len(reclaimed) == 1
    assert all("default/urgent (priority 100)" in t for t in preempted)
    assert "default/spark" in reclaimed[0]


def test_a_pod_lost_with_its_node_still_says_so() -> None:
    (out,) = simulate("""\
        nodes:
          - {pool: n, count: 2, cpu: 4, memory: 16Gi}
        pods:
          - {name: web, count: 1, duration: 600, cpu: 1, memory: 1Gi}
        events:
          - {at: 100, nodeDown: n-0}
    """)
    assert any("pod pod-0 was lost with node n-0" in e.text for e in out.timeline.entries)


STALLS = """\
    nodes:
      - {name: n, cpu: 4, memory: 16Gi}
    applications:
      - name: spark
        replicas: 2
        taskGroups:
          - {name: driver, minMember: 1, minResource: {cpu: 2, memory: 1Gi}}
          - {name: executor, minMember: 1, minResource: {cpu: 2, memory: 1Gi}}
        pods:
          - {taskGroup: driver, duration: 100, cpu: 2, memory: 1Gi}
          - {taskGroup: executor, after: driver, duration: 100, cpu: 2, memory: 1Gi}
"""


def test_the_comparison_covers_the_same_horizon_for_both_runs() -> None:
    """Pod by pod both drivers take the node at t=0 and the run stalls at once, holding
    4 cpu; gangsched runs the two gangs one after the other. Over gangsched's horizon the
    naive run holds its 4 cpu all along, not for 0 s."""
    gang, naive = simulate(STALLS, "gangsched", "naive")
    assert naive.end == 0 < gang.end
    text = report.comparison([gang, naive])
    idle = next(line for line in text.splitlines() if line.strip().startswith("idle cpu"))
    assert idle.split()[-1] == f"{4 * gang.end:,.0f}"
    assert f"over the same {report.duration(gang.end)}" in text.splitlines()[0]


@pytest.mark.parametrize(
    ("horizon", "busy", "capacity"),
    [pytest.param(10.0, 20.0, 40.0, id="at-now"),
     pytest.param(15.0, 30.0, 60.0, id="held-after-now"),
     pytest.param(5.0, 20.0, 40.0, id="before-now-is-what-was-integrated")],
)
def test_usage_until_holds_the_current_usage(horizon: float, busy: float,
                                             capacity: float) -> None:
    usage = Usage()
    usage.capacity(Resources({"cpu": 4000}), 1)
    usage.add("busy", Resources({"cpu": 2000}))
    usage.advance(10.0)
    cpu, cap = usage.until(horizon)
    assert (cpu["busy"], cap) == (busy, capacity)


@pytest.mark.parametrize(
    ("names", "text"),
    [
        pytest.param(["spark-3", "spark-1", "spark-2"], "spark-1..spark-3", id="range"),
        pytest.param(["spark-1", "spark-2"], "spark-1, spark-2", id="two-are-listed"),
        pytest.param(["a-1", "a-2", "a-3", "a-5", "b"], "a-1..a-3, a-5, b", id="gaps"),
        pytest.param(["x-01", "x-02", "x-03"], "x-01, x-02, x-03", id="leading-zeros"),
        pytest.param(["a", "b", "c", "d", "e", "f"], "a, b, c, and 3 more", id="and-more"),
        pytest.param([f"s-{i}" for i in (1, 2, 3, 7, 9, 11, 12, 13)] + ["t"],
                     "s-1..s-3, s-7, s-9, and 4 more", id="more-counts-names"),
    ],
)
def test_names_are_listed_in_natural_order_with_ranges(names: list[str], text: str) -> None:
    assert digest.names(names) == text


def test_entries_of_one_instant_saying_the_same_are_one_line() -> None:
    entries = [Entry(0, "app spark-2", "sim", "submitted"),
               Entry(0, "app spark-1", "sim", "submitted"),
               Entry(0, "node n-1", "sim", "went down"),
               Entry(0, "app spark-1", "gangsched", "Accepted"),
               Entry(5, "app spark-3", "sim", "submitted")]
    lines = [(g.t, g.subject, g.source, g.text) for g in digest.group(entries)]
    assert lines == [(0, "apps spark-1, spark-2", "sim", "submitted"),
                     (0, "node n-1", "sim", "went down"),
                     (0, "app spark-1", "gangsched", "Accepted"),
                     (5, "app spark-3", "sim", "submitted")]
