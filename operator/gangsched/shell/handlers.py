"""The watch handlers: every watch event becomes an observation in the inbox.

Each kind is listed and watched through one :class:`~gangsched.shell.watch.Reflector`;
its handler translates the object (:mod:`gangsched.translate`) and submits what the core
should observe. A DELETED of an object re-created under its name since is dropped (the
core's keys are names); a change of an Application's or PodGroup's status only is not
observed again; a pod that has finished and is in no gang is forgotten. A pod that
carries its gang's definition and has no such gang yet makes it
(:mod:`gangsched.translate.pods_first` decides what to make; this module creates it).

:class:`WatchHandlers` is that part of :class:`~gangsched.shell.runtime.Runtime`, which
sets every attribute it declares.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
from collections.abc import Callable, Mapping

from gangsched.core.scheduler import Scheduler
from gangsched.core.values.model import AppKey, GroupKey, Pod, PodUID
from gangsched.core.values.observations import (
    AppGone,
    AppObserved,
    NamespaceGone,
    NamespaceObserved,
    NodeGone,
    NodeObserved,
    Observation,
    PodGone,
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    QueueGone,
    QueueObserved,
)
from gangsched.shell.client import JSON_PATCH, ApiError
from gangsched.shell.dispatch import GROUP, JSON, RETRYABLE, VERSION, Dispatch
from gangsched.shell.executors import StatusTarget
from gangsched.shell.podcache import PodTranslations
from gangsched.shell.watch import Reflector
from gangsched.translate import pods_first
from gangsched.translate.apps import app_from_k8s
from gangsched.translate.dialects import LABEL_DIALECT, Membership
from gangsched.translate.nodes import node_from_k8s
from gangsched.translate.podgroups import podgroup_from_k8s
from gangsched.translate.priorities import PriorityClasses
from gangsched.translate.queues import queue_from_k8s

log = logging.getLogger("gangsched.shell.runtime")  # the runtime's log, as before the split


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


class WatchHandlers(Dispatch):
    """The watch handlers of :class:`~gangsched.shell.runtime.Runtime` (see the module
    docstring); the attributes below are the runtime's."""

    scheduler: Scheduler
    inbox: list[Observation]
    wake: asyncio.Event
    syncing: bool
    node_uids: dict[str, object]
    pods_first_tried: dict[str, str]
    dialect_conflicts: dict[str, str]
    pod_translations: PodTranslations
    cr_watches: list[Reflector]
    priority_classes: dict[str, JSON]
    priorities: PriorityClasses
    gang_members: dict[str, dict[str, Pod]]
    member_of: dict[str, str]
    owners_asked: set[str]

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
        self._member_seen(pod)
        if pod.ours and not pod.placeholder and pod.node_name is None:
            if len(self.settings.scheduler_names) > 1:  # whose name its Scheduled Event bears
                self.scheduled.note_scheduler(
                    pod.uid, str((obj.get("spec") or {}).get("schedulerName") or ""))
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
        self.scheduled.forget(uid)
        self.pod_translations.forget(uid)
        self._leave_gang(uid)
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
            self.metrics.node_gone(name)
            self.submit(NodeGone(name))
        else:
            self.node_uids[name] = meta.get("uid")
            node = node_from_k8s(obj)
            self.metrics.node_observed(node)
            self.submit(NodeObserved(node))

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
        else:
            self._own(f"Application/{key}")
            if not seen:
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
        else:
            self._own(f"PodGroup/{key}")
            if not seen:
                self.submit(PodGroupObserved(podgroup_from_k8s(obj,
                                                               priorities=self.priorities)))

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
        app = pods_first.is_app(membership)
        known = self.apps if app else self.groups
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        todo = pods_first.gang_to_make(obj, membership, existing=known,
                                       tried=self.pods_first_tried.get(uid))
        if todo is None:
            return
        seen, key, manifest = todo.seen, todo.key, todo.manifest
        self.pods_first_tried[uid] = seen
        if manifest is None:
            self.pods_first_errors[uid] = todo.why
            self._pod_event(obj, "Warning", todo.reason, todo.why)
            return
        self.pods_first_errors.pop(uid, None)

        async def create(attempt: int = 0) -> None:
            if key in known or self.pods_first_tried.get(uid) != seen:
                return  # it exists now, or the pod changed (or went) meanwhile
            try:
                created = await self.client.create(GROUP, VERSION, todo.plural, todo.namespace,
                                                   manifest)
                self._cr_watch(todo.plural).observed(created)
                (self.on_app if app else self.on_podgroup)("ADDED", created)
            except ApiError as err:
                if err.code == 409:
                    return
                if err.code in RETRYABLE and attempt < self.settings.api_retries:
                    self._later(functools.partial(create, attempt + 1), attempt)
                    return
                message = f"could not create {todo.what} {key}: {err}"
                self.pods_first_errors[uid] = message
                self._pod_event(obj, "Warning", todo.not_created, message)

        self.api.submit(create)

    def _member_seen(self, pod: Pod) -> None:
        """Keep the real members of each gang (they own a gang made from pods); one that
        holds on and does not own its gang yet is made an owner. A pod is a member of
        one gang at most: one it left (its gang changed) forgets it. Found through
        :attr:`member_of`, not by walking every gang: this runs for every pod event."""
        gang = (f"Application/{pod.app}" if pod.app is not None
                else f"PodGroup/{pod.pod_group}" if pod.pod_group is not None else None)
        if self.member_of.get(pod.uid, gang) != gang:
            self._leave_gang(pod.uid)
        if gang is None or pod.placeholder or not pod.ours:
            return
        self.gang_members.setdefault(gang, {})[pod.uid] = pod
        self.member_of[pod.uid] = gang
        self._own(gang)

    def _leave_gang(self, uid: str) -> None:
        """The pod is no member of the gang it was in (if any) any more."""
        gang = self.member_of.pop(uid, None)
        members = {} if gang is None else self.gang_members.get(gang, {})
        members.pop(uid, None)
        if gang is not None and not members:
            self.gang_members.pop(gang, None)

    def _own(self, gang: str) -> None:
        """Make every member of ``gang`` that does not own it yet an owner, when it was
        made from pods (:func:`~gangsched.translate.pods_first.owners_to_add`): it then
        lives as long as any of them. One patch at a time per gang; a refused one (the
        gang changed: 422, or 409) is worked out again from the gang as it then is."""
        kind, _, key = gang.partition("/")
        known = self.apps if kind == "Application" else self.groups
        obj = known.get(key)
        if obj is None or gang in self.owners_asked:
            return
        ops = pods_first.owners_to_add(obj, self.gang_members.get(gang, {}).values())
        if ops is None:
            return
        self.owners_asked.add(gang)
        namespace, _, name = key.partition("/")
        plural = "applications" if kind == "Application" else "podgroups"

        async def patch(attempt: int = 0) -> None:
            try:
                await self.client.patch(GROUP, VERSION, plural, namespace, name, ops,
                                        content_type=JSON_PATCH)
            except ApiError as err:
                if err.code in (404, 409, 422):  # gone, or changed: its watch event follows
                    self.owners_asked.discard(gang)  # and _own works it out again then
                    return
                if err.code in RETRYABLE and attempt < self.settings.api_retries:
                    self._later(functools.partial(patch, attempt + 1), attempt)
                    return
                log.warning("could not make the members of %s %s its owners: %s", kind, key,
                            err)
            self.owners_asked.discard(gang)

        self.api.submit(patch)

    def _cr_watch(self, plural: str) -> Reflector:
        return next(r for r in self.cr_watches if r.name == plural)

    def _made_gang_gone(self, key: str, obj: JSON) -> None:
        """A gang made from another scheduler's pod labels is gone (with the pod that owned
        it, say): let its other members make it again on their next change."""
        if LABEL_DIALECT in ((obj.get("metadata") or {}).get("labels") or {}):
            self.pods_first_tried = {uid: seen for uid, seen in self.pods_first_tried.items()
                                     if not pods_first.made_for(seen, key)}

    def _dialect_conflict(self, obj: JSON, message: str) -> None:
        """A ``GangDialectConflict`` Event, once per pod and message."""
        uid = str((obj.get("metadata") or {}).get("uid", ""))
        if self.dialect_conflicts.get(uid) == message:
            return
        self.dialect_conflicts[uid] = message
        self._pod_event(obj, "Warning", "GangDialectConflict", message)
