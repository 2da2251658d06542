"""The read-only web dashboard, served by the operator on its own port (``--dashboard-port``).

It shows what the operator already holds, and reads nothing more from the API server:
the decisions the core made (kept by a :class:`~gangsched.view.board.Board` the runtime
feeds each cycle), the objects the watches keep (``spec`` and creation time), the
partial-gang spans of the metrics, and the nodes as the core holds them. The pages are
:mod:`gangsched.view.render`'s; ``format_explanation`` of ``gangsched explain`` writes each
gang's explanation.

Never on the event loop's back: a view is built at most once per :data:`MIN_INTERVAL`
seconds (requests in between share it). Of its work only copying the board's tables and
the objects' specs happens on the loop (dict copies); the nodes are read on the core's own
thread, between cycles (the core is never read while it works), and the view is built and
each page rendered on a worker thread. Only ``GET`` (and ``HEAD``) is served; anything else
is answered 405 by aiohttp.

Paths: ``/`` and ``/index.html`` (queues), ``/apps.html`` (Applications and PodGroups; the
query's ``namespace``, ``queue`` and ``state`` filter them), ``/nodes.html``, ``/view.json``
(the whole view model), ``/static/dashboard.css`` and ``/static/dashboard.js``.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gangsched.shell import serving
from gangsched.shell.explain import format_explanation
from gangsched.view import model, render
from gangsched.view.board import APPLICATION, PODGROUP, Board, Contents, Key

if TYPE_CHECKING:
    from aiohttp import web

    from gangsched.shell.runtime import Runtime

log = logging.getLogger(__name__)

MIN_INTERVAL = 2.0
"""Seconds a built view is served before another is built; at least :data:`PATIENCE`
times what the last one took, so that a large cluster's views take at most a fifth of
one core whatever the number of viewers."""

PATIENCE = 5.0

STATIC = {"dashboard.css": "text/css", "dashboard.js": "text/javascript"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self' "
                               "'unsafe-inline'; connect-src 'self'; img-src 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""The pages load nothing but their own two files; inline styles are only the bars'
widths. No page may be framed."""


def static_file(name: str) -> bytes:
    """A file of the package's ``view/static`` folder."""
    return (importlib.resources.files("gangsched.view") / "static" / name).read_bytes()


class Dashboard:
    """Builds views of one runtime (see the module docstring) and serves them."""

    def __init__(self, runtime: Runtime, *, host: str = "0.0.0.0", port: int = 0,
                 min_interval: float = MIN_INTERVAL,
                 refresh: float = render.REFRESH_SECONDS) -> None:
        """``refresh``: seconds between the pages' own refreshes."""
        self.runtime = runtime
        self.refresh = refresh
        self.host = host
        self.port = port
        self.min_interval = min_interval
        if runtime.board is None:  # (the runtime keeps one when its settings ask for this)
            runtime.board = Board(runtime._created)
        self.board: Board = runtime.board
        self._view: tuple[model.View, Contents, model.Sources] | None = None
        self._built = -float("inf")
        self._lock = asyncio.Lock()
        self._runner: web.AppRunner | None = None
        self.build_seconds = 0.0
        """How long the last view took to build, in all (loop, core thread, worker)."""

    async def view(self) -> tuple[model.View, Contents, model.Sources]:
        """The current view and what it was built from: the one built within
        ``min_interval``, or a new one."""
        async with self._lock:
            interval = max(self.min_interval, PATIENCE * self.build_seconds)
            if self._view is None or time.monotonic() - self._built >= interval:
                started = time.perf_counter()
                self._view = await self._build()
                self._built = time.monotonic()
                self.build_seconds = time.perf_counter() - started
            return self._view

    async def _build(self) -> tuple[model.View, Contents, model.Sources]:
        rt = self.runtime
        board = self.board
        # Queues: those with an object, and those a gang is in (``default`` needs none).
        used = {d.queue for key, d in board.apps.items() if key in rt.apps}
        used.update(str((obj.get("spec") or {}).get("queue") or "default")
                    for obj in rt.groups.values())
        board.keep_only(rt.apps, rt.groups, used.union(rt.queues))
        contents = board.contents()
        specs: dict[Key, Any] = {}
        for kind, objects in ((APPLICATION, rt.apps), (PODGROUP, rt.groups)):
            for key, obj in objects.items():
                specs[(kind, key)] = obj.get("spec") or {}
        now = rt.clock()
        spans = rt.metrics.holdings.gangs
        partial: dict[Key, float] = {
            (entry.kind, key): rt.metrics.holdings.partial_seconds(key, now)
            for key, entry in list(spans.items())}
        scheduler = rt.scheduler
        notice = "" if rt.leading.is_set() else (
            f"This replica ({rt.settings.identity}) does not hold the Lease "
            f"{rt.settings.namespace}/{rt.settings.lease_name}: it schedules nothing and has "
            "nothing to show. Forward to the replica named in the Lease's holderIdentity.")

        def copy() -> list[model.NodeCopy]:
            # On the core's thread, between cycles: copies only (see bench/dashboard.py).
            return model.copy_nodes(scheduler.cluster.nodes.values())

        loop = asyncio.get_running_loop()
        nodes = await loop.run_in_executor(rt.core_thread, copy)
        pods: dict[Any, Any] = scheduler.pods

        def build() -> tuple[model.View, Contents, model.Sources]:
            def placeholder(uid: str) -> bool:
                # Looked up, never iterated, while the core may change the table: one
                # dict look-up is atomic, and a pod's ``pod`` is an immutable value whose
                # placeholder flag never changes.
                ps = pods.get(uid)
                return ps is not None and bool(ps.pod.placeholder)
            sources = model.Sources(specs=specs, partial_seconds=partial,
                                    nodes=model.node_uses(nodes, placeholder),
                                    explain=format_explanation, notice=notice)
            return model.build(contents, sources), contents, sources
        return await asyncio.to_thread(build)

    # --- HTTP --------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        from aiohttp import web

        name = request.match_info.get("page") or "index.html"
        if name not in dict(render.PAGES):
            raise web.HTTPNotFound()
        text = await asyncio.to_thread(self._render, await self._safe_view(), request.query,
                                       lambda view: render.page(view, name,
                                                                refresh=self.refresh))
        return web.Response(text=text, content_type="text/html", headers=SECURITY_HEADERS)

    async def _json(self, request: web.Request) -> web.Response:
        from aiohttp import web

        text = await asyncio.to_thread(self._render, await self._safe_view(), request.query,
                                       render.to_json)
        return web.Response(text=text, content_type="application/json",
                            headers=SECURITY_HEADERS)

    @staticmethod
    def _render(built: tuple[model.View, Contents, model.Sources], query: Mapping[str, str],
                write: Callable[[model.View], str]) -> str:
        """On a worker thread: the gangs the query's filters ask for, explained, written."""
        view = model.select(*built, namespace=query.get("namespace", ""),
                            queue=query.get("queue", ""), state=query.get("state", ""))
        return write(view)

    async def _static(self, request: web.Request) -> web.Response:
        from aiohttp import web

        name = request.match_info["name"]
        if name not in STATIC:
            raise web.HTTPNotFound()
        return web.Response(body=static_file(name), content_type=STATIC[name],
                            headers=SECURITY_HEADERS)

    async def _safe_view(self) -> tuple[model.View, Contents, model.Sources]:
        from aiohttp import web

        try:
            return await self.view()
        except RuntimeError as error:  # the core's thread is shut down: stopping
            raise web.HTTPServiceUnavailable(text=f"not available: {error}") from None

    async def start(self) -> None:
        """Listen (``port`` 0 picks a free one; :attr:`port` then tells which)."""
        from aiohttp import web  # only when serving: not on the start-up path

        app = web.Application()
        app.router.add_get("/", self._page)
        app.router.add_get("/view.json", self._json)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_get("/{page}", self._page)
        self._runner, self.port = await serving.listen(app, self.host, self.port)
        log.info("serving the dashboard on http://%s:%d/", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
