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
import dataclasses
import functools
import gc
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from gangsched.core.decisions import (
    AnnotateNode,
    BindGang,
    BindPod,
    CreatePlaceholder,
    Decision,
    DeletePod,
    DeleteReason,
    EvictPod,
    NominatePod,
    PodPending,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
)
from gangsched.core.model import AppKey, GroupKey, PodUID
from gangsched.core.observations import (
    AppGone,
    AppObserved,
    BindFailed,
    EvictionFailed,
    NamespaceGone,
    NamespaceObserved,
    NodeGone,
    NodeObserved,
    Observation,
    PlaceholderCreateFailed,
    PodGone,
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    QueueGone,
    QueueObserved,
    VolumeBindFailed,
)
from gangsched.core.scheduler import Scheduler
from gangsched.shell import leader, logs
from gangsched.shell.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient, resource_path
from gangsched.shell.early import STREAM_EVERY, Early
from gangsched.shell.executors import EventRecorder, StatusTarget, StatusWriter, WorkPool
from gangsched.shell.foreign import ForeignGroups
from gangsched.shell.health import Health
from gangsched.shell.metrics import Metrics
from gangsched.shell.pending import PendingReports, Report
from gangsched.shell.podcache import PodTranslations
from gangsched.shell.settings import OperatorSettings
from gangsched.shell.storage import PRIORITY_CLASSES, StorageWatches, write_volumes
from gangsched.shell.supervise import Supervisor
from gangsched.shell.watch import Reflector
from gangsched.translate import render, times
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.dialects import APPLICATION, LABEL_DIALECT, Membership
from gangsched.translate.dialects.foreign import retarget_event
from gangsched.translate.nodes import node_from_k8s
from gangsched.translate.podgroups import podgroup_from_k8s
from gangsched.translate.pods import gang_definition
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses
from gangsched.translate.queues import queue_from_k8s

log = logging.getLogger(__name__)

GROUP, VERSION = "gangsched.io", "v1alpha1"
RETRYABLE = frozenset({0, 409, 429, 500, 502, 503, 504})
"""API answers worth trying again: transport failures, conflicts, throttling, a busy or
failing server."""
WAITING_REASONS = frozenset({"WaitingForGang", "WaitingForPlaceholder", "StateAwareGate",
                             "WaitingForGangGroup", "ApplicationNotFound", "PodGroupNotFound"})
JSON = Mapping[str, Any]
REPORT_PATIENCE = 1.0
"""Seconds an Event, a PodScheduled condition or a status flush waits at most for the
binds queued or under way: the binds go first (a gang of which all members exist is
reserved and bound in one cycle, with two Events and a status patch), the reports are
delayed, never starved."""


_TRANSLATED_META = ("uid", "creationTimestamp", "deletionTimestamp", "labels", "annotations",
                    "ownerReferences")
"""What of an object's metadata an Application's or PodGroup's translation may read
(besides its namespace and name, which are its key)."""


def _key(obj: JSON) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _stale(known: Mapping[str, JSON], key: str, kind: str, obj: JSON) -> bool:
    """Is this the DELETED of an object no longer known under ``key``, because another
    (a new UID) was created under its name since? Such a deletion must not remove the
    new object from the core, whose keys are names."""
    if kind != "DELETED":
        return False
    current = known.get(key)
    if current is None:
        return False
    uid = (obj.get("metadata") or {}).get("uid")
    return bool(uid) and (current.get("metadata") or {}).get("uid") != uid


class Runtime:
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
        self.metrics = Metrics(objects={"applications": self.apps, "podgroups": self.groups})
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
        self.node_uids: dict[str, object] = {}
        """Node name -> the UID last observed under it."""
        self.status = StatusWriter(client, self.settings.status_interval,
                                   concurrency=self.settings.status_workers,
                                   after=self.binds, patience=REPORT_PATIENCE)
        self.events = EventRecorder(client)
        self.pods_first_tried: dict[str, str] = {}
        """Pods-first pods by uid -> the gang's key and manifest (or error) last acted on,
        so that an edited annotation is acted on again and an unchanged one is not."""
        self.pods_first_errors: dict[str, str] = {}
        """Pods-first pods whose Application or PodGroup cannot be made from them, and why."""
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

    # --- observations --------------------------------------------------------------------

    def _guarded(self, handle: Callable[[str, JSON], None],
                 what: str) -> Callable[[str, JSON], None]:
        """``handle``, with an unexpected exception logged instead of ending the watch
        that delivers the events: one odd object must not stop the others."""
        def guarded(kind: str, obj: JSON) -> None:
            try:
                handle(kind, obj)
            except Exception:  # a translation bug: log it, keep watching
                log.exception("%s %s %s not handled", kind, what, _key(obj))
        return guarded

    def submit(self, observation: Observation) -> None:
        """Queue an observation for the next cycle. A replica that does not lead keeps
        none: it lists everything again when it takes over (see :meth:`sync`)."""
        if not self.leading.is_set():
            return
        if self.syncing:
            self.scheduler.observe(observation)  # page by page: no backlog to drain later
            return
        self.inbox.append(observation)
        self.wake.set()

    def on_pod(self, kind: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        if kind == "DELETED":
            self._forget_pod(PodUID(str(meta.get("uid", ""))))
            return
        pod, membership = self.pod_translations.translate(obj)
        if (pod.phase.terminal and pod.app is None and pod.pod_group is None
                and not pod.placeholder):
            # Finished, in no gang: it holds nothing and no gang counts it. Keep nothing.
            self._forget_pod(pod.uid)
            return
        self.foreign.pod_seen(pod.uid, pod.pod_group if pod.ours else None)
        self.metrics.pod_observed(pod, self.clock())
        self.submit(PodObserved(pod))
        if pod.ours and not pod.placeholder and pod.node_name is None:
            if membership.conflicts:
                self._dialect_conflict(obj, "; ".join(membership.conflicts))
            if membership.definer is not None:
                self._pods_first(obj, membership)

    def _forget_pod(self, uid: PodUID) -> None:
        """The pod is gone, or finished in no gang: nothing of it is kept, here or in the
        core."""
        self.pods_first_tried.pop(uid, None)
        self.pods_first_errors.pop(uid, None)
        self.dialect_conflicts.pop(uid, None)
        self.conditions.pop(uid, None)
        self.pod_locks.pop(uid, None)
        self.pod_translations.forget(uid)
        self.metrics.pod_gone(uid, self.clock())
        self.submit(PodGone(uid))

    def _after_pod_page(self) -> None:
        """While syncing, after each page of pods, what it left alive (the core's pods,
        the caches) is moved out of the cyclic collector's way: a full collection walks
        every tracked object, and with 100,000 pods cached that was a stall of seconds,
        growing with the cluster. Frozen objects are still freed by reference counting;
        only the first lists freeze (a frozen garbage cycle is never collected)."""
        if self.syncing:
            gc.freeze()

    def on_node(self, kind: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        if kind == "DELETED":
            if self.node_uids.get(name, meta.get("uid")) != meta.get("uid"):
                return  # a predecessor of the node now under this name
            self.node_uids.pop(name, None)
            self.submit(NodeGone(name))
        else:
            self.node_uids[name] = meta.get("uid")
            self.submit(NodeObserved(node_from_k8s(obj)))

    def on_namespace(self, kind: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        if kind == "DELETED":
            self.submit(NamespaceGone(name))
        else:
            raw = meta.get("labels") or {}
            self.submit(NamespaceObserved(name, {str(k): str(v) for k, v in raw.items()}))

    def on_app(self, kind: str, obj: JSON) -> None:
        key = _key(obj)
        if _stale(self.apps, key, kind, obj):
            return
        seen = self._seen_but_status(self.apps, key, kind, obj)
        self._track(self.apps, key, kind, obj, "applications")
        if kind == "DELETED":
            self._made_gang_gone(key, obj)
            self.submit(AppGone(AppKey(key)))
        elif not seen:
            self.submit(AppObserved(app_from_k8s(obj, priorities=self.priorities)))

    def on_podgroup(self, kind: str, obj: JSON) -> None:
        key = _key(obj)
        if _stale(self.groups, key, kind, obj):
            return
        seen = self._seen_but_status(self.groups, key, kind, obj)
        self._track(self.groups, key, kind, obj, "podgroups")
        if kind == "DELETED":
            self._made_gang_gone(key, obj)
            self.submit(PodGroupGone(GroupKey(key)))
        elif not seen:
            self.submit(PodGroupObserved(podgroup_from_k8s(obj, priorities=self.priorities)))

    def _seen_but_status(self, known: Mapping[str, JSON], key: str, kind: str,
                         obj: JSON) -> bool:
        """Is this a change of an Application's or PodGroup's status only (most often our
        own status write coming back), of an object the core has? The core reads a
        status only at an object's first observation (what a restart restores), so such
        a change is not translated nor observed again: with gangs whose members all
        exist, that was a translation and a status recomputation per status write.
        Anything else the translation reads (spec, uid, creation, labels, annotations,
        deletion) changed: observed as ever. Never while syncing, when every object is
        observed."""
        if kind != "MODIFIED" or self.syncing:
            return False
        old = known.get(key)
        if old is None:
            return False
        meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
        return (obj.get("spec") == old.get("spec")
                and all(meta.get(field) == old_meta.get(field) for field in _TRANSLATED_META))

    def on_priority_class(self, kind: str, obj: JSON) -> None:
        """Keep the PriorityClasses; when what they resolve to changes, Applications and
        PodGroups are translated again (a class made after the gang that names it)."""
        name = str((obj.get("metadata") or {}).get("name", ""))
        if kind == "DELETED":
            self.priority_classes.pop(name, None)
        else:
            self.priority_classes[name] = obj
        priorities = PriorityClasses.from_k8s(self.priority_classes.values())
        if priorities == self.priorities:
            return
        self.priorities = priorities
        self.pod_translations.priorities = priorities
        for app in self.apps.values():
            self.submit(AppObserved(app_from_k8s(app, priorities=priorities)))
        for group in self.groups.values():
            self.submit(PodGroupObserved(podgroup_from_k8s(group, priorities=priorities)))
        self.foreign.retranslate(priorities)

    def on_queue(self, kind: str, obj: JSON) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        if _stale(self.queues, name, kind, obj):
            return
        self._track(self.queues, name, kind, obj, "queues")
        if kind == "DELETED":
            self.submit(QueueGone(name))
        else:
            self.submit(QueueObserved(queue_from_k8s(obj)))

    def _track(self, known: dict[str, JSON], key: str, kind: str, obj: JSON,
               plural: str) -> None:
        """Keep the latest object of a kind; forget what the status writer remembers of an
        object that is gone or was re-created under its name (a new uid)."""
        old = known.pop(key, None) if kind == "DELETED" else known.get(key)
        if kind != "DELETED":
            known[key] = obj
        else:
            self.metrics.forget(plural, key)
            self.transitions.forget(plural, key)
        uid = (obj.get("metadata") or {}).get("uid")
        if old is not None and (kind == "DELETED" or (old.get("metadata") or {}).get("uid")
                                != uid):
            ns, _, name = key.rpartition("/")
            self.status.forget(StatusTarget(GROUP, VERSION, plural, ns or None, name))

    def _pods_first(self, obj: JSON, membership: Membership) -> None:
        """A pod carrying its gang's definition (native pods-first task groups, or another
        dialect's, see :mod:`gangsched.translate.dialects`) and no such gang yet: create
        the Application or PodGroup, owned by the pod.

        Acted on once per content of the definition: an invalid one gives an
        ``InvalidTaskGroups`` (Application) or ``InvalidPodGroup`` Event, and the reason in
        the pod's PodScheduled condition, and is tried again when the pod is edited.
        Transient API errors are retried with a backoff; a 409 means the object exists
        (its watch event follows).
        """
        is_app = membership.definition_kind == APPLICATION
        known = self.apps if is_app else self.groups
        key = membership.definition_key
        if key in known:
            return
        definition = gang_definition(obj, membership)
        if definition is None:
            return
        manifest, error = definition.manifest, definition.error
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        seen = key + "\x00" + json.dumps(manifest if manifest is not None else error,
                                          sort_keys=True)
        if self.pods_first_tried.get(uid) == seen:
            return
        self.pods_first_tried[uid] = seen
        what = "application" if is_app else "pod group"
        if manifest is None:
            why = f"{what} {key} cannot be created from this pod: {error}"
            self.pods_first_errors[uid] = why
            reason = "InvalidTaskGroups" if is_app else "InvalidPodGroup"
            self._pod_event(obj, "Warning", reason, why)
            return
        self.pods_first_errors.pop(uid, None)
        namespace = key.split("/", 1)[0]
        plural = "applications" if is_app else "podgroups"

        async def create(attempt: int = 0) -> None:
            if key in known or self.pods_first_tried.get(uid) != seen:
                return  # it exists now, or the pod changed (or went) meanwhile
            try:
                created = await self.client.create(GROUP, VERSION, plural, namespace, manifest)
                self._cr_watch(plural).observed(created)
                (self.on_app if is_app else self.on_podgroup)("ADDED", created)
            except ApiError as err:
                if err.code == 409:
                    return
                if err.code in RETRYABLE and attempt < self.settings.api_retries:
                    self._later(functools.partial(create, attempt + 1), attempt)
                    return
                message = f"could not create {what} {key}: {err}"
                self.pods_first_errors[uid] = message
                reason = "ApplicationNotCreated" if is_app else "PodGroupNotCreated"
                self._pod_event(obj, "Warning", reason, message)

        self.api.submit(create)

    def _cr_watch(self, plural: str) -> Reflector:
        return next(r for r in self.cr_watches if r.name == plural)

    def _made_gang_gone(self, key: str, obj: JSON) -> None:
        """A gang made from another scheduler's pod labels is gone (with the pod that owned
        it, say): let its other members make it again on their next change."""
        if LABEL_DIALECT in ((obj.get("metadata") or {}).get("labels") or {}):
            prefix = key + "\x00"
            self.pods_first_tried = {uid: seen for uid, seen in self.pods_first_tried.items()
                                     if not seen.startswith(prefix)}

    def _dialect_conflict(self, obj: JSON, message: str) -> None:
        """A ``GangDialectConflict`` Event, once per pod and message."""
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if self.dialect_conflicts.get(uid) == message:
            return
        self.dialect_conflicts[uid] = message
        self._pod_event(obj, "Warning", "GangDialectConflict", message)

    def _later(self, job: Callable[[], Awaitable[None]], attempt: int) -> None:
        """Hand ``job`` to the API pool again after a backoff (a transient API error)."""
        delay = min(self.settings.api_retry_initial * 2 ** attempt,
                    self.settings.api_retry_max)
        asyncio.get_running_loop().call_later(delay, self.api.submit, job)

    def _pod_event(self, obj: JSON, kind: str, reason: str, message: str) -> None:
        from gangsched.core.decisions import EventType, ObjectRef

        meta = obj.get("metadata") or {}
        target = ObjectRef("Pod", str(meta.get("namespace", "")), str(meta.get("name", "")),
                           str(meta.get("uid", "")))
        self._record(RecordEvent(target, EventType(kind), reason, message))

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
            await self.binds.stop()
            await self.api.stop()
            await self.reports.stop()
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
        early = Early(self.scheduler.out)  # the list this cycle's decisions go to
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
        for decision in early.rest(decisions):
            self._dispatch(decision, now)
        for report in self.pending.due(now):
            self._report_pending(report, now)
        self.cycled.set()
        self.metrics.observe_cycle(time.perf_counter() - started, decisions, now)
        return decisions

    # --- executors -----------------------------------------------------------------------

    def _dispatch(self, d: Decision, now: float) -> None:
        if isinstance(d, BindPod):
            self.binds.submit(functools.partial(self._bind, d))
        elif isinstance(d, BindGang):
            self.binds.submit(functools.partial(self._bind_gang, d))
        elif isinstance(d, CreatePlaceholder):
            self._once(("create", f"{d.namespace}/{d.name}"),
                       functools.partial(self._create_placeholder, d))
        elif isinstance(d, DeletePod):
            self._once(("delete", d.uid), functools.partial(self._delete, d))
        elif isinstance(d, EvictPod):
            self._once(("evict", d.uid), functools.partial(self._evict, d))
        elif isinstance(d, AnnotateNode):
            self._record(_node_note(d))
        elif isinstance(d, NominatePod):
            self.reports.submit(functools.partial(self._nominate, d))
        elif isinstance(d, PodPending):
            self._pending(d, now)
        elif isinstance(d, SetAppStatus):
            self.transitions.app(d)
            obj = self.apps.get(d.key)
            if obj is not None:
                meta = obj.get("metadata") or {}
                body = render.app_status_body(d, now=now, generation=int(meta.get("generation", 0)),
                                              old_status=obj.get("status"))
                ns, name = d.key.split("/", 1)
                self.status.want(StatusTarget(GROUP, VERSION, "applications", ns, name), body)
        elif isinstance(d, SetPodGroupStatus) and self.foreign.owns(d.key):
            self.foreign.want_status(d, now)
        elif isinstance(d, SetPodGroupStatus):
            self.transitions.podgroup(d)
            gobj = self.groups.get(d.key)
            if gobj is not None:
                meta = gobj.get("metadata") or {}
                body = render.podgroup_status_body(
                    d, now=now, generation=int(meta.get("generation", 0)),
                    old_status=gobj.get("status"))
                ns, name = d.key.split("/", 1)
                self.status.want(StatusTarget(GROUP, VERSION, "podgroups", ns, name), body)
        elif isinstance(d, SetQueueStatus):
            qobj = self.queues.get(d.name)
            if qobj is not None:
                self.status.want(StatusTarget(GROUP, VERSION, "queues", None, d.name),
                                 render.queue_status_body(d, old_status=qobj.get("status")))
        elif isinstance(d, RecordEvent):
            self._record(d)

    def _once(self, key: tuple[str, str], job: Callable[[], Awaitable[None]]) -> None:
        """Queue ``job`` on the API pool unless the same request is queued or under way."""
        if key in self.in_flight:
            return
        self.in_flight.add(key)

        async def run() -> None:
            try:
                await job()
            finally:
                self.in_flight.discard(key)

        self.api.submit(run)

    def _record(self, d: RecordEvent) -> None:
        now = self.clock()
        body = retarget_event(render.event_body(d, now=now, instance=self.settings.identity),
                              self.foreign.versions)
        name = render.event_name(d)
        micro = times.format_micro_time(now)
        self.reports.submit(lambda: self.events.record(name, body, now, micro))

    def _pod_lock(self, uid: PodUID) -> asyncio.Lock:
        lock = self.pod_locks.get(uid)
        if lock is None:
            lock = self.pod_locks[uid] = asyncio.Lock()
        return lock

    async def _bind(self, d: BindPod) -> None:
        self.conditions.pop(d.uid, None)  # a pending reason not yet written is moot now
        self.pending.forget(d.uid)
        async with self._pod_lock(d.uid):
            if not self.leading.is_set():
                return  # leadership lost: the new leader decides about this pod
            fields = {"pod": f"{d.namespace}/{d.name}", "node": d.node, "reason": d.reason}
            if d.volumes:
                try:
                    await write_volumes(self.client, d.volumes)
                except ApiError as err:
                    log.warning("binding the volumes of pod %s/%s for %s failed: %s",
                                d.namespace, d.name, d.node, err,
                                extra={**fields, "code": err.code})
                    self.submit(VolumeBindFailed(d.uid, d.node, err.code,
                                                 err.message or err.reason))
                    return
            try:
                await self.client.bind(d.namespace, d.name, d.uid, d.node)
            except ApiError as err:
                self.metrics.bind_failed(err.code)
                log.warning("binding pod %s/%s to %s failed: %s", d.namespace, d.name, d.node,
                            err, extra={**fields, "code": err.code})
                self.submit(BindFailed(d.uid, d.node, err.code, err.message or err.reason))
                return
            self.metrics.bind_succeeded(d.reason)
            log.debug("bound pod %s/%s to %s (%s)", d.namespace, d.name, d.node, d.reason,
                      extra=fields)

    async def _bind_gang(self, d: BindGang) -> None:
        """Every member's volume writes, in order; then, only if all succeeded, the
        Bindings (each on the bind pool). A failed write binds no member: each is
        reported as ``VolumeBindFailed`` with that error."""
        if not self.leading.is_set():
            return
        for member in d.binds:
            if not member.volumes:
                continue
            try:
                await write_volumes(self.client, member.volumes)
            except ApiError as err:
                log.warning("binding the volumes of gang member %s/%s failed: %s; binding "
                            "no member", member.namespace, member.name, err,
                            extra={"pod": f"{member.namespace}/{member.name}",
                                   "code": err.code})
                text = f"{member.namespace}/{member.name}: {err.message or err.reason}"
                for other in d.binds:
                    self.submit(VolumeBindFailed(other.uid, other.node, err.code, text))
                return
        for member in d.binds:
            self.binds.submit(functools.partial(
                self._bind, dataclasses.replace(member, volumes=())))

    async def _create_placeholder(self, d: CreatePlaceholder) -> None:
        app = self.apps.get(d.app)
        if app is None:
            return
        body = render.placeholder_pod(d, app, image=self.settings.placeholder_image,
                                      scheduler_name=sorted(self.settings.scheduler_names)[0])
        fields = {"app": d.app, "pod": f"{d.namespace}/{d.name}"}
        try:
            await self.client.create("", "v1", "pods", d.namespace, body)
        except ApiError as err:
            if err.code != 409:
                log.warning("creating placeholder %s/%s failed: %s", d.namespace, d.name, err,
                            extra={**fields, "code": err.code})
                self.submit(PlaceholderCreateFailed(d.app, d.name, err.code,
                                                    err.message or err.reason))
            return
        log.debug("created placeholder %s/%s of task group %s", d.namespace, d.name,
                  d.task_group, extra=fields)

    async def _delete(self, d: DeletePod) -> None:
        fields = {"pod": f"{d.namespace}/{d.name}", "reason": d.reason.value}
        try:
            await self.client.delete_pod(d.namespace, d.name, d.uid,
                                         grace_seconds=self.settings.placeholder_grace)
        except ApiError as err:
            if err.code not in (404, 409):
                log.warning("deleting pod %s/%s (%s) failed: %s", d.namespace, d.name,
                            d.reason, err, extra={**fields, "code": err.code})
            return
        level = logging.DEBUG if d.reason is DeleteReason.PLACEHOLDER_REPLACED else logging.INFO
        log.log(level, "deleted pod %s/%s: %s: %s", d.namespace, d.name, d.reason, d.message,
                extra=fields)

    async def _evict(self, d: EvictPod) -> None:
        """Evict through the Eviction API, so that PodDisruptionBudgets are respected."""
        fields = {"pod": f"{d.namespace}/{d.name}", "reason": d.reason}
        try:
            await self.client.evict_pod(d.namespace, d.name, d.uid)
        except ApiError as err:
            if err.code in (404, 409):
                return  # gone already, or another pod has the name now: nothing to evict
            log.warning("evicting pod %s/%s (%s) failed: %s", d.namespace, d.name, d.reason,
                        err, extra={**fields, "code": err.code})
            self.submit(EvictionFailed(d.uid, err.code, err.message or err.reason))
            return
        log.info("evicted pod %s/%s: %s: %s", d.namespace, d.name, d.reason, d.message,
                 extra=fields)

    async def _nominate(self, d: NominatePod) -> None:
        """Patch ``status.nominatedNodeName`` (null clears it). A pod that is gone (404)
        needs nothing; other errors are logged: the nomination informs others, nothing
        of ours depends on it."""
        try:
            await self.client.patch("", "v1", "pods", d.namespace, d.name,
                                    {"status": {"nominatedNodeName": d.node}},
                                    subresource="status")
        except ApiError as err:
            if err.code != 404:
                log.info("pod %s/%s nomination not written: %s", d.namespace, d.name, err)

    def _pending(self, d: PodPending, now: float) -> None:
        """Write the PodScheduled=False condition and record the Event, when and as
        :mod:`gangsched.shell.pending` says: a new reason at once (within the pod's
        backoff), a new message with the same reason only every few minutes and with no
        Event.

        A pods-first pod whose Application could not be made from it says why in both.
        """
        why = self.pods_first_errors.get(d.uid)
        if why is not None and d.reason in ("ApplicationNotFound", "PodGroupNotFound"):
            d = dataclasses.replace(d, message=f"{d.message}; {why}")
        d = self.foreign.reword(d)  # a Workload API PodGroup's members: kube-scheduler's words
        report = self.pending.offer(d, now)
        if report is not None:
            self._report_pending(report, now)

    def _report_pending(self, report: Report, now: float) -> None:
        """Write one pending pod's condition (retried on transient errors until written
        or superseded), and its Event if the report says so."""
        from gangsched.core.decisions import SCHEDULING_GATED, EventType, ObjectRef

        d = report.pending
        self.conditions[d.uid] = d
        self.reports.submit(functools.partial(self._write_condition, d, now, 0))
        if not report.event or not d.event or d.reason == SCHEDULING_GATED:
            # No Event for a gated pod (the condition only, as kube-scheduler), nor for a
            # gang member (one event on its Application says it for all).
            return
        kind = EventType.NORMAL if d.reason in WAITING_REASONS else EventType.WARNING
        self._record(RecordEvent(ObjectRef("Pod", d.namespace, d.name, d.uid), kind,
                                 d.reason, d.message))

    async def _write_condition(self, d: PodPending, now: float, attempt: int) -> None:
        condition = render.pod_scheduled_condition(d, now=now)
        try:
            async with self._pod_lock(d.uid):
                if self.conditions.get(d.uid) is not d:
                    return  # superseded by a newer reason or a bind, or the pod is gone
                await self.client.patch("", "v1", "pods", d.namespace, d.name,
                                        {"status": {"conditions": [condition]}},
                                        subresource="status",
                                        content_type=STRATEGIC_MERGE_PATCH)
        except ApiError as err:
            if err.code in RETRYABLE and attempt < self.settings.api_retries:
                self._later(functools.partial(self._write_condition, d, now, attempt + 1),
                            attempt)
                return
            if err.code != 404:
                log.info("pod %s/%s condition not written: %s", d.namespace, d.name, err)
        if self.conditions.get(d.uid) is d:
            del self.conditions[d.uid]


def _node_note(d: AnnotateNode) -> RecordEvent:
    """A node reserved for a gang (or given back), told as an Event on the Node.

    Not as a node annotation: patching nodes would need a grant that also lets the
    operator rewrite any node's labels and taints (RBAC cannot limit a patch to one
    annotation). ``kubectl describe node`` shows these Events; the gang's status names
    its reserved nodes.
    """
    from gangsched.core.decisions import EventType, ObjectRef

    target = ObjectRef("Node", "", d.node)
    if d.value is None:
        return RecordEvent(target, EventType.NORMAL, "NodeReservationReleased",
                           f"{d.key}: no longer reserved for a gang")
    return RecordEvent(target, EventType.NORMAL, "NodeReserved",
                       f"{d.key}: reserved for gang {d.value}; no other pod is placed here "
                       "until the gang fits or the reservation ends")


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
