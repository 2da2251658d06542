"""The ``Scheduled`` Event of every pod bound, as kube-scheduler writes it.

kube-scheduler, once a pod's Binding succeeded, records on the pod an ``events.k8s.io/v1``
Event: type ``Normal``, reason ``Scheduled``, action ``Binding``, note ``Successfully
assigned NS/POD to NODE``, ``reportingController`` the scheduler's name (the profile's
``schedulerName``, e.g. ``default-scheduler``), ``reportingInstance`` that name, a dash
and the host's name, ``regarding`` the pod (``schedule_one.go`` ``finishBinding``,
``client-go/tools/events``). Users read it in ``kubectl describe pod`` and ``kubectl get
events``; tools that measure scheduling latency read its ``eventTime``. gangsched writes
the same for every pod it binds: plain pods, gang members, placeholders and the pods that
take their place, of every dialect; ``reportingController`` is the pod's
``schedulerName``.

Written off the bind path: :meth:`ScheduledEvents.bound` only queues the Event, which
workers of their own write later, so no Binding ever waits for one. And never at a
Binding's expense:

* a worker waits, before each Event, while Bindings are queued or under way, or one was
  submitted or ended within the last :data:`SETTLE` seconds (the next cycle's are coming: a
  backlog binds cycle after cycle), at most ``patience`` seconds, so that Events are
  delayed, never starved. A backlog of thousands of pods has most of its Events written
  once its Bindings are done; each Event's ``eventTime`` is its Binding's;
* with the client's rate limit, an Event takes a token only while more than half the
  burst is saved (:meth:`TokenBucket.try_spare
  <gangsched.shell.ratelimit.TokenBucket.try_spare>`): the Bindings, which queue for
  theirs, always find the other half;
* while the API server pushes back (it answered 429 to any request within
  :data:`PUSHBACK_SECONDS`, or the ``Retry-After`` it gave), no Event is sent: each one
  due is dropped, and one answered 429 itself is dropped, never retried. A Binding is
  never dropped: one answered 429 goes back to the core, which tries it again;
* at most ``limit`` Events wait (50,000 by default): beyond, the oldest is dropped.
  (kube-scheduler's broadcaster hands each Event at once to a goroutine of its own, which
  waits for its client's rate limit: its Events wait without bound.)

Each Event is named after its pod and a digest of the pod's uid and node, so a create
tried again after a lost answer finds the first (409) and writes nothing twice. A pod is
bound once, so there is no series to count (kube-scheduler's broadcaster would make one
only for an identical Event of the same pod). ``enabled`` False (``gangsched run
--no-scheduled-events``) writes none.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gangsched.core.values.decisions import EventType, ObjectRef, RecordEvent
from gangsched.shell.client import ApiError, KubeClient
from gangsched.shell.executors import WorkPool
from gangsched.translate import labels, render, times

log = logging.getLogger(__name__)

REASON = "Scheduled"
ACTION = "Binding"
PUSHBACK_SECONDS = 1.0
"""After a 429, how long no Event is sent (longer when the server's ``Retry-After`` says so)."""
SETTLE = 0.1
"""Seconds without a Binding submitted or ended after which the Bindings are taken to be
done for now (a cycle hands its binds over every 20 ms while it works, and cycles follow
each other within 10 ms while pods wait)."""
MAX_INSTANCE = 128
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class Bound:
    """One pod bound: what its Event says."""

    namespace: str
    name: str
    uid: str
    node: str
    scheduler: str
    time: float
    """When the Binding succeeded (the Event's ``eventTime``)."""


def controller_name(scheduler: str) -> str:
    """``reportingController`` for pods of ``scheduler``: that name when the API server
    accepts it there (a qualified name: at most 63 characters, alphanumerics, ``-_.``),
    else gangsched's own (``gangsched.io/scheduler``)."""
    return scheduler if _QUALIFIED_NAME.match(scheduler) else labels.REPORTING_CONTROLLER


def event_body(b: Bound, *, identity: str) -> dict[str, Any]:
    """The ``events.k8s.io/v1`` Event for ``b``, as kube-scheduler's recorder makes it."""
    return _Bodies(identity).body(b)


def _reference_body(b: Bound, *, identity: str) -> dict[str, Any]:
    """:func:`event_body` as any other Event of gangsched's is made
    (:func:`gangsched.translate.render.event_body`), for the tests to compare with."""
    controller = controller_name(b.scheduler)
    d = RecordEvent(ObjectRef("Pod", b.namespace, b.name, b.uid), EventType.NORMAL, REASON,
                    f"Successfully assigned {b.namespace}/{b.name} to {b.node}")
    body = render.event_body(d, now=b.time)
    body["reportingController"] = controller
    body["reportingInstance"] = f"{controller}-{identity}"[:MAX_INSTANCE]
    body["action"] = ACTION
    return body


class _Bodies:
    """:func:`event_body`, made for thousands of pods a second: what all Events of one
    scheduler name share is worked out once, and ``eventTime``'s date and time of day
    once per second. The body is the one :func:`_reference_body` makes: the note needs no
    cut (a namespace, a pod's name and a node's name are at most 63, 253 and 253
    characters: 596 bytes with the words, of the 1,024 a note may have), and a pod always
    has a namespace."""

    def __init__(self, identity: str) -> None:
        self.identity = identity
        self._reporting: dict[str, tuple[str, str]] = {}
        self._second = -1
        self._prefix = ""

    def _micro_time(self, t: float) -> str:
        """``times.format_micro_time(t)``."""
        seconds = math.floor(t)
        micros = round((t - seconds) * 1_000_000)
        if micros == 1_000_000:
            seconds, micros = seconds + 1, 0
        if seconds != self._second:
            self._prefix = times.format_time_seconds(seconds)[:-1]
            self._second = seconds
        return f"{self._prefix}.{micros:06d}Z"

    def body(self, b: Bound) -> dict[str, Any]:
        reporting = self._reporting.get(b.scheduler)
        if reporting is None:
            controller = controller_name(b.scheduler)
            reporting = self._reporting[b.scheduler] = (
                controller, f"{controller}-{self.identity}"[:MAX_INSTANCE])
        note = f"Successfully assigned {b.namespace}/{b.name} to {b.node}"
        regarding = {"apiVersion": "v1", "kind": "Pod", "name": b.name,
                     "namespace": b.namespace, "uid": b.uid}
        if not b.uid:
            del regarding["uid"]
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": render.event_name_of("Pod", b.namespace, b.name, b.uid,
                                             EventType.NORMAL.value, REASON, note),
                "namespace": b.namespace,
            },
            "eventTime": self._micro_time(b.time),
            "reportingController": reporting[0],
            "reportingInstance": reporting[1],
            "action": ACTION,
            "reason": REASON,
            "type": EventType.NORMAL.value,
            "note": note,
            "regarding": regarding,
        }


class ScheduledEvents:
    """Queue and write the ``Scheduled`` Events (see the module docstring)."""

    def __init__(self, client: KubeClient, *, identity: str, default_scheduler: str,
                 enabled: bool = True, workers: int = 8, limit: int = 50_000,
                 binds: WorkPool | None = None, patience: float = 1.0) -> None:
        self.client = client
        self.identity = identity
        self._bodies = _Bodies(identity)
        self.default_scheduler = default_scheduler
        self.enabled = enabled
        self.limit = max(1, limit)
        self.binds = binds
        self.patience = patience
        self.monotonic = client.monotonic
        """The clock the client notes its 429s by."""
        self.schedulers: dict[str, str] = {}
        """Pod uid -> its ``schedulerName``, for pods of another name than the default
        (see :meth:`note_scheduler`)."""
        self.queue: collections.deque[Bound] = collections.deque()
        self._ready = asyncio.Event()
        self._workers = workers
        self._tasks: list[asyncio.Task[None]] = []
        self.running = 0
        self.written = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        """Events not written, by why: ``pushback`` (429s), ``queue`` (too many waiting),
        ``error`` (any other failure)."""
        self.on_outcome: Callable[[str], None] = lambda outcome: None
        """Told ``written`` or the reason of a drop, for each Event (the metrics)."""

    def note_scheduler(self, uid: str, scheduler: str) -> None:
        """Pod ``uid`` asks for ``scheduler`` (one of several names served)."""
        if scheduler and scheduler != self.default_scheduler:
            self.schedulers[uid] = scheduler

    def forget(self, uid: str) -> None:
        self.schedulers.pop(uid, None)

    def bound(self, namespace: str, name: str, uid: str, node: str, now: float) -> None:
        """Pod ``namespace/name`` was bound to ``node`` at ``now``: queue its Event."""
        if not self.enabled:
            return
        scheduler = self.schedulers.pop(uid, self.default_scheduler)
        if len(self.queue) >= self.limit:
            self.queue.popleft()
            self._drop("queue")
        self.queue.append(Bound(namespace, name, uid, node, scheduler, now))
        self._ready.set()

    @property
    def busy(self) -> bool:
        return self.running > 0 or bool(self.queue)

    def pushed_back(self) -> bool:
        """Did the API server answer 429 lately (see :data:`PUSHBACK_SECONDS`)?"""
        last = self.client.pushed_back_at
        if last is None:
            return False
        hold = max(PUSHBACK_SECONDS, self.client.retry_after)
        return self.monotonic() - last < hold

    def start(self) -> None:
        for i in range(self._workers):
            self._tasks.append(asyncio.create_task(self._work(), name=f"scheduled-{i}"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def drain(self, timeout: float) -> bool:
        """Wait until nothing is queued or being written, at most ``timeout`` seconds."""
        try:
            async with asyncio.timeout(timeout):
                while self.busy:
                    await asyncio.sleep(0.01)
        except TimeoutError:
            return False
        return True

    def _drop(self, why: str) -> None:
        self.dropped[why] += 1
        self.on_outcome(why)

    async def _work(self) -> None:
        while True:
            while not self.queue:
                self._ready.clear()
                await self._ready.wait()
            b = self.queue.popleft()
            self.running += 1
            try:
                await self._write(b)
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug here must not stop the Events
                log.exception("Scheduled event of %s/%s failed", b.namespace, b.name)
                self._drop("error")
            finally:
                self.running -= 1

    async def _after_binds(self) -> None:
        """Wait until the Bindings are done for now (see the module docstring), at most
        ``patience`` seconds."""
        binds = self.binds
        if binds is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.patience
        while (left := deadline - loop.time()) > 0:
            if binds.busy:
                await binds.quiet(left)
                continue
            idle = loop.time() - binds.active_at
            if idle >= SETTLE:
                return
            await asyncio.sleep(min(left, SETTLE - idle))

    async def _write(self, b: Bound) -> None:
        await self._after_binds()
        limiter = self.client.limiter
        if limiter is not None:  # a spare token, taken here: the create does not queue
            keep = limiter.burst / 2
            while not self.pushed_back() and not limiter.try_spare(keep):
                await asyncio.sleep(limiter.spare_in(keep))
        if self.pushed_back():
            self._drop("pushback")
            return
        body = self._bodies.body(b)
        try:
            await self.client.create("events.k8s.io", "v1", "events", b.namespace, body,
                                     limited=False)
        except ApiError as err:
            if err.code != 409:  # 409: written by a try whose answer was lost
                self._drop("pushback" if err.code == 429 else "error")
                if err.code != 429:
                    log.info("Scheduled event of %s/%s not written: %s", b.namespace,
                             b.name, err)
                return
        self.written += 1
        self.on_outcome("written")
