"""The PersistentVolume controller and a CSI provisioner, as far as scheduling needs them.

Faithful (as the real kube-controller-manager's PV controller and the external
csi-provisioner behave, run to completion within the request that triggered them):

* Create: a new PV or claim has ``status.phase`` ``Pending`` (the API server's
  strategy); the controller then makes an unclaimed PV ``Available``.
* A PV whose ``spec.claimRef`` names a claim that exists (and whose ``uid``, when set,
  is the claim's) completes the binding: the claim gets ``spec.volumeName`` and the
  ``pv.kubernetes.io/bind-completed`` annotation, then ``status.phase: Bound`` with the
  PV's capacity and access modes; the PV gets the claim's uid and ``Bound``.
  A claimRef to a claim that is gone makes the PV ``Released``.
* A claim pre-bound to a PV (``spec.volumeName``) whose ``claimRef`` is empty binds it
  (the controller writes the claimRef); one whose PV is claimed by another waits.
* An unbound claim of an ``Immediate`` class (or of none) is bound to the smallest
  Available PV that ``FindMatchingVolume`` accepts: same class and volume mode, the
  claim's ``selector`` matching its labels, every access mode, enough capacity, not
  being deleted. A ``WaitForFirstConsumer`` claim is matched only to a PV pre-bound to
  it: the scheduler chooses the others.
* A claim whose class has a real provisioner and that no PV matched is provisioned:
  when the class binds ``Immediate``, at once; when it is ``WaitForFirstConsumer``, once
  the claim carries ``volume.kubernetes.io/selected-node``. The new PV (``pvc-<claim
  uid>``) has the claim's request, access modes, volume mode and class, a required node
  affinity on ``kubernetes.io/hostname`` for the selected node, and is bound to the claim.
* Provisioning for a selected node fails, as csi-provisioner's does with a
  rescheduling error, when the class's ``allowedTopologies`` exclude the node, or when
  the class's CSIDriver has ``storageCapacity: true`` and no CSIStorageCapacity of the
  class selecting the node has room (``maximumVolumeSize``, else ``capacity``) for the
  request. Then a Warning Event ``ProvisioningFailed`` is recorded on the claim and the
  selected-node annotation is removed, which tells the scheduler to choose again.
* Fault injection: a class parameter ``fakeapi.gangsched.io/fail-on-nodes`` (names,
  comma-separated) makes provisioning fail in that way on those nodes, as a storage
  backend that runs out of room after the scheduler chose; the parameter
  ``fakeapi.gangsched.io/provision: manual`` makes the provisioner act only when a test
  calls :func:`provision`, as a provisioner that takes its time (tests drive it, they
  never sleep).

Simplified: everything else happens at once (a real controller and provisioner take
seconds), a claim is matched when it is written (not when a matching PV appears later,
which the real controller's periodic resync catches), no capacity is consumed by
provisioning, and the in-tree provisioners are not emulated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fakeapi import meta, selectors

if TYPE_CHECKING:
    from fakeapi.resources import ResourceType
    from fakeapi.store import Store

Obj = dict[str, Any]
SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
FAIL_ON_NODES = "fakeapi.gangsched.io/fail-on-nodes"
MANUAL = "fakeapi.gangsched.io/provision"
"""A class parameter: ``manual`` makes the provisioner wait for :func:`provision`."""
_SUFFIXES = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
             "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
             "Ei": 2**60, "m": 0.001}


def quantity(text: object) -> float:
    """Bytes of a storage quantity (``10Gi``, ``5G``, ``1e3``); malformed: 0."""
    raw = str(text or "0")
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if suffix and raw.endswith(suffix):
            number, scale = raw[: -len(suffix)], _SUFFIXES[suffix]
            break
    else:
        number, scale = raw, 1
    try:
        return float(number) * scale
    except ValueError:
        return 0.0


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


def provision(store: Store, namespace: str, name: str) -> None:
    """Let the provisioner act on claim ``namespace/name`` of a class it holds
    (:data:`MANUAL`): what a slow provisioner does some seconds later. Unknown: no-op."""
    _, pvc_t = _types(store)
    claim = store.lookup(pvc_t, namespace, name)
    if claim is not None:
        _sync_claim(store, claim, held=False)


def _sync_claim(store: Store, claim: Obj, *, held: bool = True) -> None:
    pv_t, pvc_t = _types(store)
    claim = store.lookup(pvc_t, meta.namespace_of(claim), meta.name_of(claim)) or claim
    md = claim["metadata"]
    spec = claim.get("spec") or {}
    if md.get("deletionTimestamp"):
        return
    if spec.get("volumeName"):
        volume = store.lookup(pv_t, None, spec["volumeName"])
        if volume is not None:
            ref = (volume.get("spec") or {}).get("claimRef")
            if not isinstance(ref, dict) or not ref.get("name"):
                _claim_volume(store, volume, claim)
            else:
                _sync_volume(store, volume)
        return
    class_name = spec.get("storageClassName")
    sc_t = store.rtype("storage.k8s.io", "v1", "storageclasses")
    storage_class = store.lookup(sc_t, None, class_name) if class_name else None
    delayed = (storage_class or {}).get("volumeBindingMode") == "WaitForFirstConsumer"
    match = _find_match(store, claim, delayed)
    if match is not None:
        _claim_volume(store, match, claim)
        return
    if storage_class is None:
        return
    provisioner = storage_class.get("provisioner")
    if not provisioner or provisioner == NO_PROVISIONER:
        return
    node = (md.get("annotations") or {}).get(SELECTED_NODE)
    if delayed and not node:
        return
    if held and (storage_class.get("parameters") or {}).get(MANUAL) == "manual":
        return
    name = f"pvc-{md['uid']}"
    if store.lookup(pv_t, None, name) is not None:
        return
    if node:
        failure = _provisioning_failure(store, storage_class, claim, node)
        if failure:
            _reschedule(store, claim, failure)
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
    if spec.get("volumeMode"):
        body["spec"]["volumeMode"] = spec["volumeMode"]
    if node:
        body["spec"]["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": [node]}]}]}}
    store.create(pv_t, None, body)


def _claim_volume(store: Store, volume: Obj, claim: Obj) -> None:
    """The controller's ``bindVolumeToClaim``: write the claimRef, then bind."""
    pv_t, _ = _types(store)
    md = claim["metadata"]
    new = meta.with_meta(volume)
    new["spec"] = {**(volume.get("spec") or {}), "claimRef": {
        "kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": md["namespace"],
        "name": md["name"], "uid": md["uid"]}}
    _sync_volume(store, store.commit(pv_t, "MODIFIED", new, volume))


def _find_match(store: Store, claim: Obj, delayed: bool) -> Obj | None:
    """``FindMatchingVolume`` without a node (the PV controller's path): a PV pre-bound
    to the claim, else (not ``delayed``) the smallest matching Available one."""
    pv_t, _ = _types(store)
    md, spec = claim["metadata"], claim.get("spec") or {}
    wanted = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    mode = spec.get("volumeMode") or "Filesystem"
    try:
        chooser = selectors.from_object(spec["selector"]) if spec.get("selector") else None
    except Exception:  # an invalid selector was refused at admission; match nothing
        return None
    best: tuple[float, str, Obj] | None = None
    for volume in list(store.bucket(pv_t).iterate(None)):
        vspec = volume.get("spec") or {}
        size = quantity((vspec.get("capacity") or {}).get("storage"))
        if (vspec.get("volumeMode") or "Filesystem") != mode \
                or volume["metadata"].get("deletionTimestamp"):
            continue
        ref = vspec.get("claimRef")
        if isinstance(ref, dict) and ref.get("name"):
            if (ref.get("namespace"), ref["name"]) == (md["namespace"], md["name"]) \
                    and ref.get("uid") in (None, "", md["uid"]) and size >= wanted:
                return volume
            continue
        if delayed or (volume.get("status") or {}).get("phase") != "Available":
            continue
        if chooser is not None and not chooser.matches(volume["metadata"].get("labels") or {}):
            continue
        if (vspec.get("storageClassName") or "") != (spec.get("storageClassName") or ""):
            continue
        if not set(spec.get("accessModes") or ()) <= set(vspec.get("accessModes") or ()):
            continue
        if size >= wanted and (best is None or (size, meta.name_of(volume)) < best[:2]):
            best = (size, meta.name_of(volume), volume)
    return best[2] if best is not None else None


def _provisioning_failure(store: Store, storage_class: Obj, claim: Obj, node: str) -> str:
    """Why a volume of ``storage_class`` cannot be provisioned for ``node``; empty if it
    can."""
    if node in str((storage_class.get("parameters") or {}).get(FAIL_ON_NODES, "")).split(","):
        return f"failed to provision volume: no room left for it on node {node}"
    nodes_t = store.rtype("", "v1", "nodes")
    found = store.lookup(nodes_t, None, node)
    labels = ((found or {}).get("metadata") or {}).get("labels") or {}
    allowed = storage_class.get("allowedTopologies") or []
    if allowed and not any(
            all(labels.get(e.get("key")) in (e.get("values") or ())
                for e in term.get("matchLabelExpressions") or ())
            for term in allowed):
        return (f"failed to provision volume: node {node} is not in the topology the "
                f"storage class {meta.name_of(storage_class)} allows")
    drivers_t = store.rtype("storage.k8s.io", "v1", "csidrivers")
    driver = store.lookup(drivers_t, None, str(storage_class.get("provisioner") or ""))
    if driver is None or (driver.get("spec") or {}).get("storageCapacity") is not True:
        return ""
    spec = claim.get("spec") or {}
    wanted = quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
    capacities_t = store.rtype("storage.k8s.io", "v1", "csistoragecapacities")
    for capacity in store.bucket(capacities_t).iterate(None):
        if capacity.get("storageClassName") != meta.name_of(storage_class):
            continue
        limit = capacity.get("maximumVolumeSize") or capacity.get("capacity")
        topology = capacity.get("nodeTopology")
        if limit is None or topology is None or quantity(limit) < wanted:
            continue
        if selectors.from_object(topology).matches(labels):
            return ""
    return f"failed to provision volume: not enough capacity for node {node}"


def _reschedule(store: Store, claim: Obj, message: str) -> None:
    """csi-provisioner's answer to a rescheduling error: a ``ProvisioningFailed`` Event on
    the claim, and the selected-node annotation removed."""
    _, pvc_t = _types(store)
    md = claim["metadata"]
    events_t = store.rtype("", "v1", "events")
    now = meta.rfc3339(store.clock())
    store.create(events_t, md["namespace"], {
        "metadata": {"generateName": f"{md['name']}."},
        "involvedObject": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                           "namespace": md["namespace"], "name": md["name"],
                           "uid": md["uid"]},
        "reason": "ProvisioningFailed", "message": message, "type": "Warning",
        "source": {"component": "fakeapi-csi-provisioner"}, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now})
    annotations = {k: v for k, v in (md.get("annotations") or {}).items()
                   if k != SELECTED_NODE}
    store.commit(pvc_t, "MODIFIED", meta.with_meta(claim, annotations=annotations), claim)
