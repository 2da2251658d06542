"""The client-side write budget: a token bucket, as client-go's ``flowcontrol`` one.

A scheduler that answers a burst of pending pods with as many requests as it can send
pushes the API server's priority level into queueing and 429s, and the binds wait
behind its own Events. The bucket holds ``burst`` tokens and gains ``qps`` per second;
each request takes one, waiting for it when none is left. Waiters are served in
arrival order: a request reserves its token at once (the level may go below zero) and
sleeps until that token has accrued, so no request starves. Writes that must never
delay those (the ``Scheduled`` Events) take a token only when one is spare
(:meth:`TokenBucket.try_spare`), and never reserve one ahead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved. ``ValueError`` unless
    ``qps > 0`` and ``burst >= 1``."""

    def __init__(self, qps: float, burst: int, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs qps > 0 and burst >= 1, got {qps}, {burst}")
        self.qps = qps
        self.burst = burst
        self.monotonic = monotonic
        self.tokens = float(burst)
        self.updated = monotonic()
        self.waited = 0
        """Requests that had to wait for a token."""

    def reserve(self) -> float:
        """Take a token now; the seconds to wait before using it (0: go)."""
        now = self.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.qps)
        self.updated = now
        self.tokens -= 1
        return 0.0 if self.tokens >= 0 else -self.tokens / self.qps

    async def acquire(self) -> None:
        """Wait until a token is ours."""
        delay = self.reserve()
        if delay > 0:
            self.waited += 1
            await asyncio.sleep(delay)

    def try_spare(self, keep: float) -> bool:
        """Take a token now if more than ``keep`` would be left, else none (False): the
        requests that reserve theirs never wait for one taken so."""
        now = self.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.qps)
        self.updated = now
        if self.tokens - 1 < keep:
            return False
        self.tokens -= 1
        return True

    def spare_in(self, keep: float) -> float:
        """Seconds until a token would be spare above ``keep``, if nothing else took
        one meanwhile (at least a millisecond)."""
        missing = keep + 1 - self.tokens
        return max(0.001, missing / self.qps)
