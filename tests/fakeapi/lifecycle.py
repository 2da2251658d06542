"""Deletion, finalizers, garbage collection, namespace termination, CRD registration.

Faithful:

* DELETE checks ``preconditions.uid``/``preconditions.resourceVersion`` (409).
  An object with finalizers gets ``deletionTimestamp`` (and a generation bump) and
  stays until an update empties ``metadata.finalizers``; then it is removed and
  watchers see ``DELETED`` carrying the final resourceVersion.
* Garbage collection by ``ownerReferences`` with the real collector's rule: when an
  owner is gone, a dependent with no remaining owner is deleted (cascading; its own
  finalizers are honoured), one with other live owners only loses the dangling
  reference. An object created with owners that are all absent (of served kinds)
  is collected too. ``propagationPolicy``: ``Background`` (default), ``Orphan``
  (the owner's references are removed from dependents first) and ``Foreground``
  (``foregroundDeletion`` finalizer until all dependents are gone).
* Deleting a namespace marks it ``Terminating``, deletes its content, and removes it
  once empty; creating in it is refused (403) meanwhile.
* Creating/updating a CRD (re)registers its types and sets ``Established`` and
  ``NamesAccepted`` in a follow-up status write, as the CRD controllers do.

Simplified: the collector runs synchronously inside the request that triggered it
(owner's event first, then the dependents'), ``blockOwnerDeletion`` is not
distinguished, deleting a CRD removes its objects at once (instance finalizers are
skipped), and ``gracePeriodSeconds`` is ignored for every kind but pods.

Pods follow the real registry's graceful deletion when the store's kubelet has a
non-zero ``stop`` delay (:mod:`fakeapi.kubelet`): a DELETE of a bound, non-terminated
pod with a grace period sets ``deletionTimestamp`` (now + the period),
``deletionGracePeriodSeconds`` and bumps ``generation``, answers 200 with the object,
and leaves the pod (and its ``nodeName``) in place until the kubelet confirms; a second
DELETE changes nothing unless it asks a shorter period (then the timestamp moves
earlier; 0 removes the pod at once); a pod that was never bound, or has terminated, is
removed at once. Finalizers keep a confirmed pod until they are removed, as for any
kind. With the instant kubelet (the default) pods are removed at once, as before.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from fakeapi import errors, kubelet, meta, resources, volumes

if TYPE_CHECKING:
    from fakeapi.store import Key, Store

Obj = dict[str, Any]
POLICIES = ("Background", "Foreground", "Orphan")
FOREGROUND = "foregroundDeletion"


def namespace_defaults(obj: Obj) -> Obj:
    """What the API server fills in a new Namespace: finalizer, phase, name label."""
    name = meta.name_of(obj)
    labels = {**(obj["metadata"].get("labels") or {}), "kubernetes.io/metadata.name": name}
    obj = meta.with_meta(obj, labels=labels)
    obj["spec"] = {"finalizers": ["kubernetes"], **(obj.get("spec") or {})}
    obj["status"] = {"phase": "Active"}
    return obj


class Lifecycle:
    """Cross-object consequences of writes, run to completion within each request."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._work: collections.deque[tuple[str, Any]] = collections.deque()
        self._draining = False

    # --- entry points -------------------------------------------------------------------

    def delete(self, rtype: resources.ResourceType, ns: str | None, name: str,
               options: dict[str, Any] | None = None) -> Obj:
        """DELETE one object; returns its last state (or the deleting state)."""
        options = options or {}
        obj = self.store.get(rtype, ns, name)
        md = obj["metadata"]
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != md["uid"]:
            raise errors.conflict(rtype.plural, rtype.group, name,
                                  f"Precondition failed: UID in precondition: {pre['uid']}, "
                                  f"UID in object meta: {md['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != md["resourceVersion"]:
            raise errors.conflict(rtype.plural, rtype.group, name,
                                  f"Precondition failed: ResourceVersion in precondition: "
                                  f"{pre['resourceVersion']}, ResourceVersion in meta: "
                                  f"{md['resourceVersion']}")
        if options.get("dryRun"):
            raise errors.bad_request("dryRun is not supported by this fake API server")
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, *POLICIES):
            raise errors.invalid("DeleteOptions", "", "", [(
                "propagationPolicy", f'Unsupported value: "{policy}": supported values: '
                                     '"Foreground", "Background", "Orphan", "nil"')])
        if rtype.group == "" and rtype.kind == "Pod" and self.store.kubelet.timing.graceful:
            result = self._delete_pod(rtype, obj, options, policy or "Background")
        else:
            result = self.delete_obj(rtype, obj, policy or "Background")
        self._drain()
        return result

    # --- graceful deletion of pods ------------------------------------------------------

    def _delete_pod(self, rtype: resources.ResourceType, obj: Obj, options: dict[str, Any],
                    policy: str) -> Obj:
        """A pod DELETE with the registry's grace-period rules (see the module docstring)."""
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            current = md.get("deletionGracePeriodSeconds")
            if not current:
                return self.delete_obj(rtype, obj, policy)
            asked = options.get("gracePeriodSeconds")
            if asked is not None and int(asked) < 0:
                asked = 1  # as the registry reads a negative period
            if asked is None or int(asked) >= int(current):
                return obj  # graceful deletion pending: nothing changes
            period = int(asked)
            then = meta.parse_rfc3339(md["deletionTimestamp"]) - int(current) + period
            new = meta.with_meta(obj, deletionTimestamp=meta.rfc3339(then),
                                 deletionGracePeriodSeconds=period)
            updated = self.store.commit(rtype, "MODIFIED", new, obj)
            if period == 0:
                return self.delete_obj(rtype, updated, policy)
            self._confirm_later(rtype, updated, period)
            return updated
        period = kubelet.grace_period(obj, options)
        if period == 0:
            return self.delete_obj(rtype, obj, policy)
        if policy == "Orphan":
            self._orphan_dependents(md["uid"])
        new = meta.with_meta(
            obj, deletionTimestamp=meta.rfc3339(self.store.clock() + period),
            deletionGracePeriodSeconds=period,
            generation=int(md.get("generation") or 0) + 1)
        updated = self.store.commit(rtype, "MODIFIED", new, obj)
        self._confirm_later(rtype, updated, period)
        return updated

    def _confirm_later(self, rtype: resources.ResourceType, pod: Obj, period: int) -> None:
        """The kubelet stops the containers and DELETEs with grace 0 and a uid
        precondition, within the grace period."""
        md = pod["metadata"]
        ns, name, uid = md.get("namespace") or "", md["name"], md["uid"]
        timer = self.store.kubelet
        delay = min(timer.draw(timer.timing.stop), float(period))

        def confirm() -> None:
            current = self.store.lookup(rtype, ns, name)
            if current is None or current["metadata"]["uid"] != uid:
                return
            self.delete(rtype, ns, name, {"gracePeriodSeconds": 0,
                                          "preconditions": {"uid": uid}})

        timer.later(delay, confirm)

    def remove(self, rtype: resources.ResourceType, new: Obj, old: Obj) -> Obj:
        """Remove an object for good (``new`` owns its metadata) and collect garbage."""
        final = self.store.commit(rtype, "DELETED", new, old)
        self._work.append(("removed", (rtype, final)))
        self._drain()
        return final

    def after_create(self, rtype: resources.ResourceType, obj: Obj) -> None:
        if rtype.kind == "CustomResourceDefinition":
            self._establish(rtype, obj)
        volumes.reconcile(self.store, rtype, obj)
        if obj["metadata"].get("ownerReferences"):
            self._work.append(("collect", (rtype.storage_key, meta.namespace_of(obj),
                                           meta.name_of(obj))))
        self._drain()

    def after_update(self, rtype: resources.ResourceType, new: Obj, old: Obj) -> None:
        if rtype.kind == "CustomResourceDefinition" and new.get("spec") != old.get("spec"):
            self._establish(rtype, new)
        volumes.reconcile(self.store, rtype, new)

    # --- deletion -----------------------------------------------------------------------

    def delete_obj(self, rtype: resources.ResourceType, obj: Obj, policy: str) -> Obj:
        md = obj["metadata"]
        if rtype.group == "" and rtype.kind == "Namespace":
            return self._terminate_namespace(rtype, obj)
        if policy == "Orphan":
            self._orphan_dependents(md["uid"])
        finalizers = list(md.get("finalizers") or ())
        if policy == "Foreground" and self.store.dependents.get(md["uid"]) and \
                FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        if not finalizers:
            return self.remove(rtype, meta.with_meta(obj), obj)
        if md.get("deletionTimestamp") and finalizers == list(md.get("finalizers") or ()):
            return obj
        new = meta.with_meta(
            obj, finalizers=finalizers,
            deletionTimestamp=md.get("deletionTimestamp") or meta.rfc3339(self.store.clock()),
            deletionGracePeriodSeconds=0,
            generation=int(md.get("generation") or 0) + (0 if md.get("deletionTimestamp") else 1))
        updated = self.store.commit(rtype, "MODIFIED", new, obj)
        if FOREGROUND in finalizers:
            for entry in sorted(self.store.dependents.get(md["uid"], ())):
                self._work.append(("delete", entry))
        return updated

    def _orphan_dependents(self, uid: str) -> None:
        for key, ns, name in sorted(self.store.dependents.get(uid, ())):
            dtype = self.store.registry.by_storage(key)
            dep = self.store.buckets[key].get(ns, name)
            if dtype is None or dep is None:
                continue
            refs = [r for r in dep["metadata"].get("ownerReferences") or () if r.get("uid") != uid]
            new = meta.with_meta(dep, ownerReferences=refs or None)
            self.store.commit(dtype, "MODIFIED", new, dep)

    def _terminate_namespace(self, rtype: resources.ResourceType, obj: Obj) -> Obj:
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        new = meta.with_meta(obj, deletionTimestamp=meta.rfc3339(self.store.clock()),
                             deletionGracePeriodSeconds=0)
        new["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
        updated = self.store.commit(rtype, "MODIFIED", new, obj)
        ns = meta.name_of(obj)
        for key, bucket in list(self.store.buckets.items()):
            for name in sorted(bucket.objects.get(ns) or ()):
                self._work.append(("delete", (key, ns, name)))
        self._work.append(("namespace", ns))
        return updated

    # --- the work loop ------------------------------------------------------------------

    def _drain(self) -> None:
        if self._draining:
            return
        self._draining = True
        try:
            while self._work:
                what, arg = self._work.popleft()
                if what == "removed":
                    self._on_removed(*arg)
                elif what == "collect":
                    self._collect(*arg)
                elif what == "delete":
                    key, ns, name = arg
                    dtype = self.store.registry.by_storage(key)
                    bucket = self.store.buckets.get(key)
                    dep = None if bucket is None else bucket.get(ns, name)
                    if dtype is not None and dep is not None:
                        self.delete_obj(dtype, dep, "Background")
                elif what == "namespace":
                    self._maybe_finish_namespace(arg)
        finally:
            self._draining = False

    def _on_removed(self, rtype: resources.ResourceType, obj: Obj) -> None:
        md = obj["metadata"]
        for entry in sorted(self.store.dependents.get(md["uid"], ())):
            self._work.append(("collect", entry))
        for ref in md.get("ownerReferences") or ():
            owner = self.store.by_uid(ref.get("uid", ""))
            if owner is not None:
                self._maybe_finish_foreground(owner)
        ns = md.get("namespace")
        if ns:
            nsobj = self.store.buckets[("", "namespaces")].get("", ns)
            if nsobj is not None and nsobj["metadata"].get("deletionTimestamp"):
                self._work.append(("namespace", ns))
        if rtype.kind == "CustomResourceDefinition" and rtype.group == "apiextensions.k8s.io":
            self._drop_crd(obj)

    def _owner_state(self, ref: dict[str, Any]) -> str:
        if self.store.by_uid(ref.get("uid", "")) is not None:
            return "solid"
        if self.store.registry.serves_kind(ref.get("apiVersion", ""), ref.get("kind", "")):
            return "absent"
        return "unknown"

    def _collect(self, key: Key, ns: str, name: str) -> None:
        bucket = self.store.buckets.get(key)
        dtype = self.store.registry.by_storage(key)
        dep = None if bucket is None else bucket.get(ns, name)
        if dep is None or dtype is None:
            return
        refs = dep["metadata"].get("ownerReferences") or []
        states = [self._owner_state(r) for r in refs]
        if refs and all(s == "absent" for s in states):
            self.delete_obj(dtype, dep, "Background")
        elif "solid" in states and "absent" in states:
            kept = [r for r, s in zip(refs, states, strict=True) if s != "absent"]
            self.store.commit(dtype, "MODIFIED", meta.with_meta(dep, ownerReferences=kept), dep)

    def _maybe_finish_foreground(self, owner: Obj) -> None:
        md = owner["metadata"]
        fins = md.get("finalizers") or []
        if not md.get("deletionTimestamp") or FOREGROUND not in fins:
            return
        if self.store.dependents.get(md["uid"]):
            return
        where = self.store.uids.get(md["uid"])
        otype = None if where is None else self.store.registry.by_storage(where[0])
        if otype is None:
            return
        rest = [f for f in fins if f != FOREGROUND]
        new = meta.with_meta(owner, finalizers=rest or None)
        if rest:
            self.store.commit(otype, "MODIFIED", new, owner)
        else:
            self.remove(otype, new, owner)

    def _maybe_finish_namespace(self, ns: str) -> None:
        nsbucket = self.store.buckets[("", "namespaces")]
        nsobj = nsbucket.get("", ns)
        if nsobj is None or not nsobj["metadata"].get("deletionTimestamp"):
            return
        if nsobj["metadata"].get("finalizers"):
            return
        if any(b.objects.get(ns) for k, b in self.store.buckets.items() if k != ("", "namespaces")):
            return
        nstype = self.store.rtype("", "v1", "namespaces")
        new = meta.with_meta(nsobj)
        new["spec"] = {**(nsobj.get("spec") or {}), "finalizers": []}
        self.remove(nstype, new, nsobj)

    # --- CRDs ---------------------------------------------------------------------------

    def _establish(self, rtype: resources.ResourceType, crd: Obj) -> None:
        self.store.registry.register_crd(crd)
        spec = crd["spec"]
        storage = [v["name"] for v in spec["versions"] if v.get("storage")]
        now = meta.rfc3339(self.store.clock())
        conditions = [
            {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": now}
            for t, r, m in (("NamesAccepted", "NoConflicts", "no conflicts found"),
                            ("Established", "InitialNamesAccepted",
                             "the initial names have been accepted"))
        ]
        current = self.store.buckets[rtype.storage_key].get("", meta.name_of(crd)) or crd
        new = meta.with_meta(current)
        stored = list((current.get("status") or {}).get("storedVersions") or [])
        new["status"] = {"conditions": conditions, "acceptedNames": spec["names"],
                         "storedVersions": sorted(set(stored) | set(storage))}
        if new != current:
            self.store.commit(rtype, "MODIFIED", new, current)

    def _drop_crd(self, crd: Obj) -> None:
        types = self.store.registry.unregister_crd(meta.name_of(crd))
        if not types:
            return
        bucket = self.store.buckets.get(types[0].storage_key)
        if bucket is None:
            return
        for obj in list(bucket.iterate(None)):
            self.store.commit(types[0], "DELETED", meta.with_meta(obj), obj)
        bucket.log.close()
        del self.store.buckets[types[0].storage_key]
