"""PreBind of Dynamic Resource Allocation: a pod's ResourceClaims are allocated and
reserved for it before its Binding, as kube-scheduler's DynamicResources plugin does
(``bindClaim``).

:func:`reserve_claim` carries out one claim write the core decided:

1. The claim is read; it must still be at the resourceVersion the core chose its devices
   at (else 409: it changed since, and the core chooses again), not being deleted, and,
   when the core allocated it, not allocated by someone else meanwhile.
2. When the core allocated it, the finalizer ``resource.kubernetes.io/delete-protection``
   is added first, by an update of the claim (the claim cannot go away while its devices
   are allocated; the resourceclaim controller removes the finalizer when it deallocates).
3. ``status.allocation`` (when the core allocated it) and the pod in
   ``status.reservedFor`` (``resource: pods``, name, uid) are written by an update of the
   ``status`` subresource, on the version the finalizer update left: a concurrent change
   is a 409. A claim already allocated (shared, or allocated before a restart) is only
   added to ``reservedFor``.

A claim already reserved for the pod (an earlier attempt did it) is left as it is. Every
failure raises :class:`~gangsched.shell.client.ApiError`; the caller binds no pod and
tells the core, which releases the devices it assumed and schedules the pod again. Unlike
kube-scheduler, a conflict is not retried on a fresh read here: the core chose the
devices from the version it saw, so a newer claim means choosing again.

The wording of the refusals is kube-scheduler's (``claim x got allocated elsewhere in the
meantime``, ``claim x got deleted in the meantime``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gangsched.shell.client import ApiError, KubeClient

log = logging.getLogger(__name__)

JSON = Mapping[str, Any]
GROUP = "resource.k8s.io"
FINALIZER = "resource.kubernetes.io/delete-protection"
"""kube-scheduler's finalizer on a claim it allocated (``resourceapi.Finalizer``)."""


def _version(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


async def reserve_claim(client: KubeClient, *, version: str, namespace: str, name: str,
                        resource_version: str, allocation: JSON | None, pod: str,
                        pod_uid: str, claim_uid: str = "", resource: str = "pods",
                        api_group: str = "") -> str:
    """Allocate (``allocation``, None for a claim allocated already) and reserve claim
    ``namespace/name`` for pod ``pod``; see the module docstring. ``resource_version`` and
    ``claim_uid`` are the claim's version and uid the core decided on (empty: not
    checked; another uid is another claim of the same name). ``resource`` and
    ``api_group`` say what the consumer is when it is not a pod (a PodGroup's claim is
    reserved for the PodGroup). Returns the resourceVersion
    the claim was left at."""
    path = f"{namespace}/{name}"
    claim = dict(await client.get(GROUP, version, "resourceclaims", namespace, name))
    meta = dict(claim.get("metadata") or {})
    status = dict(claim.get("status") or {})
    reserved = [r for r in status.get("reservedFor") or [] if isinstance(r, Mapping)]
    if any(r.get("uid") == pod_uid for r in reserved):
        return _version(claim)  # reserved for this pod already: an earlier attempt did it
    if claim_uid and meta.get("uid") != claim_uid:
        raise ApiError(409, "Conflict", f"resourceclaim {path} was replaced since its devices "
                                        "were chosen")
    if resource_version and meta.get("resourceVersion") != resource_version:
        raise ApiError(409, "Conflict", f"resourceclaim {path} changed since its devices "
                                        "were chosen")
    if meta.get("deletionTimestamp"):
        raise ApiError(409, "Conflict", f"claim {path} got deleted in the meantime")
    if allocation is not None:
        if status.get("allocation") is not None:
            raise ApiError(409, "Conflict", f"claim {path} got allocated elsewhere in the "
                                            "meantime")
        finalizers = list(meta.get("finalizers") or [])
        if FINALIZER not in finalizers:
            meta["finalizers"] = [*finalizers, FINALIZER]
            claim["metadata"] = meta
            claim = dict(await client.replace(GROUP, version, "resourceclaims", namespace,
                                              name, claim))
        status["allocation"] = dict(allocation)
    elif status.get("allocation") is None:
        raise ApiError(409, "Conflict", f"claim {path} is no longer allocated")
    consumer = {"resource": resource, "name": pod, "uid": pod_uid}
    if api_group:  # a PodGroup of the Workload API: scheduling.k8s.io podgroups
        consumer = {"apiGroup": api_group, **consumer}
    status["reservedFor"] = [*reserved, consumer]
    claim["status"] = status
    updated = await client.replace(GROUP, version, "resourceclaims", namespace, name, claim,
                                   subresource="status")
    log.info("%s resourceclaim %s for pod %s", "allocated and reserved" if allocation
             is not None else "reserved", path, pod, extra={"claim": path, "pod": pod})
    return _version(updated)


async def release_claim(client: KubeClient, *, version: str, namespace: str, name: str,
                        pod_uid: str, claim_uid: str = "", deallocate: bool = False) -> None:
    """Undo :func:`reserve_claim` for a pod that will not be bound now (kube-scheduler's
    Unreserve): the pod leaves ``reservedFor``; with ``deallocate`` (the allocation was
    written in the same attempt) and no consumer left, the allocation is cleared too and
    the finalizer removed, so that no device stays held for a gang that was not bound.
    Best effort: a claim gone or replaced is left alone; a failure is logged (the
    resourceclaim controller drops the reservation once the pod is gone, and the core
    sees the claim as it is)."""
    path = f"{namespace}/{name}"
    try:
        claim = dict(await client.get(GROUP, version, "resourceclaims", namespace, name))
        meta = dict(claim.get("metadata") or {})
        if claim_uid and meta.get("uid") != claim_uid:
            return
        status = dict(claim.get("status") or {})
        before = [r for r in status.get("reservedFor") or [] if isinstance(r, Mapping)]
        kept = [r for r in before if r.get("uid") != pod_uid]
        clear = deallocate and not kept and status.get("allocation") is not None
        if len(kept) == len(before) and not clear:
            return
        status.pop("reservedFor", None)
        if kept:
            status["reservedFor"] = kept
        if clear:
            status.pop("allocation", None)
            status.pop("devices", None)
        claim["status"] = status
        claim = dict(await client.replace(GROUP, version, "resourceclaims", namespace, name,
                                          claim, subresource="status"))
        meta = dict(claim.get("metadata") or {})
        finalizers = list(meta.get("finalizers") or [])
        if clear and FINALIZER in finalizers:
            meta["finalizers"] = [f for f in finalizers if f != FINALIZER]
            claim["metadata"] = meta
            await client.replace(GROUP, version, "resourceclaims", namespace, name, claim)
        log.info("released resourceclaim %s%s", path, " and its devices" if clear else "",
                 extra={"claim": path})
    except ApiError as err:
        if err.code != 404:
            log.warning("releasing resourceclaim %s failed: %s", path, err,
                        extra={"claim": path, "code": err.code})
