"""The resourceclaim controller's side of the Workload API's PodGroup-level ResourceClaims
(Kubernetes 1.36, feature gate ``DRAWorkloadResourceClaims``), as
``pkg/controller/resourceclaim`` does it, and the kubelet's check:

* a ``scheduling.k8s.io`` PodGroup whose ``spec.resourceClaims`` entry names a
  ``resourceClaimTemplateName`` gets one ResourceClaim made from the template
  (``generateName`` ``<podgroup>-<claim>-``, owned by the PodGroup as its controller, the
  annotation ``resource.kubernetes.io/pod-claim-name`` with the entry's name), listed in
  the PodGroup's ``status.resourceClaimStatuses``; a claim made before is reused;
* a member pod (``spec.schedulingGroup.podGroupName``) whose ``spec.resourceClaims``
  entry matches one of its PodGroup's exactly (same name, same source) gets no claim of
  its own: its ``status.resourceClaimStatuses`` names the group's claim (once made);
* a reservation for a PodGroup (``apiGroup: scheduling.k8s.io``, ``resource:
  podgroups``) stands while the PodGroup exists with that uid; the group's claims are
  deleted with it (owner references);
* the kubelet lets a member use a claim reserved for its PodGroup.

Served only while both resource.k8s.io and the Workload API are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakeapi import meta, resources

if TYPE_CHECKING:
    from fakeapi.resources import ResourceType
    from fakeapi.store import Store

Obj = dict[str, Any]
GROUP = resources.WORKLOAD_API_GROUP
PLURAL = "podgroups"
POD_CLAIM_NAME = "resource.kubernetes.io/pod-claim-name"
_SOURCES = ("resourceClaimName", "resourceClaimTemplateName")


def podgroups(store: Store) -> ResourceType | None:
    return store.registry.by_storage((GROUP, PLURAL))


def group_name(pod: Obj) -> str:
    """The PodGroup a pod belongs to (``spec.schedulingGroup.podGroupName``), or ""."""
    found = (pod.get("spec") or {}).get("schedulingGroup")
    return str(found.get("podGroupName") or "") if isinstance(found, dict) else ""


def entries(obj: Obj) -> list[Obj]:
    return [e for e in (obj.get("spec") or {}).get("resourceClaims") or []
            if isinstance(e, dict)]


def _same(a: Obj, b: Obj) -> bool:
    return a.get("name") == b.get("name") and all(a.get(k) == b.get(k) for k in _SOURCES)


def group_of(store: Store, pod: Obj) -> Obj | None:
    """The pod's PodGroup, when it exists and has claims."""
    rtype = podgroups(store)
    name = group_name(pod)
    if rtype is None or not name:
        return None
    found = store.lookup(rtype, meta.namespace_of(pod), name)
    return found if found is not None and entries(found) else None


def group_entry(group: Obj | None, entry: Obj) -> Obj | None:
    """The entry of ``group`` that the pod's ``entry`` matches exactly, or None."""
    if group is None:
        return None
    return next((e for e in entries(group) if _same(e, entry)), None)


def group_claim_name(group: Obj, entry: Obj) -> str:
    """The name of the claim a PodGroup entry resolves to ("" while not made)."""
    if entry.get("resourceClaimName"):
        return str(entry["resourceClaimName"])
    for status in (group.get("status") or {}).get("resourceClaimStatuses") or []:
        if isinstance(status, dict) and status.get("name") == entry.get("name"):
            return str(status.get("resourceClaimName") or "")
    return ""


def sync_group(store: Store, ns: str, name: str) -> list[str]:
    """Make the claims of a PodGroup's templates and list them in its status; returns
    the names of its member pods (to be synced next)."""
    rtype = podgroups(store)
    claims_t = store.registry.by_storage((resources.DRA_GROUP, "resourceclaims"))
    templates_t = store.registry.by_storage((resources.DRA_GROUP, "resourceclaimtemplates"))
    group = store.lookup(rtype, ns, name) if rtype is not None else None
    if group is None or claims_t is None or templates_t is None or rtype is None:
        return []
    if group["metadata"].get("deletionTimestamp"):
        return []
    statuses = list((group.get("status") or {}).get("resourceClaimStatuses") or [])
    listed = {s.get("name") for s in statuses if isinstance(s, dict)}
    added = False
    for entry in entries(group):
        template_name = entry.get("resourceClaimTemplateName")
        if not template_name or entry.get("name") in listed:
            continue
        claim = _made_for(store, claims_t, group, str(entry.get("name")))
        if claim is None:
            template = store.lookup(templates_t, ns, str(template_name))
            if template is None:
                continue  # waits for the template
            claim = store.create(claims_t, ns, _claim_from(rtype, group, entry, template))
        statuses.append({"name": entry.get("name"), "resourceClaimName": meta.name_of(claim)})
        added = True
    if added:
        current = store.get(rtype, ns, name)
        body = meta.with_meta(current)
        body["status"] = {**(current.get("status") or {}), "resourceClaimStatuses": statuses}
        store.write(rtype, current, body, subresource="status",
                    precondition=group["metadata"]["resourceVersion"])
    pods_t = store.rtype("", "v1", "pods")
    return [meta.name_of(p) for p in store.bucket(pods_t).iterate(ns) if group_name(p) == name]


def _made_for(store: Store, claims_t: ResourceType, group: Obj, entry: str) -> Obj | None:
    uid = group["metadata"]["uid"]
    for claim in store.bucket(claims_t).iterate(meta.namespace_of(group)):
        md = claim["metadata"]
        if (md.get("annotations") or {}).get(POD_CLAIM_NAME) == entry and any(
                r.get("uid") == uid for r in md.get("ownerReferences") or []):
            return claim
    return None


def _claim_from(rtype: ResourceType, group: Obj, entry: Obj, template: Obj) -> Obj:
    md = group["metadata"]
    spec = template.get("spec") or {}
    template_md = spec.get("metadata") or {}
    return {
        "apiVersion": f"{resources.DRA_GROUP}/v1", "kind": "ResourceClaim",
        "metadata": {
            "generateName": f"{md['name']}-{entry.get('name')}-",
            "namespace": md.get("namespace"),
            **({"labels": dict(template_md["labels"])} if template_md.get("labels") else {}),
            "annotations": {**(template_md.get("annotations") or {}),
                            POD_CLAIM_NAME: str(entry.get("name"))},
            "ownerReferences": [{"apiVersion": f"{GROUP}/{rtype.version}",
                                 "kind": "PodGroup", "name": md["name"], "uid": md["uid"],
                                 "controller": True, "blockOwnerDeletion": True}]},
        "spec": meta.copy(spec.get("spec") or {}),
    }


def group_gone(store: Store, ns: str, ref: Obj) -> bool:
    """Is the PodGroup a ``reservedFor`` entry names gone (or replaced)?"""
    rtype = podgroups(store)
    if rtype is None:
        return True
    found = store.lookup(rtype, ns, str(ref.get("name")))
    return found is None or found["metadata"]["uid"] != ref.get("uid")


def reserved_for_group(store: Store, pod: Obj, entry: Obj, claim: Obj) -> bool:
    """Does ``claim`` (the pod's ``entry``) stand reserved for the pod's PodGroup?"""
    group = group_of(store, pod)
    if group_entry(group, entry) is None or group is None:
        return False
    uid = group["metadata"]["uid"]
    return any(isinstance(r, dict) and r.get("uid") == uid and r.get("resource") == PLURAL
               for r in (claim.get("status") or {}).get("reservedFor") or [])
