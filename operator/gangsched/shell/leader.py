"""Leader election on a ``coordination.k8s.io/v1`` Lease: only one replica binds.

The holder renews ``spec.renewTime`` every ``renew_interval``; another replica takes the
Lease only when it has not been renewed for ``lease_duration``. Every write carries the
Lease's resourceVersion, so two replicas racing for an expired Lease cannot both win
(the loser gets a 409). A leader that cannot renew within the lease duration clears
``leading``, and the runtime stops its scheduling loop before anyone else can take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from gangsched.shell.client import ApiError, KubeClient
from gangsched.shell.settings import OperatorSettings
from gangsched.translate.times import format_micro_time, parse_time

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "coordination.k8s.io", "v1", "leases"


def _spec(settings: OperatorSettings, now: float, transitions: int,
          acquired: float) -> dict[str, Any]:
    return {
        "holderIdentity": settings.identity,
        "leaseDurationSeconds": int(settings.lease_duration),
        "acquireTime": format_micro_time(acquired),
        "renewTime": format_micro_time(now),
        "leaseTransitions": transitions,
    }


async def try_acquire(client: KubeClient, settings: OperatorSettings, now: float) -> bool:
    """One attempt to take or renew the Lease. True if we hold it afterwards."""
    held, _ = await _attempt(client, settings, now)
    return held


async def _attempt(client: KubeClient, settings: OperatorSettings,
                   now: float) -> tuple[bool, str]:
    """One attempt to take or renew the Lease: (held afterwards, another holder or "")."""
    ns, name = settings.namespace, settings.lease_name
    try:
        lease = await client.get(GROUP, VERSION, PLURAL, ns, name)
    except ApiError as err:
        if err.code != 404:
            raise
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Lease",
                "metadata": {"name": name, "namespace": ns},
                "spec": _spec(settings, now, 0, now)}
        try:
            await client.create(GROUP, VERSION, PLURAL, ns, body)
            return True, ""
        except ApiError as create_err:
            if create_err.code == 409:
                return False, ""
            raise
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    renewed = parse_time(spec.get("renewTime")) or 0.0
    duration = float(spec.get("leaseDurationSeconds") or settings.lease_duration)
    transitions = int(spec.get("leaseTransitions") or 0)
    if holder and holder != settings.identity and now < renewed + duration:
        return False, str(holder)
    acquired = parse_time(spec.get("acquireTime")) or now
    if holder != settings.identity:
        transitions += 1
        acquired = now
    lease["spec"] = _spec(settings, now, transitions, acquired)
    try:
        await client.replace(GROUP, VERSION, PLURAL, ns, name, lease)
    except ApiError as err:
        if err.code == 409:
            return False, ""
        raise
    return True, ""


async def hold(client: KubeClient, settings: OperatorSettings, leading: asyncio.Event,
               stop: asyncio.Event, clock: Callable[[], float]) -> None:
    """Acquire, then keep renewing; clear ``leading`` if renewal lapses, or at once if
    another replica holds the Lease (a clock skewed against ours may have let it in)."""
    last_renewal = 0.0
    while not stop.is_set():
        now = clock()
        other = ""
        try:
            held, other = await _attempt(client, settings, now)
        except ApiError as err:
            log.warning("lease %s/%s: %s", settings.namespace, settings.lease_name, err)
            held = False
        if held:
            if not leading.is_set():
                log.info("leading as %s", settings.identity)
            leading.set()
            last_renewal = now
        elif leading.is_set() and other:
            log.error("the lease is held by %s; giving up leadership", other)
            leading.clear()
        elif leading.is_set() and clock() - last_renewal >= settings.lease_duration * 2 / 3:
            log.error("could not renew the lease for %.0fs; giving up leadership",
                      settings.lease_duration)
            leading.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=settings.renew_interval)
