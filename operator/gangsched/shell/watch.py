"""List-then-watch, on the cheapest path we measured, with the API's error semantics.

Pods, nodes, and the custom resources (Applications, PodGroups, Queues) are all watched
with this plain list + watch loop rather than kopf's per-object machinery: kopf spawns a
worker task per object and delays each event by its batching window, and a kopf relist
yields no DELETED events. Here an event costs one JSON decode and one translation, and
is handed to a callback at once.

Identity is the UID, never the name:

* A (re)list diffs by UID. An object absent from the new list is reported DELETED; an
  object re-created under its name (a new UID) is reported DELETED for the old UID
  *before* it is reported for the new one, so a consumer keyed by name never removes
  the fresh object.
* A watch event carries its own UID; the consumer sees events in the server's order.

Errors, as client-go's reflector treats them:

* ``410 Gone`` / ``Expired`` on a watch (an HTTP answer or an ``ERROR`` event carrying
  that Status): the resourceVersion is too old; list again.
* Anything else (429, 5xx, a dropped connection, an ``ERROR`` event with another code):
  watch again from the last resourceVersion seen, after a backoff (doubled per failure,
  reset by a stream that delivered something). No relist.
* Lists are taken in pages (``limit``/``continue``). An expired ``continue`` token (410
  on a later page) starts the list over from the first page, after a backoff; what was
  already reported is reported again (the consumer is level-based). Other list errors
  propagate to the caller (:meth:`Reflector.run` backs off and lists again).

The next page is requested as soon as one arrives, so that the server prepares it
while this one is translated. Large lists never hold the event loop: the reflector
yields to it between pages and every :data:`YIELD_EVERY` objects within a page, so the
loop waits at most for one page's JSON decoding or that many objects' translation
(about 5 ms each).

Memory: per object the reflector keeps its UID and ``(namespace, name)`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from gangsched.shell.client import ApiError, KubeClient

log = logging.getLogger(__name__)

Callback = Callable[[str, Mapping[str, Any]], None]
Key = tuple[str, str]
YIELD_EVERY = 50
"""Objects handed over between two yields to the event loop while listing."""
VANISHED_SLICE = 20_000
"""Known objects looked at between two yields when a list ends (to find those it left
out): about 2 ms each."""


class Backoff:
    """Exponential delays: ``initial``, doubled per failure up to ``maximum``;
    :meth:`reset` after a success. Invalid (non-positive) values are taken as 0."""

    def __init__(self, initial: float = 0.5, maximum: float = 30.0) -> None:
        self.initial = max(0.0, initial)
        self.maximum = max(self.initial, maximum)
        self.failures = 0

    def next(self) -> float:
        delay = min(self.initial * 2.0 ** min(self.failures, 32), self.maximum)
        self.failures += 1
        return delay

    def reset(self) -> None:
        self.failures = 0


class Reflector:
    """Keeps a consumer informed of every object at ``path``: ADDED, MODIFIED, DELETED."""

    def __init__(self, client: KubeClient, path: str, on_event: Callback, *,
                 params: Mapping[str, str] | None = None, name: str = "",
                 timeout_seconds: int = 300, page: int = 500,
                 backoff_initial: float = 0.5, backoff_max: float = 30.0,
                 after_page: Callable[[], None] | None = None) -> None:
        self.client = client
        self.path = path
        self.on_event = on_event
        self.params = dict(params or {})
        self.name = name or path
        self.timeout_seconds = timeout_seconds
        self.page = page
        self.backoff = Backoff(backoff_initial, backoff_max)
        self.after_page = after_page
        """Called after each page of a list has been handed over (see the runtime:
        ``gc.freeze``)."""
        self.resource_version = ""
        self.known: dict[str, Key] = {}
        """UID -> (namespace, name) of every object reported and not yet deleted."""
        self.uids: dict[Key, str] = {}
        """(namespace, name) -> the UID last reported under it."""
        self.synced = asyncio.Event()
        self.events = 0
        self.lists = 0
        """Lists completed (the first one and every relist)."""
        self.restarts = 0
        """Lists started over because a ``continue`` token expired."""

    # --- list ----------------------------------------------------------------------------

    async def list(self) -> None:
        """List everything in pages; report vanished objects as DELETED. Sets ``synced``.

        An expired ``continue`` token starts the list over after a backoff; any other
        error is raised (ApiError), with what was reported so far left reported.
        """
        while True:
            try:
                await self._list_once()
            except _ContinueExpired as expired:
                self.restarts += 1
                delay = self.backoff.next()
                log.info("list %s: continue token expired (%s); listing again from the "
                         "start in %.1fs", self.name, expired.error, delay)
                await asyncio.sleep(delay)
                continue
            self.lists += 1
            return

    async def _list_once(self) -> None:
        seen: set[str] = set()
        rv = ""
        first = True
        pages = self.client.pages(self.path, params=self.params, page=self.page)
        fetching = asyncio.ensure_future(_next_page(pages))
        try:
            while True:
                try:
                    page = await fetching
                except ApiError as err:
                    if err.code == 410 and not first:
                        raise _ContinueExpired(err) from err
                    raise
                if page is None:
                    break
                # The server prepares the next page while this one is handed over.
                fetching = asyncio.ensure_future(_next_page(pages))
                items, version = page
                if first:
                    rv, first = version, False
                for n, obj in enumerate(items, 1):
                    uid, key = _identity(obj)
                    seen.add(uid)
                    self._report_listed(uid, key, obj)
                    if n % YIELD_EVERY == 0:
                        await asyncio.sleep(0)  # let the loop run within a page too
                del items, page
                if self.after_page is not None:
                    self.after_page()
                await asyncio.sleep(0)
        finally:
            fetching.cancel()
            await asyncio.gather(fetching, return_exceptions=True)
            await pages.aclose()
        await self._report_vanished(seen)
        self.resource_version = rv
        self.synced.set()

    async def _report_vanished(self, seen: set[str]) -> None:
        """Report DELETED what is known and was not in the list just taken (``seen``).

        Every object listed is known, so when there are as many known as listed none
        vanished, and nothing is walked: the first list of 650,000 pods would otherwise
        end in one walk of them all, a stall of a tenth of a second. Otherwise the
        known ones are looked at in slices, yielding to the loop between them."""
        if len(self.known) == len(seen):
            return
        known = list(self.known)
        for start in range(0, len(known), VANISHED_SLICE):
            for uid in known[start:start + VANISHED_SLICE]:
                if uid not in seen:
                    self._report_gone(uid)
            await asyncio.sleep(0)

    def _report_listed(self, uid: str, key: Key, obj: Mapping[str, Any]) -> None:
        previous = self.uids.get(key)
        if previous is not None and previous != uid:
            self._report_gone(previous)  # re-created under its name: the old one goes first
        kind = "MODIFIED" if uid in self.known else "ADDED"
        self.known[uid] = key
        self.uids[key] = uid
        self.on_event(kind, obj)

    def _report_gone(self, uid: str) -> None:
        key = self.known.pop(uid, None)
        if key is None:
            return
        if self.uids.get(key) == uid:
            del self.uids[key]
        namespace, name = key
        meta: dict[str, Any] = {"uid": uid, "name": name}
        if namespace:
            meta["namespace"] = namespace
        self.on_event("DELETED", {"metadata": meta})

    def observed(self, obj: Mapping[str, Any]) -> None:
        """Note an object learnt outside the stream (the answer to our own create), so
        that a relist that misses it reports it DELETED even if its watch event never
        came."""
        uid, key = _identity(obj)
        if uid:
            self.known[uid] = key
            self.uids[key] = uid

    # --- watch ---------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set; list first if not listed yet (or after a 410)."""
        while not stop.is_set():
            if not self.synced.is_set():
                try:
                    await self.list()
                except ApiError as err:
                    delay = self.backoff.next()
                    log.warning("list %s failed: %s; retrying in %.1fs", self.name, err, delay)
                    await _sleep_or_stop(stop, delay)
                    continue
            started, before = time.monotonic(), self.events
            try:
                await self._watch_once(stop)
            except ApiError as err:
                if err.code == 410:
                    log.info("watch %s: resourceVersion %s expired (%s); listing again",
                             self.name, self.resource_version, err)
                    self.synced.clear()
                    continue
                delay = self.backoff.next()
                log.warning("watch %s failed: %s; watching again from resourceVersion %s in "
                            "%.1fs", self.name, err, self.resource_version, delay)
                await _sleep_or_stop(stop, delay)
                continue
            if self.events > before or time.monotonic() - started >= 1.0:
                self.backoff.reset()
            else:  # ended at once with nothing: do not hammer the server
                await _sleep_or_stop(stop, self.backoff.next())

    async def _watch_once(self, stop: asyncio.Event) -> None:
        stream = self.client.watch(self.path, self.resource_version, params=self.params,
                                   timeout_seconds=self.timeout_seconds)
        async for event in stream:
            if stop.is_set():
                return
            kind = str(event.get("type", ""))
            obj: Mapping[str, Any] = event.get("object") or {}
            if kind == "ERROR":
                code = int(obj.get("code", 500) or 500)
                raise ApiError(code, str(obj.get("reason", "")), str(obj.get("message", "")))
            meta = obj.get("metadata") or {}
            rv = meta.get("resourceVersion")
            if rv:
                self.resource_version = str(rv)
            if kind == "BOOKMARK":
                continue
            uid, key = _identity(obj)
            if kind == "DELETED":
                self.known.pop(uid, None)
                if self.uids.get(key) == uid:
                    del self.uids[key]
            else:
                previous = self.uids.get(key)
                if previous is not None and previous != uid:
                    self._report_gone(previous)  # a deletion we did not see: say it first
                self.known[uid] = key
                self.uids[key] = uid
            self.events += 1
            self.on_event(kind, obj)


async def _next_page(pages: AsyncGenerator[tuple[list[Any], str], None]
                     ) -> tuple[list[Any], str] | None:
    """The next page, or None after the last."""
    try:
        return await anext(pages)
    except StopAsyncIteration:
        return None


class _ContinueExpired(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(str(error))
        self.error = error


def _identity(obj: Mapping[str, Any]) -> tuple[str, Key]:
    meta = obj.get("metadata") or {}
    return (str(meta.get("uid", "")),
            (str(meta.get("namespace", "") or ""), str(meta.get("name", ""))))


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
