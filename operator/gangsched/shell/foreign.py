"""Other schedulers' PodGroups (coscheduling, Volcano) and Kubernetes' own (the Workload
API), watched while they are served.

These APIs are optional: a cluster without Volcano has no ``scheduling.volcano.sh``, one
without the ``GenericWorkload`` feature gate no ``scheduling.k8s.io`` PodGroups. So each
kind of :data:`gangsched.translate.dialects.foreign.KINDS` is listed first; a 404 means
"not installed", and it is looked for again every ``recheck`` seconds, quietly, so that
installing the CRD (or turning the gate on) later needs no restart. For the built-in
Workload API, "looked for" is one discovery request (``/apis/scheduling.k8s.io``), which
says which of its versions are served: the newest known one is listed and watched. Any
other error is retried with a backoff. Once listed, a
:class:`~gangsched.shell.watch.Reflector` keeps it current. Nothing here blocks start-up
or the other watches.

Each object becomes a ``PodGroupObserved`` under its foreign key (``namespace/dialect:
name``) and a deletion a ``PodGroupGone``. The core's status for a coscheduling
PodGroup is written back through the runtime's status writer, in coscheduling's schema
and phases, but only while at least one of its pods is ours (its ``schedulerName`` is
gangsched's): a PodGroup whose pods the coscheduling plugin schedules belongs to that
plugin, and two writers would fight over its status. A Workload API PodGroup gets its
scheduling condition the same way (in the version's type, never turned back from True to
False, see :mod:`gangsched.translate.dialects.workload`), and its waiting members
kube-scheduler's words (:meth:`ForeignGroups.reword`). A Volcano PodGroup's status
belongs to Volcano and is never written.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core.decisions import PodPending, SetPodGroupStatus
from gangsched.core.model import GroupKey
from gangsched.core.observations import Observation, PodGroupGone, PodGroupObserved
from gangsched.shell.client import ApiError, KubeClient
from gangsched.shell.executors import StatusTarget, StatusWriter
from gangsched.shell.watch import Reflector
from gangsched.translate.dialects import (
    WORKLOAD,
    foreign,
    foreign_key,
    split_foreign_key,
    workload,
)
from gangsched.translate.priorities import NO_CLASSES, PriorityClasses

log = logging.getLogger(__name__)

JSON = Mapping[str, Any]
RECHECK = 60.0
"""Seconds between looks for a CRD that is not installed."""


class ForeignGroups:
    """The foreign PodGroups of every known kind, fed to the core through ``submit``."""

    def __init__(self, client: KubeClient, submit: Callable[[Observation], None],
                 status: StatusWriter, *, watch_timeout: int = 300,
                 recheck: float | None = None) -> None:
        self.client = client
        self.submit = submit
        self.status = status
        self.recheck = RECHECK if recheck is None else recheck
        self.objects: dict[str, JSON] = {}
        """The latest object per foreign key."""
        self.priorities: PriorityClasses = NO_CLASSES
        self.ours: dict[str, str] = {}
        """uid -> foreign key, for every pod of ours that is a member of a foreign group."""
        self.ours_per_group: collections.Counter[str] = collections.Counter()
        self.installed: dict[str, bool | None] = {k.dialect: None for k in foreign.KINDS}
        """Per dialect: its CRD answered (True), answered 404 (False), or not asked yet."""
        self.versions: dict[str, str] = {k.dialect: k.version for k in foreign.KINDS}
        """Per dialect: the version listed and watched (for a built-in API, the newest
        served one, once discovery answered)."""
        self.minimum: dict[str, int] = {}
        """Per foreign key: the group's minMember, as last translated."""
        self.reflectors = {
            kind.dialect: Reflector(client, kind.path, functools.partial(self.on_event, kind),
                                    name=f"{kind.dialect} podgroups",
                                    timeout_seconds=watch_timeout)
            for kind in foreign.KINDS
        }

    def on_event(self, kind: foreign.ForeignKind, event: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        key = foreign_key(kind.dialect, str(meta.get("namespace", "")),
                          str(meta.get("name", "")))
        old = self.objects.get(key)
        if old is not None and (event == "DELETED" or (old.get("metadata") or {}).get("uid")
                                != meta.get("uid")):
            self._forget(kind, key)
        if event == "DELETED":
            self.objects.pop(key, None)
            self.minimum.pop(key, None)
            self.submit(PodGroupGone(key))
            return
        self.objects[key] = obj
        spec = kind.translate(obj, priorities=self.priorities)
        self.minimum[key] = spec.min_member
        self.submit(PodGroupObserved(spec))

    def retranslate(self, priorities: PriorityClasses) -> None:
        """What PriorityClasses resolve to changed: read every foreign PodGroup again."""
        self.priorities = priorities
        for key, obj in self.objects.items():
            kind = foreign.kind_of(key)
            if kind is not None:
                self.submit(PodGroupObserved(kind.translate(obj, priorities=priorities)))

    def _target(self, kind: foreign.ForeignKind, key: str) -> StatusTarget:
        _, namespace, name = split_foreign_key(key)
        return StatusTarget(kind.group, self.versions[kind.dialect], kind.plural, namespace,
                            name)

    def _forget(self, kind: foreign.ForeignKind, key: str) -> None:
        if kind.status is not None:
            self.status.forget(self._target(kind, key))

    def pod_seen(self, uid: str, group: str | None) -> None:
        """A pod of ours is a member of ``group`` (None: of none, not ours, or gone)."""
        old = self.ours.pop(uid, None)
        if old is not None:
            self.ours_per_group[old] -= 1
            if self.ours_per_group[old] <= 0:
                del self.ours_per_group[old]
        if group is not None and foreign.kind_of(group) is not None:
            self.ours[uid] = group
            self.ours_per_group[group] += 1

    def want_status(self, d: SetPodGroupStatus, now: float | None = None) -> None:
        """Write the core's status of a foreign PodGroup, if its kind takes one, the
        object is known and at least one of its pods is ours. ``now`` (default: the wall
        clock) dates new conditions."""
        kind = foreign.kind_of(d.key)
        if kind is None or kind.status is None or d.key not in self.objects:
            return
        if not self.ours_per_group.get(d.key):
            return
        body = kind.status(d, self.objects[d.key], time.time() if now is None else now,
                           self.versions[kind.dialect])
        if body is not None:
            self.status.want(self._target(kind, d.key), body)

    def reword(self, d: PodPending) -> PodPending:
        """``d`` with kube-scheduler's words when the pod is ours and a member of a
        Workload API PodGroup that does not exist yet or has fewer pods than its
        ``minCount`` (:func:`gangsched.translate.dialects.workload.pending_message`);
        else ``d`` unchanged."""
        key = self.ours.get(d.uid)
        if key is None:
            return d
        dialect, _, name = split_foreign_key(key)
        if dialect != WORKLOAD:
            return d
        message = workload.pending_message(
            d.reason, d.message, name, members=self.ours_per_group.get(key, 0),
            minimum=self.minimum.get(key, 1))
        return d if message == d.message else dataclasses.replace(d, message=message)

    @staticmethod
    def owns(key: GroupKey) -> bool:
        return foreign.kind_of(key) is not None

    def first_lists(self) -> list[str]:
        """The paths :meth:`list` lists, in its order (not those of built-in APIs, whose
        version discovery tells first)."""
        return [self.reflectors[kind.dialect].path for kind in foreign.KINDS
                if not kind.versions]

    async def list(self) -> None:
        """List every kind once (start-up); what fails is left to :meth:`run`."""
        for kind in foreign.KINDS:
            await self._list(kind)

    async def _served(self, kind: foreign.ForeignKind) -> str | None:
        """The newest version of a built-in API that discovery lists; None when none is.
        Raises ApiError (a 404: the group is not served at all)."""
        document = await self.client.request("GET", f"/apis/{kind.group}")
        return kind.served(document)

    async def _list(self, kind: foreign.ForeignKind) -> bool:
        reflector = self.reflectors[kind.dialect]
        try:
            if kind.versions:
                version = await self._served(kind)
                if version is None:
                    raise ApiError(404, "NotFound", f"{kind.group} serves none of "
                                   f"{', '.join(kind.versions)}")
                self.versions[kind.dialect] = version
                reflector.path = kind.path_at(version)
            await reflector.list()
        except ApiError as err:
            if err.code == 404:
                if self.installed[kind.dialect] is not False:
                    log.info("%s PodGroups: not served (%s); looking again every %.0fs",
                             kind.dialect, err.message, self.recheck)
                self.installed[kind.dialect] = False
            else:
                log.warning("listing %s PodGroups failed: %s", kind.dialect, err)
            return False
        self.installed[kind.dialect] = True
        return True

    async def run(self, stop: asyncio.Event) -> None:
        """Watch every kind until ``stop``."""
        await asyncio.gather(*(self._run(kind, stop) for kind in foreign.KINDS))

    async def _run(self, kind: foreign.ForeignKind, stop: asyncio.Event) -> None:
        reflector = self.reflectors[kind.dialect]
        backoff = 0.5
        known_missing = self.installed[kind.dialect] is False  # the start-up list's 404
        while not stop.is_set() and not reflector.synced.is_set():
            if not known_missing and await self._list(kind):
                break
            known_missing = False
            delay = self.recheck if self.installed[kind.dialect] is False else backoff
            backoff = min(backoff * 2, 30.0)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)
        if not stop.is_set():
            await reflector.run(stop)
