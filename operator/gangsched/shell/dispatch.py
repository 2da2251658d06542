"""Carrying out the core's decisions: binds, placeholders, deletions, evictions, reports.

Each decision of a cycle is handed to an executor (:meth:`Dispatch._dispatch`), which
never blocks the loop: binds go to the bind pool, placeholder creates, deletions,
evictions and nominations to the API pool (one request at a time per placeholder or pod:
the core asks again for one not seen in time, which must not queue a duplicate), Events
and PodScheduled conditions to the reports pool, which waits for the binds under way;
statuses go to the status writer, which coalesces them. What fails goes back to the core
as an observation (``BindFailed``, ``PlaceholderCreateFailed``, ``EvictionFailed``) or is
retried here with a backoff (see the module docstring of :mod:`gangsched.shell.runtime`).

:class:`Dispatch` is the executors' part of :class:`~gangsched.shell.runtime.Runtime`,
which sets every attribute it declares.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, assert_never

from gangsched.core.values.decisions import (
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
from gangsched.core.values.model import PodUID
from gangsched.core.values.observations import (
    BindFailed,
    EvictionFailed,
    Observation,
    PlaceholderCreateFailed,
    VolumeBindFailed,
)
from gangsched.shell import logs
from gangsched.shell.client import STRATEGIC_MERGE_PATCH, ApiError, KubeClient
from gangsched.shell.executors import EventRecorder, StatusTarget, StatusWriter, WorkPool
from gangsched.shell.foreign import ForeignGroups
from gangsched.shell.metrics import Metrics
from gangsched.shell.pending import GANG_REASONS, PendingReports, Report
from gangsched.shell.scheduled import ScheduledEvents
from gangsched.shell.settings import OperatorSettings
from gangsched.shell.storage import StorageWatches, release_claims, write_volumes
from gangsched.translate import render, times
from gangsched.translate.dialects.foreign import retarget_event

log = logging.getLogger("gangsched.shell.runtime")  # the runtime's log, as before the split

GROUP, VERSION = "gangsched.io", "v1alpha1"
RETRYABLE = frozenset({0, 409, 429, 500, 502, 503, 504})
"""API answers worth trying again: transport failures, conflicts, throttling, a busy or
failing server."""
WAITING_REASONS = GANG_REASONS
"""Reasons whose Event is Normal (the pod waits for its gang), not a Warning."""
JSON = Mapping[str, Any]
REPORT_PATIENCE = 1.0
"""Seconds an Event, a PodScheduled condition or a status flush waits at most for the
binds queued or under way: the binds go first (a gang of which all members exist is
reserved and bound in one cycle, with two Events and a status patch), the reports are
delayed, never starved."""


class Dispatch:
    """The executors of :class:`~gangsched.shell.runtime.Runtime` (see the module
    docstring); the attributes below are the runtime's."""

    client: KubeClient
    settings: OperatorSettings
    clock: Callable[[], float]
    leading: asyncio.Event
    apps: dict[str, JSON]
    groups: dict[str, JSON]
    queues: dict[str, JSON]
    metrics: Metrics
    transitions: logs.Transitions
    binds: WorkPool
    api: WorkPool
    reports: WorkPool
    in_flight: set[tuple[str, str]]
    status: StatusWriter
    events: EventRecorder
    scheduled: ScheduledEvents
    pods_first_errors: dict[str, str]
    pending: PendingReports
    conditions: dict[PodUID, PodPending]
    pod_locks: dict[PodUID, asyncio.Lock]
    foreign: ForeignGroups
    storage: StorageWatches
    monotonic: Callable[[], float]
    volume_waits: set[asyncio.Task[None]]

    def submit(self, observation: Observation) -> None:
        """Queue an observation for the next cycle (the watch handlers' ``submit``)."""
        raise NotImplementedError

    def _later(self, job: Callable[[], Awaitable[None]], attempt: int) -> None:
        """Hand ``job`` to the API pool again after a backoff (a transient API error)."""
        delay = min(self.settings.api_retry_initial * 2 ** attempt,
                    self.settings.api_retry_max)
        self.metrics.api_retries.inc()
        asyncio.get_running_loop().call_later(delay, self.api.submit, job)

    def _pod_event(self, obj: JSON, kind: str, reason: str, message: str) -> None:
        from gangsched.core.values.decisions import EventType, ObjectRef

        meta = obj.get("metadata") or {}
        target = ObjectRef("Pod", str(meta.get("namespace", "")), str(meta.get("name", "")),
                           str(meta.get("uid", "")))
        self._record(RecordEvent(target, EventType(kind), reason, message))

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
        else:
            assert_never(d)

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
        lock = self.pod_locks.get(d.uid)
        if lock is None:
            # No condition of this pod is being written (a write holds the pod's lock
            # from before it reads ``conditions``, and one that starts now finds nothing
            # there to write): no lock to wait for, none to make (thousands a second).
            await self._bind_now(d)
            return
        async with lock:
            await self._bind_now(d)

    async def _bind_now(self, d: BindPod) -> None:
        if not self.leading.is_set():
            return  # leadership lost: the new leader decides about this pod
        if d.volumes:
            written: dict[str, str] = {}
            try:
                await write_volumes(self.client, d.volumes, written=written,
                                    resource_version=self.storage.resource_version)
            except ApiError as err:
                await self._release((d,), {d.uid: written})
                self._volumes_failed((d,), d, err, gang=False)
                return
            self._bind_when_bound((d,), {d.uid: written})
            return
        try:
            await self.client.bind(d.namespace, d.name, d.uid, d.node)
        except ApiError as err:
            self.metrics.bind_failed(err.code)
            log.warning("binding pod %s/%s to %s failed: %s", d.namespace, d.name, d.node,
                        err, extra={"pod": f"{d.namespace}/{d.name}", "node": d.node,
                                    "reason": d.reason, "code": err.code})
            self.submit(BindFailed(d.uid, d.node, err.code, err.message or err.reason))
            return
        self.metrics.bind_succeeded(d.reason)
        self.scheduled.bound(d.namespace, d.name, d.uid, d.node, self.clock())
        if log.isEnabledFor(logging.DEBUG):
            log.debug("bound pod %s/%s to %s (%s)", d.namespace, d.name, d.node, d.reason,
                      extra={"pod": f"{d.namespace}/{d.name}", "node": d.node,
                             "reason": d.reason})

    def _bind_when_bound(self, members: tuple[BindPod, ...],
                         written: dict[PodUID, dict[str, str]]) -> None:
        """PreBind's wait (:mod:`gangsched.shell.prebind`) for the claims these pods'
        writes asked for, in a task of its own so that no bind worker waits for a
        provisioner; then each pod's Binding on the bind pool. When one claim will not be
        bound, no pod is: each is reported as ``VolumeBindFailed``."""
        task = asyncio.create_task(self._wait_then_bind(members, written),
                                   name=f"volumes-{members[0].namespace}-{members[0].name}")
        self.volume_waits.add(task)
        task.add_done_callback(self.volume_waits.discard)

    async def _wait_then_bind(self, members: tuple[BindPod, ...],
                              written: dict[PodUID, dict[str, str]]) -> None:
        member = members[0]
        try:
            for member in members:
                if member.volumes:
                    await self.storage.bindings.wait(
                        member.volumes, written.get(member.uid, {}), member.node,
                        timeout=self.settings.volume_bind_timeout, monotonic=self.monotonic)
        except ApiError as err:
            await self._release(members, written)
            self._volumes_failed(members, member, err, gang=len(members) > 1)
            return
        if not self.leading.is_set():
            return  # leadership lost meanwhile: the new leader decides
        for each in members:
            self.binds.submit(functools.partial(self._bind, dataclasses.replace(each, volumes=())))

    def _volumes_failed(self, members: tuple[BindPod, ...], failed: BindPod, err: ApiError, *,
                        gang: bool) -> None:
        """``failed``'s volume write or wait failed: none of ``members`` is bound."""
        log.warning("binding the volumes of pod %s/%s for %s failed: %s%s", failed.namespace,
                    failed.name, failed.node, err, "; binding no member of its gang" if gang
                    else "", extra={"pod": f"{failed.namespace}/{failed.name}",
                                    "node": failed.node, "code": err.code})
        text = err.message or err.reason
        if gang:
            text = f"{failed.namespace}/{failed.name}: {text}"
        for member in members:
            self.submit(VolumeBindFailed(member.uid, member.node, err.code, text))

    async def _bind_gang(self, d: BindGang) -> None:
        """Every member's volume and ResourceClaim writes, in order; then PreBind's wait
        for all their volume claims; then, only if all succeeded, the Bindings (each on
        the bind pool). A failed write or wait binds no member: the ResourceClaims written
        for the gang are released (no device stays held) and each member is reported as
        ``VolumeBindFailed`` with that error."""
        if not self.leading.is_set() or not d.binds:
            return
        written: dict[PodUID, dict[str, str]] = {}
        for member in d.binds:
            if not member.volumes:
                continue
            try:
                await write_volumes(self.client, member.volumes,
                                    written=written.setdefault(member.uid, {}),
                                    resource_version=self.storage.resource_version)
            except ApiError as err:
                await self._release(d.binds, written)
                self._volumes_failed(d.binds, member, err, gang=True)
                return
        self._bind_when_bound(d.binds, written)

    async def _release(self, members: tuple[BindPod, ...],
                       written: dict[PodUID, dict[str, str]]) -> None:
        """Members will not be bound now: release the ResourceClaims written for them
        (kube-scheduler's Unreserve; for a gang no device stays held)."""
        for member in members:
            await release_claims(self.client, member.volumes, written.get(member.uid, {}),
                                 resource_version=self.storage.resource_version)

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

    async def _delete(self, d: DeletePod, attempt: int = 0) -> None:
        """DELETE with the pod's uid as a precondition; a transient failure is tried again
        after a backoff (the same DELETE again is harmless: a pod already terminating
        keeps its grace period, one gone answers 404). A placeholder's real pod waits for
        this deletion: left to the core's ``placeholder_retry`` it would wait 10 s."""
        fields = {"pod": f"{d.namespace}/{d.name}", "reason": d.reason.value}
        try:
            own = d.reason is DeleteReason.PREEMPTED_PAST_BUDGET  # a workload's pod
            await self.client.delete_pod(
                d.namespace, d.name, d.uid,
                grace_seconds=None if own else self.settings.placeholder_grace)
        except ApiError as err:
            if err.code not in (404, 409):
                log.warning("deleting pod %s/%s (%s) failed: %s", d.namespace, d.name,
                            d.reason, err, extra={**fields, "code": err.code})
                if err.code in RETRYABLE and attempt < self.settings.api_retries:
                    self._later(functools.partial(self._delete, d, attempt + 1), attempt)
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
        from gangsched.core.values.decisions import SCHEDULING_GATED, EventType, ObjectRef

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
    from gangsched.core.values.decisions import EventType, ObjectRef

    target = ObjectRef("Node", "", d.node)
    if d.value is None:
        return RecordEvent(target, EventType.NORMAL, "NodeReservationReleased",
                           f"{d.key}: no longer reserved for a gang")
    return RecordEvent(target, EventType.NORMAL, "NodeReserved",
                       f"{d.key}: reserved for gang {d.value}; no other pod is placed here "
                       "until the gang fits or the reservation ends")
