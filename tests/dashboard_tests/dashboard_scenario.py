"""A small cluster with a gang held by its queue's quota, shared by the dashboard's tests.

Three nodes of 4 cpu. Queue ``team`` may use 4 cpu: ``first`` (3 x 1 cpu) is reserved,
``second`` (2 x 1 cpu) is held by the quota (``QueueQuota``, headroom 1 cpu) until the
quota is raised (:func:`raise_quota`), when its two placeholders bind. ``solo``, in the
namespace ``research`` and the queue ``default``, is reserved at once.
"""

from __future__ import annotations

import pathlib
import socket
from typing import Any

from fakeapi import FakeApiServer
from shellkit import application, group, new_cluster, status_of, wait_for

CRD = "gangsched.io/v1alpha1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def cluster(factory: Any, tmp_path: pathlib.Path) -> tuple[FakeApiServer, pathlib.Path]:
    api, kubeconfig = await new_cluster(factory, tmp_path, nodes=3)
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "research"}})
    api.create({"apiVersion": CRD, "kind": "Queue", "metadata": {"name": "team"},
                "spec": {"max": {"cpu": "4"}, "guaranteed": {"cpu": "2"}}})
    return api, kubeconfig


def reserved(api: FakeApiServer, name: str, namespace: str = "default") -> str:
    return str(status_of(api, "applications", namespace, name).get("reserved") or "")


def blocking(api: FakeApiServer, name: str) -> str:
    for found in status_of(api, "applications", "default", name).get("taskGroups") or []:
        return str((found.get("blockingReason") or {}).get("reason", ""))
    return ""


async def submit(api: FakeApiServer) -> None:
    """The three gangs, ``second`` once ``first`` holds its room."""
    api.create(application("first", [group("w", 3)], queue="team"))
    api.create(application("solo", [group("w", 1)], namespace="research"))
    await wait_for(lambda: reserved(api, "first") == "3/3", what="first reserved")
    api.create(application("second", [group("w", 2)], queue="team"))
    await wait_for(lambda: blocking(api, "second") == "QueueQuota", what="second held")
    await wait_for(lambda: reserved(api, "solo", "research") == "1/1", what="solo reserved")


def raise_quota(api: FakeApiServer) -> None:
    api.patch("queues", None, "team", {"spec": {"max": {"cpu": "8"}}})
