"""``--plot``: a Gantt chart of the jobs over a cluster-utilisation curve, one pair per run.

Each job is a row: grey while queued, orange while it holds capacity without running
(placeholders, or real pods waiting for the rest of their gang), green while its gang runs;
a red cross marks a job that failed, was killed, rejected or timed out (its last attempt),
a black bar the end of an attempt that was retried. Below, the CPU in use over time, split
the same way, under the capacity of the nodes that are up.

Matplotlib's object API with the Agg canvas is used directly: no pyplot, no global state,
no display needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.sim.engine import RunOutput
from gangsched.sim.results import thin
from gangsched.sim.usage import Sample

COLOURS = {"queued": "#d0d0d0", "holding": "#f28e2b", "running": "#59a14f"}
USAGE_COLOURS = {"busy": "#59a14f", "idle": "#e15759", "placeholder": "#f28e2b"}
USAGE_LABELS = {"busy": "busy", "idle": "pods waiting for their gang",
                "placeholder": "placeholders"}
MAX_LABELLED_ROWS = 40
FORMATS = {".svg": "svg", ".pdf": "pdf", ".png": "png"}
"""The file's suffix picks the format; any other suffix gets a PNG."""


def image_format(path: str) -> str:
    """``svg``, ``pdf`` or ``png``, by the suffix of ``path`` (case-insensitive)."""
    for suffix, name in FORMATS.items():
        if path.lower().endswith(suffix):
            return name
    return "png"


def plot(outputs: Sequence[RunOutput], path: str, *, title: str = "") -> None:
    """Draw every run and write it to ``path``: SVG or PDF by its suffix, else PNG
    (OSError if it cannot be written)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = max(len(out.jobs) for out in outputs)
    gantt_height = min(max(2.5, rows * 0.22), 9.0)
    ratios: list[float] = []
    for _ in outputs:
        ratios += [gantt_height, 2.2]
    figure = Figure(figsize=(12, sum(ratios) + 0.8 * len(outputs)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(ratios), 1, sharex=True,
                           gridspec_kw={"height_ratios": ratios}, squeeze=False)
    end = max(max(out.end for out in outputs), 1.0)
    for index, out in enumerate(outputs):
        gantt, usage = axes[2 * index][0], axes[2 * index + 1][0]
        for row, run in enumerate(out.jobs):
            y = len(out.jobs) - 1 - row
            for segment in run.segments:
                width = max(segment.end - segment.start, end / 2000)
                gantt.broken_barh([(segment.start, width)], (y - 0.4, 0.8),
                                  facecolors=COLOURS[segment.phase], linewidth=0)
            if run.outcome is not None and run.outcome.bad and run.finished_at is not None:
                gantt.plot([run.finished_at], [y], marker="x", color="#c00000", markersize=5)
        gantt.set_ylim(-0.8, len(out.jobs) - 0.2)
        if len(out.jobs) <= MAX_LABELLED_ROWS:
            gantt.set_yticks(range(len(out.jobs)),
                             [run.job.name for run in reversed(out.jobs)], fontsize=7)
        else:
            gantt.set_yticks([])
            gantt.set_ylabel(f"{len(out.jobs)} jobs")
        done = sum(1 for run in out.jobs if run.outcome is not None and not run.outcome.bad)
        gantt.set_title(f"{out.scheduler}: {done}/{len(out.jobs)} jobs completed", loc="left",
                        fontsize=10)
        gantt.legend(handles=[Patch(color=c, label=n) for n, c in COLOURS.items()]
                     + [Line2D([], [], marker="x", color="#c00000", linestyle="",
                               label="failed / timed out")],
                     loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, ncols=4,
                     frameon=False, borderaxespad=0.2)
        _usage(usage, thin(out.usage.samples), end)
    axes[-1][0].set_xlabel("simulated time (s)")
    axes[-1][0].set_xlim(0, end * 1.01)
    if title:
        figure.suptitle(title, fontsize=11)
    figure.savefig(path, format=image_format(path), dpi=110)


def _usage(ax: object, samples: Sequence[Sample], end: float) -> None:
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    if not samples:
        return
    times = [s.t for s in samples] + [end]
    base = [0.0] * len(times)
    for name in ("busy", "idle", "placeholder"):
        values = [s.cpu[name] for s in samples] + [samples[-1].cpu[name]]
        top = [b + v for b, v in zip(base, values, strict=True)]
        ax.fill_between(times, base, top, step="post", color=USAGE_COLOURS[name],
                        label=USAGE_LABELS[name], linewidth=0)
        base = top
    capacity = [s.capacity_cpu for s in samples] + [samples[-1].capacity_cpu]
    ax.step(times, capacity, where="post", color="black", linewidth=1, label="capacity")
    ax.set_ylabel("cpu (cores)")
    ax.set_ylim(0, max(capacity) * 1.08 or 1)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7, ncols=4,
              frameon=False, borderaxespad=0.2)
