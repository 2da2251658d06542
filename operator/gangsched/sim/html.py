"""``simulate --html DIR``: the operator's dashboard pages for a simulated run, as files.

The pages are the ones the operator serves (:mod:`gangsched.view.render`), built from the
same :class:`~gangsched.view.board.Board` (the gangsched backend feeds one every cycle)
and the nodes as the core held them: at the end of the run, or after the first cycle at
or after ``--html-at SECONDS`` (the backend keeps a copy then).
They are written as a snapshot: ``index.html``, ``apps.html``, ``nodes.html``,
``view.json`` and the two files of ``static/``; open ``index.html`` in a browser, no
server needed. Filters work in the files too; there is nothing to refresh. The
explanations are ``gangsched explain``'s (its formatter is handed in by the CLI).
Partial-gang seconds are the simulator's measure (:mod:`gangsched.sim.partial`): the
longest span of each job.
"""

from __future__ import annotations

import importlib.resources
import os

from gangsched.sim.backends import GangschedBackend
from gangsched.sim.engine import RunOutput
from gangsched.sim.workload import JobKind
from gangsched.view import model, render
from gangsched.view.board import APPLICATION, PODGROUP, Key

STATIC = ("dashboard.css", "dashboard.js")
MAX_GANGS = 2000
"""Gangs written (blocked first, then those not over): the files are filtered in the
browser only, so they hold more than a served page."""


def view_of(out: RunOutput, explain: model.Explain | None) -> model.View | None:
    """The dashboard's view of the run as it ended; None for a run not made by the core."""
    backend = out.backend
    if not isinstance(backend, GangschedBackend):
        return None
    specs: dict[Key, dict[str, object]] = {}
    partial: dict[Key, float] = {}
    for run in out.jobs:
        job = run.job
        kind = PODGROUP if job.kind is JobKind.POD_GROUP else APPLICATION
        spec: dict[str, object] = {"queue": job.queue}
        if job.group is not None:
            spec.update(minMember=job.group.min_member, mode=job.group.mode.value,
                        scheduleTimeoutSeconds=job.group.schedule_timeout)
        elif job.app is not None:
            spec["schedulingPolicy"] = {
                "style": job.app.policy.style.value,
                "placeholderTimeoutSeconds": job.app.policy.placeholder_timeout}
        specs[(kind, run.key)] = spec
        spans = out.partial.spans.get(run.key) if out.partial is not None else None
        if spans:
            partial[(kind, run.key)] = max(spans)
    if backend.kept_view is not None:  # --html-at: as it was then
        contents, nodes, _ = backend.kept_view
    else:
        contents, nodes = backend.board.contents(), backend.node_uses()
    sources = model.Sources(specs=specs, partial_seconds=partial, nodes=nodes, explain=explain)
    return model.select(model.build(contents, sources), contents, sources, limit=MAX_GANGS)


def write(view: model.View, directory: str) -> list[str]:
    """Write the pages, ``view.json`` and the static files into ``directory`` (made if
    missing); the paths written. OSError when it cannot be written."""
    os.makedirs(os.path.join(directory, "static"), exist_ok=True)
    written = []
    for name, _ in render.PAGES:
        written.append(_write(directory, name, render.page(view, name, live=False)))
    written.append(_write(directory, "view.json", render.to_json(view)))
    for name in STATIC:
        data = (importlib.resources.files("gangsched.view") / "static" / name).read_text(
            encoding="utf-8")
        written.append(_write(directory, os.path.join("static", name), data))
    return written


def _write(directory: str, name: str, text: str) -> str:
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
