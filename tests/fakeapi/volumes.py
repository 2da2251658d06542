"""The PersistentVolume controller and a provisioner, as far as scheduling needs them.

Faithful (as the real kube-controller-manager's PV controller and an external
provisioner behave, run to completion within the request that triggered them):

* Create: a new PV or claim has ``status.phase`` ``Pending`` (the API server's
  strategy); the controller then makes an unclaimed PV ``Available``.
* A PV whose ``spec.claimRef`` names a claim that exists (and whose ``uid``, when set,
  is the claim's) completes the binding: the claim gets ``spec.volumeName`` and the
  ``pv.kubernetes.io/bind-completed`` annotation, then ``status.phase: Bound`` with the
  PV's capacity and access modes; the PV gets the claim's uid and ``Bound``.
  A claimRef to a claim that is gone makes the PV ``Released``.
* A claim whose class has a real provisioner is provisioned: when the class binds
  ``Immediate``, at once; when it is ``WaitForFirstConsumer``, once the claim carries
  ``volume.kubernetes.io/selected-node``. The new PV (``pvc-<claim uid>``) has the
  claim's request, access modes and class, a required node affinity on
  ``kubernetes.io/hostname`` for the selected node, and is bound to the claim.

Simplified: Immediate claims are not matched to static PVs, selectors and volume modes
are ignored, and a provisioner never fails.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakeapi import meta

if TYPE_CHECKING:
    from fakeapi.resources import ResourceType
    from fakeapi.store import Store

Obj = dict[str, Any]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def admit(rtype: ResourceType, obj: Obj, old: Obj | None) -> Obj:
    """The API server's create strategy: a new PV or claim starts ``Pending``."""
    if old is None and rtype.group == "" and rtype.kind in ("PersistentVolume",
                                                            "PersistentVolumeClaim"):
        return {**obj, "status": {"phase": "Pending"}}
    return obj


def reconcile(store: Store, rtype: ResourceType, obj: Obj) -> None:
    """Run the controllers for a PV, claim or StorageClass that was just written."""
    if rtype.group != "":
        return
    if rtype.kind == "PersistentVolume":
        _sync_volume(store, obj)
    elif rtype.kind == "PersistentVolumeClaim":
        _sync_claim(store, obj)


def _types(store: Store) -> tuple[ResourceType, ResourceType]:
    return (store.rtype("", "v1", "persistentvolumes"),
            store.rtype("", "v1", "persistentvolumeclaims"))


def _set_status(store: Store, rtype: ResourceType, obj: Obj, status: Obj) -> Obj:
    if obj.get("status") == status:
        return obj
    new = meta.with_meta(obj)
    new["status"] = status
    return store.commit(rtype, "MODIFIED", new, obj)


def _sync_volume(store: Store, volume: Obj) -> None:
    pv_t, pvc_t = _types(store)
    volume = store.lookup(pv_t, None, meta.name_of(volume)) or volume
    if volume["metadata"].get("deletionTimestamp"):
        return
    spec = volume.get("spec") or {}
    ref = spec.get("claimRef")
    if not isinstance(ref, dict) or not ref.get("name"):
        _set_status(store, pv_t, volume, {"phase": "Available"})
        return
    claim = store.lookup(pvc_t, ref.get("namespace") or "", ref["name"])
    if claim is None or (ref.get("uid") and ref["uid"] != claim["metadata"]["uid"]):
        if ref.get("uid"):
            _set_status(store, pv_t, volume, {"phase": "Released"})
        return
    bound_to = (claim.get("spec") or {}).get("volumeName")
    if bound_to and bound_to != meta.name_of(volume):
        return  # the claim is bound to another volume: this one waits
    if not ref.get("uid"):
        new = meta.with_meta(volume)
        new["spec"] = {**spec, "claimRef": {**ref, "uid": claim["metadata"]["uid"]}}
        volume = store.commit(pv_t, "MODIFIED", new, volume)
    volume = _set_status(store, pv_t, volume, {"phase": "Bound"})
    _bind_claim(store, claim, volume)


def _bind_claim(store: Store, claim: Obj, volume: Obj) -> None:
    _, pvc_t = _types(store)
    name = meta.name_of(volume)
    spec = claim.get("spec") or {}
    annotations = claim["metadata"].get("annotations") or {}
    if spec.get("volumeName") != name or annotations.get("pv.kubernetes.io/bind-completed") \
            != "yes":
        new = meta.with_meta(claim, annotations={**annotations,
                                                 "pv.kubernetes.io/bind-completed": "yes"})
        new["spec"] = {**spec, "volumeName": name}
        claim = store.commit(pvc_t, "MODIFIED", new, claim)
    vspec = volume.get("spec") or {}
    _set_status(store, pvc_t, claim, {
        "phase": "Bound", "accessModes": list(vspec.get("accessModes") or []),
        "capacity": dict(vspec.get("capacity") or {})})


def _sync_claim(store: Store, claim: Obj) -> None:
    pv_t, pvc_t = _types(store)
    claim = store.lookup(pvc_t, meta.namespace_of(claim), meta.name_of(claim)) or claim
    md = claim["metadata"]
    spec = claim.get("spec") or {}
    if md.get("deletionTimestamp") or spec.get("volumeName"):
        if spec.get("volumeName"):
            volume = store.lookup(pv_t, None, spec["volumeName"])
            if volume is not None:
                _sync_volume(store, volume)
        return
    class_name = spec.get("storageClassName")
    sc_t = store.rtype("storage.k8s.io", "v1", "storageclasses")
    storage_class = store.lookup(sc_t, None, class_name) if class_name else None
    if storage_class is None:
        return
    provisioner = storage_class.get("provisioner")
    if not provisioner or provisioner == NO_PROVISIONER:
        return
    node = (md.get("annotations") or {}).get(SELECTED_NODE)
    if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer" and not node:
        return
    name = f"pvc-{md['uid']}"
    if store.lookup(pv_t, None, name) is not None:
        return
    body: Obj = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name,
                     "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
        "spec": {
            "capacity": {"storage": ((spec.get("resources") or {}).get("requests") or {})
                         .get("storage", "0")},
            "accessModes": list(spec.get("accessModes") or []),
            "storageClassName": class_name,
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                         "namespace": md["namespace"], "name": md["name"], "uid": md["uid"]},
            "csi": {"driver": provisioner, "volumeHandle": name},
        },
    }
    if node:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": [node]}]}]}}
    store.create(pv_t, None, body)
