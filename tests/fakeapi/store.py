"""The object store: one versioned, watchable map per resource storage.

Faithful: a global, monotonically increasing ``resourceVersion`` (an integer as a
string, shared by all kinds as etcd's revision is); server-assigned ``uid``,
``creationTimestamp`` (RFC 3339, seconds) and ``generation`` (1 on create; bumped on
spec changes for kinds with a status subresource, on any non-metadata change
otherwise, and when deletion starts); ``generateName`` with 5 random characters
(retried on collision); 409 ``AlreadyExists`` and ``Conflict`` on a stale
``resourceVersion``; status-subresource separation (the main endpoint keeps the old
``.status``, ``/status`` changes nothing but ``.status``); no-op writes neither bump
the version nor emit events; creation into a missing (404) or terminating (403)
namespace is refused. Deletion, finalizers and garbage collection live in
:mod:`fakeapi.lifecycle`; pods, bindings and evictions in :mod:`fakeapi.pods`.

Simplified: lists always serve the latest state (``resourceVersion``/
``resourceVersionMatch`` on lists are ignored) and ``continue`` tokens resume after
the last key in the *current* state rather than in a snapshot. :meth:`Store.compact`
is etcd's compaction: a ``continue`` token of an older snapshot gets 410 ``Expired``
with an inconsistent token in the Status (as etcd3 storage answers), a watch from an
older version a 410 ERROR event; ``dryRun`` is
refused with 400; ``managedFields`` are not tracked.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import json
import random
import time
from collections.abc import Callable, Iterator
from typing import Any

from fakeapi import (
    claims,
    dra_validation,
    errors,
    kubelet,
    lifecycle,
    meta,
    nodes,
    patching,
    pods,
    resources,
    schema,
    selectors,
    validation,
    volumes,
    watch,
)

Obj = dict[str, Any]
Key = tuple[str, str]  # (group, plural): a storage


class Bucket:
    """The objects of one storage by namespace ("" for cluster-scoped) and name."""

    __slots__ = ("_sorted", "log", "objects")

    def __init__(self, history_limit: int) -> None:
        self.objects: dict[str, dict[str, Obj]] = {}
        self.log = watch.EventLog(history_limit)
        self._sorted: dict[str, list[str]] = {}
        """Names per namespace in order, kept until a name comes or goes there: a page
        of a list starts where the last one ended (as an etcd range does) instead of
        sorting and scanning the whole storage per page."""

    def get(self, ns: str, name: str) -> Obj | None:
        names = self.objects.get(ns)
        return None if names is None else names.get(name)

    def changed_names(self, ns: str) -> None:
        self._sorted.pop(ns, None)

    def iterate(self, ns: str | None, after: tuple[str, str] | None = None) -> Iterator[Obj]:
        """Objects in (namespace, name) order, from just after the key ``after`` if given;
        all namespaces if ``ns`` is None."""
        namespaces = sorted(self.objects) if ns is None else [ns]
        if after is not None:
            namespaces = namespaces[bisect.bisect_left(namespaces, after[0]):]
        for each in namespaces:
            names = self.objects.get(each)
            if not names:
                continue
            ordered = self._sorted.get(each)
            if ordered is None:
                ordered = self._sorted[each] = sorted(names)
            start = 0
            if after is not None and each == after[0]:
                start = bisect.bisect_right(ordered, after[1])
            for i in range(start, len(ordered)):
                obj = names.get(ordered[i])
                if obj is not None:
                    yield obj

    def __len__(self) -> int:
        return sum(len(v) for v in self.objects.values())


class Store:
    """All objects, their histories and indexes; every public method is atomic."""

    def __init__(
        self,
        *,
        history_limit: int = 100_000,
        strict_namespaces: bool = True,
        auto_run: bool = False,
        seed: int | None = None,
        clock: Callable[[], float] = time.time,
        timing: kubelet.Timing = kubelet.INSTANT,
    ) -> None:
        self.registry = resources.Registry()
        self.rv = 0
        self.history_limit = history_limit
        self.strict_namespaces = strict_namespaces
        self.auto_run = auto_run
        self.rng = random.Random(seed)
        self.clock = clock
        self.buckets: dict[Key, Bucket] = {}
        self.compacted_rv = 0
        """Snapshots older than this were compacted away (see :meth:`compact`)."""
        self.uids: dict[str, tuple[Key, str, str]] = {}
        self.dependents: dict[str, set[tuple[Key, str, str]]] = {}
        self.schemas: dict[tuple[str, str, str], schema.CompiledSchema] = {}
        self.kubelet = kubelet.Kubelet(timing, seed=seed)
        """The fake kubelet's delays (graceful deletion, start-up, watch lag)."""
        self.gc = lifecycle.Lifecycle(self)
        self.claims = claims.ClaimController(self)
        """The resourceclaim controller and the kubelet's check of a pod's claims."""
        for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
            self.create(self.rtype("", "v1", "namespaces"), None, {"metadata": {"name": name}})
        pcs = self.rtype("scheduling.k8s.io", "v1", "priorityclasses")
        for name, value in (("system-cluster-critical", 2_000_000_000),
                            ("system-node-critical", 2_000_001_000)):
            self.create(pcs, None, {"metadata": {"name": name}, "value": value,
                                    "description": "Built-in priority class."})

    # --- lookups -----------------------------------------------------------------------

    def rtype(self, group: str, version: str, plural: str) -> resources.ResourceType:
        found = self.registry.get(group, version, plural)
        if found is None:
            raise errors.ApiError(404, f"the server could not find the requested resource "
                                       f"({errors.qualified(plural, group)})")
        return found

    def bucket(self, rtype: resources.ResourceType) -> Bucket:
        bucket = self.buckets.get(rtype.storage_key)
        if bucket is None:
            bucket = self.buckets[rtype.storage_key] = Bucket(self.history_limit)
        return bucket

    def lookup(self, rtype: resources.ResourceType, ns: str | None, name: str) -> Obj | None:
        return self.bucket(rtype).get(ns or "" if rtype.namespaced else "", name)

    def get(self, rtype: resources.ResourceType, ns: str | None, name: str) -> Obj:
        obj = self.lookup(rtype, ns, name)
        if obj is None:
            raise errors.not_found(rtype.plural, rtype.group, name)
        return obj

    def by_uid(self, uid: str) -> Obj | None:
        where = self.uids.get(uid)
        if where is None:
            return None
        bucket = self.buckets.get(where[0])
        return None if bucket is None else bucket.get(where[1], where[2])

    # --- the one place that writes ------------------------------------------------------

    def commit(self, rtype: resources.ResourceType, etype: str, new: Obj, old: Obj | None) -> Obj:
        """Store ``new`` (or remove it for DELETED) under a fresh resourceVersion.

        ``new["metadata"]`` must be a dict owned by this write (see ``meta.with_meta``).
        """
        self.rv += 1
        new["metadata"]["resourceVersion"] = str(self.rv)
        md = new["metadata"]
        ns, name, uid = md.get("namespace") or "", md["name"], md["uid"]
        bucket = self.bucket(rtype)
        if etype == "DELETED":
            names = bucket.objects.get(ns)
            if names is not None:
                names.pop(name, None)
                if not names:
                    del bucket.objects[ns]
            bucket.changed_names(ns)
            self.uids.pop(uid, None)
        else:
            names = bucket.objects.setdefault(ns, {})
            if name not in names:
                bucket.changed_names(ns)
            names[name] = new
            self.uids[uid] = (rtype.storage_key, ns, name)
        old_md = (old or {}).get("metadata") or {}
        old_refs = {r.get("uid") for r in old_md.get("ownerReferences") or ()}
        new_refs = set() if etype == "DELETED" else {
            r.get("uid") for r in md.get("ownerReferences") or ()}
        if old_refs != new_refs:
            entry = (rtype.storage_key, ns, name)
            for ref in old_refs - new_refs:
                deps = self.dependents.get(ref)
                if deps is not None:
                    deps.discard(entry)
                    if not deps:
                        del self.dependents[ref]
            for ref in new_refs - old_refs:
                self.dependents.setdefault(ref, set()).add(entry)
        bucket.log.append(watch.WatchEvent(self.rv, etype, new, old))
        self.claims.observe(rtype, etype, new)
        return new

    # --- create ------------------------------------------------------------------------

    def create(self, rtype: resources.ResourceType, ns: str | None, body: Any) -> Obj:
        """Create an object (POST); ``ns`` is the namespace of the URL (``None`` if none)."""
        if "create" not in rtype.verbs:
            raise errors.ApiError(405, f"create is not supported on {rtype.plural}")
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        if body.get("kind") not in (None, "", rtype.kind):
            raise errors.bad_request(f"the API version in the data ({body.get('apiVersion')}) "
                                     f"and kind ({body.get('kind')}) do not match {rtype.kind}")
        md = dict(body.get("metadata") or {})
        if md.get("resourceVersion"):
            raise errors.ApiError(500, "resourceVersion should not be set on objects to be created")
        if rtype.namespaced:
            ns = ns or md.get("namespace") or ""
            if md.get("namespace") not in (None, "", ns):
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            md["namespace"] = ns
            self._check_namespace(rtype, ns, md.get("name") or md.get("generateName") or "")
        else:
            md.pop("namespace", None)
        for field in meta.SERVER_META_FIELDS:
            md.pop(field, None)
        if not md.get("name") and md.get("generateName"):
            md["name"] = self._generate_name(rtype, ns or "", str(md["generateName"]))
        md["uid"] = meta.new_uid(self.rng)
        md["creationTimestamp"] = meta.rfc3339(self.clock())
        md["generation"] = 1
        obj: Obj = {"apiVersion": rtype.api_version, "kind": rtype.kind, "metadata": md}
        obj.update((k, v) for k, v in body.items() if k not in obj)
        if rtype.has_status and (not rtype.builtin or rtype.drops_status_on_create):
            obj.pop("status", None)
        obj = self._admit(rtype, obj, None)
        name = md.get("name") or ""
        if self.lookup(rtype, ns, name) is not None:
            raise errors.already_exists(rtype.plural, rtype.group, name)
        created = self.commit(rtype, "ADDED", obj, None)
        self.gc.after_create(rtype, created)
        return created

    def _check_namespace(self, rtype: resources.ResourceType, ns: str, name: str) -> None:
        if not self.strict_namespaces:
            return
        nsobj = self.buckets[("", "namespaces")].get("", ns)
        if nsobj is None:
            raise errors.not_found("namespaces", "", ns)
        if nsobj["metadata"].get("deletionTimestamp"):
            raise errors.ApiError(
                403, f'{errors.qualified(rtype.plural, rtype.group)} "{name}" is forbidden: '
                     f"unable to create new content in namespace {ns} because it is being "
                     f"terminated",
                details={"name": name, "group": rtype.group, "kind": rtype.plural})

    def _generate_name(self, rtype: resources.ResourceType, ns: str, prefix: str) -> str:
        for _ in range(16):
            name = prefix + meta.name_suffix(self.rng)
            if self.lookup(rtype, ns, name) is None:
                return name
        raise errors.ApiError(500, f"could not generate a unique name for {prefix!r}")

    def _admit(self, rtype: resources.ResourceType, obj: Obj, old: Obj | None) -> Obj:
        """Defaulting, kind-specific rules, metadata rules and schema; 422 on violations."""
        causes: list[tuple[str, str]] = []
        if rtype.group == "" and rtype.kind == "Pod":
            obj, pod_causes = pods.admit(self, obj, old)
            causes += pod_causes
        elif rtype.group == "" and rtype.kind == "Namespace" and old is None:
            obj = lifecycle.namespace_defaults(obj)
        elif rtype.group == "" and rtype.kind == "Node" and old is None:
            obj = nodes.taint_at_creation(obj)
        elif rtype.builtin and rtype.group == resources.DRA_GROUP and rtype.version == "v1" \
                and rtype.kind in dra_validation.RULES:
            obj = dra_validation.admit(rtype.kind, obj, old)
            causes += dra_validation.RULES[rtype.kind](obj, old)
        else:
            obj = volumes.admit(rtype, obj, old)
        rule = validation.KIND_RULES.get((rtype.group, rtype.kind))
        if rule is not None:
            causes += rule(obj, old)
        causes += validation.validate_metadata(rtype.kind, obj, namespaced=rtype.namespaced)
        compiled = self.compiled_schema(rtype)
        if compiled is not None and not causes:
            obj, schema_causes = compiled.process(obj)
            causes += schema_causes
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, meta.name_of(obj), causes)
        return obj

    def compiled_schema(self, rtype: resources.ResourceType) -> schema.CompiledSchema | None:
        if rtype.schema is None:
            return None
        key = (rtype.group, rtype.version, rtype.plural)
        compiled = self.schemas.get(key)
        if compiled is None or compiled.schema is not rtype.schema:
            compiled = self.schemas[key] = schema.CompiledSchema(rtype.schema)
        return compiled

    # --- update & patch -----------------------------------------------------------------

    def update(self, rtype: resources.ResourceType, ns: str | None, name: str, body: Any,
               *, subresource: str = "") -> Obj:
        """Replace an object (PUT), or its status with ``subresource="status"``."""
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        old = self.get(rtype, ns, name)
        want_rv = (body.get("metadata") or {}).get("resourceVersion")
        return self.write(rtype, old, body, subresource=subresource, precondition=want_rv)

    def patch(self, rtype: resources.ResourceType, ns: str | None, name: str,
              content_type: str, body: Any, *, subresource: str = "") -> Obj:
        """Patch an object or its status; apply-patches create missing objects."""
        old = self.lookup(rtype, ns, name)
        if old is None:
            if content_type.startswith(patching.APPLY) and not subresource:
                return self.create(rtype, ns, body if isinstance(body, dict) else {})
            raise errors.not_found(rtype.plural, rtype.group, name)
        candidate = patching.apply(content_type, old, body, builtin=rtype.builtin)
        want_rv = (candidate.get("metadata") or {}).get("resourceVersion")
        return self.write(rtype, old, candidate, subresource=subresource, precondition=want_rv)

    def write(self, rtype: resources.ResourceType, old: Obj, candidate: Obj, *,
              subresource: str = "", precondition: str | None = None) -> Obj:
        """The common tail of PUT and PATCH: merge rules, admission, generation, commit."""
        old_md = old["metadata"]
        name = old_md["name"]
        if precondition and precondition != old_md["resourceVersion"]:
            raise errors.conflict(rtype.plural, rtype.group, name, errors.STALE)
        cand_md = candidate.get("metadata")
        if not isinstance(cand_md, dict):
            cand_md = {}
        if cand_md.get("name") not in (None, name):
            raise errors.bad_request(f"the name of the object ({cand_md.get('name')}) does not "
                                     f"match the name on the URL ({name})")
        if subresource == "status":
            if not rtype.has_status:
                raise errors.not_found(rtype.plural, rtype.group, name)
            new = meta.with_meta(old)
            if "status" in candidate:
                new["status"] = candidate["status"]
            else:
                new.pop("status", None)
        elif subresource:
            raise errors.not_found(rtype.plural, rtype.group, name)
        else:
            md = dict(cand_md)
            for field in (*meta.SERVER_META_FIELDS, "namespace", "name"):
                if field in old_md:
                    md[field] = old_md[field]
                else:
                    md.pop(field, None)
            new = {**candidate, "apiVersion": old["apiVersion"], "kind": old["kind"],
                   "metadata": md}
            if rtype.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            if old_md.get("deletionTimestamp"):
                added = set(md.get("finalizers") or ()) - set(old_md.get("finalizers") or ())
                if added:
                    raise errors.invalid(rtype.kind, rtype.group, name, [(
                        "metadata.finalizers",
                        f"Forbidden: no new finalizers can be added if the object is being "
                        f"deleted, found new finalizers {sorted(added)!r}")])
        new = self._admit(rtype, new, old)
        if meta.content(new, without_status=rtype.has_status) != meta.content(
                old, without_status=rtype.has_status):
            new["metadata"]["generation"] = int(old_md.get("generation") or 0) + 1
        if new == old:
            return old
        new_md = new["metadata"]
        if new_md.get("deletionTimestamp") and not new_md.get("finalizers") and \
                not new_md.get("deletionGracePeriodSeconds"):
            return self.gc.remove(rtype, new, old)
        updated = self.commit(rtype, "MODIFIED", new, old)
        self.gc.after_update(rtype, updated, old)
        return updated

    # --- list & watch -------------------------------------------------------------------

    def list(self, rtype: resources.ResourceType, ns: str | None, *,
             labels: selectors.LabelSelector = selectors.EVERYTHING,
             fields: selectors.FieldSelector = selectors.ALL_FIELDS,
             limit: int | None = None, continue_token: str | None = None,
             ) -> tuple[list[Obj], str, str, int | None]:
        """Matching objects in key order: (items, resourceVersion, continue, remaining)."""
        list_rv = self.rv
        after: tuple[str, str] | None = None
        if continue_token:
            list_rv, after = _decode_continue(continue_token)
            if list_rv < self.compacted_rv:
                raise errors.continue_expired(_encode_continue(self.rv, after))
        ns_filter = ns if rtype.namespaced else None
        items: list[Obj] = []
        token, remaining = "", None
        matched_after_limit = 0
        selective = not (labels.empty and fields.empty)
        for obj in self.bucket(rtype).iterate(ns_filter, after):
            md = obj["metadata"]
            if not labels.matches(md.get("labels")) or not fields.matches(obj):
                continue
            if limit and len(items) >= limit:
                matched_after_limit += 1
                if selective:
                    continue
                matched_after_limit = _remaining(self.bucket(rtype), ns_filter, obj)
                break
            items.append(obj)
        if limit and matched_after_limit:
            last = items[-1]["metadata"]
            token = _encode_continue(list_rv, (last.get("namespace") or "", last["name"]))
            remaining = matched_after_limit
        return items, str(list_rv), token, remaining

    def watch_request(self, rtype: resources.ResourceType, ns: str | None, *,
                      labels: selectors.LabelSelector, fields: selectors.FieldSelector,
                      resource_version: str | None, send_initial: bool, bookmarks: bool,
                      timeout: float, bookmark_interval: float) -> watch.WatchRequest:
        """Prepare a watch (synchronously, so that no event slips between snapshot and log)."""
        flt = watch.WatchFilter(ns if rtype.namespaced else None, labels, fields)
        bucket = self.bucket(rtype)
        initial: list[Obj] | None = None
        if send_initial or resource_version in (None, "", "0"):
            initial = [o for o in bucket.iterate(flt.namespace) if flt.matches(o)]
            start = bucket.log.end
        else:
            try:
                since = int(str(resource_version))
            except ValueError:
                raise errors.bad_request(
                    f"invalid resource version: {resource_version!r}") from None
            start = bucket.log.index_after(since)
        return watch.WatchRequest(
            log=bucket.log, filter=flt, api_version=rtype.api_version, kind=rtype.kind,
            start=start, initial=initial, initial_rv=self.rv, timeout=timeout,
            bookmarks=bookmarks, initial_end_bookmark=send_initial and bookmarks,
            bookmark_interval=bookmark_interval, current_rv=lambda: self.rv,
            lag=self.kubelet.timing.watch_lag,
        )

    def compact(self) -> int:
        """Compact history up to now, as etcd does: older ``continue`` tokens and watch
        versions expire (410). Returns the compacted resourceVersion."""
        self.compacted_rv = self.rv
        for bucket in self.buckets.values():
            bucket.log.compact()
        return self.rv

    def close(self) -> None:
        """End all watches and the kubelet's timers (used when the server stops)."""
        self.kubelet.close()
        for bucket in self.buckets.values():
            bucket.log.close()


def _remaining(bucket: Bucket, ns: str | None, first: Obj) -> int:
    """How many objects from ``first`` on (in key order) there are, counted without a scan
    when no selector filters them (``remainingItemCount``)."""
    if ns is not None:
        ordered = bucket._sorted.get(ns) or sorted(bucket.objects.get(ns) or ())
        return len(ordered) - bisect.bisect_left(ordered, first["metadata"]["name"])
    fns = first["metadata"].get("namespace") or ""
    later = sum(len(names) for each, names in bucket.objects.items() if each > fns)
    ordered = bucket._sorted.get(fns) or sorted(bucket.objects.get(fns) or ())
    return later + len(ordered) - bisect.bisect_left(ordered, first["metadata"]["name"])


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    raw = json.dumps({"v": "fakeapi/1", "rv": rv, "start": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, tuple[str, str]]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
    except (ValueError, KeyError, IndexError, TypeError, binascii.Error):
        raise errors.bad_request(f"invalid continue token: {token!r}") from None
