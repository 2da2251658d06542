"""``--plot``: a Gantt chart of the jobs over a cluster-utilisation curve, one pair per run.

Each job is a row: grey while queued, orange while it holds capacity without running
(placeholders, or real pods waiting for the rest of their gang), green while its gang runs;
a red cross marks a job that failed, was killed, rejected or timed out (its last attempt),
a black bar the end of an attempt that was retried. Below, the CPU in use over time, split
the same way, under the capacity of the nodes that are up. When the nodes have racks
(``topology.gangsched.io/rack``), a third panel per run shows the racks: one thin row per
node, grouped by rack, with each real pod drawn while it ran, coloured by its job; a pod
of a gang that ran across racks has a black edge.

Matplotlib's object API with the Agg canvas is used directly: no pyplot, no global state,
no display needed.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.sim import racks
from gangsched.sim.engine import RunOutput
from gangsched.sim.results import thin
from gangsched.sim.usage import Sample
from gangsched.translate.topology import RACK

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
    with_racks = any(RACK in node.labels for node in outputs[0].workload.nodes)
    per_run = 3 if with_racks else 2
    ratios: list[float] = []
    for _ in outputs:
        ratios += [gantt_height, 2.2] + ([3.5] if with_racks else [])
    figure = Figure(figsize=(12, sum(ratios) + 0.8 * len(outputs)), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(ratios), 1, sharex=True,
                           gridspec_kw={"height_ratios": ratios}, squeeze=False)
    end = max(max(out.end for out in outputs), 1.0)
    for index, out in enumerate(outputs):
        gantt, usage = axes[per_run * index][0], axes[per_run * index + 1][0]
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
        if with_racks:
            _racks(axes[per_run * index + 2][0], out, end)
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


def _racks(ax: object, out: RunOutput, end: float) -> None:
    """One thin row per node, grouped by rack; each real pod while it ran, by job colour."""
    from matplotlib import colormaps
    from matplotlib.axes import Axes

    assert isinstance(ax, Axes)
    nodes = sorted(out.workload.nodes, key=lambda n: (n.labels.get(RACK, "~"), n.name))
    row = {node.name: i for i, node in enumerate(nodes)}
    labels = {node.name: node.labels for node in nodes}
    colours = colormaps["tab20"]
    palette = [colours(i) for i in range(20)]
    for index, run in enumerate(out.jobs):
        nodes_used = run.first_gang_nodes
        across = sum(run.job.gang.values()) > 1 and len(
            racks.domains_of(nodes_used, labels, RACK)) > 1
        for pod in run.history:
            if pod.node is None or pod.started is None or pod.node not in row:
                continue
            stop = pod.ended if pod.ended is not None else end
            ax.broken_barh([(pod.started, max(stop - pod.started, end / 2000))],
                           (len(nodes) - 1 - row[pod.node] - 0.45, 0.9),
                           facecolors=palette[index % len(palette)],
                           edgecolors="black" if across else "none", linewidth=0.6)
    ticks: list[float] = []
    names: list[str] = []
    start = 0
    for i in range(1, len(nodes) + 1):
        rack = nodes[start].labels.get(RACK, "no rack")
        if i == len(nodes) or nodes[i].labels.get(RACK, "no rack") != rack:
            ticks.append(len(nodes) - 1 - (start + i - 1) / 2)
            names.append(rack)
            ax.axhline(len(nodes) - i - 0.5, color="#808080", linewidth=0.5)
            start = i
    ax.set_yticks(ticks, names, fontsize=7)
    ax.set_ylim(-0.6, len(nodes) - 0.4)
    ax.set_ylabel("racks (a row per node)", fontsize=8)
    ax.set_title("pods by rack (colour: job; black edge: a gang that ran across racks)",
                 loc="left", fontsize=8)
