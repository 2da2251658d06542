"""Operator settings, from command-line flags and ``GANGSCHED_*`` environment variables."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from gangsched.core.model import SchedulerConfig


def _env(name: str, default: str) -> str:
    return os.environ.get(f"GANGSCHED_{name}", default)


@dataclass(frozen=True, slots=True)
class OperatorSettings:
    scheduler_names: frozenset[str] = frozenset({"gangsched"})
    """Pods whose ``spec.schedulerName`` is one of these are scheduled by gangsched."""

    placeholder_image: str = "registry.k8s.io/pause:3.10"
    """Image of placeholder pods: it must start and do nothing."""

    bind_workers: int = 32
    """Concurrent binds in flight. The loop never waits for them."""

    api_workers: int = 16
    """Concurrent creates, deletes, status patches and events."""

    max_connections: int = 64
    """Connection pool size to the API server."""

    tick: float = 1.0
    """Seconds between cycles when nothing happens (timers are checked every tick)."""

    batch_window: float = 0.01
    """Seconds to gather observations before a cycle once something happened."""

    status_interval: float = 0.5
    """Seconds between status flushes; only changed statuses are patched."""

    namespace: str = field(default_factory=lambda: _env("NAMESPACE", "gangsched-system"))
    """Namespace of the leader-election Lease."""

    lease_name: str = "gangsched-leader"
    identity: str = field(default_factory=lambda: os.environ.get("POD_NAME")
                          or socket.gethostname())
    leader_election: bool = True
    lease_duration: float = 15.0
    renew_interval: float = 5.0

    shutdown_timeout: float = 5.0
    """Seconds kopf may take to stop its watchers gracefully before it is cancelled."""

    metrics_port: int = 9090
    core: SchedulerConfig = field(default_factory=SchedulerConfig)
