"""Leader election on a ``coordination.k8s.io/v1`` Lease: only one replica binds.

The rules are client-go's (``tools/leaderelection``), so that two replicas never bind at
the same time, whatever the network and the clocks do:

* **Expiry is judged on our monotonic clock, from when we observed the record change.**
  Another holder's ``renewTime`` was written with *its* wall clock, which may be skewed
  against ours; it is never compared with our wall clock. Each time a read shows a new
  record (a new resourceVersion), we note our monotonic time; the holder has lost the
  Lease only when ``lease_duration`` has passed on our clock since then without a change.
  A replica that starts while the Lease is held therefore waits a full lease duration,
  even if the holder died long ago (or released it: see below).
* **The whole renewal is bounded by ``renew_deadline`` < ``lease_duration``,** counted
  from when the last successful renewal was *sent* (its earliest possible commit). The
  moment the deadline passes, whether a request is still hanging or not, ``leading`` is
  cleared and ``on_lost`` runs (the runtime cancels its in-flight binds and stops). Any
  other replica waits at least ``lease_duration`` from when it saw that renewal, which is
  after it was sent: ``lease_duration - renew_deadline`` is the safety margin for the
  cancelled requests and the clocks' rates.
* **A holder that sees another identity in the Lease stops at once** (someone else
  decided it had expired).
* **On a graceful stop the Lease is released**: holder emptied, duration 1 s, as
  client-go's ``ReleaseOnCancel``; an empty holder may be taken at once, so a rolling
  update hands over without waiting for expiry. A crash releases nothing.

Every write carries the Lease's resourceVersion, so two replicas racing for an expired
Lease cannot both win (the loser gets a 409).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from gangsched.shell.client import ApiError, KubeClient
from gangsched.shell.settings import OperatorSettings
from gangsched.translate.times import format_micro_time

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "coordination.k8s.io", "v1", "leases"
JSON = dict[str, Any]


class LeaderElector:
    """Holds (or waits for) the Lease of ``settings.lease_name``; ``leading`` says whether
    this replica may schedule right now.

    ``clock`` is the wall clock written into the Lease for people to read;
    ``monotonic`` is the only clock expiry and deadlines are judged on. Raises
    ``ValueError`` unless ``renew_interval < renew_deadline < lease_duration``.
    """

    def __init__(self, client: KubeClient, settings: OperatorSettings, *,
                 clock: Callable[[], float], monotonic: Callable[[], float],
                 on_lost: Callable[[str], None] = lambda why: None) -> None:
        if not 0 < settings.renew_interval < settings.renew_deadline < settings.lease_duration:
            raise ValueError("leader election needs renew_interval < renew_deadline < "
                             f"lease_duration, got {settings.renew_interval}, "
                             f"{settings.renew_deadline}, {settings.lease_duration}")
        self.client = client
        self.settings = settings
        self.clock = clock
        self.monotonic = monotonic
        self.on_lost = on_lost
        self.leading = asyncio.Event()
        self.lease: JSON | None = None
        """The Lease as last read or written by us."""
        self.observed: tuple[object, ...] | None = None
        """The record last seen (holder, times, duration, resourceVersion)."""
        self.observed_at = 0.0
        """Our monotonic time when ``observed`` was first seen."""
        self.renewed_at = 0.0
        """Monotonic send time of our last successful acquire or renewal."""
        self.attempts = 0
        self.last_attempt: float | None = None
        """Monotonic time of the last attempt to acquire or renew (liveness)."""
        self.lost = ""
        """Why leadership was lost ("" while never lost)."""

    # --- the loop ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Acquire, then renew every ``renew_interval`` until ``stop`` or until leadership is
        lost (it is never taken again by this instance: the operator restarts). A renew
        deadline watchdog that failed fails this task too, so that its supervisor sees it."""
        watchdog = asyncio.create_task(self._watchdog(stop), name="leader-deadline")
        try:
            while not stop.is_set() and not self.lost:
                await self._try(stop)
                if watchdog.done():
                    watchdog.result()  # the deadline is unguarded: fail, to be supervised
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=self.settings.renew_interval)
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog

    async def _try(self, stop: asyncio.Event) -> None:
        sent = self.monotonic()
        limit = self.settings.request_timeout
        if self.leading.is_set():
            limit = min(limit, max(self.renewed_at + self.settings.renew_deadline - sent, 0.0))
        self.attempts += 1
        self.last_attempt = sent
        try:
            held, other = await asyncio.wait_for(self._attempt(sent), timeout=limit or 0.001)
        except (ApiError, TimeoutError) as err:
            log.warning("lease %s/%s: %s", self.settings.namespace, self.settings.lease_name,
                        err or "no answer within the renew deadline")
            self._check_deadline()
            return
        if held:
            self.renewed_at = sent
            if not self.leading.is_set() and not stop.is_set() and not self.lost:
                log.info("leading as %s", self.settings.identity)
                self.leading.set()
        elif other and self.leading.is_set():
            self.lose(f"the lease is held by {other}")
        else:
            self._check_deadline()

    def _check_deadline(self) -> None:
        if self.leading.is_set() and \
                self.monotonic() >= self.renewed_at + self.settings.renew_deadline:
            self.lose(f"the lease was not renewed within {self.settings.renew_deadline:.0f}s")

    async def _watchdog(self, stop: asyncio.Event) -> None:
        """Clear ``leading`` the moment the renew deadline passes, even while a renewal
        is still waiting for an answer."""
        while not stop.is_set():
            delay = self.settings.renew_interval
            if self.leading.is_set():
                left = self.renewed_at + self.settings.renew_deadline - self.monotonic()
                if left <= 0:
                    self._check_deadline()
                    return
                delay = min(delay, left)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=delay)

    def lose(self, why: str) -> None:
        """Stop leading now (idempotent); ``on_lost`` is told why."""
        if self.lost:
            return
        self.lost = why
        was_leading = self.leading.is_set()
        self.leading.clear()
        if was_leading:
            log.error("giving up leadership: %s", why)
            self.on_lost(why)

    # --- one attempt ---------------------------------------------------------------------

    def _spec(self, now: float, transitions: int, acquired: str) -> JSON:
        return {
            "holderIdentity": self.settings.identity,
            "leaseDurationSeconds": max(1, round(self.settings.lease_duration)),
            "acquireTime": acquired,
            "renewTime": format_micro_time(now),
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: JSON) -> None:
        spec = lease.get("spec") or {}
        record = (spec.get("holderIdentity"), spec.get("renewTime"), spec.get("acquireTime"),
                  spec.get("leaseDurationSeconds"), spec.get("leaseTransitions"),
                  (lease.get("metadata") or {}).get("resourceVersion"))
        if record != self.observed:
            self.observed = record
            self.observed_at = self.monotonic()
        self.lease = lease

    async def _attempt(self, sent: float) -> tuple[bool, str]:
        """One read and (if ours to take) one write: (held afterwards, another holder)."""
        ns, name = self.settings.namespace, self.settings.lease_name
        now = self.clock()
        try:
            lease = await self.client.get(GROUP, VERSION, PLURAL, ns, name)
        except ApiError as err:
            if err.code != 404:
                raise
            body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Lease",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": self._spec(now, 0, format_micro_time(now))}
            try:
                self._observe(await self.client.create(GROUP, VERSION, PLURAL, ns, body))
                return True, ""
            except ApiError as create_err:
                if create_err.code == 409:
                    return False, ""
                raise
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        duration = float(spec.get("leaseDurationSeconds") or self.settings.lease_duration)
        transitions = int(spec.get("leaseTransitions") or 0)
        ours = holder == self.settings.identity
        if holder and not ours and self.monotonic() < self.observed_at + duration:
            return False, holder
        acquired = str(spec.get("acquireTime") or format_micro_time(now))
        if not ours:
            transitions += 1
            acquired = format_micro_time(now)
        if not ours and self.leading.is_set():
            return False, holder or "nobody"
        lease["spec"] = self._spec(now, transitions, acquired)
        try:
            self._observe(await self.client.replace(GROUP, VERSION, PLURAL, ns, name, lease))
        except ApiError as err:
            if err.code == 409:
                return False, ""
            raise
        return True, ""

    async def release(self) -> None:
        """Give the Lease up (graceful stop): empty holder, 1 s duration. Only if we lead;
        errors are logged (the Lease then expires as usual)."""
        if not self.leading.is_set() or self.lease is None:
            return
        self.leading.clear()
        lease = dict(self.lease)
        spec = dict(lease.get("spec") or {})
        now = format_micro_time(self.clock())
        spec.update(holderIdentity="", leaseDurationSeconds=1, renewTime=now, acquireTime=now)
        lease["spec"] = spec
        try:
            await self.client.replace(GROUP, VERSION, PLURAL, self.settings.namespace,
                                      self.settings.lease_name, lease)
            log.info("released the lease %s/%s", self.settings.namespace,
                     self.settings.lease_name)
        except ApiError as err:
            log.warning("could not release the lease: %s; it expires in %.0fs", err,
                        self.settings.lease_duration)
