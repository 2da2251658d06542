"""The Lease holder's renew-deadline watchdog is a task of its own: it may not die unseen."""

from __future__ import annotations

import asyncio
import time

import pytest
from gangsched.shell.leader import LeaderElector
from gangsched.shell.settings import OperatorSettings

pytestmark = pytest.mark.asyncio


async def test_a_failing_deadline_watchdog_fails_the_lease_holder() -> None:
    """Otherwise a hanging renewal would no longer be cut off at the renew deadline while
    the holder went on looking healthy; failing, it is restarted by its supervisor."""
    settings = OperatorSettings(identity="op-1", namespace="gangsched-system",
                                lease_duration=0.3, renew_deadline=0.2, renew_interval=0.01)
    elector = LeaderElector(None, settings, clock=time.time,  # type: ignore[arg-type]
                            monotonic=time.monotonic)

    async def attempt(stop: asyncio.Event) -> None:
        return None

    async def broken(stop: asyncio.Event) -> None:
        raise RuntimeError("a bug in the watchdog")

    elector._try = attempt  # type: ignore[method-assign]
    elector._watchdog = broken  # type: ignore[method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    try:
        await asyncio.wait({task}, timeout=5)
        assert task.done(), "the Lease holder went on renewing without its watchdog"
        with pytest.raises(RuntimeError, match="a bug in the watchdog"):
            task.result()
    finally:
        stop.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
