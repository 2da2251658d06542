"""Watch: a bounded per-resource event log and the streaming endpoint over it.

Design: every write appends one :class:`WatchEvent` to the log of its storage
(group/plural). Watchers do not have queues; each keeps a cursor (an absolute
index) into the log, sleeps on an :class:`asyncio.Event` that the log swaps on
every append, and on waking sends everything past its cursor in one write.
Publishing is O(1) whatever the number of watchers; each event is serialized at
most once per (type, apiVersion) and shared by all watchers.

Faithful: ``resourceVersion`` resumes after that version (nothing lost across
reconnects), a version older than the retained window gets an ``ERROR`` event
with a 410 ``Expired`` Status, no/empty/``0`` version starts with synthetic
``ADDED`` events for the current objects, ``sendInitialEvents=true`` ends them with
a ``BOOKMARK`` annotated ``k8s.io/initial-events-end``, ``allowWatchBookmarks``
gives periodic bookmarks, ``timeoutSeconds`` ends the stream cleanly, and
selectors are applied per event with the watch cache's transitions (an object
that stops matching is sent as ``DELETED``, one that starts matching as
``ADDED``). A watcher that falls behind the retained window is ended with 410.
A watch lag (:class:`fakeapi.kubelet.Timing`) holds every event back that long, in
order, as a loaded watch cache delivers late. Simplified: the window is a count of
events (``history_limit``), not a duration.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from fakeapi import errors, selectors

Obj = dict[str, Any]


@dataclasses.dataclass(slots=True)
class WatchEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    old: Obj | None
    at: float = 0.0
    """``time.monotonic()`` when the event was logged (for the watch lag)."""
    _lines: dict[tuple[str, str], bytes] = dataclasses.field(default_factory=dict)

    def line(self, etype: str, api_version: str) -> bytes:
        key = (etype, api_version)
        cached = self._lines.get(key)
        if cached is None:
            obj = self.obj
            if obj.get("apiVersion") != api_version:
                obj = {**obj, "apiVersion": api_version}
            cached = _line(etype, obj)
            self._lines[key] = cached
        return cached


class EventLog:
    """Events of one storage, the newest ``limit`` (at least) retained."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._chunk = max(1, self.limit // 4)
        self.events: list[WatchEvent] = []
        self.offset = 0
        """Absolute index of ``events[0]``."""
        self.trimmed_rv = 0
        """Events with a resourceVersion up to this one may have been dropped."""
        self.closed = False
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        return self.offset + len(self.events)

    def append(self, event: WatchEvent) -> None:
        event.at = time.monotonic()
        self.events.append(event)
        if len(self.events) >= self.limit + self._chunk:
            drop = len(self.events) - self.limit
            self.trimmed_rv = self.events[drop - 1].rv
            del self.events[:drop]
            self.offset += drop
        self.notify()

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def close(self) -> None:
        self.closed = True
        self.notify()

    def compact(self) -> None:
        """Drop every retained event (etcd compaction): watches from an older version get
        410; a watcher that has sent everything carries on."""
        if self.events:
            self.trimmed_rv = max(self.trimmed_rv, self.events[-1].rv)
            self.offset += len(self.events)
            self.events = []

    def waiter(self) -> asyncio.Event:
        return self._changed

    def index_after(self, rv: int) -> int:
        """Absolute index of the first event newer than ``rv``; 410 if it was dropped."""
        if rv < self.trimmed_rv:
            raise errors.gone(f"too old resource version: {rv} ({self.trimmed_rv + 1})")
        return self.offset + bisect.bisect_right(self.events, rv, key=lambda e: e.rv)

    def since(self, index: int) -> list[WatchEvent]:
        if index < self.offset:
            raise errors.gone(f"too old resource version: the watcher fell behind "
                              f"({self.trimmed_rv + 1})")
        return self.events[index - self.offset:]


@dataclasses.dataclass(frozen=True, slots=True)
class WatchFilter:
    namespace: str | None = None
    labels: selectors.LabelSelector = selectors.EVERYTHING
    fields: selectors.FieldSelector = selectors.ALL_FIELDS

    @property
    def trivial(self) -> bool:
        return self.namespace is None and self.labels.empty and self.fields.empty

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        return self.labels.matches(meta.get("labels")) and self.fields.matches(obj)

    def translate(self, event: WatchEvent) -> str | None:
        """The event type this watcher sees, or ``None`` to skip (watch-cache rules)."""
        if self.trivial:
            return event.type
        if event.type == "ADDED":
            return "ADDED" if self.matches(event.obj) else None
        if event.type == "DELETED":
            return "DELETED" if self.matches(event.old or event.obj) else None
        was, now = self.matches(event.old), self.matches(event.obj)
        if was and now:
            return "MODIFIED"
        if was:
            return "DELETED"
        return "ADDED" if now else None


@dataclasses.dataclass(slots=True)
class WatchRequest:
    log: EventLog
    filter: WatchFilter
    api_version: str
    kind: str
    start: int
    """Absolute log index to stream from."""
    initial: list[Obj] | None
    """Synthetic ADDED objects to send first (already filtered), or ``None``."""
    initial_rv: int
    timeout: float
    bookmarks: bool
    initial_end_bookmark: bool
    bookmark_interval: float
    current_rv: Callable[[], int]
    lag: float = 0.0
    """Seconds each event is held back after it was logged (a slow watch cache)."""


def _line(etype: str, obj: Obj) -> bytes:
    return json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _bookmark(req: WatchRequest, rv: int, *, initial_end: bool = False) -> bytes:
    meta: Obj = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return _line("BOOKMARK", {"kind": req.kind, "apiVersion": req.api_version, "metadata": meta})


async def stream(request: web.BaseRequest, req: WatchRequest) -> web.StreamResponse:
    """Serve one watch request until its timeout, a disconnect, or the server stops."""
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    loop = asyncio.get_running_loop()
    deadline = loop.time() + req.timeout
    await resp.prepare(request)
    try:
        chunks: list[bytes] = []
        for obj in req.initial or ():
            if obj.get("apiVersion") != req.api_version:
                obj = {**obj, "apiVersion": req.api_version}
            chunks.append(_line("ADDED", obj))
        if req.initial_end_bookmark:
            chunks.append(_bookmark(req, req.initial_rv, initial_end=True))
        if chunks:
            await resp.write(b"".join(chunks))
        cursor = req.start
        next_bookmark = loop.time() + req.bookmark_interval
        while True:
            waiter = req.log.waiter()
            try:
                events = req.log.since(cursor)
            except errors.ApiError as e:
                await resp.write(_line("ERROR", e.status()))
                break
            if events and req.lag > 0:
                due = time.monotonic() - req.lag
                ready = bisect.bisect_right(events, due, key=lambda e: e.at)
                if ready == 0:
                    await asyncio.sleep(events[0].at - due)
                    continue
                events = events[:ready]
            if events:
                cursor += len(events)
                out = []
                for event in events:
                    etype = req.filter.translate(event)
                    if etype is not None:
                        out.append(event.line(etype, req.api_version))
                if out:
                    await resp.write(b"".join(out))
                continue
            if req.log.closed:
                break
            now = loop.time()
            if now >= deadline:
                break
            if req.bookmarks and now >= next_bookmark:
                await resp.write(_bookmark(req, req.current_rv()))
                next_bookmark = now + req.bookmark_interval
            wake_at = min(deadline, next_bookmark) if req.bookmarks else deadline
            try:
                async with asyncio.timeout_at(wake_at):
                    await waiter.wait()
            except TimeoutError:
                pass
        await resp.write_eof()
    except (ConnectionResetError, ConnectionError):
        pass
    return resp


def gone_response_line(error: errors.ApiError) -> bytes:
    """A complete watch body that is just one ERROR event carrying the error's ``Status``
    (too-old versions; any error after the stream started)."""
    return _line("ERROR", error.status())
