"""PreBind's wait: a pod is bound only once the PV controller and the provisioner have
bound its claims, as kube-scheduler's ``BindPodVolumes`` waits (volumebinding/binder.go).

After the writes of a pod's volumes (:func:`gangsched.shell.storage.write_volumes`:
a static PV's ``claimRef``, a claim's ``volume.kubernetes.io/selected-node``), the
binder waits until every claim it wrote for is *fully bound* (``spec.volumeName`` set and
the ``pv.kubernetes.io/bind-completed`` annotation, ``isPVCFullyBound``), and only then
creates the pod's Binding. The checks are upstream's ``checkBindings``, on the latest
objects the storage watches delivered (:class:`BindingState`), never on an object older
than the one the write returned (its resourceVersion):

* a static PV whose ``claimRef`` was dropped (or never got the claim's uid) fails the
  wait: ``ClaimRef got reset for pv "x"``;
* a claim to provision whose selected-node annotation no longer names the pod's node
  fails it: ``provisioning failed for PVC "x"``. That is how a provisioner says it could
  not provision there (the external provisioner removes the annotation on a final
  error, or to reschedule); the claim is then free for any node, and the core, told
  ``VolumeBindFailed``, gives the pod's assumptions back and schedules it again after
  its backoff;
* no answer within ``timeout`` seconds (kube-scheduler's ``bindTimeoutSeconds``, 600)
  fails it too; the selected node stays (as upstream, only the provisioner removes it).

A failure is raised as :class:`~gangsched.shell.client.ApiError` (409 for a state
changed under the binder, 504 for the timeout), which the caller reports as
``VolumeBindFailed``: the pod is not bound. The wait is woken by every claim and PV
event and re-checks at least every ``poll`` seconds (the deadline is measured on the
``monotonic`` clock the caller gives, so tests drive it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gangsched.core.values.decisions import AnnotateClaim, BindVolume, VolumeWrite
from gangsched.core.values.volume_specs import SELECTED_NODE
from gangsched.shell.client import ApiError

JSON = Mapping[str, Any]
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BIND_TIMEOUT = 600.0
"""kube-scheduler's default ``bindTimeoutSeconds`` of VolumeBinding."""


@dataclass(frozen=True, slots=True)
class ClaimSeen:
    resource_version: str
    volume_name: str
    bind_completed: bool
    selected_node: str

    @property
    def fully_bound(self) -> bool:
        return bool(self.volume_name) and self.bind_completed


@dataclass(frozen=True, slots=True)
class VolumeSeen:
    resource_version: str
    claim_uid: str
    """``spec.claimRef.uid``; empty without a claimRef or a uid in it."""


def _newer_or_same(seen: str, written: str) -> bool:
    """Is the object seen at least as new as the one written? resourceVersions compare
    as integers (etcd's); an opaque one is taken as new enough."""
    if not written:
        return True
    try:
        return int(seen) >= int(written)
    except ValueError:
        return True


class BindingState:
    """The few fields of every claim and PV the wait looks at, kept from the storage
    watches (:meth:`claim_event`, :meth:`volume_event`), and the waits to wake."""

    def __init__(self) -> None:
        self.claims: dict[str, ClaimSeen] = {}
        self.volumes: dict[str, VolumeSeen] = {}
        self._waiters: set[asyncio.Event] = set()

    def claim_event(self, event: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        key = f"{meta.get('namespace', '')}/{meta.get('name', '')}"
        if event == "DELETED":
            self.claims.pop(key, None)
        else:
            annotations = meta.get("annotations") or {}
            spec = obj.get("spec") or {}
            self.claims[key] = ClaimSeen(
                str(meta.get("resourceVersion") or ""), str(spec.get("volumeName") or ""),
                BIND_COMPLETED in annotations, str(annotations.get(SELECTED_NODE) or ""))
        self._wake()

    def volume_event(self, event: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if event == "DELETED":
            self.volumes.pop(name, None)
        else:
            ref = (obj.get("spec") or {}).get("claimRef")
            uid = str(ref.get("uid") or "") if isinstance(ref, Mapping) else ""
            self.volumes[name] = VolumeSeen(str(meta.get("resourceVersion") or ""), uid)
        self._wake()

    def _wake(self) -> None:
        for waiter in self._waiters:
            waiter.set()

    def check(self, writes: tuple[VolumeWrite, ...], written: Mapping[str, str],
              node: str) -> bool:
        """``checkBindings``: True when every claim written for is fully bound, False
        while waiting; raises ApiError (409) when the binding cannot complete.
        ``written`` maps ``pv/<name>`` and ``pvc/<namespace>/<name>`` to the
        resourceVersion each write returned."""
        done = True
        for write in writes:
            if not isinstance(write, BindVolume | AnnotateClaim):
                continue  # a ResourceClaim's writes: nothing to wait for
            claim_key = f"{write.namespace}/{write.claim}"
            claim = self.claims.get(claim_key)
            if claim is None:
                raise ApiError(404, "NotFound",
                               f'persistentvolumeclaim "{write.claim}" not found')
            if isinstance(write, BindVolume):
                volume = self.volumes.get(write.volume)
                if volume is None or not _newer_or_same(
                        volume.resource_version, written.get(f"pv/{write.volume}", "")):
                    done = False
                    continue
                if not volume.claim_uid:
                    raise ApiError(409, "Conflict", f'ClaimRef got reset for pv "{write.volume}"')
            elif isinstance(write, AnnotateClaim):
                if not _newer_or_same(
                        claim.resource_version, written.get(f"pvc/{claim_key}", "")):
                    done = False
                    continue
                if claim.selected_node != node:
                    raise ApiError(409, "Conflict", f'provisioning failed for PVC "{write.claim}"')
            if not claim.fully_bound:
                done = False
        return done

    async def wait(self, writes: tuple[VolumeWrite, ...], written: Mapping[str, str],
                   node: str, *, timeout: float = BIND_TIMEOUT, poll: float = 1.0,
                   monotonic: Callable[[], float]) -> None:
        """Return once :meth:`check` says bound; raise its ApiError, or 504 after
        ``timeout`` seconds of ``monotonic``. No volume writes: returns at once."""
        if not any(isinstance(w, BindVolume | AnnotateClaim) for w in writes):
            return
        deadline = monotonic() + timeout
        wake = asyncio.Event()
        self._waiters.add(wake)
        try:
            while True:
                wake.clear()
                if self.check(writes, written, node):
                    return
                left = deadline - monotonic()
                if left <= 0:
                    raise ApiError(504, "Timeout", "binding volumes: timed out waiting for "
                                                   "the claims to be bound")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, poll)):
                        await wake.wait()
        finally:
            self._waiters.discard(wake)
