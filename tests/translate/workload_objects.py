"""Builders for the Workload API's objects (``scheduling.k8s.io``), shaped as Kubernetes 1.36
makes them.

:func:`job_objects` gives what the Job controller creates for a Job with
``spec.scheduling`` when the ``WorkloadWithJob`` feature gate is on
(``pkg/controller/job/job_scheduling_manager.go``): a Workload ``<job>-<hash>`` with one
PodGroupTemplate ``<job>-pgt-0`` and ``spec.controllerRef`` to the Job, controller-owned by
the Job; a PodGroup ``<workload>-<template>-<hash>`` with a copy of the template's policy
and constraints, controller-owned by the Job and owned (not as controller) by the
Workload, both annotated as managed by the Job controller; and the Job's pods, owned by
the Job, with ``spec.schedulingGroup.podGroupName`` naming that PodGroup.
"""

from __future__ import annotations

import copy
from typing import Any

API_VERSION = "scheduling.k8s.io/v1alpha2"
MANAGED_BY = "batch.kubernetes.io/managed-by"  # the Job controller's annotation key
JOB_CONTROLLER = "kubernetes.io/job-controller"


def gang(min_count: int) -> dict[str, Any]:
    return {"gang": {"minCount": min_count}}


BASIC: dict[str, Any] = {"basic": {}}


def podgroup(name: str = "pg", namespace: str = "default", *,
             policy: dict[str, Any] | None = None, topology: str | None = None,
             api_version: str = API_VERSION, **meta: Any) -> dict[str, Any]:
    """A PodGroup with ``policy`` (default: a gang of 4) and, given ``topology``, one
    topology constraint on that key."""
    spec: dict[str, Any] = {"schedulingPolicy": copy.deepcopy(policy or gang(4))}
    if topology is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {"apiVersion": api_version, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace, **meta}, "spec": spec}


def member(name: str, group: str, *, cpu: str = "1", namespace: str = "default",
           scheduler: str = "gangsched", uid: bool = True) -> dict[str, Any]:
    """A pending pod whose ``spec.schedulingGroup`` names PodGroup ``group``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = f"uid-{name}"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"schedulerName": scheduler, "schedulingGroup": {"podGroupName": group},
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def job_objects(job: str, job_uid: str, *, parallelism: int, cpu: str,
                min_count: int | None = None, namespace: str = "default",
                scheduler: str = "gangsched") -> tuple[dict[str, Any], dict[str, Any],
                                                       list[dict[str, Any]]]:
    """The Workload, PodGroup and ``parallelism`` pods the Job controller creates for Job
    ``job`` with a gang policy (``minCount`` defaults to the parallelism, as there)."""
    count = parallelism if min_count is None else min_count
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": job_uid,
             "controller": True, "blockOwnerDeletion": True}
    workload_name = f"{job}-3kfbw8x2"  # <job>-<hash of the Job's uid>
    template = f"{job}-pgt-0"
    annotations = {MANAGED_BY: JOB_CONTROLLER}
    workload = {
        "apiVersion": API_VERSION, "kind": "Workload",
        "metadata": {"name": workload_name, "namespace": namespace,
                     "ownerReferences": [owner], "annotations": dict(annotations)},
        "spec": {"controllerRef": {"apiGroup": "batch", "kind": "Job", "name": job},
                 "podGroupTemplates": [{"name": template, "schedulingPolicy": gang(count)}]},
    }
    group_name = f"{workload_name}-{template}-9d7c5f6b"
    group = {
        "apiVersion": API_VERSION, "kind": "PodGroup",
        "metadata": {"name": group_name, "namespace": namespace,
                     "annotations": dict(annotations),
                     "ownerReferences": [owner, {"apiVersion": API_VERSION, "kind": "Workload",
                                                 "name": workload_name, "uid": ""}]},
        "spec": {"podGroupTemplateRef": {"workload": {"workloadName": workload_name,
                                                      "podGroupTemplateName": template}},
                 "schedulingPolicy": gang(count)},
    }
    pods = []
    for index in range(parallelism):
        pod = member(f"{job}-{index}-x{index}", group_name, cpu=cpu, namespace=namespace,
                     scheduler=scheduler, uid=False)
        pod["metadata"]["labels"] = {"batch.kubernetes.io/job-name": job,
                                     "batch.kubernetes.io/controller-uid": job_uid}
        pod["metadata"]["ownerReferences"] = [dict(owner)]
        pods.append(pod)
    return workload, group, pods
