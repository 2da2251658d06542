"""Running one workload under one or more schedulers: what ``gangsched simulate`` does.

``gangsched`` is the real core (:class:`~gangsched.sim.backends.GangschedBackend`);
``naive`` is the pod-by-pod binder it is compared with (:mod:`gangsched.sim.naive`).
Each run starts from the same workload with a fresh scheduler and a fresh cluster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from gangsched.sim.backends import Backend, GangschedBackend
from gangsched.sim.engine import BackendFactory, Progress, RunOutput, simulate
from gangsched.sim.latency import Latency
from gangsched.sim.naive import NaiveBackend
from gangsched.sim.timeline import Timeline
from gangsched.sim.workload import Workload
from gangsched.sim.world import PodListener

SCHEDULERS = ("gangsched", "naive")


def factory(name: str, workload: Workload, *, view_at: float | None = None) -> BackendFactory:
    """The backend called ``name`` (one of SCHEDULERS); ValueError for anything else.
    ``view_at``: the gangsched backend keeps what the dashboard shows as it was then."""
    if name == "gangsched":
        config, latency = workload.settings.config, workload.settings.latency

        def make(listener: PodListener, timeline: Timeline) -> Backend:
            return GangschedBackend(config, listener, timeline, latency, view_at=view_at)

        return make
    if name == "naive":
        return NaiveBackend
    raise ValueError(f"unknown scheduler {name!r} (accepted: {', '.join(SCHEDULERS)})")


def with_until(workload: Workload, until: float | None) -> Workload:
    """The workload with its clock stopping at ``until`` (unchanged for None)."""
    if until is None:
        return workload
    settings = workload.settings
    return dataclasses.replace(workload, settings=dataclasses.replace(settings, until=until))


def with_latency(workload: Workload, latency: Latency) -> Workload:
    """The workload on a cluster as slow as ``latency``."""
    return dataclasses.replace(workload, settings=dataclasses.replace(workload.settings,
                                                                      latency=latency))


def with_actions(workload: Workload, actions: tuple[str, ...]) -> Workload:
    """The workload with the core running these actions, in this order."""
    settings = workload.settings
    config = dataclasses.replace(settings.config, actions=actions)
    return dataclasses.replace(workload, settings=dataclasses.replace(settings, config=config))


def run_all(workload: Workload, schedulers: Sequence[str], *,
            progress: Callable[[str], Progress | None] | None = None,
            keep_samples: bool = True, view_at: float | None = None) -> list[RunOutput]:
    """Run ``workload`` under each scheduler in turn; ``progress(name)`` gives a callback;
    ``view_at``: see :func:`factory`."""
    outputs = []
    for name in schedulers:
        callback = progress(name) if progress is not None else None
        outputs.append(simulate(workload, factory(name, workload, view_at=view_at),
                                progress=callback, keep_samples=keep_samples))
    return outputs
