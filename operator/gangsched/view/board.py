"""What the dashboard keeps of the core's decisions, fed cycle by cycle.

The operator already carries out every decision; the board only remembers the few that
the dashboard shows, as the core made them:

* the last ``SetQueueStatus``, ``SetAppStatus`` and ``SetPodGroupStatus`` of each object
  (what the operator writes into their ``status``);
* the last :data:`MAX_EVENTS` Events recorded on each Application and PodGroup, with the
  time of the cycle that recorded them;
* each gang's *time to full gang*, as the ``gangsched_time_to_full_gang_seconds`` metric
  measures it: from an Application's acceptance (its ``Accepted`` state's ``stateSince``)
  to its ``GangReserved`` Event, from a PodGroup's creation (``created``; else the first
  status seen) to its ``GangScheduled`` Event. The first completion counts.

Objects are keyed by kind and ``namespace/name``: an Application and a PodGroup may share
a name. :meth:`Board.keep_only` forgets the objects that were deleted. Nothing here reads a
clock: ``now`` comes with each batch of decisions.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Mapping

from gangsched.core.values.decisions import (
    Decision,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
)

MAX_EVENTS = 10
"""Events kept per object, the newest."""

APPLICATION = "Application"
PODGROUP = "PodGroup"
Key = tuple[str, str]
"""(kind, ``namespace/name``)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """One Event recorded on an Application or PodGroup, at the cycle's ``at``."""

    at: float
    type: str
    reason: str
    message: str


@dataclasses.dataclass(frozen=True, slots=True)
class Contents:
    """An immutable copy of the board at one moment, safe to read on another thread."""

    now: float
    apps: Mapping[str, SetAppStatus]
    groups: Mapping[str, SetPodGroupStatus]
    queues: Mapping[str, SetQueueStatus]
    events: Mapping[Key, tuple[Event, ...]]
    full_gang: Mapping[Key, float]
    """Seconds each completed gang took to be complete."""


class Board:
    """The statuses, Events and gang times the dashboard shows (see the module docstring).

    ``created``: a gang's creation time by (kind, key), None when unknown; PodGroups'
    time to full gang counts from it.
    """

    def __init__(self, created: Callable[[str, str], float | None] | None = None) -> None:
        self._created = created or (lambda kind, key: None)
        self.apps: dict[str, SetAppStatus] = {}
        self.groups: dict[str, SetPodGroupStatus] = {}
        self.queues: dict[str, SetQueueStatus] = {}
        self.events: dict[Key, collections.deque[Event]] = {}
        self.full_gang: dict[Key, float] = {}
        self._started: dict[Key, float] = {}
        self.now = 0.0

    def take(self, decisions: Iterable[Decision], now: float) -> None:
        """Remember what the dashboard shows of one cycle's decisions, made at ``now``.
        Decisions of other kinds are passed over."""
        self.now = max(self.now, now)
        events: list[RecordEvent] = []
        for d in decisions:
            if isinstance(d, SetAppStatus):
                self.apps[d.key] = d
                if d.state == "Accepted" and d.state_since is not None:
                    self._started.setdefault((APPLICATION, d.key), d.state_since)
            elif isinstance(d, SetPodGroupStatus):
                self.groups[d.key] = d
                key = (PODGROUP, str(d.key))
                if key not in self._started:
                    created = self._created(PODGROUP, d.key)
                    self._started[key] = now if created is None else created
            elif isinstance(d, SetQueueStatus):
                self.queues[d.name] = d
            elif isinstance(d, RecordEvent) and d.target.kind in (APPLICATION, PODGROUP):
                events.append(d)
        for e in events:  # after the statuses: acceptance and completion in one cycle
            key = (e.target.kind, f"{e.target.namespace}/{e.target.name}")
            kept = self.events.get(key)
            if kept is None:
                kept = self.events[key] = collections.deque(maxlen=MAX_EVENTS)
            kept.append(Event(now, e.type.value, e.reason, e.message))
            complete = (e.reason == "GangReserved" if key[0] == APPLICATION
                        else e.reason == "GangScheduled")
            start = self._started.get(key)
            if complete and start is not None and key not in self.full_gang:
                self.full_gang[key] = max(0.0, now - start)

    def keep_only(self, apps: Iterable[str], groups: Iterable[str],
                  queues: Iterable[str]) -> None:
        """Forget every object not named here (it was deleted)."""
        live = {(APPLICATION, k) for k in apps} | {(PODGROUP, k) for k in groups}
        self.apps = {k: v for k, v in self.apps.items() if (APPLICATION, k) in live}
        self.groups = {k: v for k, v in self.groups.items() if (PODGROUP, k) in live}
        names = set(queues)
        self.queues = {k: v for k, v in self.queues.items() if k in names}
        for table in (self.events, self.full_gang, self._started):
            for key in [k for k in table if k not in live]:
                del table[key]

    def contents(self) -> Contents:
        """A copy to build the view from (the decisions are frozen values: only the
        tables are copied)."""
        return Contents(now=self.now, apps=dict(self.apps), groups=dict(self.groups),
                        queues=dict(self.queues),
                        events={k: tuple(v) for k, v in self.events.items()},
                        full_gang=dict(self.full_gang))
