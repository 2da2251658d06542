"""A simple stand-in for API Priority and Fairness: a request rate per client.

The real API server sorts requests into priority levels by FlowSchema and queues them
fairly per flow; when a level's seats and queues are full, it answers ``429 Too Many
Requests`` with ``Retry-After``. Here each client (by ``User-Agent`` product and
identity) gets a token bucket of ``qps`` with ``burst``; a request that finds it empty
is refused with 429 at once (no queueing). Watches are exempt once started, as
long-running requests are. ``rejected`` counts the 429s per client.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable


class FlowLimiter:
    """``qps`` requests per second per client, ``burst`` at once."""

    def __init__(self, qps: float, burst: int, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.qps = qps
        self.burst = burst
        self.clock = clock
        self.buckets: dict[str, tuple[float, float]] = {}
        """client -> (tokens, when last updated)"""
        self.admitted: collections.Counter[str] = collections.Counter()
        self.rejected: collections.Counter[str] = collections.Counter()

    def admit(self, client: str, *, watch: bool = False) -> bool:
        """Take a token of ``client``'s bucket; False (a 429) if there is none."""
        if watch:
            return True
        now = self.clock()
        tokens, updated = self.buckets.get(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - updated) * self.qps)
        if tokens < 1:
            self.buckets[client] = (tokens, now)
            self.rejected[client] += 1
            return False
        self.buckets[client] = (tokens - 1, now)
        self.admitted[client] += 1
        return True
