"""Pods: defaulting and admission, update rules, binding, eviction, a fake kubelet.

Faithful:

* Create: ``spec.containers`` must be non-empty with named (DNS label, unique) and
  imaged containers; defaults as the real server fills them (``schedulerName``,
  ``restartPolicy``, ``dnsPolicy``, ``terminationGracePeriodSeconds``, container
  ``imagePullPolicy``/``terminationMessage*``, requests defaulted from limits); the
  Priority admission plugin (``priorityClassName`` → ``spec.priority`` and
  ``preemptionPolicy``, a ``globalDefault`` class, 403 for an unknown class); the
  DefaultTolerationSeconds plugin; ``status`` reset to ``Pending`` with ``qosClass``.
* Update: the spec is immutable except container images, ``activeDeadlineSeconds``,
  additions to ``tolerations`` and removal of ``schedulingGates`` (422 otherwise),
  so ``spec.nodeName`` can only be set through a binding.
* ``pods/binding`` (and ``bindings``): 409 when already bound, being deleted, gated,
  or on a ``metadata.uid`` mismatch; 404 when missing; sets ``spec.nodeName`` and a
  ``PodScheduled`` condition; answers 201 with a ``Status``. The node need not exist.
* ``pods/eviction``: deletes the pod (201 ``Status``) or answers 429 when the one
  matching PodDisruptionBudget would be violated; pending/terminal/terminating
  pods are evicted without a budget check; two budgets are a 500, as in the real one.

Simplified: budgets count matching, non-terminating pods as expected and running
ones as healthy (no controller scale lookup); the fake kubelet (``auto_run``) marks
pods Running and Ready after the ``start`` delay of :mod:`fakeapi.kubelet` (within the
binding request when it is 0), unless the pod is deleted or replaced meanwhile, and
only once its ResourceClaims are allocated and reserved for it (:mod:`fakeapi.claims`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fakeapi import errors, meta, selectors, validation

if TYPE_CHECKING:
    from fakeapi.store import Store

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

IMMUTABLE_MSG = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)
DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)


def _default_container(c: Obj) -> Obj:
    c = dict(c)
    image = str(c.get("image") or "")
    tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
    c.setdefault("imagePullPolicy", "IfNotPresent" if tagged or "@" in image else "Always")
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    res = c.get("resources")
    if isinstance(res, dict) and res.get("limits"):
        c["resources"] = {**res, "requests": {**res["limits"], **(res.get("requests") or {})}}
    return c


def _default_spec(spec: Obj) -> Obj:
    spec = dict(spec)
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("enableServiceLinks", True)
    for field in ("containers", "initContainers"):
        if isinstance(spec.get(field), list):
            spec[field] = [_default_container(c) if isinstance(c, dict) else c
                           for c in spec[field]]
    return spec


def qos_class(spec: Obj) -> str:
    containers = [c for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
                  if isinstance(c, dict)]
    requests = [(c.get("resources") or {}).get("requests") or {} for c in containers]
    limits = [(c.get("resources") or {}).get("limits") or {} for c in containers]
    if not any(r.get(k) for r in requests + limits for k in ("cpu", "memory")):
        return "BestEffort"
    guaranteed = all(
        lim.get(k) and str(req.get(k, lim.get(k))) == str(lim.get(k))
        for req, lim in zip(requests, limits, strict=True) for k in ("cpu", "memory")
    )
    return "Guaranteed" if guaranteed else "Burstable"


def _container_causes(spec: Obj) -> Causes:
    causes: Causes = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [("spec.containers", "Required value")]
    seen: set[str] = set()
    for field in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(field) or []):
            where = f"spec.{field}[{i}]"
            if not isinstance(c, dict):
                causes.append((where, "Invalid value: must be an object"))
                continue
            name = c.get("name")
            problem = validation.dns_label_problem(name) if isinstance(name, str) and name else None
            if not name:
                causes.append((f"{where}.name", "Required value"))
            elif problem:
                causes.append((f"{where}.name", f'Invalid value: "{name}": {problem}'))
            elif name in seen:
                causes.append((f"{where}.name", f'Duplicate value: "{name}"'))
            seen.add(str(name))
            if not c.get("image"):
                causes.append((f"{where}.image", "Required value"))
    return causes


def _admit_priority(store: Store, pod: Obj, spec: Obj) -> None:
    pcs = store.buckets.get(("scheduling.k8s.io", "priorityclasses"))
    name = spec.get("priorityClassName")
    pc: Obj | None = None
    if name:
        pc = None if pcs is None else pcs.get("", name)
        if pc is None:
            raise errors.ApiError(
                403, f'pods "{meta.name_of(pod)}" is forbidden: no PriorityClass with name '
                     f"{name} was found", details={"name": meta.name_of(pod), "kind": "pods"})
    elif pcs is not None:
        pc = next((p for p in pcs.iterate(None) if p.get("globalDefault")), None)
        if pc is not None:
            spec["priorityClassName"] = meta.name_of(pc)
    value = int(pc["value"]) if pc is not None else 0
    if spec.get("priority") is not None and spec["priority"] != value:
        raise errors.ApiError(
            403, f'pods "{meta.name_of(pod)}" is forbidden: the integer value of priority '
                 f"({spec['priority']}) must not be provided in pod spec; priority admission "
                 f"controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    spec["preemptionPolicy"] = (pc or {}).get("preemptionPolicy") or spec.get(
        "preemptionPolicy") or "PreemptLowerPriority"


def _masked(spec: Obj) -> Obj:
    out = {k: v for k, v in spec.items()
           if k not in ("activeDeadlineSeconds", "tolerations", "schedulingGates")}
    for field in ("containers", "initContainers"):
        if isinstance(out.get(field), list):
            out[field] = [{k: v for k, v in c.items() if k != "image"} if isinstance(c, dict)
                          else c for c in out[field]]
    return out


def _update_causes(old: Obj, new: Obj) -> Causes:
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec == new_spec:
        return []
    if _masked(old_spec) != _masked(new_spec):
        return [("spec", IMMUTABLE_MSG)]
    old_tol, new_tol = old_spec.get("tolerations") or [], new_spec.get("tolerations") or []
    if any(t not in new_tol for t in old_tol):
        return [("spec.tolerations", "Forbidden: existing toleration can not be modified "
                                     "except its tolerationSeconds")]
    old_gates = [g.get("name") for g in old_spec.get("schedulingGates") or []]
    for gate in new_spec.get("schedulingGates") or []:
        if gate.get("name") not in old_gates:
            return [("spec.schedulingGates", f"Forbidden: only deletion is allowed, but found "
                                             f"new scheduling gate '{gate.get('name')}'")]
    old_ads, new_ads = old_spec.get("activeDeadlineSeconds"), new_spec.get("activeDeadlineSeconds")
    if old_ads is not None and (new_ads is None or new_ads > old_ads):
        return [("spec.activeDeadlineSeconds",
                 f"Invalid value: {new_ads}: must be less than or equal to previous value")]
    return []


def admit(store: Store, pod: Obj, old: Obj | None) -> tuple[Obj, Causes]:
    """Defaulting and validation for a pod write; ``old`` is None on create."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod, [("spec", "Required value")]
    pod = {**pod, "spec": _default_spec(spec)}
    if old is not None:
        return pod, _update_causes(old, pod)
    causes = _container_causes(pod["spec"])
    if causes:
        return pod, causes
    _admit_priority(store, pod, pod["spec"])
    tolerations = list(pod["spec"].get("tolerations") or [])
    for default in DEFAULT_TOLERATIONS:
        if not any(t.get("key") == default["key"] and t.get("effect") in (None, "", "NoExecute")
                   for t in tolerations):
            tolerations.append(dict(default))
    pod["spec"]["tolerations"] = tolerations
    pod["status"] = {"phase": "Pending", "qosClass": qos_class(pod["spec"])}
    return pod, []


def _with_condition(status: Obj, ctype: str, value: str, now: str, reason: str = "") -> Obj:
    conds = [c for c in status.get("conditions") or [] if c.get("type") != ctype]
    cond: Obj = {"type": ctype, "status": value, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    return {**status, "conditions": [*conds, cond]}


def bind(store: Store, ns: str, name: str | None, binding: Any) -> Obj:
    """POST pods/{name}/binding (``name`` from the URL) or bindings (name from the body)."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request must be a Binding object")
    bmeta = binding.get("metadata") or {}
    if name is not None and bmeta.get("name") not in (None, name):
        raise errors.bad_request("name in URL does not match name in Binding object")
    name = name or bmeta.get("name") or ""
    target = binding.get("target") or {}
    if not target.get("name"):
        raise errors.invalid("Binding", "", name, [("target.name", "Required value")])
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid("Binding", "", name, [(
            "target.kind", f'Invalid value: "{target["kind"]}": must be empty or \'Node\'')])
    pods_t = store.rtype("", "v1", "pods")
    pod = store.get(pods_t, ns, name)
    md, spec = pod["metadata"], pod.get("spec") or {}
    if bmeta.get("uid") and bmeta["uid"] != md["uid"]:
        raise errors.conflict("pods/binding", "", name, f"Precondition failed: UID in "
                              f"precondition: {bmeta['uid']}, UID in object meta: {md['uid']}")
    if md.get("deletionTimestamp"):
        raise errors.conflict("pods/binding", "", name,
                              f"pod {name} is being deleted, cannot be assigned to a host")
    if spec.get("nodeName"):
        raise errors.conflict("pods/binding", "", name,
                              f'pod {name} is already assigned to node "{spec["nodeName"]}"')
    if spec.get("schedulingGates"):
        raise errors.conflict("pods/binding", "", name,
                              f"pod {name} has non-empty .spec.schedulingGates")
    annotations = {**(md.get("annotations") or {}), **(bmeta.get("annotations") or {})}
    new = meta.with_meta(pod, annotations=annotations or None)
    new["spec"] = {**spec, "nodeName": target["name"]}
    now = meta.rfc3339(store.clock())
    new["status"] = _with_condition(pod.get("status") or {}, "PodScheduled", "True", now)
    store.commit(pods_t, "MODIFIED", new, pod)
    if store.auto_run:
        uid = md["uid"]

        def start() -> None:
            store.claims.try_start(ns, name, uid)

        store.kubelet.later(store.kubelet.draw(store.kubelet.timing.start), start)
    return errors.status_body(201)


def set_running(store: Store, pod: Obj) -> Obj:
    """The fake kubelet: containers started, pod Running and Ready."""
    now = meta.rfc3339(store.clock())
    status = dict(pod.get("status") or {})
    status.update(phase="Running", hostIP="10.0.0.1", podIP=f"10.244.0.{store.rv % 250 + 2}",
                  startTime=now)
    for ctype in ("Initialized", "Ready", "ContainersReady"):
        status = _with_condition(status, ctype, "True", now)
    status["containerStatuses"] = [
        {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": True,
         "started": True, "restartCount": 0, "containerID": f"fake://{c.get('name')}",
         "state": {"running": {"startedAt": now}}}
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    new = meta.with_meta(pod)
    new["status"] = status
    return store.commit(store.rtype("", "v1", "pods"), "MODIFIED", new, pod)


def finish(store: Store, ns: str, name: str, phase: str = "Succeeded") -> Obj:
    """The fake kubelet: the pod's containers exited; phase Succeeded or Failed."""
    if phase not in ("Succeeded", "Failed"):
        raise ValueError(f"phase must be Succeeded or Failed, not {phase!r}")
    pods_t = store.rtype("", "v1", "pods")
    pod = store.get(pods_t, ns, name)
    now = meta.rfc3339(store.clock())
    status = {**(pod.get("status") or {}), "phase": phase}
    for ctype in ("Ready", "ContainersReady"):
        status = _with_condition(status, ctype, "False", now, reason="PodCompleted")
    code = 0 if phase == "Succeeded" else 1
    status["containerStatuses"] = [
        {"name": c.get("name"), "image": c.get("image"), "imageID": "", "ready": False,
         "started": False, "restartCount": 0, "containerID": f"fake://{c.get('name')}",
         "state": {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else
                                  "Error", "finishedAt": now}}}
        for c in (pod.get("spec") or {}).get("containers") or []
    ]
    new = meta.with_meta(pod)
    new["status"] = status
    return store.commit(pods_t, "MODIFIED", new, pod)


def _scaled(value: Any, expected: int) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * expected / 100)
    return int(value)


def _running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and \
        not pod["metadata"].get("deletionTimestamp")


def evict(store: Store, ns: str, name: str, eviction: Any) -> Obj:
    """POST pods/{name}/eviction: delete unless a PodDisruptionBudget forbids it (429)."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("the body of the request must be an Eviction object")
    if (eviction.get("metadata") or {}).get("name") not in (None, name):
        raise errors.bad_request("name in URL does not match name in Eviction object")
    pods_t = store.rtype("", "v1", "pods")
    pod = store.get(pods_t, ns, name)
    if _running(pod):
        labels = pod["metadata"].get("labels") or {}
        pdbs = store.buckets.get(("policy", "poddisruptionbudgets"))
        budgets = [p for p in (pdbs.iterate(ns) if pdbs else ())
                   if selectors.from_object((p.get("spec") or {}).get("selector")).matches(labels)]
        if len(budgets) > 1:
            raise errors.ApiError(500, "This pod has more than one PodDisruptionBudget, which "
                                       "the eviction subresource does not support.")
        if budgets:
            _check_budget(store, ns, budgets[0])
    store.gc.delete(pods_t, ns, name, eviction.get("deleteOptions") or {})
    return errors.status_body(201)


def _check_budget(store: Store, ns: str, pdb: Obj) -> None:
    spec = pdb.get("spec") or {}
    sel = selectors.from_object(spec.get("selector"))
    covered = [p for p in store.buckets[("", "pods")].iterate(ns)
               if sel.matches(p["metadata"].get("labels"))
               and not p["metadata"].get("deletionTimestamp")]
    expected = len(covered)
    healthy = sum(1 for p in covered if _running(p))
    if "maxUnavailable" in spec:
        desired = expected - _scaled(spec["maxUnavailable"], expected)
    else:
        desired = _scaled(spec.get("minAvailable", 1), expected)
    if healthy - desired >= 1:
        return
    budget = meta.name_of(pdb)
    raise errors.ApiError(
        429, "Cannot evict pod as it would violate the pod's disruption budget.",
        details={"causes": [{"reason": "DisruptionBudget",
                             "message": f"The disruption budget {budget} needs {desired} "
                                        f"healthy pods and has {healthy} currently"}]},
        retry_after=10)
