"""``gangsched simulate``: load or generate a workload, run it, and report.

The CLI (:mod:`gangsched.cli`) parses the command line into :class:`Options`; this module
does the rest and returns the exit code. Text results go to ``out``; errors, notes and the
progress bar to ``err``, so that ``--json`` output can be piped as it is.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

import yaml

from gangsched.sim import explained, generate, html, parse, plot, report, results, runner
from gangsched.sim.engine import Progress, RunOutput
from gangsched.sim.progress import ProgressBar
from gangsched.sim.source import Document, WorkloadError
from gangsched.sim.workload import Workload

EXIT_OK = 0
EXIT_JOBS_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True, slots=True)
class Options:
    workload: str | None = None
    """The workload file; None with ``generate``."""
    generate: str | None = None
    """``day``: simulate a generated workload."""
    nodes: int = 1000
    pods: int = 10_000
    seed: int = 1
    write_workload: str | None = None
    """Save the generated workload here."""
    compare: tuple[str, ...] = ()
    """Other schedulers to run the workload under (``naive``)."""
    plot: str | None = None
    """Write the Gantt and utilisation chart here (SVG or PDF by the suffix, else PNG)."""
    plot_by_default: bool = False
    """``plot`` was chosen for the user (beside the workload): failing to write it is a
    note, not an error."""
    json: bool = False
    until: float | None = None
    timeline: int | None = 0
    """Full timeline entries printed per run; None for all, 0 for the digest instead."""
    jobs: int | None = 50
    """Jobs listed per run; None for all."""
    progress: bool = False
    fail_on_timeout: bool = False
    actions: tuple[str, ...] | None = None
    """The scheduler's actions, overriding the workload's ``settings.scheduler.actions``."""
    explain: str | None = None
    """A job to explain as ``gangsched explain`` would, as the gangsched run left it."""
    explainer: Callable[..., str] | None = None
    """``format_explanation(obj, events, pods, claims=...)`` of the operator shell (given
    by the CLI)."""
    html: str | None = None
    """A folder to write the dashboard's pages of the gangsched run into."""
    html_at: float | None = None
    """The simulated time those pages show (None: the end of the run)."""


def _load(options: Options, err: TextIO) -> tuple[Workload, str] | None:
    """The workload and its name, or None after printing why it cannot be used."""
    if options.generate is None:
        assert options.workload is not None  # the CLI requires one of the two
        try:
            workload = parse.load(options.workload)
            for warning in workload.warnings:
                print(warning, file=err)
            return workload, options.workload
        except WorkloadError as error:
            for problem in error.errors:
                print(problem, file=err)
            count = len(error.errors)
            print(f"gangsched simulate: {count} problem{'s' if count > 1 else ''} in "
                  f"{options.workload}", file=err)
            return None
    name = f"generated {options.generate} ({options.nodes} nodes, {options.pods} pods, " \
        f"seed {options.seed})"
    data = generate.day(options.nodes, options.pods, seed=options.seed)
    if options.write_workload is not None:
        try:
            with open(options.write_workload, "w", encoding="utf-8") as handle:
                handle.write(f"# {name}, written by gangsched simulate --generate\n")
                yaml.safe_dump(data, handle, sort_keys=False, width=100)
        except OSError as error:
            print(f"gangsched simulate: cannot write {options.write_workload}: "
                  f"{error.strerror or error}", file=err)
            return None
    return parse.build(Document(name, data)), name


def simulate(options: Options, out: TextIO, err: TextIO) -> int:
    loaded = _load(options, err)
    if loaded is None:
        return EXIT_USAGE
    workload, name = loaded
    if options.explain is not None and not any(
            job.name == options.explain for job in workload.jobs):
        known = ", ".join(job.name for job in workload.jobs[:10])
        print(f"gangsched simulate: --explain {options.explain}: no such job in {name} "
              f"(jobs: {known}{', ...' if len(workload.jobs) > 10 else ''})", file=err)
        return EXIT_USAGE
    if workload.uses_devices and "naive" in options.compare:
        print(f"gangsched simulate: --compare naive: {name} has devices (Dynamic Resource "
              "Allocation), which the naive binder does not model", file=err)
        return EXIT_USAGE
    workload = runner.with_until(workload, options.until)
    if options.actions is not None:
        workload = runner.with_actions(workload, options.actions)
    schedulers = ["gangsched", *(s for s in options.compare if s != "gangsched")]
    bars: list[ProgressBar] = []

    def progress(scheduler: str) -> Progress | None:
        if not options.progress:
            return None
        bar = ProgressBar(err, f"{scheduler:>9}", workload.settings.until)
        bars.append(bar)
        return bar

    try:
        outputs = runner.run_all(workload, schedulers, progress=progress,
                                 keep_samples=options.plot is not None or options.json,
                                 view_at=options.html_at if options.html else None)
    finally:
        for bar in bars:
            bar.close()
    if options.json:
        json.dump(results.to_json(name, outputs), out, indent=2)
        out.write("\n")
    else:
        _text(outputs, options, name, out)
    if options.explain is not None and options.explainer is not None:
        out.write("\n" + _explain(outputs[0], options.explain, options.explainer))
    out.flush()
    if options.plot is not None:
        try:
            plot.plot(outputs, options.plot, title=name)
        except OSError as error:
            print(f"gangsched simulate: cannot write {options.plot}: "
                  f"{error.strerror or error}", file=err)
            if not options.plot_by_default:
                return EXIT_USAGE
        else:
            note = " (--no-plot to skip it)" if options.plot_by_default else ""
            print(f"wrote {options.plot}{note}", file=err)
    if options.html is not None:
        view = html.view_of(outputs[0], options.explainer)
        if view is None:
            print("gangsched simulate: --html: the first run is not gangsched's", file=err)
            return EXIT_USAGE
        try:
            html.write(view, options.html)
        except OSError as error:
            print(f"gangsched simulate: cannot write {options.html}: "
                  f"{error.strerror or error}", file=err)
            return EXIT_USAGE
        print(f"wrote {os.path.join(options.html, 'index.html')}", file=err)
    main = results.summarise(outputs[0])
    if options.fail_on_timeout and main.bad:
        print(f"gangsched simulate: {main.bad} of {main.jobs} jobs did not complete under "
              "gangsched (--fail-on-timeout)", file=err)
        return EXIT_JOBS_FAILED
    return EXIT_OK


def _text(outputs: list[RunOutput], options: Options, name: str, out: TextIO) -> None:
    """The verdict first, then the comparison and summaries; then, per run, what
    happened (or with ``--timeline`` every entry) and the jobs."""
    sections = [report.verdict(outputs, name)]
    if len(outputs) > 1:
        sections.append(report.comparison(outputs))
    sections += [report.summary(output) for output in outputs]
    for output in outputs:
        if options.timeline != 0:
            sections.append(report.timeline(output, options.timeline))
        else:
            sections.append(report.happened(output))
        if options.jobs != 0:
            sections.append(report.jobs(output, options.jobs))
    out.write("\n\n".join(sections) + "\n")


def _explain(output: RunOutput, job: str, explainer: Callable[..., str]) -> str:
    obj, events, pods = explained.objects(output, job)
    head = (f"Explain {job} ({output.scheduler}, as the run left it at "
            f"{report.duration(output.end)}; times are seconds since the start)\n")
    return head + explainer(obj, events, pods, claims=explained.claims(output))
