"""Prometheus metrics: derived in the shell from the core's decisions and the clock.

The core knows nothing of metrics (import-linter forbids ``prometheus_client`` there). The
runtime hands every cycle's decisions to :meth:`Metrics.observe_cycle` with the cycle's
``now`` and how long the cycle took, reports bind outcomes (:meth:`Metrics.bind_succeeded`,
:meth:`Metrics.bind_failed`), and shows :meth:`Metrics.pod_observed` every pod the watch
sees. Everything else is derived here:

* *time to full gang*: an Application's ``GangReserved`` event minus the time it was
  accepted (``stateSince`` of its ``Accepted`` status, which survives restarts; its
  creation time when unknown). Counted only for a gang whose last placeholders this
  process bound, so that a restarted operator, which finds reserved gangs and announces
  them again, does not count them twice. A PodGroup's ``GangScheduled`` event minus its
  creation time;
* *swap latency*: from the cycle that parks a real pod on its placeholder (the placeholder's
  ``DeletePod(PlaceholderReplaced)`` and the pod's ``WaitingForPlaceholder``) to the cycle
  that binds that pod;
* *reserved-but-idle resource-seconds*: the requests of every placeholder that is bound
  (``spec.nodeName`` seen) and not yet released (no ``DeletePod`` for it yet, not
  terminating), integrated over the clock per queue, advanced at every cycle and
  every change;
* *timeouts, rejections, deadlock breaks*: the core's events with those reasons;
* gauges (applications by state, PodGroups by phase, queue usage, pending pods): the last
  status the core gave each object, collected when scraped, and forgotten when the object
  is deleted (:meth:`Metrics.forget`);
* *over-committed nodes* and *partial gangs*: from the pods and nodes the watches show
  (:mod:`gangsched.shell.holdings`): nodes holding more than allocatable (a gauge that must
  stay 0), and per gang the spans with some but not all of its minimum members holding
  their room (a histogram of the spans that ended, and a counter of spans longer than the
  threshold, counted as they cross it).

A :class:`Metrics` owns its own registry (no global state); :class:`MetricsServer` serves
it on ``/metrics``. Metrics only read the decisions and never change what is done. Every
metric is documented in ``docs/metrics.md`` (a test checks that both list the same).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram
from prometheus_client import generate_latest as _generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from gangsched.core.gangs import partialgang
from gangsched.core.values import resources
from gangsched.core.values.decisions import (
    BindGang,
    BindPod,
    Decision,
    DeletePod,
    PodPending,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
)
from gangsched.core.values.model import AppKey, Node, Pod, PodUID
from gangsched.shell import holdings, serving
from gangsched.translate import times

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger(__name__)

JSON = Mapping[str, Any]

CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                 5.0, 10.0)
GANG_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
                7200.0, 21600.0)
SWAP_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
PARTIAL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 300.0)

TIMEOUT_REASONS = frozenset({"PlaceholderTimeout", "PlaceholdersReleased", "ScheduleTimeout"})
"""Events of a gang's timer expiring: an Application not reserved (or whose real pods did
not come) in time, a started one releasing its unused placeholders, a PodGroup."""
REJECTION_REASONS = frozenset({"InvalidSpec", "NotALeafQueue", "FairQueue",
                               "QueueQuotaExceeded"})
"""Events of an Application moved to Rejected (and of a PodGroup with an invalid spec)."""
DEADLOCK_REASONS = frozenset({"DeadlockBroken"})
"""Events of a deadlock between partially reserved gangs broken by releasing a victim."""
PARKED_REASON = "WaitingForPlaceholder"
PLACEHOLDER_BIND = "PlaceholderAllocated"


def resource_value(name: str, amount: int) -> float:
    """A scheduler amount in the unit metrics use: cores for ``cpu`` (the scheduler counts
    millicores), the scheduler's own unit (bytes, counts) for everything else."""
    return amount / 1000 if name == resources.CPU else float(amount)


@dataclasses.dataclass(slots=True)
class _Placeholder:
    app: AppKey
    requests: resources.Resources
    queue: str | None = None
    """The queue its idle time is counted for, while it holds a node."""
    released: bool = False
    """A deletion was asked for: it is no longer idle capacity of its gang."""


class Metrics:
    """The operator's metrics, in a registry of their own (``registry``).

    ``objects`` maps ``applications`` and ``podgroups`` to the runtime's latest objects by
    ``namespace/name``: creation times and queues are read there when the decisions do
    not tell them (after a restart, for instance). Missing entries are fine.
    """

    def __init__(self, *, objects: Mapping[str, Mapping[str, JSON]] | None = None,
                 partial_threshold: float = partialgang.DEFAULT_THRESHOLD) -> None:
        """``partial_threshold``: seconds a gang may be partial before it counts as a
        violation (a negative one is taken as 0)."""
        self.registry = CollectorRegistry()
        self._objects = objects or {}
        r = self.registry
        self.cycle_seconds = Histogram(
            "gangsched_scheduling_cycle_duration_seconds",
            "Time one scheduling cycle takes: observations into the core, the core's cycle "
            "and the dispatch of its decisions.", buckets=CYCLE_BUCKETS, registry=r)
        self.decisions = Counter("gangsched_decisions_total",
                                 "Decisions made by the core, by kind.", ["kind"], registry=r)
        self.binds = Counter("gangsched_binds_total",
                             "Pods bound to a node, by the core's reason.", ["reason"],
                             registry=r)
        self.bind_errors = Counter("gangsched_bind_errors_total",
                                   "Binds the API server refused or that failed, by HTTP "
                                   "status code (0: no answer).", ["code"], registry=r)
        self.scheduled_events = Counter(
            "gangsched_scheduled_events_total",
            "Scheduled Events of pods bound: written, or dropped and why (pushback: the API "
            "server answered 429; queue: too many waiting; error).", ["outcome"], registry=r)
        self._bound_by_reason: dict[str, Any] = {}
        self._scheduled_by_outcome: dict[str, Any] = {}
        """The labelled children of ``binds`` and ``scheduled_events``, once made."""
        self.deletions = Counter("gangsched_pod_deletions_total",
                                 "Pod deletions asked for by the core, by reason.", ["reason"],
                                 registry=r)
        self.time_to_full_gang = Histogram(
            "gangsched_time_to_full_gang_seconds",
            "From an Application's acceptance to its whole gang reserved (GangReserved), or "
            "from a PodGroup's creation to its gang scheduled (GangScheduled).",
            ["kind", "queue"], buckets=GANG_BUCKETS, registry=r)
        self.swap_seconds = Histogram(
            "gangsched_placeholder_swap_duration_seconds",
            "From a real pod taking a placeholder's place (the placeholder's deletion asked "
            "for) to that pod's bind.", buckets=SWAP_BUCKETS, registry=r)
        self.idle = Counter(
            "gangsched_placeholder_idle_resource_seconds_total",
            "Resources held by bound placeholders not yet replaced or released, times the "
            "seconds they were held, by queue and resource (cpu in cores, memory in bytes).",
            ["queue", "resource"], registry=r)
        self.timeouts = Counter(
            "gangsched_timeouts_total",
            "Gang timeouts by object kind, reason and the state or phase it ended in.",
            ["kind", "reason", "outcome"], registry=r)
        self.rejections = Counter("gangsched_rejections_total",
                                  "Applications rejected (and PodGroups with an invalid spec), "
                                  "by reason.", ["kind", "reason"], registry=r)
        self.deadlock_breaks = Counter("gangsched_deadlock_breaks_total",
                                       "Deadlocks between partially reserved gangs broken, by "
                                       "reason.", ["kind", "reason"], registry=r)
        self.partial_seconds = Histogram(
            "gangsched_gang_partial_seconds",
            "Spans a gang had some but not all of its minimum members holding their room "
            "(bound, placeholders not being deleted), by gang kind; observed as each ends.",
            ["kind"], buckets=PARTIAL_BUCKETS, registry=r)
        self.partial_violations = Counter(
            "gangsched_gang_partial_violations_total",
            "Partial spans longer than the threshold (3 s by default), counted as they "
            "cross it, by gang kind.", ["kind"], registry=r)
        self.api_retries = Counter(
            "gangsched_api_retries_total",
            "API calls tried again after a transient error (429, 5xx, no answer), after a "
            "backoff. Failed binds are not among them: the core tries those again.",
            registry=r)
        self.api_answers: Mapping[tuple[str, int], int] = {}
        """(HTTP method, status code, 0 for none) -> requests sent: the client's
        ``answers``, read when scraped."""
        self.holdings = holdings.Holdings(
            objects=self._objects, threshold=partial_threshold,
            on_ended=lambda kind, seconds: self.partial_seconds.labels(kind).observe(seconds),
            on_violation=lambda kind: self.partial_violations.labels(kind).inc())
        self.apps: dict[str, tuple[str, str]] = {}
        """Application key -> (queue, state), from its last status."""
        self.groups: dict[str, str] = {}
        """PodGroup key -> phase, from its last status."""
        self.queues: dict[str, SetQueueStatus] = {}
        self._accepted: dict[str, float] = {}
        self._reserving: set[str] = set()
        """Applications whose placeholders this process bound and that are not reserved."""
        self._placeholders: dict[PodUID, _Placeholder] = {}
        self._holding: dict[str, resources.Resources] = {}
        """Queue -> requests of its bound, unreleased placeholders: the idle rate."""
        self._parked: dict[PodUID, float] = {}
        self._waiting: dict[PodUID, str] = {}
        """Pod -> the reason of its last PodPending, until the core binds it or it goes."""
        self._last: float | None = None
        r.register(_Snapshot(self))

    # --- fed by the runtime --------------------------------------------------------------

    def observe_cycle(self, seconds: float, decisions: Sequence[Decision], now: float) -> None:
        """Take in one cycle: its duration and its decisions, made at ``now``."""
        self.cycle_seconds.observe(seconds)
        self._advance(now)
        self.holdings.tick(now)
        kinds: collections.Counter[str] = collections.Counter()
        events: list[RecordEvent] = []
        for d in decisions:
            kinds[type(d).__name__] += 1
            if isinstance(d, SetAppStatus):
                self.apps[d.key] = (d.queue, d.state)
                if d.state == "Accepted" and d.state_since is not None:
                    self._accepted[d.key] = d.state_since
            elif isinstance(d, SetPodGroupStatus):
                self.groups[d.key] = d.phase
            elif isinstance(d, SetQueueStatus):
                self.queues[d.name] = d
            elif isinstance(d, BindPod):
                self._bound(d, now)
            elif isinstance(d, BindGang):
                for bind in d.binds:
                    self._bound(bind, now)
            elif isinstance(d, DeletePod):
                self.deletions.labels(d.reason.value).inc()
                self._release(d.uid, now)
            elif isinstance(d, PodPending):
                self._waiting[d.uid] = d.reason
                if d.reason == PARKED_REASON:
                    self._parked.setdefault(d.uid, now)
            elif isinstance(d, RecordEvent):
                events.append(d)
        for kind, count in kinds.items():
            self.decisions.labels(kind).inc(count)
        for event in events:  # after the statuses: an event may need the state it led to
            self._event(event, now)

    def bind_succeeded(self, reason: str = "") -> None:
        reason = reason or "Scheduled"
        child = self._bound_by_reason.get(reason)
        if child is None:  # (``labels`` costs more than the bind's other bookkeeping)
            child = self._bound_by_reason[reason] = self.binds.labels(reason)
        child.inc()

    def scheduled_event(self, outcome: str) -> None:
        child = self._scheduled_by_outcome.get(outcome)
        if child is None:
            child = self._scheduled_by_outcome[outcome] = self.scheduled_events.labels(outcome)
        child.inc()

    def bind_failed(self, code: int) -> None:
        self.bind_errors.labels(str(code)).inc()

    def node_observed(self, node: Node) -> None:
        self.holdings.node_observed(node)

    def node_gone(self, name: str) -> None:
        self.holdings.node_gone(name)

    def pod_observed(self, pod: Pod, now: float) -> None:
        """A pod as the watch shows it: a placeholder holds capacity from its bind on."""
        self.holdings.pod_observed(pod, now)
        if not pod.placeholder or pod.app is None:
            return
        ph = self._placeholders.get(pod.uid)
        if ph is None:
            ph = self._placeholders[pod.uid] = _Placeholder(pod.app, pod.requests)
        holding = (pod.node_name is not None and pod.active and not pod.terminating
                   and not ph.released)
        if holding and ph.queue is None:
            self._advance(now)
            ph.queue = self._queue_of(pod.app)
            self._holding[ph.queue] = self._holding.get(ph.queue, resources.Resources.ZERO) \
                + ph.requests
        elif not holding:
            self._stop(ph, now)

    def pod_gone(self, uid: PodUID, now: float) -> None:
        self.holdings.pod_gone(uid, now)
        ph = self._placeholders.pop(uid, None)
        if ph is not None:
            self._stop(ph, now)
        self._parked.pop(uid, None)
        self._waiting.pop(uid, None)

    def forget(self, plural: str, key: str) -> None:
        """An Application, PodGroup or Queue was deleted: drop it from the gauges."""
        if plural in ("applications", "podgroups"):
            self.holdings.gang_gone(key, self._last or 0.0)
        if plural == "applications":
            self.apps.pop(key, None)
            self._accepted.pop(key, None)
            self._reserving.discard(key)
        elif plural == "podgroups":
            self.groups.pop(key, None)
        elif plural == "queues":
            self.queues.pop(key, None)

    # --- derivations ---------------------------------------------------------------------

    def _advance(self, now: float) -> None:
        """Add the idle resource-seconds since the last call (a clock going back adds none)."""
        last = self._last
        if last is None or now <= last:
            if last is None:
                self._last = now
            return
        self._last = now
        seconds = now - last
        for queue, held in self._holding.items():
            for name, amount in held.items():
                if amount > 0:
                    self.idle.labels(queue, name).inc(resource_value(name, amount) * seconds)

    def _stop(self, ph: _Placeholder, now: float) -> None:
        if ph.queue is None:
            return
        self._advance(now)
        left = (self._holding.get(ph.queue, resources.Resources.ZERO) - ph.requests)
        if left.is_zero():
            self._holding.pop(ph.queue, None)
        else:
            self._holding[ph.queue] = left
        ph.queue = None

    def _release(self, uid: PodUID, now: float) -> None:
        ph = self._placeholders.get(uid)
        if ph is not None:
            ph.released = True
            self._stop(ph, now)

    def _bound(self, d: BindPod, now: float) -> None:
        # The core forgets a pod's reason when it binds it: a failed bind brings it again.
        self._waiting.pop(d.uid, None)
        parked = self._parked.pop(d.uid, None)
        if parked is not None:
            self.swap_seconds.observe(max(0.0, now - parked))
        if d.reason == PLACEHOLDER_BIND:
            ph = self._placeholders.get(d.uid)
            if ph is not None:
                self._reserving.add(ph.app)

    def _event(self, e: RecordEvent, now: float) -> None:
        kind, reason = e.target.kind, e.reason
        key = f"{e.target.namespace}/{e.target.name}"
        if reason == "GangReserved" and kind == "Application":
            if key in self._reserving:
                self._reserving.discard(key)
                start = self._accepted.get(key, self._created("applications", key))
                if start is not None:
                    queue = self.apps.get(key, (self._queue_of(AppKey(key)), ""))[0]
                    self.time_to_full_gang.labels(kind, queue).observe(max(0.0, now - start))
        elif reason == "GangScheduled" and kind == "PodGroup":
            start = self._created("podgroups", key)
            if start is not None:
                obj = self._objects.get("podgroups", {}).get(key) or {}
                queue = str((obj.get("spec") or {}).get("queue") or "default")
                self.time_to_full_gang.labels(kind, queue).observe(max(0.0, now - start))
        elif reason in TIMEOUT_REASONS:
            outcome = (self.apps.get(key, ("", ""))[1] if kind == "Application"
                       else self.groups.get(key, ""))
            self.timeouts.labels(kind, reason, outcome or "Unknown").inc()
        elif reason in REJECTION_REASONS and kind in ("Application", "PodGroup"):
            self.rejections.labels(kind, reason).inc()
        elif reason in DEADLOCK_REASONS:
            self.deadlock_breaks.labels(kind, reason).inc()

    def _created(self, plural: str, key: str) -> float | None:
        obj = self._objects.get(plural, {}).get(key) or {}
        return times.parse_time((obj.get("metadata") or {}).get("creationTimestamp"))

    def _queue_of(self, app: AppKey) -> str:
        known = self.apps.get(app)
        if known is not None:
            return known[0]
        obj = self._objects.get("applications", {}).get(app) or {}
        return str((obj.get("spec") or {}).get("queue") or "default")

    # --- exposition ----------------------------------------------------------------------

    def generate_latest(self) -> bytes:
        """The registry in the Prometheus text format."""
        return bytes(_generate_latest(self.registry))


class _Snapshot:
    """The gauges, built from the last statuses when scraped (nothing goes stale)."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        m = self._m
        apps = GaugeMetricFamily("gangsched_applications",
                                 "Applications by queue and state.", labels=["queue", "state"])
        for (queue, state), count in sorted(collections.Counter(m.apps.values()).items()):
            apps.add_metric([queue, state], count)
        yield apps
        groups = GaugeMetricFamily("gangsched_podgroups", "PodGroups by phase.",
                                   labels=["phase"])
        for phase, count in sorted(collections.Counter(m.groups.values()).items()):
            groups.add_metric([phase], count)
        yield groups
        pending = GaugeMetricFamily(
            "gangsched_pending_pods",
            "Pods of gangsched waiting for a node, placeholders included, by queue (a "
            "parent queue counts its children's).", labels=["queue"])
        families = {
            "allocated": GaugeMetricFamily(
                "gangsched_queue_allocated",
                "Resources allocated in a queue (its children's included), placeholders "
                "included; cpu in cores, memory in bytes.", labels=["queue", "resource"]),
            "max": GaugeMetricFamily(
                "gangsched_queue_max",
                "A queue's max (quota) per resource; a resource not listed is unlimited.",
                labels=["queue", "resource"]),
            "guaranteed": GaugeMetricFamily("gangsched_queue_guaranteed",
                                            "A queue's guaranteed resources.",
                                            labels=["queue", "resource"]),
            "placeholders": GaugeMetricFamily(
                "gangsched_queue_reserved_by_placeholders",
                "Resources of a queue held by placeholders right now.",
                labels=["queue", "resource"]),
            "pending": GaugeMetricFamily("gangsched_queue_pending",
                                         "Resources requested by a queue's pending pods.",
                                         labels=["queue", "resource"]),
        }
        for name in sorted(m.queues):
            q = m.queues[name]
            pending.add_metric([name], q.pending.get(resources.PODS))
            vectors = {"allocated": q.allocated, "max": q.max, "guaranteed": q.guaranteed,
                       "placeholders": q.reserved_by_placeholders, "pending": q.pending}
            for family, vector in vectors.items():
                if vector is None:
                    continue
                for resource, amount in sorted(vector.items()):
                    families[family].add_metric([name, resource],
                                                resource_value(resource, amount))
        yield pending
        yield from families.values()
        waiting = GaugeMetricFamily(
            "gangsched_pending_pods_by_reason",
            "Pods of gangsched waiting for a node, each once, by the reason the scheduler "
            "last gave (WaitingForGang, QueueQuota, Capacity...).", labels=["reason"])
        for reason, count in sorted(collections.Counter(m._waiting.values()).items()):
            waiting.add_metric([reason], count)
        yield waiting
        answers = CounterMetricFamily(
            "gangsched_api_requests",
            "Requests sent to the API server (watches excepted), by HTTP method and status "
            "code (0: no answer).", labels=["method", "code"])
        for (method, code), count in sorted(m.api_answers.items()):
            answers.add_metric([method, str(code)], count)
        yield answers
        over = GaugeMetricFamily(
            "gangsched_overcommitted_nodes",
            "Nodes holding more than their allocatable in some resource, as the operator "
            "sees them: bound pods that have not terminated (terminating ones and "
            "placeholders included). Must stay 0.")
        over.add_metric([], len(m.holdings.overcommitted()))
        yield over


class MetricsServer:
    """``/metrics`` over HTTP (aiohttp), from a :class:`Metrics` registry."""

    def __init__(self, metrics: Metrics, *, host: str = "0.0.0.0", port: int = 9090) -> None:
        self.metrics = metrics
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def _handle(self, _: web.Request) -> web.Response:
        from aiohttp import web

        return web.Response(body=self.metrics.generate_latest(),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def start(self) -> None:
        """Listen (``port`` 0 picks a free one; :attr:`port` then tells which)."""
        from aiohttp import web  # only when serving: not on the start-up path

        app = web.Application()
        app.router.add_get("/metrics", self._handle)
        self._runner, self.port = await serving.listen(app, self.host, self.port)
        log.info("serving metrics on http://%s:%d/metrics", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
