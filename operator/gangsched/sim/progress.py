"""A one-line progress bar for long simulations, redrawn in place on a terminal."""

from __future__ import annotations

import time
from typing import TextIO


class ProgressBar:
    """Draws ``label [#####-----] 45% 123/745 jobs ended, t=10h12m`` at most 10 times a second.

    The fraction is the larger of jobs ended and simulated time over ``horizon`` (when the
    workload has an end time), so a run that ends on the clock still fills the bar.
    """

    width = 30

    def __init__(self, stream: TextIO, label: str, horizon: float | None = None) -> None:
        self.stream = stream
        self.label = label
        self.horizon = horizon
        self._last = 0.0
        self._drawn = False

    def __call__(self, now: float, ended: int, total: int) -> None:
        wall = time.monotonic()
        final = ended >= total
        if not final and wall - self._last < 0.1:
            return
        self._last = wall
        fraction = ended / total if total else 1.0
        if self.horizon:
            fraction = max(fraction, min(now / self.horizon, 1.0))
        filled = int(fraction * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        hours, rest = divmod(int(now), 3600)
        self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {ended}/{total} jobs "
                          f"ended, t={hours}h{rest // 60:02d}m ")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
