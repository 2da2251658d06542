"""The operator's runtime: observations in, one scheduling loop, decisions carried out.

Start-up (and every restart) rebuilds all state from the cluster before the first
cycle: Queues, Applications and PodGroups are listed (their status carries the timers),
then nodes and pods together (placeholders are recognised by their labels, binds by
``spec.nodeName``), each page observed by the core as it arrives. Every list is asked
for at once (:meth:`KubeClient.prefetch <gangsched.shell.client.KubeClient.prefetch>`);
only their observation keeps that order. Only then do cycles start, so nothing is
bound twice, no timer restarts from zero, and a gang that was half-reserved simply
carries on. Every kind comes through one
:class:`~gangsched.shell.watch.Reflector` (list, then watch; a relist diffs by UID), so
a deletion missed while a watch was down still reaches the core, and the core's keys
(names) never lose a re-created object to its predecessor's deletion. A pod that has
finished and is in no gang is forgotten (the core and the caches keep nothing of it).

Everything else is level-based: every watch event becomes an observation in the inbox;
the loop wakes, hands the inbox to the core, which observes it and runs one cycle at
the wall clock's ``now`` on its own thread (the event loop stays free meanwhile), and
hands each decision to an executor. The loop itself never awaits the API server.

Failures: a failed bind goes back to the core (``BindFailed``), which also asks again
for placeholders and deletions that do not happen. An eviction the API server refuses
(429: a PodDisruptionBudget) or that fails goes back as ``EvictionFailed``; one whose
pod is gone (404) or was replaced under its name (409) needs nothing. What the core
does not ask for again (a pod's PodScheduled condition, a pods-first Application) is
retried here on transient errors, with a backoff. Only the Lease holder observes and
cycles: a replica that takes over lists everything first, like a restarted one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import logging
import time
from collections.abc import Awaitable, Callable

from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import (
    Decision,
    PodPending,
)
from gangsched.core.values.model import Pod, PodUID
from gangsched.core.values.observations import (
    Observation,
)
from gangsched.shell import eventmerge, leader, logs
from gangsched.shell.client import ApiError, KubeClient, resource_path
from gangsched.shell.dispatch import GROUP, JSON, REPORT_PATIENCE, VERSION
from gangsched.shell.early import STREAM_EVERY, Early
from gangsched.shell.executors import EventRecorder, StatusWriter, WorkPool
from gangsched.shell.foreign import ForeignGroups
from gangsched.shell.handlers import WatchHandlers
from gangsched.shell.health import Health
from gangsched.shell.metrics import Metrics
from gangsched.shell.pending import PendingReports
from gangsched.shell.podcache import PodTranslations
from gangsched.shell.scheduled import ScheduledEvents
from gangsched.shell.settings import OperatorSettings
from gangsched.shell.storage import PRIORITY_CLASSES, StorageWatches
from gangsched.shell.supervise import Supervisor
from gangsched.shell.watch import Reflector
from gangsched.translate import times
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses
from gangsched.view.board import Board

log = logging.getLogger(__name__)


class Runtime(WatchHandlers):
    """One operator instance: the core, its inbox, and the executors."""

    def __init__(self, client: KubeClient, settings: OperatorSettings | None = None, *,
                 clock: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.settings = settings or OperatorSettings()
        self.clock = clock
        self.monotonic = monotonic
        self.scheduler = Scheduler(self.settings.core)
        self.core_thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="gangsched-core")
        """Where the core's cycles run, one at a time, off the event loop (see
        :meth:`cycle`)."""
        self.inbox: list[Observation] = []
        self.wake = asyncio.Event()
        self.apps: dict[str, JSON] = {}
        self.groups: dict[str, JSON] = {}
        self.queues: dict[str, JSON] = {}
        self.metrics = Metrics(objects={"applications": self.apps, "podgroups": self.groups},
                               partial_threshold=self.settings.partial_gang_threshold)
        self.metrics.api_answers = client.answers
        self.board: Board | None = Board(self._created) if self.settings.dashboard_port \
            else None
        """What the dashboard shows of the decisions (kept only when it is served)."""
        self.transitions = logs.Transitions(log)
        self.binds = WorkPool("bind", self.settings.bind_workers)
        self.api = WorkPool("api", self.settings.api_workers)
        self.reports = WorkPool("reports", self.settings.report_workers, after=self.binds,
                                patience=REPORT_PATIENCE)
        """Events and PodScheduled conditions: never queued ahead of placeholder creates
        and deletes, which gangs wait for, and each waits for the binds under way (at
        most :data:`REPORT_PATIENCE` seconds)."""
        self.in_flight: set[tuple[str, str]] = set()
        """Placeholder creates (by name) and pod deletes (by uid) queued or under way: the
        core asks again for one not seen in time, which must not queue a duplicate."""
        self.volume_waits: set[asyncio.Task[None]] = set()
        """Binds waiting for their claims to be bound (PreBind), off the bind pool."""
        self.node_uids: dict[str, object] = {}
        """Node name -> the UID last observed under it."""
        self.status = StatusWriter(client, self.settings.status_interval,
                                   concurrency=self.settings.status_workers,
                                   after=self.binds, patience=REPORT_PATIENCE)
        self.events = EventRecorder(client)
        self.scheduled = ScheduledEvents(
            client, identity=self.settings.identity,
            default_scheduler=sorted(self.settings.scheduler_names)[0],
            enabled=self.settings.scheduled_events, limit=self.settings.scheduled_event_queue,
            workers=self.settings.report_workers,
            binds=self.binds, patience=REPORT_PATIENCE)
        """The ``Scheduled`` Event of each pod bound, written off the bind path."""
        self.scheduled.on_outcome = self.metrics.scheduled_event
        self.pods_first_tried: dict[str, str] = {}
        """Pods-first pods by uid -> the gang's key and manifest (or error) last acted on,
        so that an edited annotation is acted on again and an unchanged one is not."""
        self.pods_first_errors: dict[str, str] = {}
        """Pods-first pods whose Application or PodGroup cannot be made from them, and why."""
        self.gang_members: dict[str, dict[str, Pod]] = {}
        """Real members by gang key (``Application/ns/name``, ``PodGroup/ns/name``) and
        uid: each owns its gang when the gang was made from pods."""
        self.member_of: dict[str, str] = {}
        """The gang key each pod of :attr:`gang_members` is kept under, by uid."""
        self.owners_asked: set[str] = set()
        """Gang keys whose owners' patch is under way."""
        self.dialect_conflicts: dict[str, str] = {}
        """Pods whose gang dialects disagree, by uid -> the conflict last reported."""
        self.pending = PendingReports(initial=self.settings.pending_backoff_initial,
                                      cap=self.settings.pending_backoff_max,
                                      refresh=self.settings.pending_refresh)
        """Which pending pods' conditions and Events to write, and when."""
        self.conditions: dict[PodUID, PodPending] = {}
        """The PodScheduled condition each pod should show, until it is written."""
        self.pod_locks: dict[PodUID, asyncio.Lock] = {}
        """One write at a time per pod for its bind and its PodScheduled condition, so
        that a slow PodScheduled=False never lands after the bind's True."""
        watch_timeout = self.settings.watch_timeout
        self.pod_translations = PodTranslations(self.settings.scheduler_names)
        reflector = functools.partial(
            Reflector, client, timeout_seconds=watch_timeout,
            backoff_initial=self.settings.api_retry_initial,
            backoff_max=self.settings.api_retry_max)
        self.pod_watch = reflector("/api/v1/pods", self._guarded(self.on_pod, "pod"),
                                   name="pods", after_page=self._after_pod_page)
        self.node_watch = reflector("/api/v1/nodes", self._guarded(self.on_node, "node"),
                                    name="nodes")
        self.namespace_watch = reflector("/api/v1/namespaces",
                                         self._guarded(self.on_namespace, "namespace"),
                                         name="namespaces")
        """Namespace labels, for pod affinity terms' ``namespaceSelector``."""
        self.cr_watches = [
            reflector(resource_path(GROUP, VERSION, plural), self._guarded(handler, kind),
                      name=plural)
            for plural, kind, handler in (("queues", "queue", self.on_queue),
                                          ("applications", "application", self.on_app),
                                          ("podgroups", "podgroup", self.on_podgroup))]
        """Queues, Applications and PodGroups: listed and watched like pods, so that a
        deletion missed while a watch was down is reported by the relist's UID diff."""
        self.foreign = ForeignGroups(client, self.submit, self.status,
                                     watch_timeout=watch_timeout)
        """coscheduling and Volcano PodGroups, while their CRDs are installed."""
        self.storage = StorageWatches(client, self.submit, watch_timeout=watch_timeout)
        """PersistentVolumes, claims, StorageClasses, CSINodes (and ResourceClaims)."""
        self.priority_classes: dict[str, JSON] = {}
        self.priorities: PriorityClasses = NO_CLASSES
        """What ``priorityClassName`` resolves to, for Applications, PodGroups and pods."""
        self.priority_watch = reflector(PRIORITY_CLASSES,
                                        self._guarded(self.on_priority_class, "priorityclass"),
                                        name="priorityclasses")
        self.syncing = False
        """True while :meth:`sync` lists: observations go to the core at once."""
        self.cycles = 0
        self.decisions = 0
        self.last_cycle: float | None = None
        """Monotonic time of the last cycle (None before the first)."""
        self.elector: leader.LeaderElector | None = None
        if self.settings.leader_election:
            self.elector = leader.LeaderElector(client, self.settings, clock=clock,
                                                monotonic=monotonic, on_lost=self._lost)
            self.leading = self.elector.leading
        else:
            self.leading = asyncio.Event()
        self.ready = asyncio.Event()
        self.supervisor: Supervisor | None = None
        """The supervisor of this runtime's tasks while :meth:`run` runs."""
        self.health: Health | None = None
        """The liveness checks of this replica, once the operator serves them."""
        self.cycled = asyncio.Event()
        """Set once the first cycle has dispatched its decisions."""


    # --- start-up ------------------------------------------------------------------------

    async def sync(self, stop: asyncio.Event | None = None) -> bool:
        """List everything and rebuild the core's state before the first cycle.

        Each page is observed by the core as it arrives (nothing waits in the inbox). An
        Application's first observation is the one its persisted state and timers are
        restored from, so it comes from this list.
        A list that fails is tried again (with a backoff) until it succeeds: scheduling
        from part of the cluster could bind on a node that looks free, or re-create
        placeholders that exist. False if ``stop`` was set first.
        """
        self.inbox.clear()
        for path in self.first_lists():
            self.client.prefetch(path)  # all at once; observed in the order below
        self.syncing = True
        try:
            # Queues, Applications, PodGroups (an Application's first observation restores
            # its timers), the foreign PodGroups; then nodes and pods together (the core
            # keeps a pod's usage of a node it does not know yet until the node comes).
            # Each page is observed as it arrives. PriorityClasses come first: Applications,
            # PodGroups and pods resolve their priorityClassName against them.
            if not await self._until_done("list priorityclasses", self.priority_watch.list,
                                          stop):
                return False
            for reflector in self.cr_watches:
                if not await self._until_done(f"list {reflector.name}", reflector.list, stop):
                    return False
            await self.foreign.list()
            if not await self._until_done("list storage", self.storage.list, stop):
                return False
            listed = await asyncio.gather(*(
                self._until_done(f"list {reflector.name}", reflector.list, stop)
                for reflector in (self.namespace_watch, self.node_watch, self.pod_watch)))
            if not all(listed):
                return False
        finally:
            self.syncing = False
        self.ready.set()
        self.wake.set()  # the first cycle at once, not after a tick
        return True

    def first_lists(self) -> tuple[str, ...]:
        """The paths :meth:`sync` lists, in its order (the first ResourceClaims version
        it tries among them)."""
        return (self.priority_watch.path, *(r.path for r in self.cr_watches),
                *self.foreign.first_lists(), *self.storage.first_lists(),
                self.namespace_watch.path, self.node_watch.path, self.pod_watch.path)

    async def _until_done(self, what: str, call: Callable[[], Awaitable[None]],
                          stop: asyncio.Event | None) -> bool:
        attempt = 0
        while stop is None or not stop.is_set():
            try:
                await call()
                return True
            except ApiError as err:
                delay = min(self.settings.api_retry_initial * 2 ** attempt,
                            self.settings.api_retry_max)
                attempt += 1
                self.metrics.api_retries.inc()
                log.warning("%s failed: %s; retrying in %.1fs", what, err, delay)
                if stop is None:
                    await asyncio.sleep(delay)
                else:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=delay)
        return False

    def decide(self, batch: list[Observation], now: float) -> list[Decision]:
        """The core's part of a cycle (on the core's thread): observe, then decide."""
        observe = self.scheduler.observe
        for observation in batch:
            observe(observation)
        return self.scheduler.cycle(now)

    # --- the loop ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop``: sync, lead, then cycle; stop everything on the way out.

        Every task is supervised (see :mod:`gangsched.shell.supervise`): watches, the
        Lease holder and the status writer are restarted when they fail; the scheduling
        loop failing stops the operator (:attr:`failed` says why). A graceful stop
        writes the last statuses and then releases the Lease, after the binds stopped.
        """
        supervisor = self.supervisor = Supervisor(stop, monotonic=self.monotonic)
        self.binds.start()
        self.api.start()
        self.reports.start()
        self.scheduled.start()
        supervisor.spawn("status", functools.partial(self.status.run, stop))
        try:
            if self.elector is not None:
                supervisor.spawn("leader", functools.partial(self.elector.run, stop))
                await _wait_any(self.leading, stop)
            else:
                self.leading.set()
            if stop.is_set() or not await self.sync(stop):
                return
            supervisor.spawn("pod-watch", functools.partial(self.pod_watch.run, stop))
            for watched in self.cr_watches:
                supervisor.spawn(f"{watched.name}-watch", functools.partial(watched.run, stop))
            supervisor.spawn("foreign-watch", functools.partial(self.foreign.run, stop))
            supervisor.spawn("node-watch", functools.partial(self.node_watch.run, stop))
            supervisor.spawn("storage-watch", functools.partial(self.storage.run, stop))
            supervisor.spawn("priorityclass-watch",
                             functools.partial(self.priority_watch.run, stop))
            supervisor.spawn("namespace-watch", functools.partial(self.namespace_watch.run, stop))
            await supervisor.spawn("cycles", functools.partial(self._cycles, stop),
                                   critical=True)
        finally:
            graceful = _not_cancelled()
            if graceful and self.leading.is_set() and self.ready.is_set():
                # A graceful stop (SIGTERM): write the last statuses, timers included.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.status.flush(),
                                           timeout=self.settings.shutdown_timeout)
            stop.set()
            await supervisor.close()
            for waiting in self.volume_waits:
                waiting.cancel()
            await asyncio.gather(*self.volume_waits, return_exceptions=True)
            await self.binds.stop()
            await self.api.stop()
            await self.reports.stop()
            await self.scheduled.stop()
            # A cycle under way when the loop was cancelled ends on its own; its
            # decisions are not carried out.
            self.core_thread.shutdown(wait=False, cancel_futures=True)
            if graceful and self.elector is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.elector.release(),
                                           timeout=self.settings.shutdown_timeout)

    @property
    def failed(self) -> str:
        """Why this replica must exit non-zero ("" if it need not): a supervised task
        failed, or leadership was lost (the replica restarts as a follower)."""
        if self.supervisor is not None and self.supervisor.failed:
            return self.supervisor.failed
        if self.elector is not None and self.elector.lost:
            return f"leadership lost: {self.elector.lost}"
        return ""

    def _lost(self, why: str) -> None:
        """Leadership is gone (the renew deadline passed, or another replica holds the
        Lease): cancel the binds and other writes under way at once, and stop."""
        self.binds.cancel()
        self.api.cancel()
        for waiting in self.volume_waits:
            waiting.cancel()
        self.wake.set()

    async def _cycles(self, stop: asyncio.Event) -> None:
        settings = self.settings
        while not stop.is_set():
            if not self.leading.is_set():
                log.error("leadership lost; stopping the scheduling loop")
                stop.set()
                return
            try:
                # asyncio.timeout, not wait_for: wait_for may swallow a cancellation that
                # arrives as the event is set (Python 3.11), and the loop would go on.
                async with asyncio.timeout(settings.tick):
                    await self.wake.wait()
                if settings.batch_window and self.cycles:
                    # (Not before the first: the sync observed everything already.)
                    await asyncio.sleep(settings.batch_window)
            except TimeoutError:
                pass
            self.wake.clear()
            if self.leading.is_set():
                await self.cycle()
            self.last_cycle = self.monotonic()

    def _created(self, kind: str, key: str) -> float | None:
        """An Application's or PodGroup's creation time, from the object the watch keeps."""
        obj = (self.apps if kind == "Application" else self.groups).get(key) or {}
        return times.parse_time((obj.get("metadata") or {}).get("creationTimestamp"))

    async def cycle(self) -> list[Decision]:
        """Drain the inbox, run one core cycle, dispatch its decisions.

        The core's work (observing the batch, then the cycle) runs on the core's own
        thread, never on the event loop: a cycle of thousands of placements takes a
        tenth of a second or more, and the loop meanwhile goes on renewing the Lease,
        answering probes, reading watches and carrying out binds. Only that thread
        touches the core once the first cycle starts; the loop hands it the batch and
        the clock's ``now`` and gets the decisions back. A replica that lost the Lease
        while its core worked carries none of them out.

        A long cycle's first binds do not wait for its end (:class:`Early`): every
        :data:`STREAM_EVERY` seconds while the core works, the binds and pending reports
        it has decided so far are carried out, as long as nothing else came before them.
        """
        started = time.perf_counter()
        batch, self.inbox = self.inbox, []
        now = self.clock()
        early = Early(self.scheduler.out)  # the outbox this cycle's decisions go to
        future = asyncio.get_running_loop().run_in_executor(
            self.core_thread, self.decide, batch, now)
        while not future.done():
            await asyncio.wait({future}, timeout=STREAM_EVERY)
            if not future.done() and self.leading.is_set():
                for decision in early.ready():
                    self._dispatch(decision, now)
        decisions = future.result()
        if not self.leading.is_set():
            return []
        self.cycles += 1
        self.decisions += len(decisions)
        if self.board is not None:
            self.board.take(decisions, now)
        for decision in eventmerge.one_per_object(early.rest(decisions)):
            self._dispatch(decision, now)
        for report in self.pending.due(now):
            self._report_pending(report, now)
        self.cycled.set()
        self.metrics.observe_cycle(time.perf_counter() - started, decisions, now)
        return decisions


def _not_cancelled() -> bool:
    """Whether the current task is ending by itself, not being cancelled (a crash, as
    far as the Lease is concerned: nothing is released)."""
    task = asyncio.current_task()
    return task is None or not task.cancelling()


async def _wait_any(*events: asyncio.Event) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
