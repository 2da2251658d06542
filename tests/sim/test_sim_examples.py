"""The example workloads run, and show what they claim to show."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from gangsched.core.values.model import PlaceholderPolicy
from gangsched.sim import generate, parse, results, runner
from gangsched.sim.jobs import Outcome
from gangsched.sim.source import Document
from gangsched.translate.topology import BLOCK, RACK

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulations"


def outcomes(out: runner.RunOutput) -> dict[str, Outcome | None]:
    return {run.job.name: run.outcome for run in out.jobs}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_example_runs_under_both_schedulers(path: Path) -> None:
    workload = parse.load(str(path))
    for out in runner.run_all(workload, ["gangsched", "naive"]):
        assert all(run.outcome is not None for run in out.jobs)


def test_spark_deadlock_naive_stalls_and_gangsched_finishes_every_job() -> None:
    workload = parse.load(str(EXAMPLES / "spark-deadlock.yaml"))
    gang, naive = runner.run_all(workload, ["gangsched", "naive"])
    gang_summary, naive_summary = results.summarise(gang), results.summarise(naive)
    assert gang_summary.completed == gang_summary.jobs == 16
    assert gang_summary.job_timeouts == 0
    # Pod by pod, the drivers fill the cluster and no executor ever starts: every attempt
    # of every job times out, and nothing does useful work.
    assert naive_summary.completed == 0
    assert naive_summary.outcomes == {"timedOut": 16}
    assert naive_summary.job_timeouts == 16 * 3
    assert naive_summary.utilisation["cpu.busy"] == 0
    assert naive_summary.idle_cpu_seconds > 4 * (gang_summary.placeholder_cpu_seconds
                                                 + gang_summary.idle_cpu_seconds)
    assert all(run.first_gang_start is None for run in naive.jobs)


def test_queue_quota_holds_rejects_and_kills() -> None:
    workload = parse.load(str(EXAMPLES / "queue-quota.yaml"))
    (out,) = runner.run_all(workload, ["gangsched"])
    found = outcomes(out)
    assert found.pop("too-big") is Outcome.REJECTED
    assert found.pop("pinned") is Outcome.KILLED
    assert set(found.values()) == {Outcome.COMPLETED}
    # Held for quota: etl-3 waits for etl-1 or etl-2 to leave room in analytics.
    etl3 = next(run for run in out.jobs if run.job.name == "etl-3")
    assert etl3.first_gang_start is not None and etl3.first_gang_start >= 800
    assert results.summarise(out).counters["placeholderTimeouts"] == 1


def test_mixed_ai_batch_completes_despite_the_failures() -> None:
    workload = parse.load(str(EXAMPLES / "mixed-ai-batch.yaml"))
    (out,) = runner.run_all(workload, ["gangsched"])
    assert set(outcomes(out).values()) == {Outcome.COMPLETED}
    assert results.summarise(out).pod_failures == 2


def test_a_small_generated_day_runs() -> None:
    data = generate.day(40, 400, seed=3)
    assert data == generate.day(40, 400, seed=3)  # the same seed, the same workload
    workload = parse.build(Document("day", data))
    assert workload.pod_count == 400 and len(workload.nodes) == 40
    (out,) = runner.run_all(workload, ["gangsched"])
    summary = results.summarise(out)
    assert summary.completed > summary.jobs // 2
    assert out.end == 86_400


def test_a_day_above_5000_nodes_is_an_ai_clusters() -> None:
    data = generate.day(20_000, 200_000)
    cpu, gpu = data["nodes"]
    assert gpu["count"] % generate.BLOCK_NODES == 0
    assert gpu["topology"] == {"blocks": gpu["count"] // generate.BLOCK_NODES,
                               "racks": generate.RACKS_PER_BLOCK}
    assert cpu["count"] + gpu["count"] == 20_000 and "topology" not in cpu
    training = [g for g in data["podGroups"] if g["name"].startswith("llm-")]
    assert training and all(g["minMember"] in generate.AI_GANGS for g in training)
    in_block = [g for g in training if g.get("topology") == {"required": BLOCK}]
    assert 0.1 < len(in_block) / len(training) < 0.3  # about a fifth
    # A gang asking for a block fits in one: half a node each.
    assert max(g["minMember"] for g in in_block) // 2 <= generate.BLOCK_NODES
    pods = sum(p["count"] for entry in (*data["applications"], *data["podGroups"],
                                        {"pods": [{"count": e["count"]} for e in data["pods"]]})
               for p in entry["pods"])
    assert pods == 200_000
    assert 0.2 < sum(g["minMember"] for g in training) / pods < 0.5  # about a third


def test_a_day_up_to_5000_nodes_has_neither_racks_nor_training_gangs() -> None:
    data = generate.day(5000, 20_000)
    assert all("topology" not in pool for pool in data["nodes"])
    assert data["nodes"][1]["count"] == 500  # one node in ten on the GPU pool
    assert not any(g["name"].startswith("llm-") for g in data["podGroups"])


def test_an_ai_day_parses_with_its_racks_and_blocks() -> None:
    workload = parse.build(Document("day", generate.day(6000, 30_000, seed=2)))
    assert len(workload.nodes) == 6000 and workload.pod_count == 30_000
    gpu = [n for n in workload.nodes if n.name.startswith("gpu-")]
    assert len({n.labels[BLOCK] for n in gpu}) == 2
    assert len({n.labels[RACK] for n in gpu}) == 2 * generate.RACKS_PER_BLOCK
    asking = [j for j in workload.jobs if j.group is not None
              and j.group.topology.required == BLOCK]
    assert asking and all(j.group is not None and j.group.min_member >= 256 for j in asking)


def _run(name: str, actions: tuple[str, ...] | None = None,
         placeholders: PlaceholderPolicy | None = None) -> runner.RunOutput:
    workload = parse.load(str(EXAMPLES / name))
    if actions is not None:
        workload = runner.with_actions(workload, actions)
    if placeholders is not None:
        settings = workload.settings
        config = dataclasses.replace(settings.config, placeholders=placeholders)
        workload = dataclasses.replace(workload,
                                       settings=dataclasses.replace(settings, config=config))
    (out,) = runner.run_all(workload, ["gangsched"])
    return out


def _start(out: runner.RunOutput, job: str) -> float | None:
    return next(run.first_gang_start for run in out.jobs if run.job.name == job)


def test_deadlock_one_victim_at_once_and_every_gang_completes() -> None:
    out = _run("deadlock.yaml")
    summary = results.summarise(out)
    assert summary.completed == 3 and summary.counters["deadlockVictims"] == 1
    assert (_start(out, "mpi-a"), _start(out, "mpi-c")) == (20, 22)
    victim = _start(out, "mpi-b")
    assert victim is not None and victim >= 300  # after the others left room
    # With enqueue the third gang is not let in: no deadlock forms.
    out = _run("deadlock.yaml", ("enqueue", "allocate", "backfill"))
    assert results.summarise(out).counters["deadlockVictims"] == 0


def test_starving_gang_starts_once_nodes_are_reserved_for_it() -> None:
    out = _run("starving-gang.yaml")
    assert results.summarise(out).counters["nodeReservations"] == 1
    started = _start(out, "train")
    assert started is not None and started < 900 + 300 + 600  # elected, then drained
    out = _run("starving-gang.yaml", ("enqueue", "allocate", "backfill"))
    starved = _start(out, "train")
    assert starved is not None and starved > 3600  # only once the stream of jobs ended


def test_enqueue_holds_no_idle_placeholders_and_backfill_places_best_effort_pods() -> None:
    out = _run("enqueue-backfill.yaml")
    assert results.summarise(out).placeholder_cpu_seconds == 0
    assert _start(out, "monitor") == 30  # placed at once on a full cluster
    # Placeholders for every member (the gangs' pods exist, so by default there are none):
    # without enqueue, admitted gangs hold them idle.
    out = _run("enqueue-backfill.yaml", ("allocate", "backfill"), PlaceholderPolicy.ALWAYS)
    assert results.summarise(out).placeholder_cpu_seconds > 0
    out = _run("enqueue-backfill.yaml", ("enqueue", "allocate", "backfill"),
               PlaceholderPolicy.ALWAYS)
    assert results.summarise(out).placeholder_cpu_seconds == 0


def test_preempt_and_reclaim_take_only_what_they_need_and_every_job_completes() -> None:
    out = _run("preempt-reclaim.yaml")
    summary = results.summarise(out)
    assert summary.completed == summary.jobs == 6
    assert summary.counters["reclaims"] == 1 and summary.counters["preemptions"] == 1
    assert summary.counters["evictions"] == 3  # one ETL worker for spark, two for urgent
    assert (_start(out, "spark"), _start(out, "urgent")) == (305, 600)
    notes = [entry.text for entry in out.timeline.entries]
    assert any(text.startswith("Reclaimed: the gang's reservation (4 placeholders) was "
                               "released") for text in notes)
    # Without the actions, both wait for the ETL gangs to finish.
    out = _run("preempt-reclaim.yaml", ("enqueue", "allocate", "backfill"))
    start = _start(out, "spark")
    assert start is not None and start >= 1800


def test_spark_deadlock_with_reclaim_completes_with_no_gang_timing_out() -> None:
    workload = parse.load(str(EXAMPLES / "spark-deadlock-reclaim.yaml"))
    gang, naive = runner.run_all(workload, ["gangsched", "naive"])
    summary = results.summarise(gang)
    assert summary.completed == summary.jobs == 17
    assert summary.job_timeouts == 0
    assert summary.counters["placeholderTimeouts"] == 0
    assert summary.counters["reclaims"] >= 8  # two Spark gangs at a time take room back
    # Pod by pod, the drivers take the room batch leaves and wait for executors forever.
    assert results.summarise(naive).outcomes["timedOut"] == 16
