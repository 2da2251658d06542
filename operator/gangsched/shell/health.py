"""Liveness: is this replica making progress, not merely answering HTTP?

The kubelet restarts a pod whose liveness probe fails, and a restart rebuilds every
state from the cluster. So the probe fails when a restart would help:

* the operator is stopping because a supervised task failed (see
  :mod:`gangsched.shell.supervise`), or kopf's own tasks ended;
* the leader has run no scheduling cycle for ``stale`` seconds (cycles run every tick,
  busy or not);
* no Lease attempt (acquire or renew) was made for ``stale`` seconds;
* a watch stream has neither opened nor delivered anything for ``stale`` seconds (the
  API server ends each stream after ``watch_timeout`` and it is opened again, so a
  healthy watch shows activity at least that often).

Each check is a callable answering "" when fine, or what is wrong. :class:`Health`
gathers them; :class:`HealthServer` answers ``GET <path>`` with 200 or 500 and a JSON
body naming every check.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from gangsched.shell import serving

if TYPE_CHECKING:
    from aiohttp import web

log = logging.getLogger(__name__)

Check = Callable[[], str]


def fresh(what: str, last: Callable[[], float | None], now: Callable[[], float],
          stale: float) -> Check:
    """A check that fails once ``last()`` (a monotonic time; None: not started, which is
    fine) is more than ``stale`` seconds old."""
    def check() -> str:
        seen = last()
        if seen is None:
            return ""
        age = now() - seen
        return f"no {what} for {age:.0f}s" if age > stale else ""
    return check


class Health:
    """Named checks; :meth:`problems` runs them all."""

    def __init__(self) -> None:
        self.checks: dict[str, Check] = {}

    def add(self, name: str, check: Check) -> None:
        self.checks[name] = check

    def problems(self) -> dict[str, str]:
        """Every check's verdict: "" for fine. A check that raises is a problem."""
        found = {}
        for name, check in self.checks.items():
            try:
                found[name] = check()
            except Exception as error:  # a broken check must not break the probe
                found[name] = f"check failed: {error!r}"
        return found

    @property
    def alive(self) -> bool:
        return not any(self.problems().values())


class HealthServer:
    """``GET <path>``: 200 when every check passes, else 500; the verdicts as JSON."""

    def __init__(self, health: Health, *, host: str, port: int, path: str) -> None:
        self.health = health
        self.host = host
        self.port = port
        self.path = path or "/healthz"
        self._runner: web.AppRunner | None = None

    async def _handle(self, _: web.Request) -> web.Response:
        from aiohttp import web

        problems = self.health.problems()
        bad = {k: v for k, v in problems.items() if v}
        if bad:
            log.warning("liveness failing: %s", bad)
        body = {name: verdict or "ok" for name, verdict in problems.items()}
        return web.Response(status=500 if bad else 200, body=json.dumps(body).encode(),
                            content_type="application/json")

    async def start(self) -> None:
        from aiohttp import web  # only when serving: not on the start-up path

        app = web.Application()
        app.router.add_get(self.path, self._handle)
        self._runner, self.port = await serving.listen(app, self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
