"""The event-driven engine and its job model, under the real core and the naive binder."""

from __future__ import annotations

import textwrap

import pytest
from gangsched.sim import results, runner
from gangsched.sim.engine import RunOutput
from gangsched.sim.jobs import JobRun, Outcome
from gangsched.sim.parse import build
from gangsched.sim.source import parse


def simulate(text: str, scheduler: str = "gangsched") -> RunOutput:
    workload = build(parse(textwrap.dedent(text), "test.yaml"))
    return runner.run_all(workload, [scheduler])[0]


def job(out: RunOutput, name: str) -> JobRun:
    return next(run for run in out.jobs if run.job.name == name)


SPARK = """\
    nodes:
      - {pool: n, count: 1, cpu: 16, memory: 64Gi}
    applications:
      - name: spark
        taskGroups:
          - {name: driver, minMember: 1, minResource: {cpu: 1, memory: 1Gi}}
          - {name: executor, minMember: 2, minResource: {cpu: 2, memory: 2Gi}}
        pods:
          - {taskGroup: driver, duration: 600, cpu: 1, memory: 1Gi}
          - {taskGroup: executor, count: 2, after: driver, delay: 5, duration: 500,
             cpu: 2, memory: 2Gi}
"""


@pytest.mark.parametrize("scheduler", ["gangsched", "naive"])
def test_work_starts_when_the_whole_gang_runs(scheduler: str) -> None:
    out = simulate(SPARK, scheduler)
    spark = job(out, "spark")
    assert spark.outcome is Outcome.COMPLETED
    assert spark.first_gang_start == 5  # executors are created 5 s after the driver starts
    assert spark.finished_at == 605  # the driver's 600 s count from the gang's start
    assert [s.phase for s in spark.segments] == ["holding", "running"]
    assert out.end == 605


def test_gangsched_records_the_core_state_changes() -> None:
    out = simulate(SPARK)
    texts = [(e.subject, e.text) for e in out.timeline.entries if e.source == "gangsched"]
    assert ("app spark", "Accepted: queue default") in texts
    assert any(text.startswith("Waiting -> Completed") for _, text in texts)
    assert job(out, "spark").core_state == "Completed"


DEADLOCK = """\
    nodes:
      - {name: n, cpu: 4, memory: 16Gi}
    applications:
      - name: job
        replicas: 2
        taskGroups:
          - {name: driver, minMember: 1, minResource: {cpu: 2, memory: 1Gi}}
          - {name: executor, minMember: 1, minResource: {cpu: 2, memory: 1Gi}}
        pods:
          - {taskGroup: driver, duration: 100, cpu: 2, memory: 1Gi}
          - {taskGroup: executor, after: driver, delay: 1, duration: 100, cpu: 2,
             memory: 1Gi}
"""


def test_naive_deadlock_stalls_without_a_timeout() -> None:
    out = simulate(DEADLOCK, "naive")
    assert [run.outcome for run in out.jobs] == [Outcome.STALLED, Outcome.STALLED]
    assert "1/2 gang pods running" in out.jobs[0].reason


def test_naive_deadlock_times_out_and_retries() -> None:
    out = simulate(DEADLOCK + "        driverTimeoutSeconds: 60\n        maxRetries: 2\n"
                   "        retryDelaySeconds: 10\n", "naive")
    for run in out.jobs:
        assert run.outcome is Outcome.TIMED_OUT
        assert run.attempt == 3 and run.job_timeouts == 3
    summary = results.summarise(out)
    assert summary.job_timeouts == 6 and summary.retries == 4
    # Held and doing nothing, except during the two 10 s retry delays of a 200 s run.
    assert summary.utilisation["cpu.idle"] == pytest.approx(0.9)
    assert summary.utilisation["cpu.busy"] == 0


def test_gangsched_runs_the_same_jobs_one_gang_at_a_time() -> None:
    out = simulate(DEADLOCK + "        driverTimeoutSeconds: 60\n")
    assert [run.outcome for run in out.jobs] == [Outcome.COMPLETED, Outcome.COMPLETED]
    assert results.summarise(out).job_timeouts == 0


def test_a_lost_pod_is_replaced_and_the_job_still_completes() -> None:
    out = simulate("""\
        nodes:
          - {pool: n, count: 2, cpu: 4, memory: 4Gi}
        pods:
          - {name: web, duration: 100, cpu: 3, memory: 1Gi}
        events:
          - {at: 50, nodeDown: n-0}
    """)
    web = job(out, "web")
    assert web.outcome is Outcome.COMPLETED and web.pod_failures == 1
    assert web.finished_at == 155  # replaced 5 s after the loss, then a full 100 s
    assert any(e.text == "went down" for e in out.timeline.entries)


def test_a_failed_pod_fails_the_job_when_asked() -> None:
    out = simulate("""\
        nodes:
          - {name: n, cpu: 4, memory: 4Gi}
        pods:
          - {name: web, count: 2, duration: 100, cpu: 1, memory: 1Gi, onPodFailure: fail}
        events:
          - {at: 10, podFails: web/pod-1}
    """)
    web = job(out, "web")
    assert web.outcome is Outcome.FAILED and web.finished_at == 10


def test_the_clock_stops_at_until() -> None:
    out = simulate("settings: {until: 50}\n" + textwrap.dedent(SPARK))
    assert job(out, "spark").outcome is Outcome.UNFINISHED and out.end == 50


@pytest.mark.parametrize(
    ("text", "outcome"),
    [
        pytest.param("""\
            nodes:
              - {name: n, cpu: 4, memory: 4Gi}
            queues:
              - {name: q, max: {cpu: 2}}
            applications:
              - name: big
                queue: q
                taskGroups: [{name: g, minMember: 2, minResource: {cpu: 2}}]
                pods: [{taskGroup: g, count: 2, duration: 10, cpu: 2}]
        """, Outcome.REJECTED, id="gang-over-queue-max"),
        pytest.param("""\
            settings:  # enqueue admits the gang although the cluster cannot hold it
              scheduler: {overcommitFactor: 2}
            nodes:
              - {name: n, cpu: 4, memory: 4Gi}
            applications:
              - name: big
                style: Hard
                placeholderTimeoutSeconds: 30
                taskGroups: [{name: g, minMember: 3, minResource: {cpu: 2}}]
                pods: [{taskGroup: g, count: 3, duration: 10, cpu: 2}]
        """, Outcome.KILLED, id="hard-placeholder-timeout"),
        pytest.param("""\
            nodes:
              - {name: n, cpu: 4, memory: 4Gi}
            podGroups:
              - {name: big, minMember: 3, scheduleTimeoutSeconds: 30, mode: NonStrict,
                 pods: [{count: 3, duration: 10, cpu: 2}]}
        """, Outcome.TIMED_OUT, id="podgroup-schedule-timeout"),
    ],
)
def test_the_core_ends_jobs_it_cannot_run(text: str, outcome: Outcome) -> None:
    out = simulate(text)
    big = job(out, "big")
    assert big.outcome is outcome
    if outcome is not Outcome.REJECTED:
        assert big.finished_at == 30  # the core's timer fired exactly on time


def test_utilisation_is_integrated_over_simulated_time() -> None:
    out = simulate("""\
        nodes:
          - {name: n, cpu: 8, memory: 8Gi}
        pods:
          - {name: half, duration: 100, cpu: 4, memory: 2Gi}
    """)
    usage = results.summarise(out).utilisation
    assert usage["cpu"] == pytest.approx(0.5) and usage["memory"] == pytest.approx(0.25)


def test_the_clock_jumps_over_idle_time() -> None:
    out = simulate("""\
        nodes:
          - {name: n, cpu: 8, memory: 8Gi}
        pods:
          - {name: early, duration: 10, cpu: 1}
          - {name: late, submitAt: 1000000, duration: 10, cpu: 1}
    """)
    assert all(run.outcome is Outcome.COMPLETED for run in out.jobs)
    assert out.cycles < 20


def test_runs_are_deterministic() -> None:
    first, second = simulate(SPARK), simulate(SPARK)
    assert first.timeline.entries == second.timeline.entries


def test_phases_of_a_job_cut_off_while_waiting_for_its_retry() -> None:
    out = simulate("settings: {until: 100}\n" + textwrap.dedent(DEADLOCK)
                   + "    driverTimeoutSeconds: 60\n    maxRetries: 1\n"
                   "    retryDelaySeconds: 100\n", "naive")
    first = out.jobs[0]
    assert first.outcome is Outcome.UNFINISHED
    assert [(s.start, s.end, s.phase) for s in first.segments] == [
        (0, 60, "holding"), (60, 100, "queued")]
