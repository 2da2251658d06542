"""``simulate --explain JOB``: a simulated job as ``gangsched explain`` shows a real one.

The explanation is the operator's own formatting (``gangsched.shell.explain``, handed in
by the CLI); this module builds what it reads from the run as it ended: the object with
the status the operator would have written (:mod:`gangsched.translate.statuses`), the
Events the core recorded on it, and its pods with their PodScheduled reasons and
resource claims; :func:`claims` the ResourceClaims of the simulated cluster, for the
devices of each member. Simulated time counts from the epoch (t=0 is
1970-01-01T00:00:00Z).
"""

from __future__ import annotations

from typing import Any

from gangsched.core.values.decisions import SetAppStatus, SetPodGroupStatus
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.sim.backends import GangschedBackend
from gangsched.sim.engine import RunOutput
from gangsched.sim.workload import Job, JobKind
from gangsched.translate import device_claims, labels, render, statuses, times

Obj = dict[str, Any]


def objects(out: RunOutput, name: str) -> tuple[Obj, list[Obj], list[Obj]]:
    """(object, events, pods) of the job ``name`` as the run left them. A job that is not
    a gang (plain pods), or a run not made by the core, gives an object without status;
    KeyError for a job the workload does not have."""
    run = next((r for r in out.jobs if r.job.name == name), None)
    if run is None:
        raise KeyError(name)
    job = run.job
    key = run.key
    backend = out.backend if isinstance(out.backend, GangschedBackend) else None
    kind = "PodGroup" if job.kind is JobKind.POD_GROUP else "Application"
    obj: Obj = {"kind": kind, "metadata": {"namespace": job.namespace, "name": job.name},
                "spec": _spec(job), "status": {}}
    if backend is None:
        return obj, [], []
    world = backend.world
    decided: SetAppStatus | SetPodGroupStatus | None = (
        world.group_status.get(GroupKey(key)) if kind == "PodGroup"
        else world.app_status.get(AppKey(key)))
    if isinstance(decided, SetAppStatus):
        obj["status"] = statuses.app_status_body(decided, now=out.end, generation=1,
                                                 old_status=None)
    elif isinstance(decided, SetPodGroupStatus):
        obj["status"] = statuses.podgroup_status_body(decided, now=out.end, generation=1,
                                                      old_status=None)
    events = [{"eventTime": times.format_micro_time(t), "type": d.type.value,
               "reason": d.reason, "note": d.message}
              for t, d in backend.events.get(key, [])]
    pods: list[Obj] = []
    for pod in world.pods.values():
        if (pod.app or pod.pod_group) != key:
            continue
        pending = world.pending_reasons.get(pod.uid)
        conditions = [] if pod.node_name or pending is None else [
            render.pod_scheduled_condition(pending, now=out.end)]
        spec: Obj = {"nodeName": pod.node_name} if pod.node_name else {}
        if pod.volumes.resource_claims:
            spec["resourceClaims"] = [{"name": claim.removeprefix(f"{pod.name}-"),
                                       "resourceClaimName": claim}
                                      for claim in pod.volumes.resource_claims]
        pods.append({
            "metadata": {"name": pod.name, "labels": {labels.LABEL_PLACEHOLDER: "true"}
                         if pod.placeholder else {}},
            "spec": spec,
            "status": {"conditions": conditions},
        })
    return obj, events, pods


def claims(out: RunOutput) -> list[Obj]:
    """The ResourceClaims of the simulated cluster as the run left them, as the API
    returns them (none for a run not made by the core)."""
    if not isinstance(out.backend, GangschedBackend):
        return []
    found: list[Obj] = []
    for claim in out.backend.world.claims.claims.values():
        status: Obj = {}
        if claim.allocation is not None:
            status["allocation"] = device_claims.allocation_to_k8s(claim.allocation)
        if claim.reserved_for:
            status["reservedFor"] = [{"resource": r.resource, "name": r.name, "uid": r.uid}
                                     for r in claim.reserved_for]
        found.append({"metadata": {"namespace": claim.namespace, "name": claim.name},
                      "status": status})
    return found


def _spec(job: Job) -> Obj:
    if job.group is not None:
        group = job.group
        return {"minMember": group.min_member, "mode": group.mode.value, "queue": group.queue,
                "scheduleTimeoutSeconds": group.schedule_timeout}
    if job.app is not None:
        policy = job.app.policy
        return {"queue": job.app.queue, "schedulingPolicy": {
            "style": policy.style.value,
            "placeholderTimeoutSeconds": policy.placeholder_timeout}}
    return {"queue": job.queue}
