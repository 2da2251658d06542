"""Human-readable output of a simulation: the timeline, a job table, summaries, a comparison.

Everything returns text; the CLI decides where it goes. Long timelines and job tables are
cut to a limit (``None`` shows everything), saying how much was left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.sim.engine import KIND_NAMES, RunOutput
from gangsched.sim.results import Stats, Summary, makespan, summarise, wait


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


def summary(out: RunOutput, s: Summary | None = None) -> str:
    s = s or summarise(out)
    outcomes = ", ".join(f"{n} {name}" for name, n in s.outcomes.items())
    counters = ", ".join(f"{name} {n}" for name, n in s.counters.items()) or "-"
    rows = [
        ("jobs", f"{s.jobs}: {outcomes}"),
        ("driver timeouts", f"{s.job_timeouts} ({s.retries} retries, "
                            f"{s.pod_failures} pods failed or lost)"),
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
        ("simulated", f"{duration(out.end)} in {s.cycles:,} scheduler cycles, "
                      f"{s.wall_seconds:.2f}s of wall time"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join([f"Summary ({out.scheduler})"]
                     + [f"  {name:<{width}}  {value}" for name, value in rows])


def comparison(outs: Sequence[RunOutput]) -> str:
    summaries = [summarise(out) for out in outs]
    rows: list[tuple[str, list[str]]] = [
        ("jobs completed", [f"{s.completed}/{s.jobs}" for s in summaries]),
        ("jobs failed, timed out or stalled", [str(s.bad) for s in summaries]),
        ("driver timeouts", [str(s.job_timeouts) for s in summaries]),
        ("wait to full gang, p50", [duration(s.wait.p50) for s in summaries]),
        ("wait to full gang, p95", [duration(s.wait.p95) for s in summaries]),
        ("run makespan", [duration(s.makespan) for s in summaries]),
        ("cpu busy", [percent(s.utilisation["cpu.busy"]) for s in summaries]),
        ("cpu held, doing nothing",
         [percent(s.utilisation["cpu.idle"] + s.utilisation["cpu.placeholder"])
          for s in summaries]),
        ("idle cpu·s (placeholders + waiting pods)",
         [f"{s.placeholder_cpu_seconds + s.idle_cpu_seconds:,.0f}" for s in summaries]),
    ]
    width = max(len(name) for name, _ in rows)
    cols = [max(len(s.scheduler), *(len(values[i]) for _, values in rows))
            for i, s in enumerate(summaries)]
    head = f"  {'':<{width}}  " + "  ".join(f"{s.scheduler:>{c}}"
                                             for s, c in zip(summaries, cols, strict=True))
    lines = ["Comparison", head]
    for name, values in rows:
        lines.append(f"  {name:<{width}}  "
                     + "  ".join(f"{v:>{c}}" for v, c in zip(values, cols, strict=True)))
    return "\n".join(lines)
