"""Carrying out decisions: bounded worker pools, batched status, aggregated events.

The scheduling loop hands work over and goes on; it never awaits the API server.

* :class:`WorkPool`: a queue drained by N workers (binds have their own pool, so a slow
  status patch never delays a bind).
* :class:`StatusWriter`: keeps the latest wanted status per object and patches only what
  changed since the last successful write, every ``interval`` seconds, ``concurrency``
  patches at a time (one object's patches never overlap: one flush at a time).
* :class:`EventRecorder`: ``events.k8s.io/v1`` Events, aggregated: a repeat of the same
  (object, reason, note) updates the first Event's ``series`` instead of adding one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.shell.client import ApiError, KubeClient

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


class WorkPool:
    """``workers`` tasks running queued jobs. Jobs handle their own errors.

    ``after``: a pool whose work goes first. Each job of this one waits, before it
    starts, until ``after`` has nothing queued or under way, or ``patience`` seconds
    passed (so it is delayed, never starved). Events and PodScheduled conditions wait so
    for the binds: when a cycle binds thousands of gang members at once, their
    reports would otherwise compete with the binds for the API server and this
    process, and every gang would complete later."""

    def __init__(self, name: str, workers: int, *, after: WorkPool | None = None,
                 patience: float = 0.0) -> None:
        self.name = name
        self.queue: asyncio.Queue[Job] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._workers = workers
        self.done = 0
        self.after = after
        self.patience = patience
        self.running = 0
        """Jobs under way."""
        self._quiet = asyncio.Event()
        self._quiet.set()
        self.deferred = 0
        """Jobs that waited for ``after``."""
        self.active_at = float("-inf")
        """Event-loop time a job was last submitted or ended."""

    def start(self) -> None:
        for i in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"{self.name}-{i}"))

    def submit(self, job: Job) -> None:
        self.queue.put_nowait(job)
        self._quiet.clear()
        self.active_at = asyncio.get_running_loop().time()

    @property
    def busy(self) -> bool:
        return self.running > 0 or not self.queue.empty()

    async def quiet(self, timeout: float) -> bool:
        """Wait until nothing is queued or under way here, at most ``timeout`` seconds;
        whether it is quiet."""
        if not self.busy:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._quiet.wait()
        return not self.busy

    async def _work(self) -> None:
        while True:
            job = await self.queue.get()
            self.running += 1
            try:
                if self.after is not None and self.after.busy:
                    self.deferred += 1
                    await self.after.quiet(self.patience)
                await job()
            except asyncio.CancelledError:
                raise
            except Exception:  # a job's bug must not kill the worker
                log.exception("%s job failed", self.name)
            finally:
                self.running -= 1
                self.done += 1
                self.active_at = asyncio.get_running_loop().time()
                self.queue.task_done()
                if not self.busy:
                    self._quiet.set()

    async def drain(self) -> None:
        await self.queue.join()

    def cancel(self) -> None:
        """Cancel the jobs under way now (their requests are abandoned) and the workers;
        queued jobs stay queued. Used when leadership is lost: no bind may go on."""
        for task in self._tasks:
            task.cancel()

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()


@dataclass(frozen=True, slots=True)
class StatusTarget:
    group: str
    version: str
    plural: str
    namespace: str | None
    name: str


class StatusWriter:
    """The latest wanted ``status`` per object, patched only when it changed."""

    def __init__(self, client: KubeClient, interval: float, *, concurrency: int = 8,
                 after: WorkPool | None = None, patience: float = 0.0) -> None:
        self.client = client
        self.interval = interval
        self.concurrency = max(1, concurrency)
        self.after = after
        """Binds: a flush waits while they are queued or under way, at most ``patience``
        seconds (see :class:`WorkPool`)."""
        self.patience = patience
        self._flushing = asyncio.Lock()
        self.wanted: dict[StatusTarget, dict[str, Any]] = {}
        self.written: dict[StatusTarget, dict[str, Any]] = {}
        self.patches = 0
        self._wake = asyncio.Event()

    def want(self, target: StatusTarget, status: dict[str, Any]) -> None:
        if self.written.get(target) == status:
            self.wanted.pop(target, None)
            return
        self.wanted[target] = status
        self._wake.set()

    def forget(self, target: StatusTarget) -> None:
        self.wanted.pop(target, None)
        self.written.pop(target, None)

    async def flush(self) -> None:
        """Patch every changed status, ``concurrency`` at a time. A failed patch is kept
        for the next flush (unless 404: gone, or 422: invalid, which is logged)."""
        async with self._flushing:
            if self.after is not None and self.wanted:
                await self.after.quiet(self.patience)
            batch, self.wanted = self.wanted, {}
            slots = asyncio.Semaphore(self.concurrency)

            async def one(target: StatusTarget, status: dict[str, Any]) -> None:
                async with slots:
                    await self._patch(target, status)

            await asyncio.gather(*(one(t, s) for t, s in batch.items()))

    async def _patch(self, target: StatusTarget, status: dict[str, Any]) -> None:
        try:
            await self.client.patch(target.group, target.version, target.plural,
                                    target.namespace, target.name, {"status": status},
                                    subresource="status")
            self.written[target] = status
            self.patches += 1
        except ApiError as err:
            if err.code == 404:
                self.written.pop(target, None)
                return
            log.warning("status of %s/%s not written: %s", target.plural, target.name, err)
            if err.code != 422:
                self.wanted.setdefault(target, status)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.interval)
            self._wake.clear()
            await self.flush()
            await asyncio.sleep(self.interval)


class EventRecorder:
    """Post Events, turning repeats into a growing ``series`` on the first one.

    The count goes on from what the API server has: after a restart (or once this
    recorder has forgotten an Event), the create answers 409 and the existing Event's
    ``series.count`` is read and continued. Repeats of one Event are recorded one at a
    time, so concurrent workers never write the same count twice. An Event that is gone
    (expired, deleted) is created again.
    """

    def __init__(self, client: KubeClient, window: float = 600.0) -> None:
        self.client = client
        self.window = window
        self.seen: dict[str, tuple[str, str, int, float]] = {}
        """event name -> (namespace, name, count, first time)"""
        self.posted = 0
        self._locks: dict[str, asyncio.Lock] = {}

    async def record(self, name: str, body: Mapping[str, Any], now: float,
                     micro_time: str) -> None:
        lock = self._locks.setdefault(name, asyncio.Lock())
        try:
            async with lock:
                await self._record(name, body, now, micro_time)
        except ApiError as err:
            log.info("event %s not recorded: %s", name, err)
        finally:
            if not lock.locked() and self._locks.get(name) is lock:
                del self._locks[name]
        if len(self.seen) > 10000:
            cutoff = now - self.window
            self.seen = {k: v for k, v in self.seen.items() if v[3] >= cutoff}

    async def _record(self, name: str, body: Mapping[str, Any], now: float,
                      micro_time: str) -> None:
        namespace = str((body.get("metadata") or {}).get("namespace") or "default")
        previous = self.seen.get(name)
        if previous is not None:
            try:
                await self._series(namespace, name, previous[2] + 1, micro_time)
                self.seen[name] = (namespace, name, previous[2] + 1, previous[3])
                return
            except ApiError as err:
                if err.code != 404:
                    raise
        try:
            await self.client.create("events.k8s.io", "v1", "events", namespace, dict(body))
            self.seen[name] = (namespace, name, 1, now)
            self.posted += 1
            return
        except ApiError as err:
            if err.code != 409:
                raise
        existing = await self.client.get("events.k8s.io", "v1", "events", namespace, name)
        count = int((existing.get("series") or {}).get("count") or 1) + 1
        await self._series(namespace, name, count, micro_time)
        self.seen[name] = (namespace, name, count, now)

    async def _series(self, namespace: str, name: str, count: int, micro_time: str) -> None:
        await self.client.patch("events.k8s.io", "v1", "events", namespace, name, {
            "series": {"count": count, "lastObservedTime": micro_time}})
