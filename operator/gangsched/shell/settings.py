"""Operator settings, from command-line flags and ``GANGSCHED_*`` environment variables."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from gangsched.core.values.model import GATHER_WINDOW, SchedulerConfig
from gangsched.translate import labels


def _env(name: str, default: str) -> str:
    return os.environ.get(f"GANGSCHED_{name}", default)


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    scheduler_names: frozenset[str] = frozenset({"gangsched"})
    """Pods whose ``spec.schedulerName`` is one of these are scheduled by gangsched."""

    placeholder_image: str = field(
        default_factory=lambda: _env("PLACEHOLDER_IMAGE", labels.PLACEHOLDER_IMAGE))
    """Image of placeholder pods (``GANGSCHED_PLACEHOLDER_IMAGE``): it must start as a
    non-root user with a read-only root filesystem and do nothing, like ``pause``."""

    bind_workers: int = 32
    """Concurrent binds in flight. The loop never waits for them."""

    volume_bind_timeout: float = 600.0
    """Seconds a pod's bind waits, after its volume writes, for its claims to be bound
    by the PV controller or the provisioner (kube-scheduler's ``bindTimeoutSeconds``);
    then the pod is not bound and is scheduled again."""

    api_workers: int = 16
    """Concurrent placeholder creates, pod deletes and other writes."""

    report_workers: int = 8
    """Concurrent Events and PodScheduled condition patches (a pool of their own)."""

    max_connections: int = 64
    """Connection pool size to the API server."""

    request_timeout: float = 30.0
    """Seconds before an API request without an answer counts as failed (watches and
    lists excepted). A bind that times out is a failed bind: the pod is tried again after
    a backoff, and a 409 then tells that the first attempt had worked after all."""

    qps: float = 50.0
    """Sustained API requests per second this replica sends (watches excepted), as
    kube-scheduler's ``--kube-api-qps``; 0 disables the client-side limit."""

    burst: int = 100
    """Requests that may be sent at once above ``qps`` after a quiet spell
    (kube-scheduler's ``--kube-api-burst``)."""

    scheduled_events: bool = True
    """Record the ``Scheduled`` Event of every pod bound, as kube-scheduler does
    (``Successfully assigned NS/POD to NODE``; see :mod:`gangsched.shell.scheduled`)."""

    scheduled_event_queue: int = 50_000
    """At most this many ``Scheduled`` Events wait to be written; beyond, the oldest is
    dropped. They wait while binds are under way: a backlog of thousands of pods bound at
    once has its Events written after its Bindings."""

    status_workers: int = 8
    """Status patches (Applications, PodGroups, Queues) written concurrently per flush."""

    token_refresh: float = 60.0
    """Seconds after which a token read from a file (the projected service-account token)
    is read again, as client-go does; a 401 reads it again at once."""

    api_retries: int = 8
    """How often a write the core does not ask for again (a pod's PodScheduled
    condition, a pods-first Application) is retried after a transient error."""

    api_retry_initial: float = 0.5
    """Seconds before the first such retry; doubled each time."""

    api_retry_max: float = 30.0
    """The cap on that backoff."""

    watch_timeout: int = 300
    """``timeoutSeconds`` of the pod and node watches: the API server ends each stream
    after this long, and the watch resumes from the last resourceVersion seen."""

    tick: float = 1.0
    """Seconds between cycles when nothing happens (timers are checked every tick)."""

    batch_window: float = 0.01
    """Seconds to gather observations before a cycle once something happened."""

    status_interval: float = 0.5
    """Seconds between status flushes; only changed statuses are patched."""

    namespace: str = field(default_factory=lambda: _env("NAMESPACE", "gangsched-system"))
    """Namespace of the leader-election Lease."""

    lease_name: str = "gangsched-leader"
    """Name of the leader-election Lease."""

    identity: str = field(default_factory=lambda: os.environ.get("POD_NAME")
                          or socket.gethostname())
    """This replica's name in the Lease (the pod name in a cluster)."""

    leader_election: bool = True
    """Hold the Lease before scheduling (off: this replica always schedules)."""

    lease_duration: float = 15.0
    """Seconds another replica waits, on its own monotonic clock from when it saw the
    Lease last change, before it takes the Lease over (client-go's default)."""

    renew_deadline: float = 10.0
    """Seconds after the last successful renewal was sent by which the next must have
    succeeded; when they pass, this replica stops binding at once. Must be shorter than
    ``lease_duration``: the difference is the safety margin (client-go's default)."""

    renew_interval: float = 2.0
    """Seconds between attempts to acquire or renew the Lease (client-go's retry period)."""

    pending_backoff_initial: float = 1.0
    """Seconds a pod's PodScheduled=False condition and Event wait after one is written
    before a new *reason* is written (kube-scheduler's initial pod backoff)."""

    pending_backoff_max: float = 10.0
    """The cap on that per-pod backoff, doubled on every write (kube-scheduler's)."""

    pending_refresh: float = 300.0
    """Seconds after which the condition's message (counts that change under churn) is
    rewritten while the reason stays the same; an unchanged reason records no Event.
    (kube-scheduler retries an unschedulable pod at least this often.)"""

    placeholder_grace: int = labels.PLACEHOLDER_GRACE_SECONDS
    """``gracePeriodSeconds`` of a placeholder deletion: long enough for the kubelet to
    stop the container and release its devices and CPUs before the pod is gone, so that
    they are never assigned twice; never a forced (0) deletion."""

    liveness_stale: float = 600.0
    """Seconds without progress (a cycle of the leader, a Lease attempt, a watch stream
    opening or delivering) after which the liveness probe fails and the kubelet restarts
    the operator. Must exceed ``watch_timeout`` for watches."""

    shutdown_timeout: float = 5.0
    """Seconds kopf may take to stop its watchers gracefully before it is cancelled."""

    metrics_port: int = 9090
    """Port of the Prometheus ``/metrics`` endpoint (see ``docs/metrics.md``); 0 serves
    none. A port that cannot be bound is logged and the operator runs without it."""

    dashboard_port: int = 0
    """Port of the read-only web dashboard (see :mod:`gangsched.shell.dashboard`), on all
    interfaces; 0 serves none. A port that cannot be bound is logged and the operator runs
    without it."""

    partial_gang_threshold: float = 3.0
    """Seconds a gang may have some but not all of its minimum members holding their room
    (a swap under way) before ``gangsched_gang_partial_violations_total`` counts it."""

    core: SchedulerConfig = field(
        default_factory=lambda: SchedulerConfig(gather_window=GATHER_WINDOW))
