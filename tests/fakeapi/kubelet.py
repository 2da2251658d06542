"""The fake kubelet's timing: how long a real node takes to start and to stop a pod.

A real cluster is slow where an in-memory store is instant. Three delays matter to a
scheduler, and :class:`Timing` sets each (all in seconds, ``(low, high)`` drawn
uniformly per pod from a seeded generator, or one fixed number):

* ``start``: a bound pod stays ``Pending`` (with its ``nodeName``) until the kubelet
  reports it ``Running`` and ``Ready``.
* ``stop``: a pod deleted with a grace period keeps ``metadata.deletionTimestamp``,
  ``deletionGracePeriodSeconds`` and its ``nodeName`` until the kubelet has stopped its
  containers and confirms with a DELETE of grace period 0 (uid precondition); only then
  is it removed and watchers see ``DELETED``. The kubelet never takes longer than the
  grace period (it kills the containers when that runs out).
* ``watch_lag``: every watch event reaches watchers this long after the write.
* ``controller``: the resourceclaim controller acts this long after the change it
  reacts to (:mod:`fakeapi.claims`).

The API-server half of graceful deletion (which pods are deleted at once, a second
DELETE that shortens the grace period) is :func:`grace_period`, followed by
:mod:`fakeapi.lifecycle`. ``Timing()`` (all zero) is the instant kubelet of the older
tests: pods are removed at once and bound pods (with ``auto_run``) run within the
binding request.

Timers run on the event loop of the running server (``loop.call_later``); outside a
running loop (synchronous in-process calls) the kubelet acts at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable
from typing import Any

Obj = dict[str, Any]
Span = float | tuple[float, float]
logger = logging.getLogger("fakeapi")


def _check(name: str, span: Span) -> None:
    low, high = (span, span) if isinstance(span, int | float) else span
    if low < 0 or high < low:
        raise ValueError(f"{name} must be seconds >= 0 or a (low, high) range, not {span!r}")


@dataclasses.dataclass(frozen=True, slots=True)
class Timing:
    """Delays of the fake kubelet and of watch delivery (see the module docstring)."""

    start: Span = 0.0
    """Seconds from the binding to ``Running`` (only with ``auto_run``)."""
    stop: Span = 0.0
    """Seconds from a graceful DELETE to the pod's removal (capped by its grace period)."""
    watch_lag: float = 0.0
    """Seconds every watch event is held back before it is sent."""
    controller: Span = 0.0
    """Seconds a kube-controller-manager controller (the resourceclaim controller of
    :mod:`fakeapi.claims`) takes to act on a change it watches."""

    def __post_init__(self) -> None:
        _check("start", self.start)
        _check("stop", self.stop)
        _check("watch_lag", self.watch_lag)
        _check("controller", self.controller)

    @property
    def graceful(self) -> bool:
        """Whether deletions wait for the kubelet (any non-zero ``stop``)."""
        return self.stop != 0 and self.stop != (0, 0)


INSTANT = Timing()

REALISTIC = Timing(start=(0.2, 0.8), stop=(0.5, 2.0), watch_lag=0.05, controller=(0.05, 0.3))
"""What a real node and API server take, roughly: the scenario runs use these."""

QUICK = Timing(start=(0.01, 0.05), stop=(0.05, 0.2), watch_lag=0.01, controller=(0.01, 0.05))
"""Small but non-zero: the shell tests run under these so that nothing relies on an
instant deletion while the suite stays fast."""


def grace_period(pod: Obj, options: dict[str, Any]) -> int:
    """The grace period a pod DELETE gets, as the pod registry's strategy decides it:
    ``gracePeriodSeconds`` of the request, else the pod's
    ``terminationGracePeriodSeconds`` (30 when absent, 0 when not a number); 0 for a pod
    that was never bound (no ``nodeName``) or has terminated (``Succeeded``/``Failed``);
    a negative period becomes 1."""
    spec = pod.get("spec") or {}
    asked = options.get("gracePeriodSeconds")
    if asked is None:
        asked = spec.get("terminationGracePeriodSeconds", 30)
    try:
        period = int(asked)
    except (TypeError, ValueError):
        period = 0
    if not spec.get("nodeName"):
        period = 0
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        period = 0
    return 1 if period < 0 else period


class Kubelet:
    """Timers for the delays of :class:`Timing`, cancelled by :meth:`close`."""

    def __init__(self, timing: Timing = INSTANT, *, seed: int | None = None) -> None:
        self.timing = timing
        self.rng = random.Random(seed)
        self._handles: dict[asyncio.TimerHandle, Callable[[], None]] = {}
        self.errors: list[BaseException] = []
        """Exceptions of timer callbacks (a bug in the fake): tests assert there are none."""

    def draw(self, span: Span) -> float:
        if isinstance(span, int | float):
            return float(span)
        return self.rng.uniform(*span)

    def later(self, delay: float, action: Callable[[], None]) -> None:
        """Run ``action`` after ``delay`` seconds on the running loop (at once if ``delay``
        is 0 or no loop runs)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if delay <= 0 or loop is None:
            self._run(action)
            return
        handle: asyncio.TimerHandle | None = None

        def fire() -> None:
            if handle is not None:
                self._handles.pop(handle, None)
            self._run(action)

        handle = loop.call_later(delay, fire)
        self._handles[handle] = action

    def _run(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as e:  # the pod may be gone or changed: that is not an error
            from fakeapi import errors
            if isinstance(e, errors.ApiError) and e.code in (404, 409):
                return
            logger.exception("fakeapi: kubelet timer failed")
            self.errors.append(e)

    @property
    def pending(self) -> int:
        """Timers not yet fired."""
        return len(self._handles)

    def flush(self) -> int:
        """Fire every pending timer now, earliest first (actions they schedule included);
        returns how many fired. Tests use it instead of waiting out the delays."""
        fired = 0
        while self._handles:
            handle = min(self._handles, key=lambda h: h.when())
            action = self._handles.pop(handle)
            handle.cancel()
            self._run(action)
            fired += 1
        return fired

    def close(self) -> None:
        for handle in self._handles:
            handle.cancel()
        self._handles.clear()
