"""Generated workloads: a day of mixed batch and AI work on a large cluster.

``day(nodes=1000, pods=10000)`` builds the plain data of a workload file (so it goes
through the same schema checks as a hand-written one, and ``--write-workload`` can save
it): a CPU pool and a tainted GPU pool (one node in ten), and jobs arriving over the
first 20 hours of a day until the pod budget is spent:

* Spark-like applications (about half the jobs): a driver plus 1 to 63 executors in two
  task groups, Soft style, executors created 5 s after the driver starts;
* PodGroups (MPI, distributed training, about a fifth): 2 to 64 members, Strict; one in
  four on the GPU pool, tolerating its taint;
* plain pods (the rest): 1 to 8 independent pods, no gang.

Clusters above :data:`AI_SCALE` nodes (5,000, Kubernetes' documented limit for one
cluster, past which the clusters are AI ones: GKE's 65,000 nodes, EKS's 100,000) are laid
out and loaded as such:

* the GPU pool is about half the nodes, in whole blocks of :data:`RACKS_PER_BLOCK` racks
  of :data:`RACK_NODES` nodes (``topology: {blocks, racks}``: 7 blocks, 140 racks,
  8,960 nodes of 20,000; 25 blocks, 500 racks, 32,000 of 65,000); the CPU pool the rest;
* training gangs of AI size join the jobs (about one job in 150, so about a third of
  the pods): PodGroups of :data:`AI_GANGS` members (256 to 2,048), each member half a GPU
  node (4 GPUs), a fifth of them asking for one block (``topology.required``), which
  every size can have (2,048 members fill 1,024 of a block's 1,280 nodes).

Smaller clusters get exactly the workload they always got (the same seed, the same
file), so figures measured on them stay comparable.

A third of the jobs arrive in a nightly burst during the first hour, which keeps the
cluster full for hours; the rest spread over the day. Pods run for a median of 3 hours
(5 minutes to 10 hours). The clock stops at 24 h (``settings.until``). The same seed always
gives the same workload.
"""

from __future__ import annotations

import math
import random
from typing import Any

from gangsched.translate.topology import BLOCK

Entry = dict[str, Any]
"""One entry of the workload file (plain YAML data)."""

DAY = 86_400.0
ARRIVALS_UNTIL = 20 * 3600.0
AI_SCALE = 5000
"""Clusters of more nodes than this get racks, blocks and AI-size gangs."""
RACK_NODES = 64
RACKS_PER_BLOCK = 20
BLOCK_NODES = RACK_NODES * RACKS_PER_BLOCK
AI_GANGS = (256, 512, 1024, 2048)
"""Members of a training gang at AI scale."""
AI_SHARE = 1 / 150
"""The chance that a job of an AI-scale day is a training gang of :data:`AI_GANGS`."""
AI_BLOCK_SHARE = 0.2
"""Of the training gangs, the share that asks for one block."""


def day(nodes: int = 1000, pods: int = 10_000, *, seed: int = 1) -> Entry:
    """A day of work as workload-file data (see the module docstring)."""
    rng = random.Random(seed)
    large = nodes > AI_SCALE
    gpu_pool: Entry = {"pool": "gpu", "cpu": 32, "memory": "256Gi", "gpu": 8,
                       "labels": {"pool": "gpu"},
                       "taints": [{"key": "nvidia.com/gpu", "value": "present",
                                   "effect": "NoSchedule"}]}
    if large:
        blocks = max(1, nodes // 2 // BLOCK_NODES)
        gpu_nodes = blocks * BLOCK_NODES
        gpu_pool["topology"] = {"blocks": blocks, "racks": RACKS_PER_BLOCK}
    else:
        gpu_nodes = max(1, nodes // 10)
    cpu_nodes = max(1, nodes - gpu_nodes)
    data: Entry = {
        "settings": {"until": DAY, "gcAfterSeconds": 120},
        "nodes": [
            {"pool": "cpu", "count": cpu_nodes, "cpu": 16, "memory": "64Gi",
             "labels": {"pool": "cpu"}},
            {**gpu_pool, "count": gpu_nodes},
        ],
        "queues": [
            {"name": "batch", "sortPolicy": "fifo"},
            {"name": "ml", "sortPolicy": "fifo"},
            {"name": "adhoc", "sortPolicy": "priority"},
        ],
    }
    apps: list[Entry] = []
    groups: list[Entry] = []
    plain: list[Entry] = []
    left = pods
    while left > 0:
        kind = rng.random()
        # A third of the jobs come in the nightly burst of the first hour; the rest over
        # the day.
        at = round(rng.uniform(0, 3600.0) if rng.random() < 0.33
                   else rng.uniform(0, ARRIVALS_UNTIL))
        if large and left >= AI_GANGS[0] and rng.random() < AI_SHARE:
            members = rng.choice([size for size in AI_GANGS if size <= left])
            groups.append(_training(len(groups), at, members, rng))
            left -= members
        elif kind < 0.5:
            executors = max(1, min(left - 1, rng.choice([1, 2, 3, 4, 7, 8, 15, 16, 31, 63])))
            apps.append(_spark(len(apps), at, executors, rng))
            left -= 1 + executors
        elif kind < 0.7:
            members = max(2, min(left, rng.choice([2, 4, 4, 8, 8, 16, 32, 64])))
            groups.append(_group(len(groups), at, members, rng))
            left -= members
        else:
            count = min(left, rng.randint(1, 8))
            plain.append(_plain(len(plain), at, count, rng))
            left -= count
    data["applications"] = apps
    data["podGroups"] = groups
    data["pods"] = plain
    return data


def _duration(rng: random.Random) -> float:
    """Seconds: a median of 3 hours, between 5 minutes and 10 hours."""
    return round(min(max(rng.lognormvariate(math.log(3 * 3600.0), 0.8), 300.0), 10 * 3600.0))


def _spark(index: int, at: float, executors: int, rng: random.Random) -> Entry:
    cpu = rng.choice([2, 4, 8])
    memory = f"{cpu * 4}Gi"
    length = _duration(rng)
    return {
        "name": f"spark-{index}", "submitAt": at, "queue": "batch", "style": "Soft",
        "placeholderTimeoutSeconds": 1800, "driverTimeoutSeconds": 1800, "maxRetries": 1,
        "taskGroups": [
            {"name": "driver", "minMember": 1, "minResource": {"cpu": 1, "memory": "4Gi"}},
            {"name": "executor", "minMember": executors,
             "minResource": {"cpu": cpu, "memory": memory}},
        ],
        "pods": [
            {"taskGroup": "driver", "count": 1, "duration": length + 30, "cpu": 1,
             "memory": "4Gi"},
            {"taskGroup": "executor", "count": executors, "after": "driver", "delay": 5,
             "duration": length, "cpu": cpu, "memory": memory},
        ],
    }


def _group(index: int, at: float, members: int, rng: random.Random) -> Entry:
    gpu = rng.random() < 0.25 and members <= 16
    pod: Entry = {"count": members, "duration": _duration(rng)}
    if gpu:
        pod.update({"cpu": 8, "memory": "64Gi", "gpu": rng.choice([1, 2, 4]),
                    "nodeSelector": {"pool": "gpu"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]})
    else:
        pod.update({"cpu": rng.choice([4, 8, 16]), "memory": "32Gi"})
    return {"name": f"{'train' if gpu else 'mpi'}-{index}", "submitAt": at,
            "queue": "ml", "minMember": members, "mode": "Strict",
            "scheduleTimeoutSeconds": 3600, "pods": [pod]}


def _training(index: int, at: float, members: int, rng: random.Random) -> Entry:
    """A training gang of AI size: each member half a GPU node; a fifth ask for one
    block."""
    entry: Entry = {
        "name": f"llm-{index}", "submitAt": at, "queue": "ml", "minMember": members,
        "mode": "Strict", "scheduleTimeoutSeconds": 3600,
        "pods": [{"count": members, "duration": _duration(rng), "cpu": 16,
                  "memory": "128Gi", "gpu": 4, "nodeSelector": {"pool": "gpu"},
                  "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]}]}
    if rng.random() < AI_BLOCK_SHARE:
        entry["topology"] = {"required": BLOCK}
    return entry


def _plain(index: int, at: float, count: int, rng: random.Random) -> Entry:
    cpu = rng.choice([1, 2, 4, 8])
    return {"name": f"task-{index}", "submitAt": at, "queue": "adhoc", "count": count,
            "duration": _duration(rng), "cpu": cpu, "memory": f"{cpu * 2}Gi",
            "nodeSelector": {"pool": "cpu"}}
