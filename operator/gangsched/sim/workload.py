"""The simulation workload: nodes, queues, jobs arriving over time, and scripted failures.

The file format is documented in ``examples/simulations/README.md``;
:mod:`gangsched.sim.parse` reads it into a checked :class:`Workload`. Its parts are the
core's own models wherever one exists (``Node``, ``QueueSpec``, ``AppSpec``,
``PodGroupSpec``, ``SchedulerConfig``), plus what only the simulation needs: pod templates
with durations and creation delays, the job-level behaviour of the software inside the
pods (a Spark driver's timeout, retries, what happens when a pod is lost), and the event
script. Nothing here schedules anything.

The *job model* (what a simulated job does once its pods run) is the same for every
scheduler being compared, so that comparisons are fair:

* a job makes progress only once its *gang* runs: ``minMember`` pods of every task group
  (capped by how many pods the group has), ``minMember`` members of a PodGroup, or one pod
  for jobs without a gang. A pod's ``duration`` counts from the later of its own start and
  the gang's start; before that the pod holds its resources and waits;
* ``driverTimeoutSeconds``: the job gives up when its gang is not running that long after
  its first pod started; all its pods are deleted, and it is retried after
  ``retryDelaySeconds`` while ``maxRetries`` allows, else it ends ``timedOut``;
* a pod that fails or is lost with its node is replaced after ``restartDelaySeconds``
  (``onPodFailure: replace``, the replacement runs its full duration), or fails the whole
  job (``onPodFailure: fail``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.values import devices as dv
from gangsched.core.values.constraints import ANY_NODE, NodeAffinity, Toleration
from gangsched.core.values.model import (
    AppSpec,
    Node,
    PodGroupSpec,
    QueueSpec,
    SchedulerConfig,
)
from gangsched.core.values.resources import Resources
from gangsched.sim.latency import NO_LATENCY, Latency


class JobKind(enum.StrEnum):
    APPLICATION = "application"
    POD_GROUP = "podGroup"
    PODS = "pods"


class FailurePolicy(enum.StrEnum):
    """What a job does when one of its pods fails or is lost with its node."""

    REPLACE = "replace"
    FAIL = "fail"

    @classmethod
    def from_string(cls, text: str) -> FailurePolicy:
        for member in cls:
            if member.value == text:
                return member
        raise ValueError(f'unknown onPodFailure "{text}" (accepted: replace, fail)')


class EventKind(enum.StrEnum):
    NODE_DOWN = "nodeDown"
    NODE_UP = "nodeUp"
    POD_FAILS = "podFails"


@dataclass(frozen=True, slots=True)
class PodTemplate:
    """``count`` real pods named ``<job>-<prefix>-<i>``, created together."""

    prefix: str
    first_index: int
    count: int
    duration: float
    requests: Resources
    task_group: str | None = None
    delay: float = 0.0
    """Seconds after the job's submission, or after ``after`` first started."""
    after: str | None = None
    """The prefix of an earlier template: created once its first pod runs (the driver)."""
    priority: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Toleration, ...] = ()
    affinity: NodeAffinity = ANY_NODE
    claims: tuple[tuple[str, str], ...] = ()
    """(name in the pod, claim template) of each of the pods' ResourceClaims."""

    def member_names(self) -> list[str]:
        """The pods' names within their job, ``<prefix>-<i>``."""
        return [f"{self.prefix}-{i}" for i in range(self.first_index,
                                                    self.first_index + self.count)]


@dataclass(frozen=True, slots=True)
class Behaviour:
    """How the software in a job's pods behaves; the same under every scheduler."""

    job_timeout: float | None = None
    """``driverTimeoutSeconds``: give up when the gang is not running this long after the
    job's first pod started (None: wait for ever)."""
    max_retries: int = 0
    retry_delay: float = 30.0
    on_pod_failure: FailurePolicy = FailurePolicy.REPLACE
    restart_delay: float = 5.0


@dataclass(frozen=True, slots=True)
class Job:
    """One application, PodGroup, or set of plain pods, and how its software behaves."""

    name: str
    kind: JobKind
    submit_at: float
    pods: tuple[PodTemplate, ...]
    gang: Mapping[str | None, int]
    """Running pods needed per gang key (task group, or None) before the job progresses."""
    namespace: str = "default"
    queue: str = "default"
    priority: int = 0
    app: AppSpec | None = None
    group: PodGroupSpec | None = None
    behaviour: Behaviour = Behaviour()
    line: int = 0
    """Where the job is defined in the workload file (0 when generated)."""

    @property
    def pod_count(self) -> int:
        return sum(t.count for t in self.pods)

    def member_names(self) -> set[str]:
        return {name for t in self.pods for name in t.member_names()}


@dataclass(frozen=True, slots=True)
class Event:
    at: float
    kind: EventKind
    target: str
    """A node name, or ``<job>/<pod>`` for ``podFails``."""


@dataclass(frozen=True, slots=True)
class Settings:
    until: float | None = None
    """Stop the clock here; None runs until nothing is left to happen."""
    gc_after: float = 60.0
    """Seconds after a job ends before its pods and its object are deleted."""
    config: SchedulerConfig = field(default_factory=SchedulerConfig)
    latency: Latency = NO_LATENCY
    """How slow the simulated cluster is (``settings.latency``; instant by default)."""


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...]
    queues: tuple[QueueSpec, ...] = ()
    events: tuple[Event, ...] = ()
    settings: Settings = Settings()
    warnings: tuple[str, ...] = ()
    """Valid values that are almost certainly not what was meant, as ``file:line:col:
    path: warning: ...``; the workload runs anyway."""
    device_classes: tuple[dv.DeviceClass, ...] = ()
    slices: tuple[dv.ResourceSlice, ...] = ()
    """The ResourceSlices the nodes' drivers publish (``nodes[].devices``)."""
    claim_templates: Mapping[str, dv.ClaimSpec] = field(default_factory=dict)
    """The spec of the claims made from each claim template, by its name."""

    @property
    def uses_devices(self) -> bool:
        """Whether Dynamic Resource Allocation is part of it (the resource.k8s.io API is
        then served in the simulated cluster)."""
        return bool(self.device_classes or self.slices or self.claim_templates)

    @property
    def pod_count(self) -> int:
        return sum(job.pod_count for job in self.jobs)
