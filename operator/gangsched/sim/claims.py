"""The ResourceClaims of a simulated cluster: the resourceclaim controller and the claim
writes of the scheduler's PreBind, as the fake API server and the operator do them.

:class:`ClaimBook` keeps every claim and tells the core of each change
(``VolumeObserved`` with the claim, ``VolumeGone`` when it is deleted):

* :meth:`ClaimBook.add` is the controller making a pod's claims from their templates
  (before the pod is observed, so the pod finds them);
* :meth:`ClaimBook.write` carries out a bind's ``AllocateClaim`` and ``ReserveClaim``
  writes, each checked against the claim's uid and resourceVersion as the API server
  checks them (a claim changed or allocated meanwhile: a 409, nothing of the pod's writes
  kept); :meth:`ClaimBook.release` undoes the writes of members of a gang that is not
  bound;
* :meth:`ClaimBook.pod_finished` is the controller again: a pod gone or done leaves
  ``reservedFor``, a claim with no consumer left is deallocated, and the claims made for
  the pod are deleted.

It also checks the scheduler: a device allocated to two claims at once (neither with
admin access, nor a share of a device that allows several) is counted in
``double_allocations``, which must stay 0.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from gangsched.core.values import devices as dv
from gangsched.core.values.decisions import AllocateClaim, ReserveClaim, VolumeWrite
from gangsched.core.values.model import PodUID
from gangsched.core.values.observations import Observation, VolumeGone, VolumeObserved

KIND = "ResourceClaim"


class ClaimError(Exception):
    """A claim write the API server refuses (409 or 404), with its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ClaimBook:
    """The claims, by ``namespace/name``."""

    def __init__(self, observe: Callable[[Observation], None]) -> None:
        self.observe = observe
        self.claims: dict[str, dv.ResourceClaim] = {}
        self._version = 0
        self.held: dict[dv.DeviceID, str] = {}
        """Devices allocated exclusively, and the claim holding each."""
        self.double_allocations = 0
        """Devices found allocated to a second claim while a first held them."""

    def _put(self, claim: dv.ResourceClaim) -> dv.ResourceClaim:
        self._version += 1
        claim = dataclasses.replace(claim, resource_version=str(self._version))
        old = self.claims.get(claim.key)
        self._hold(old, release=True)
        self.claims[claim.key] = claim
        self._hold(claim, release=False)
        self.observe(VolumeObserved(claim))
        return claim

    def _hold(self, claim: dv.ResourceClaim | None, *, release: bool) -> None:
        if claim is None or claim.allocation is None:
            return
        for result in claim.allocation.devices:
            if result.admin_access or result.share_id is not None:
                continue
            device = result.device_id
            if release:
                if self.held.get(device) == claim.key:
                    del self.held[device]
            elif self.held.setdefault(device, claim.key) != claim.key:
                self.double_allocations += 1

    def add(self, claims: tuple[dv.ResourceClaim, ...]) -> None:
        """The resourceclaim controller made these claims (for one pod)."""
        for claim in claims:
            self._put(dataclasses.replace(claim, uid=claim.uid or f"claim-{claim.key}"))

    # --- the scheduler's writes ---------------------------------------------------------

    def write(self, writes: tuple[VolumeWrite, ...]) -> list[VolumeWrite]:
        """Carry out a pod's claim writes in order; the claim writes done. On a refusal,
        the ones done are released and :class:`ClaimError` is raised."""
        done: list[VolumeWrite] = []
        for write in writes:
            if not isinstance(write, AllocateClaim | ReserveClaim):
                continue
            try:
                self._write(write)
            except ClaimError:
                self.release(done)
                raise
            done.append(write)
        return done

    def _write(self, write: AllocateClaim | ReserveClaim) -> None:
        key = f"{write.namespace}/{write.claim}"
        claim = self.claims.get(key)
        if claim is None or (write.claim_uid and claim.uid != write.claim_uid):
            raise ClaimError(404, f'resourceclaims.resource.k8s.io "{write.claim}" not found')
        if claim.reserved_by(write.reserved_for.uid):
            return
        if write.resource_version and claim.resource_version != write.resource_version:
            raise ClaimError(409, f"resourceclaim {key} changed since its devices were chosen")
        if claim.deleting:
            raise ClaimError(409, f"claim {key} got deleted in the meantime")
        allocation = claim.allocation
        if isinstance(write, AllocateClaim):
            if allocation is not None:
                raise ClaimError(409, f"claim {key} got allocated elsewhere in the meantime")
            allocation = write.allocation
        elif allocation is None:
            raise ClaimError(409, f"claim {key} is no longer allocated")
        if len(claim.reserved_for) >= dv.RESERVED_FOR_MAX:
            raise ClaimError(422, f"claim {key}: status.reservedFor: Too many")
        self._put(dataclasses.replace(claim, allocation=allocation,
                                      reserved_for=(*claim.reserved_for, write.reserved_for)))

    def release(self, writes: list[VolumeWrite]) -> None:
        """Undo writes done for a pod that is not bound: it leaves ``reservedFor``; an
        allocation it wrote is cleared when no consumer is left."""
        for write in reversed(writes):
            if not isinstance(write, AllocateClaim | ReserveClaim):
                continue
            claim = self.claims.get(f"{write.namespace}/{write.claim}")
            if claim is None:
                continue
            kept = tuple(r for r in claim.reserved_for if r.uid != write.reserved_for.uid)
            clear = isinstance(write, AllocateClaim) and not kept
            self._put(dataclasses.replace(claim, reserved_for=kept,
                                          allocation=None if clear else claim.allocation))

    # --- the controller -----------------------------------------------------------------

    def pod_finished(self, uid: PodUID) -> None:
        """Pod ``uid`` is done or gone: its reservations go, claims nobody uses are
        deallocated, and the claims made for it are deleted."""
        for key, claim in list(self.claims.items()):
            if claim.owner_pod == uid:
                self._hold(claim, release=True)
                del self.claims[key]
                self.observe(VolumeGone(KIND, key))
                continue
            if not claim.reserved_by(uid):
                continue
            kept = tuple(r for r in claim.reserved_for if r.uid != uid)
            self._put(dataclasses.replace(claim, reserved_for=kept,
                                          allocation=claim.allocation if kept else None))
