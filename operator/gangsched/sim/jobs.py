"""What the simulation knows about each job and each real pod while it runs.

A :class:`JobRun` follows one workload job through its attempts; a :class:`PodRun` is one
real pod of the current attempt (placeholders are the scheduler's, not the job's, and are
tracked only for accounting). The records hold facts and the metrics derived from them;
the rules that change them live in :mod:`gangsched.sim.engine`.

Phases drawn on the Gantt chart, per attempt:

* ``queued``: submitted, nothing of the job holds capacity yet;
* ``holding``: something holds capacity (a placeholder, or a real pod that waits for the
  rest of its gang) but the gang does not run yet: reserved but idle;
* ``running``: the gang runs and the job makes progress.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from gangsched.core.values.model import PodUID
from gangsched.sim.workload import Job, PodTemplate


class Outcome(enum.StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    """A pod failed and the job's ``onPodFailure`` is ``fail``."""
    KILLED = "killed"
    """The scheduler killed it (Hard style placeholder timeout)."""
    REJECTED = "rejected"
    """The scheduler refused it (gang larger than its queue's max, invalid spec...)."""
    TIMED_OUT = "timedOut"
    """Its driver gave up on every attempt, or its PodGroup's schedule timeout expired."""
    STALLED = "stalled"
    """The simulation ran out of things to do before the job finished: a deadlock."""
    UNFINISHED = "unfinished"
    """Still going when the clock reached ``settings.until``."""

    @property
    def bad(self) -> bool:
        """Counts for ``--fail-on-timeout``."""
        return self not in (Outcome.COMPLETED, Outcome.UNFINISHED)


class PodStatus(enum.StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class Segment:
    start: float
    end: float
    phase: str
    """``queued``, ``holding`` or ``running``."""


class PodRun:
    """One real pod of a job's attempt."""

    __slots__ = ("attempt", "created", "ended", "gang_key", "job", "member", "name", "node",
                 "started", "status", "template", "token", "uid")

    def __init__(self, job: JobRun, uid: PodUID, name: str, member: str,
                 template: PodTemplate) -> None:
        self.job = job
        self.uid = uid
        self.name = name
        """The pod's name in the cluster, ``<job>-<member>``."""
        self.member = member
        """The name within the job (``executor-2``), shared by replacements."""
        self.template = template
        self.gang_key = template.task_group if job.job.gang.keys() != {None} else None
        self.status = PodStatus.PENDING
        self.started: float | None = None
        self.attempt = job.attempt
        self.created = 0.0
        self.node: str | None = None
        """The node it ran on (the last one, for a pod bound twice)."""
        self.ended: float | None = None
        """When it finished, failed, was lost or deleted (None while it lives)."""
        self.token = 0
        """Bumped whenever a scheduled finish becomes stale."""


@dataclass(slots=True)
class JobRun:
    """A workload job through its attempts, with its metrics."""

    job: Job
    key: str
    attempt: int = 0
    outcome: Outcome | None = None
    reason: str = ""
    finished_at: float | None = None
    pods: dict[PodUID, PodRun] = field(default_factory=dict)
    """Pods of the current attempt, by uid."""
    history: list[PodRun] = field(default_factory=list)
    """Every real pod of every attempt, in creation order (for ``--json``)."""
    running: dict[str | None, int] = field(default_factory=dict)
    """Running pods of the current attempt by gang key."""
    succeeded: set[str] = field(default_factory=set)
    """Members of the current attempt that finished their work."""
    pending_creations: int = 0
    triggered: set[str] = field(default_factory=set)
    """Prefixes whose first pod started this attempt (creates ``after`` pods)."""
    attempt_start: float = 0.0
    first_start: float | None = None
    hold_start: float | None = None
    gang_start: float | None = None
    first_gang_start: float | None = None
    """When the full gang first ran, over all attempts: the end of the wait."""
    first_gang_nodes: tuple[str, ...] = ()
    """The nodes of the running members when the full gang first ran."""
    job_timeouts: int = 0
    pod_failures: int = 0
    replacements: int = 0
    core_state: str = ""
    segments: list[Segment] = field(default_factory=list)
    held: int = 0
    """Bound pods of this job (placeholders included) holding capacity now."""

    @property
    def done(self) -> bool:
        return self.outcome is not None

    @property
    def gang_running(self) -> bool:
        return self.gang_start is not None

    def gang_complete(self) -> bool:
        return all(self.running.get(key, 0) >= need for key, need in self.job.gang.items())

    def close_segments(self, now: float) -> None:
        """End the current attempt's phases at ``now``; closing twice adds nothing twice."""
        opened = len(self.segments)
        if self.gang_start is not None:
            self.segments.append(Segment(self.gang_start, now, "running"))
            start = self.hold_start if self.hold_start is not None else self.gang_start
            if start < self.gang_start:
                self.segments.append(Segment(start, self.gang_start, "holding"))
        elif self.hold_start is not None:
            self.segments.append(Segment(self.hold_start, now, "holding"))
        first = min((s.start for s in self.segments[opened:]), default=now)
        if self.attempt_start < first:
            self.segments.append(Segment(self.attempt_start, first, "queued"))
        self.segments.sort(key=lambda s: s.start)
        self.hold_start = self.gang_start = None
        self.attempt_start = now

    def new_attempt(self, now: float) -> None:
        self.attempt += 1
        self.attempt_start = now
        self.pods = {}
        self.running = {}
        self.succeeded = set()
        self.pending_creations = 0
        self.triggered = set()
        self.first_start = self.hold_start = self.gang_start = None
        self.held = 0
