"""The resourceclaim controller and the kubelet's check of a pod's ResourceClaims.

Served only while ``resource.k8s.io`` is (:meth:`fakeapi.server.FakeApiServer.serve_dra`).
Faithful to kube-controller-manager's ``pkg/controller/resourceclaim`` and to the
kubelet's DRA manager, as far as a scheduler meets them:

* **Claims from templates.** For a pod (not being deleted, not terminated) whose
  ``spec.resourceClaims`` entry names a ``resourceClaimTemplateName`` and that
  ``status.resourceClaimStatuses`` does not list yet, the controller creates a
  ResourceClaim from the template: ``generateName`` ``<pod>-<claim>-`` (both parts
  shortened in proportion past 57 characters), the template's labels and annotations,
  the annotation ``resource.kubernetes.io/pod-claim-name`` with the entry's name, an
  owner reference to the pod (``controller``, ``blockOwnerDeletion``) and the template's
  spec; then it patches ``pods/status`` with the claim's name. A claim it made before
  (owned by the pod, with that annotation) is reused, never made twice; a missing
  template leaves the pod waiting until the template is created.
* **Reservations.** A claim's ``status.reservedFor`` entry for a pod that is gone,
  replaced (another uid) or done (``Succeeded``/``Failed``, or deleted before it was
  bound) is removed; when the last consumer goes, the allocation (and ``devices``) is
  cleared in the same status update, and the finalizer
  ``resource.kubernetes.io/delete-protection`` (kube-scheduler adds it before it
  allocates) is removed by a following update. A claim being deleted with no consumers
  is deallocated the same way, so that it goes.
* **Generated claims.** A claim with no consumers made for a pod that is done or
  replaced is deleted (the garbage collector deletes those of a pod that is gone).
* **PodGroups' claims** (the Workload API's ``spec.resourceClaims``): see
  :mod:`fakeapi.podgroup_claims`.
* **The kubelet.** A bound pod with claims starts only when every claim exists, is
  allocated and lists the pod (or, for its PodGroup's claim, the PodGroup) in
  ``reservedFor`` (the kubelet fails
  ``NodePrepareResources`` otherwise): until then it stays ``Pending`` with a Warning
  Event ``FailedPrepareDynamicResources``, and it starts once a claim write makes it
  so.

The controller acts :attr:`fakeapi.kubelet.Timing.controller` seconds after the
change, as a work queue: one pending sync per object, writes with the resourceVersion
it read (a 409 is retried after another delay), the state read afresh when it acts.
Simplified: no rate-limited backoff, no metrics, no admin-access namespace checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakeapi import errors, meta, podgroup_claims, pods, resources

if TYPE_CHECKING:
    from fakeapi.resources import ResourceType
    from fakeapi.store import Store

Obj = dict[str, Any]
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
FINALIZER = "resource.kubernetes.io/delete-protection"
MAX_BASE_LEN = 57
"""Room for ``-`` and 5 random characters in a name of 63."""


def generate_name(pod: str, claim: str) -> str:
    """The controller's ``generateName`` for a pod's claim (see the module docstring)."""
    base = f"{pod}-{claim}-"
    if len(base) > MAX_BASE_LEN:
        base = (pod[:len(pod) * MAX_BASE_LEN // len(base)] + "-"
                + claim[:len(claim) * MAX_BASE_LEN // len(base)])
    return base


def pod_done(pod: Obj) -> bool:
    """``isPodDone``: terminated, or deleted before it was ever bound."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return bool(pod["metadata"].get("deletionTimestamp")) and \
        not (pod.get("spec") or {}).get("nodeName")


def claim_name(pod: Obj, entry: Obj) -> str:
    """The name of the claim a ``spec.resourceClaims`` entry resolves to (empty while the
    controller has not made it)."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(status, dict) and status.get("name") == entry.get("name"):
            return str(status.get("resourceClaimName") or "")
    return ""


def _entries(pod: Obj) -> list[Obj]:
    return [e for e in (pod.get("spec") or {}).get("resourceClaims") or []
            if isinstance(e, dict)]


class ClaimController:
    """The controller's queue and the kubelet's pods waiting for their claims."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pending: set[tuple[str, str, str]] = set()
        self.waiting: dict[str, tuple[str, str]] = {}
        """Bound pods the kubelet could not start yet, by uid: (namespace, name)."""

    def _type(self, plural: str) -> ResourceType | None:
        return self.store.registry.by_storage((resources.DRA_GROUP, plural))

    # --- what the controller and the kubelet watch ------------------------------------

    def observe(self, rtype: ResourceType, etype: str, obj: Obj) -> None:
        """Called for every committed write: queue what it concerns."""
        if rtype.group == "" and rtype.kind == "Pod":
            if not _entries(obj) or self._type("resourceclaims") is None:
                return
            md = obj["metadata"]
            ns = md.get("namespace") or ""
            if etype == "DELETED":
                self.waiting.pop(md["uid"], None)
            else:
                self._enqueue("pod", ns, md["name"])
            for claim in self._claims_of(ns, md["uid"]):
                self._enqueue("claim", ns, claim)
        elif rtype.group == podgroup_claims.GROUP and rtype.kind == "PodGroup":
            if self._type("resourceclaims") is None or not podgroup_claims.entries(obj):
                return
            ns = meta.namespace_of(obj)
            if etype != "DELETED":
                self._enqueue("podgroup", ns, meta.name_of(obj))
            for claim in self._claims_of(ns, obj["metadata"]["uid"]):
                self._enqueue("claim", ns, claim)
        elif rtype.group == resources.DRA_GROUP:
            ns = meta.namespace_of(obj)
            if rtype.kind == "ResourceClaim":
                if etype != "DELETED":
                    self._enqueue("claim", ns, meta.name_of(obj))
                self._retry_kubelet(ns)
            elif rtype.kind == "ResourceClaimTemplate" and etype != "DELETED":
                self._pods_of_template(ns, meta.name_of(obj))

    def _claims_of(self, ns: str, uid: str) -> list[str]:
        """Claims of ``ns`` reserved for or owned by the pod ``uid``."""
        claims_t = self._type("resourceclaims")
        if claims_t is None:
            return []
        found = []
        for claim in self.store.bucket(claims_t).iterate(ns):
            refs = (claim.get("status") or {}).get("reservedFor") or []
            owners = claim["metadata"].get("ownerReferences") or []
            if any(r.get("uid") == uid for r in [*refs, *owners] if isinstance(r, dict)):
                found.append(meta.name_of(claim))
        return found

    def _pods_of_template(self, ns: str, template: str) -> None:
        for pod in self.store.bucket(self.store.rtype("", "v1", "pods")).iterate(ns):
            if any(e.get("resourceClaimTemplateName") == template for e in _entries(pod)):
                self._enqueue("pod", ns, meta.name_of(pod))

    def _enqueue(self, what: str, ns: str, name: str) -> None:
        key = (what, ns, name)
        if key in self._pending:
            return
        self._pending.add(key)
        timer = self.store.kubelet

        def run() -> None:
            self._pending.discard(key)
            try:
                if what == "pod":
                    self.sync_pod(ns, name)
                elif what == "podgroup":
                    for member in podgroup_claims.sync_group(self.store, ns, name):
                        self._enqueue("pod", ns, member)
                else:
                    self.sync_claim(ns, name)
            except errors.ApiError as e:
                if e.code != 409:
                    raise
                self._enqueue(what, ns, name)  # the object changed under us: again, later

        timer.later(max(timer.draw(timer.timing.controller), 0.001), run)

    # --- the controller ---------------------------------------------------------------

    def sync_pod(self, ns: str, name: str) -> None:
        """Make the claims of a pod's templates and list them in its status."""
        pods_t = self.store.rtype("", "v1", "pods")
        claims_t, templates_t = self._type("resourceclaims"), self._type("resourceclaimtemplates")
        pod = self.store.lookup(pods_t, ns, name)
        if pod is None or claims_t is None or templates_t is None:
            return
        if pod["metadata"].get("deletionTimestamp") or pod_done(pod):
            return
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        listed = {s.get("name") for s in statuses if isinstance(s, dict)}
        added = False
        group = podgroup_claims.group_of(self.store, pod)
        for entry in _entries(pod):
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in listed:
                continue
            of_group = podgroup_claims.group_entry(group, entry)
            if of_group is not None and group is not None:  # the PodGroup's claim, once made
                made = podgroup_claims.group_claim_name(group, of_group)
                if made:
                    statuses.append({"name": entry.get("name"), "resourceClaimName": made})
                    added = True
                continue
            claim = self._made_for(claims_t, pod, str(entry.get("name")))
            if claim is None:
                template = self.store.lookup(templates_t, ns, str(template_name))
                if template is None:
                    continue  # waits for the template (observe() queues the pod then)
                claim = self.store.create(claims_t, ns, self._claim_from(pod, entry, template))
            statuses.append({"name": entry.get("name"), "resourceClaimName": meta.name_of(claim)})
            added = True
        if added:
            current = self.store.get(pods_t, ns, name)
            body = meta.with_meta(current)
            body["status"] = {**(current.get("status") or {}), "resourceClaimStatuses": statuses}
            self.store.write(pods_t, current, body, subresource="status",
                             precondition=pod["metadata"]["resourceVersion"])

    def _made_for(self, claims_t: ResourceType, pod: Obj, entry: str) -> Obj | None:
        uid = pod["metadata"]["uid"]
        for claim in self.store.bucket(claims_t).iterate(meta.namespace_of(pod)):
            md = claim["metadata"]
            if (md.get("annotations") or {}).get(POD_CLAIM_NAME) == entry and any(
                    r.get("uid") == uid for r in md.get("ownerReferences") or []):
                return claim
        return None

    @staticmethod
    def _claim_from(pod: Obj, entry: Obj, template: Obj) -> Obj:
        md = pod["metadata"]
        spec = template.get("spec") or {}
        template_md = spec.get("metadata") or {}
        annotations = {**(template_md.get("annotations") or {}),
                       POD_CLAIM_NAME: str(entry.get("name"))}
        return {
            "apiVersion": f"{resources.DRA_GROUP}/v1", "kind": "ResourceClaim",
            "metadata": {
                "generateName": generate_name(md["name"], str(entry.get("name"))),
                "namespace": md.get("namespace"),
                **({"labels": dict(template_md["labels"])} if template_md.get("labels")
                   else {}),
                "annotations": annotations,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": md["name"],
                                     "uid": md["uid"], "controller": True,
                                     "blockOwnerDeletion": True}]},
            "spec": meta.copy(spec.get("spec") or {}),
        }

    def sync_claim(self, ns: str, name: str) -> None:
        """Drop reservations of pods that will not run; deallocate a claim nobody uses;
        delete a generated claim whose pod is done."""
        claims_t = self._type("resourceclaims")
        if claims_t is None:
            return
        claim = self.store.lookup(claims_t, ns, name)
        if claim is None:
            return
        status = claim.get("status") or {}
        reserved = list(status.get("reservedFor") or [])
        valid = [r for r in reserved if not self._consumer_gone(ns, r)]
        md = claim["metadata"]
        dropped = len(valid) < len(reserved)
        deleting = bool(md.get("deletionTimestamp")) and not valid
        if dropped or (deleting and status.get("allocation") is not None):
            new_status = {k: v for k, v in status.items() if k != "reservedFor"}
            if valid:
                new_status["reservedFor"] = valid
            else:
                new_status.pop("allocation", None)
                new_status.pop("devices", None)
            body = meta.with_meta(claim)
            body["status"] = new_status
            claim = self.store.write(claims_t, claim, body, subresource="status",
                                     precondition=md["resourceVersion"])
            md = claim["metadata"]
        finalizers = list(md.get("finalizers") or [])
        if FINALIZER in finalizers and (dropped or deleting) and \
                (claim.get("status") or {}).get("allocation") is None:
            body = meta.with_meta(claim, finalizers=[f for f in finalizers if f != FINALIZER]
                                  or None)
            claim = self.store.write(claims_t, claim, body, precondition=md["resourceVersion"])
            if self.store.lookup(claims_t, ns, name) is None:
                return
        if not valid:
            self._delete_if_owner_done(claims_t, claim)

    def _consumer_gone(self, ns: str, ref: Any) -> bool:
        if (isinstance(ref, dict) and ref.get("apiGroup") == podgroup_claims.GROUP
                and ref.get("resource") == podgroup_claims.PLURAL):
            return podgroup_claims.group_gone(self.store, ns, ref)
        if not isinstance(ref, dict) or ref.get("apiGroup") or ref.get("resource") != "pods":
            return False
        pod = self.store.lookup(self.store.rtype("", "v1", "pods"), ns, str(ref.get("name")))
        return pod is None or pod["metadata"]["uid"] != ref.get("uid") or pod_done(pod)

    def _delete_if_owner_done(self, claims_t: ResourceType, claim: Obj) -> None:
        md = claim["metadata"]
        if md.get("deletionTimestamp"):
            return
        owner = next((r for r in md.get("ownerReferences") or []
                      if r.get("kind") == "Pod" and r.get("controller")), None)
        if owner is None:
            return
        pod = self.store.lookup(self.store.rtype("", "v1", "pods"), md.get("namespace") or "",
                                str(owner.get("name")))
        if pod is not None and (pod["metadata"]["uid"] != owner.get("uid") or pod_done(pod)):
            self.store.gc.delete(claims_t, md.get("namespace"), md["name"])

    # --- the kubelet ------------------------------------------------------------------

    def may_start(self, pod: Obj) -> bool:
        """Whether the kubelet can prepare the pod's claims; if not, the pod waits (with a
        ``FailedPrepareDynamicResources`` Event the first time) until a claim write."""
        claims_t = self._type("resourceclaims")
        entries = _entries(pod)
        if not entries or claims_t is None:
            return True
        md = pod["metadata"]
        problem = ""
        for entry in entries:
            name = claim_name(pod, entry)
            claim = self.store.lookup(claims_t, md.get("namespace"), name) if name else None
            if not name:
                problem = (f'pod "{md["name"]}": waiting for the resource claim of '
                           f'"{entry.get("name")}" to be created')
            elif claim is None:
                problem = (f"fetch ResourceClaim {name} referenced by pod {md['name']}: "
                           f'resourceclaims.resource.k8s.io "{name}" not found')
            elif not (any(isinstance(r, dict) and r.get("uid") == md["uid"]
                          for r in (claim.get("status") or {}).get("reservedFor") or [])
                      or podgroup_claims.reserved_for_group(self.store, pod, entry, claim)) \
                    or (claim.get("status") or {}).get("allocation") is None:
                problem = (f"pod {md['name']} ({md['uid']}) is not allowed to use resource "
                           f"claim {name} ({claim['metadata']['uid']})")
            if problem:
                break
        if not problem:
            self.waiting.pop(md["uid"], None)
            return True
        if md["uid"] not in self.waiting:
            self.waiting[md["uid"]] = (md.get("namespace") or "", md["name"])
            self._event(pod, f"Failed to prepare dynamic resources: {problem}")
        return False

    def _event(self, pod: Obj, message: str) -> None:
        md = pod["metadata"]
        now = meta.rfc3339(self.store.clock())
        self.store.create(self.store.rtype("", "v1", "events"), md.get("namespace"), {
            "metadata": {"generateName": f"{md['name']}."},
            "involvedObject": {"kind": "Pod", "apiVersion": "v1", "name": md["name"],
                               "namespace": md.get("namespace"), "uid": md["uid"]},
            "reason": "FailedPrepareDynamicResources", "message": message, "type": "Warning",
            "source": {"component": "kubelet",
                       "host": (pod.get("spec") or {}).get("nodeName") or ""},
            "count": 1, "firstTimestamp": now, "lastTimestamp": now})

    def _retry_kubelet(self, ns: str) -> None:
        """A claim changed: the kubelet tries the waiting pods of its namespace again
        (after its start-up delay)."""
        for uid, (pod_ns, name) in list(self.waiting.items()):
            if pod_ns == ns:
                timer = self.store.kubelet
                timer.later(timer.draw(timer.timing.start),
                            lambda uid=uid, name=name: self.try_start(ns, name, uid))

    def try_start(self, ns: str, name: str, uid: str) -> None:
        """The kubelet's start of a bound pod: Running once its claims are prepared."""
        pod = self.store.lookup(self.store.rtype("", "v1", "pods"), ns, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            self.waiting.pop(uid, None)
            return
        if pod["metadata"].get("deletionTimestamp") or \
                (pod.get("status") or {}).get("phase") != "Pending":
            return
        if self.may_start(pod):
            pods.set_running(self.store, pod)
