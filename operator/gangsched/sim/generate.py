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

A third of the jobs arrive in a nightly burst during the first hour, which keeps the
cluster full for hours; the rest spread over the day. Pods run for a median of 3 hours
(5 minutes to 10 hours). The clock stops at 24 h (``settings.until``). The same seed always
gives the same workload.
"""

from __future__ import annotations

import math
import random
from typing import Any

Entry = dict[str, Any]
"""One entry of the workload file (plain YAML data)."""

DAY = 86_400.0
ARRIVALS_UNTIL = 20 * 3600.0


def day(nodes: int = 1000, pods: int = 10_000, *, seed: int = 1) -> Entry:
    """A day of work as workload-file data (see the module docstring)."""
    rng = random.Random(seed)
    gpu_nodes = max(1, nodes // 10)
    cpu_nodes = max(1, nodes - gpu_nodes)
    data: Entry = {
        "settings": {"until": DAY, "gcAfterSeconds": 120},
        "nodes": [
            {"pool": "cpu", "count": cpu_nodes, "cpu": 16, "memory": "64Gi",
             "labels": {"pool": "cpu"}},
            {"pool": "gpu", "count": gpu_nodes, "cpu": 32, "memory": "256Gi", "gpu": 8,
             "labels": {"pool": "gpu"},
             "taints": [{"key": "nvidia.com/gpu", "value": "present",
                         "effect": "NoSchedule"}]},
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
        if kind < 0.5:
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


def _plain(index: int, at: float, count: int, rng: random.Random) -> Entry:
    cpu = rng.choice([1, 2, 4, 8])
    return {"name": f"task-{index}", "submitAt": at, "queue": "adhoc", "count": count,
            "duration": _duration(rng), "cpu": cpu, "memory": f"{cpu * 2}Gi",
            "nodeSelector": {"pool": "cpu"}}
