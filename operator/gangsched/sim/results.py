"""Results of a run: per-job metrics, a summary, and the machine-readable form.

Definitions (all times in simulated seconds):

* *wait to full gang*: from the job's submission to the first instant its whole gang ran
  (over all attempts); absent when that never happened;
* *makespan* of a job: from submission to its end (completed or not); of a run: from the
  first submission to the last job's end, only when every job completed;
* *utilisation*: time-averaged share of the capacity of the nodes that were up, per
  category (``busy``: pods of jobs making progress; ``idle``: real pods waiting for the
  rest of their gang; ``placeholder``), measured until the last job ended;
* *reserved but idle*: resource-seconds held by placeholders, and by real pods whose gang
  did not run yet;
* *topology* (when nodes have racks or jobs request a topology): gangs, cross-rack gangs,
  gangs whose required topology was broken, stranded cpu·s (see :mod:`gangsched.sim.racks`).

``to_json`` gives the ``--json`` document, schema ``gangsched.sim/v1``: ``runs`` is a list
with one entry per scheduler, each holding ``summary``, ``jobs`` (each with its ``pods``:
node, created/started/ended times and final status, over every attempt), ``usage`` (the
CPU curve the plot draws) and ``timeline``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gangsched.sim import racks
from gangsched.sim.engine import RunOutput
from gangsched.sim.jobs import JobRun, Outcome
from gangsched.sim.latency import NO_LATENCY, Latency
from gangsched.sim.partial import NOTHING_PARTIAL, PartialGangs, PartialSummary
from gangsched.sim.usage import CATEGORIES, Sample

MAX_SAMPLES = 20_000
"""Points of the usage curve kept for the plot and ``--json``."""

SCHEMA = "gangsched.sim/v1"


@dataclass(frozen=True, slots=True)
class Stats:
    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        if not values:
            return cls(0, None, None, None, None)
        ordered = sorted(values)
        return cls(len(ordered), sum(ordered) / len(ordered), _quantile(ordered, 0.5),
                   _quantile(ordered, 0.95), ordered[-1])

    def to_json(self) -> dict[str, object]:
        return {"count": self.count, "mean": _round(self.mean), "p50": _round(self.p50),
                "p95": _round(self.p95), "max": _round(self.max)}


def _quantile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank quantile of sorted values."""
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def wait(run: JobRun) -> float | None:
    if run.first_gang_start is None:
        return None
    return run.first_gang_start - run.job.submit_at


def makespan(run: JobRun) -> float | None:
    if run.finished_at is None:
        return None
    return run.finished_at - run.job.submit_at


@dataclass(frozen=True, slots=True)
class Summary:
    scheduler: str
    jobs: int
    outcomes: dict[str, int]
    job_timeouts: int
    retries: int
    pod_failures: int
    counters: dict[str, int]
    wait: Stats
    job_makespan: Stats
    makespan: float | None
    end: float
    utilisation: dict[str, float]
    placeholder_cpu_seconds: float
    placeholder_memory_gib_seconds: float
    idle_cpu_seconds: float
    idle_memory_gib_seconds: float
    cycles: int
    wall_seconds: float
    partial_gangs: PartialSummary = NOTHING_PARTIAL
    """Seconds gangs spent with some but not all of their minimum members bound."""
    latency: Latency = NO_LATENCY
    topology: racks.Measures | None = None

    @property
    def completed(self) -> int:
        return self.outcomes.get(Outcome.COMPLETED.value, 0)

    @property
    def bad(self) -> int:
        """Jobs that failed, were killed or rejected, timed out or stalled."""
        return sum(n for name, n in self.outcomes.items() if Outcome(name).bad)

    def to_json(self) -> dict[str, object]:
        return {
            "scheduler": self.scheduler,
            "jobs": self.jobs,
            "outcomes": self.outcomes,
            "completed": self.completed,
            "jobTimeouts": self.job_timeouts,
            "retries": self.retries,
            "podFailures": self.pod_failures,
            "schedulerCounters": self.counters,
            "waitToFullGang": self.wait.to_json(),
            "jobMakespan": self.job_makespan.to_json(),
            "makespan": _round(self.makespan),
            "end": _round(self.end),
            "utilisation": {k: _round(v, 4) for k, v in self.utilisation.items()},
            "reservedIdle": {
                "placeholderCpuSeconds": _round(self.placeholder_cpu_seconds),
                "placeholderMemoryGiBSeconds": _round(self.placeholder_memory_gib_seconds),
                "waitingPodsCpuSeconds": _round(self.idle_cpu_seconds),
                "waitingPodsMemoryGiBSeconds": _round(self.idle_memory_gib_seconds),
            },
            "partialGangs": self.partial_gangs.to_json(),
            "latency": self.latency.to_json(),
            "cycles": self.cycles,
            "wallSeconds": _round(self.wall_seconds),
            **({"topology": self.topology.to_json()} if self.topology is not None else {}),
        }


def summarise(out: RunOutput) -> Summary:
    outcomes = {o.value: 0 for o in Outcome}
    for run in out.jobs:
        if run.outcome is not None:
            outcomes[run.outcome.value] += 1
    ends = [r.finished_at for r in out.jobs if r.finished_at is not None]
    first = min((r.job.submit_at for r in out.jobs), default=0.0)
    usage = out.usage
    return Summary(
        scheduler=out.scheduler,
        jobs=len(out.jobs),
        outcomes={k: v for k, v in outcomes.items() if v},
        job_timeouts=sum(r.job_timeouts for r in out.jobs),
        retries=sum(r.attempt - 1 for r in out.jobs if r.attempt > 1),
        pod_failures=sum(r.pod_failures for r in out.jobs),
        counters=out.counters,
        wait=Stats.of([w for r in out.jobs if (w := wait(r)) is not None]),
        job_makespan=Stats.of([m for r in out.jobs if (m := makespan(r)) is not None]),
        makespan=(max(ends) - first) if ends and all(r.outcome is Outcome.COMPLETED
                                                     for r in out.jobs) else None,
        end=out.end,
        utilisation=usage.fractions(),
        placeholder_cpu_seconds=usage.cpu_seconds["placeholder"],
        placeholder_memory_gib_seconds=usage.memory_seconds["placeholder"],
        idle_cpu_seconds=usage.cpu_seconds["idle"],
        idle_memory_gib_seconds=usage.memory_seconds["idle"],
        cycles=out.cycles,
        wall_seconds=out.wall_seconds,
        partial_gangs=(out.partial or PartialGangs()).summary(out.latency.swap_seconds),
        latency=out.latency,
        topology=racks.measure(out.workload.nodes, out.jobs, out.stranded_cpu_seconds)
        if racks.relevant(out.workload.nodes, out.workload.jobs) else None,
    )


def job_json(run: JobRun) -> dict[str, object]:
    job = run.job
    return {
        "name": job.name,
        "namespace": job.namespace,
        "kind": job.kind.value,
        "queue": job.queue,
        "submittedAt": _round(job.submit_at),
        "gangStartedAt": _round(run.first_gang_start),
        "finishedAt": _round(run.finished_at),
        "waitToFullGang": _round(wait(run)),
        "makespan": _round(makespan(run)),
        "outcome": run.outcome.value if run.outcome is not None else None,
        "reason": run.reason,
        "attempts": run.attempt,
        "jobTimeouts": run.job_timeouts,
        "podFailures": run.pod_failures,
        "schedulerState": run.core_state or None,
        "phases": [{"start": _round(s.start), "end": _round(s.end), "phase": s.phase}
                   for s in run.segments],
        "pods": [{"name": p.name, "member": p.member, "attempt": p.attempt,
                  "node": p.node, "createdAt": _round(p.created),
                  "startedAt": _round(p.started), "endedAt": _round(p.ended),
                  "status": p.status.value} for p in run.history],
    }


def usage_json(out: RunOutput) -> dict[str, object]:
    """The CPU curve the plot draws: cores in use per category and the capacity of the
    nodes that are up, as a step function (each value holds until the next ``t``)."""
    samples = thin(out.usage.samples)
    return {
        "resource": "cpu",
        "unit": "cores",
        "categories": list(CATEGORIES),
        "series": [{"t": _round(x.t), "capacity": _round(x.capacity_cpu),
                    **{name: _round(x.cpu[name]) for name in CATEGORIES}} for x in samples],
    }


def thin(samples: Sequence[Sample]) -> Sequence[Sample]:
    """At most MAX_SAMPLES samples, evenly picked, the last one kept."""
    if len(samples) <= MAX_SAMPLES:
        return samples
    step = len(samples) // MAX_SAMPLES + 1
    return [*samples[::step], samples[-1]]


def run_json(out: RunOutput, *, timeline: bool = True) -> dict[str, object]:
    result: dict[str, object] = {
        "scheduler": out.scheduler,
        "summary": summarise(out).to_json(),
        "jobs": [job_json(run) for run in out.jobs],
    }
    result["usage"] = usage_json(out)
    if timeline:
        result["timeline"] = [{"t": _round(e.t), "subject": e.subject, "source": e.source,
                               "text": e.text} for e in out.timeline.entries]
    return result


def to_json(workload: str, outputs: Sequence[RunOutput], *,
            timeline: bool = True) -> dict[str, object]:
    return {
        "schema": SCHEMA,
        "workload": workload,
        "runs": [run_json(out, timeline=timeline) for out in outputs],
    }
