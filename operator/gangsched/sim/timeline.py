"""The timeline: state changes in time order, from the simulation and from the scheduler."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Entry:
    t: float
    subject: str
    """``app spark-1``, ``podgroup mpi-1``, ``job web``, ``node worker-3``."""
    source: str
    """``sim`` (the job model and the event script) or the scheduler (``gangsched``)."""
    text: str


@dataclass(slots=True)
class Timeline:
    entries: list[Entry] = field(default_factory=list)

    def add(self, t: float, subject: str, source: str, text: str) -> None:
        self.entries.append(Entry(t, subject, source, text))
