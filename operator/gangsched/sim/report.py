"""Human-readable output of a simulation: the verdict, a comparison, summaries, what
happened (the timeline digested), a job table, and the full timeline.

Everything returns text; the CLI decides where it goes, verdict first. Long timelines and
job tables are cut to a limit (``None`` shows everything), saying how much was left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.sim import digest
from gangsched.sim.engine import KIND_NAMES, RunOutput
from gangsched.sim.results import Stats, Summary, makespan, summarise, wait

DIGEST_LINES = 40
"""Lines of "What happened" per run; ``--timeline`` prints every entry."""


def duration(seconds: float | None) -> str:
    """``42s``, ``12m05s``, ``3h20m``; ``-`` for None."""
    if seconds is None:
        return "-"
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f}s"
    if seconds < 120:
        return f"{seconds:.0f}s"
    total = round(seconds)
    if total < 7200:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def percent(fraction: float) -> str:
    """``42.0%``; small non-zero shares keep two decimals (``0.05%``), not ``0.0%``."""
    if 0 < fraction < 0.01:
        return f"{100 * fraction:.2f}%"
    return f"{100 * fraction:.1f}%"


def timeline(out: RunOutput, limit: int | None) -> str:
    entries = out.timeline.entries
    shown = entries if limit is None else entries[:limit]
    lines = [f"Timeline ({out.scheduler})", f"{'t':>9}  {'subject':<22} {'by':<9} what"]
    lines += [f"{e.t:>9.1f}  {e.subject:<22} {e.source:<9} {e.text}" for e in shown]
    if len(shown) < len(entries):
        lines.append(f"{'':>9}  ... {len(entries) - len(shown)} more entries "
                     "(--timeline all shows them; --json has them all)")
    return "\n".join(lines)


def verdict(outs: Sequence[RunOutput], name: str) -> str:
    """The answer first: the workload in one line, then one line per run."""
    workload = outs[0].workload
    cpu = sum(node.allocatable.get("cpu") for node in workload.nodes) / 1000
    schedulers = " and ".join(out.scheduler for out in outs)
    lines = [f"{name}: {len(workload.jobs)} jobs, {workload.pod_count} pods on "
             f"{len(workload.nodes)} nodes ({cpu:g} cpu), under {schedulers}"]
    width = max(len(out.scheduler) for out in outs)
    for out in outs:
        s = summarise(out)
        others = ", ".join(f"{n} {outcome}" for outcome, n in s.outcomes.items()
                           if outcome != "completed")
        text = f"{s.completed}/{s.jobs} jobs completed" + (f" ({others})" if others else "")
        if s.makespan is not None:
            text += f" in {duration(s.makespan)}"
        else:
            text += f"; the run ended at {duration(s.end)}"
        if s.wait.count:
            text += f"; wait to full gang p50 {duration(s.wait.p50)}"
        if s.job_timeouts:
            text += f"; {s.job_timeouts} driver timeouts"
        if s.counters.get("overCommittedNodes"):
            text += (f"; INVARIANT BROKEN: {s.counters['overCommittedNodes']} times a node "
                     "held more than its allocatable (see the timeline)")
        if s.counters.get("doubleAllocatedDevices"):
            text += (f"; INVARIANT BROKEN: {s.counters['doubleAllocatedDevices']} devices "
                     "allocated to two claims at once (see the timeline)")
        lines.append(f"  {out.scheduler:<{width}}  {text}")
    return "\n".join(lines)


def happened(out: RunOutput, limit: int | None = DIGEST_LINES) -> str:
    """The timeline digested: entries of one instant that say the same, said once."""
    grouped = digest.group(out.timeline.entries)
    shown = grouped if limit is None else grouped[:limit]
    lines = [f"What happened ({out.scheduler}; --timeline shows every entry)"]
    lines += [f"{g.t:>9.1f}  {g.source:<9} {g.subject}: {g.text}" for g in shown]
    if len(shown) < len(grouped):
        lines.append(f"{'':>9}  ... {len(grouped) - len(shown)} more lines "
                     "(--timeline shows every entry)")
    return "\n".join(lines)


def jobs(out: RunOutput, limit: int | None) -> str:
    runs = out.jobs if limit is None else out.jobs[:limit]
    width = max([len(r.job.name) for r in runs] + [3])
    head = (f"{'job':<{width}}  {'kind':<8} {'queue':<12} {'submit':>8} {'wait':>8} "
            f"{'makespan':>8}  {'outcome':<10} {'tries':>5}  state")
    lines = [f"Jobs ({out.scheduler})", head]
    for r in runs:
        lines.append(
            f"{r.job.name:<{width}}  {KIND_NAMES[r.job.kind]:<8} {r.job.queue:<12} "
            f"{duration(r.job.submit_at):>8} {duration(wait(r)):>8} "
            f"{duration(makespan(r)):>8}  {r.outcome or '-':<10} {r.attempt:>5}  "
            f"{r.core_state or '-'}")
    if len(runs) < len(out.jobs):
        lines.append(f"... {len(out.jobs) - len(runs)} more jobs (--jobs all shows them)")
    return "\n".join(lines)


def _stats(stats: Stats) -> str:
    if not stats.count:
        return "-"
    return (f"mean {duration(stats.mean)}, p50 {duration(stats.p50)}, "
            f"p95 {duration(stats.p95)}, max {duration(stats.max)} ({stats.count} jobs)")


def _util(s: Summary, resource: str) -> str:
    u = s.utilisation
    return (f"{percent(u[resource])} (busy {percent(u[resource + '.busy'])}, pods waiting "
            f"for their gang {percent(u[resource + '.idle'])}, placeholders "
            f"{percent(u[resource + '.placeholder'])})")


def _partial(s: Summary) -> str:
    """The partial-gang measure, and the latency it was measured under."""
    p, lat = s.partial_gangs, s.latency
    text = (f"some but not all minimum members bound: max {p.max_seconds:.1f}s, total "
            f"{p.total_seconds:.1f}s; {p.violations} over {p.limit:g}s")
    if lat.any:
        grace = (f"{lat.grace_min:g}s" if lat.grace_min == lat.grace_max
                 else f"{lat.grace_min:g}-{lat.grace_max:g}s")
        stopped = (f", stopped {lat.stopped_before_gone:g}s before gone"
                   if lat.stopped_before_gone else "")
        text += (f" (cluster latency: deletion {grace}{stopped}, running after "
                 f"{lat.running_after:g}s, watches {lat.watch_delay:g}s late)")
    else:
        text += " (instant cluster)"
    return text


def summary(out: RunOutput, s: Summary | None = None) -> str:
    s = s or summarise(out)
    outcomes = ", ".join(f"{n} {name}" for name, n in s.outcomes.items())
    counters = ", ".join(f"{name} {n}" for name, n in s.counters.items()) or "-"
    rows = [
        ("jobs", f"{s.jobs}: {outcomes}"),
        ("driver timeouts", f"{s.job_timeouts} ({s.retries} retries, "
                            f"{s.pod_failures} pods failed, lost or evicted)"),
        ("scheduler", counters),
        ("wait to full gang", _stats(s.wait)),
        ("job makespan", _stats(s.job_makespan)),
        ("run makespan", duration(s.makespan) if s.makespan is not None
         else f"- (not every job completed; the run ended at {duration(s.end)})"),
        ("cpu utilisation", _util(s, "cpu")),
        ("memory utilisation", _util(s, "memory")),
        ("reserved but idle", f"placeholders {s.placeholder_cpu_seconds:,.0f} cpu·s, "
                              f"{s.placeholder_memory_gib_seconds:,.0f} GiB·s; pods waiting "
                              f"for their gang {s.idle_cpu_seconds:,.0f} cpu·s, "
                              f"{s.idle_memory_gib_seconds:,.0f} GiB·s"),
        ("partial gangs", _partial(s)),
        ("simulated", f"{duration(out.end)} in {s.cycles:,} scheduler cycles, "
                      f"{s.wall_seconds:.2f}s of wall time"),
    ]
    if s.topology is not None:
        t = s.topology
        rows.insert(-1, ("topology", f"{t.gangs} gangs ran, {t.cross_rack} across racks; "
                                     f"{t.topology_broken} of {t.topology_gangs} topology "
                                     f"requests broken; stranded "
                                     f"{t.stranded_cpu_seconds:,.0f} cpu·s"))
    width = max(len(name) for name, _ in rows)
    return "\n".join([f"Summary ({out.scheduler})"]
                     + [f"  {name:<{width}}  {value}" for name, value in rows])


def comparison(outs: Sequence[RunOutput]) -> str:
    """Runs side by side. CPU figures cover the same horizon for every run (the latest
    end): a run that ended earlier counts what it still held from its end on."""
    summaries = [summarise(out) for out in outs]
    horizon = max(out.end for out in outs)
    held = [out.usage.until(horizon) for out in outs]

    def share(index: int, *names: str) -> str:
        cpu, capacity = held[index]
        return percent(sum(cpu[name] for name in names) / (capacity or 1.0))

    rows: list[tuple[str, list[str]]] = [
        ("jobs completed", [f"{s.completed}/{s.jobs}" for s in summaries]),
        ("jobs failed, timed out or stalled", [str(s.bad) for s in summaries]),
        ("driver timeouts", [str(s.job_timeouts) for s in summaries]),
        ("wait to full gang, p50", [duration(s.wait.p50) for s in summaries]),
        ("wait to full gang, p95", [duration(s.wait.p95) for s in summaries]),
        ("run makespan", [duration(s.makespan) for s in summaries]),
        ("cpu busy", [share(i, "busy") for i in range(len(outs))]),
        ("cpu held, doing nothing", [share(i, "idle", "placeholder")
                                     for i in range(len(outs))]),
        ("idle cpu·s (placeholders + waiting pods)",
         [f"{cpu['placeholder'] + cpu['idle']:,.0f}" for cpu, _ in held]),
    ]
    measures = [s.topology for s in summaries]
    if all(m is not None for m in measures):
        known = [m for m in measures if m is not None]
        rows += [
            ("gangs placed", [str(m.gangs) for m in known]),
            ("gangs across racks", [str(m.cross_rack) for m in known]),
            ("required topology broken", [f"{m.topology_broken}/{m.topology_gangs}"
                                          for m in known]),
            ("stranded cpu·s", [f"{m.stranded_cpu_seconds:,.0f}" for m in known]),
        ]
    width = max(len(name) for name, _ in rows)
    cols = [max(len(s.scheduler), *(len(values[i]) for _, values in rows))
            for i, s in enumerate(summaries)]
    head = f"  {'':<{width}}  " + "  ".join(f"{s.scheduler:>{c}}"
                                             for s, c in zip(summaries, cols, strict=True))
    lines = [f"Comparison (cpu over the same {duration(horizon)} for every run)", head]
    for name, values in rows:
        lines.append(f"  {name:<{width}}  "
                     + "  ".join(f"{v:>{c}}" for v, c in zip(values, cols, strict=True)))
    return "\n".join(lines)
