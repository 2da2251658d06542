"""Supervised tasks: none of the operator's long-running tasks may die silently.

A watch, the Lease holder, the status writer or a worker that ends with an unexpected
exception would otherwise leave the others running on a frozen view: cycles binding
from a pod cache that no longer changes. So every long-running task is started by a
:class:`Supervisor`:

* a **restartable** task (watches, the Lease holder, the status writer) that raises is
  logged with its traceback and started again after a backoff (``initial`` seconds,
  doubled up to ``cap``); one that fails more than ``max_failures`` times within
  ``window`` seconds is beyond restarting;
* a **critical** task (the scheduling loop, whose core state an exception may have left
  half-updated) is never restarted in-process;

either way the supervisor records why in :attr:`Supervisor.failed` and sets ``stop``,
and the operator exits non-zero so that the kubelet restarts it: every state is rebuilt
from the cluster at start-up, which is what a restart is for. A task that returns is
done (a watch returns only once ``stop`` is set). Cancellation is never caught.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Factory = Callable[[], Awaitable[None]]


class Supervisor:
    """Starts, restarts and finally stops a set of named tasks sharing one ``stop``."""

    def __init__(self, stop: asyncio.Event, *, monotonic: Callable[[], float],
                 initial: float = 0.5, cap: float = 30.0, max_failures: int = 5,
                 window: float = 300.0) -> None:
        self.stop = stop
        self.monotonic = monotonic
        self.initial = initial
        self.cap = cap
        self.max_failures = max_failures
        self.window = window
        self.failed = ""
        """Why the operator must exit ("" while all is well)."""
        self.restarts: collections.Counter[str] = collections.Counter()
        """Restarts per task name."""
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def spawn(self, name: str, factory: Factory, *, critical: bool = False) -> asyncio.Task[None]:
        """Run ``factory()`` as task ``name`` under supervision (see the module doc). A
        name already running is replaced: the old task is cancelled."""
        old = self.tasks.get(name)
        if old is not None and not old.done():
            old.cancel()
        task = asyncio.create_task(self._supervise(name, factory, critical), name=name)
        self.tasks[name] = task
        return task

    def fail(self, why: str) -> None:
        """Make the operator exit non-zero: record ``why`` (the first reason wins) and stop."""
        if not self.failed:
            self.failed = why
            log.critical("%s; stopping the operator so that it is restarted", why)
        self.stop.set()

    async def _supervise(self, name: str, factory: Factory, critical: bool) -> None:
        failures: collections.deque[float] = collections.deque()
        delay = self.initial
        while not self.stop.is_set():
            try:
                await factory()
                return
            except asyncio.CancelledError:
                raise
            except Exception as error:  # supervision: any failure is handled here
                log.error("task %s failed: %r", name, error, exc_info=error)
                if self.stop.is_set():
                    return
                if critical:
                    self.fail(f"task {name} failed: {error!r}")
                    return
                now = self.monotonic()
                failures.append(now)
                while failures and failures[0] < now - self.window:
                    failures.popleft()
                if len(failures) > self.max_failures:
                    self.fail(f"task {name} failed {len(failures)} times within "
                              f"{self.window:.0f}s, last: {error!r}")
                    return
            self.restarts[name] += 1
            log.warning("restarting task %s in %.1fs", name, delay)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), timeout=delay)
            delay = min(delay * 2, self.cap)

    async def close(self) -> None:
        """Cancel every task and wait for them."""
        tasks = list(self.tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.tasks.clear()
