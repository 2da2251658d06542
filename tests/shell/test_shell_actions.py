"""The preempt and reclaim actions through the real operator and the fake API server.

Each test records every write the operator sends (method, path, body) and checks the API
calls each action makes: ``pods/<name>/eviction`` with a ``policy/v1`` Eviction and the
pod's UID as a precondition, DELETEs of placeholders, the status of the objects involved
and the Events that explain them.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.builders import make_pdb
from gangsched.core.values.model import SchedulerConfig
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    events,
    group,
    new_cluster,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio

GANGSCHED = "gangsched.io/v1alpha1"
Call = tuple[str, str, Any]


@contextmanager
def recorded(op: OperatorUnderTest) -> Iterator[list[Call]]:
    """Every write request the operator makes, as (method, path, body)."""
    runtime = op.runtime
    assert runtime is not None
    client = runtime.client
    original = client.request
    calls: list[Call] = []

    async def request(method: str, path: str, **kw: Any) -> Any:
        if method != "GET":
            calls.append((method, path, kw.get("body")))
        return await original(method, path, **kw)

    client.request = request  # type: ignore[method-assign]
    try:
        yield calls
    finally:
        client.request = original  # type: ignore[method-assign]


def evictions(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c[0] == "POST" and c[1].endswith("/eviction")]


def uid_of(api: FakeApiServer, name: str) -> str:
    found = api.try_get("pods", "default", name)
    assert found is not None, name
    return str(found["metadata"]["uid"])


def priority_classes(api: FakeApiServer) -> None:
    for name, value in (("low", 0), ("high", 1000)):
        api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": name}, "value": value})


def prioritised(name: str, priority_class: str, **kw: Any) -> dict[str, Any]:
    body = pod(name, **kw)
    body["spec"]["priorityClassName"] = priority_class
    return body


def gang_app(name: str, members: int, priority_class: str, queue: str = "default",
             cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": GANGSCHED, "kind": "Application",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"queue": queue, "priorityClassName": priority_class,
                 "taskGroups": [group("g", members, cpu=cpu)],
                 "schedulingPolicy": {"style": "Soft", "placeholderTimeoutSeconds": 900}},
    }


def members(name: str, count: int, priority_class: str) -> list[dict[str, Any]]:
    return [prioritised(f"{name}-{i}", priority_class, labels={"gangsched.io/app": name},
                        annotations={"gangsched.io/task-group": "g"}) for i in range(count)]


def bound(api: FakeApiServer, prefix: str) -> set[str]:
    return {p["metadata"]["name"] for p in pods_in(api)
            if p["metadata"]["name"].startswith(prefix) and p["spec"].get("nodeName")
            and not p["metadata"].get("deletionTimestamp")}


def statuses(calls: list[Call], name: str) -> list[dict[str, Any]]:
    return [c[2]["status"] for c in calls if c[0] == "PATCH"
            and c[1].endswith(f"/applications/{name}/status")]


async def start(fake_api_factory: Any, tmp_path: pathlib.Path, *, nodes: int = 1,
                core: SchedulerConfig | None = None) -> tuple[FakeApiServer, OperatorUnderTest]:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=nodes)
    priority_classes(api)
    settings = {"core": core} if core is not None else {}
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), **settings).start()
    return api, op


async def test_preempt_evicts_through_the_eviction_api_and_says_so(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        for i in range(4):
            api.create(prioritised(f"low-{i}", "low"))
            await wait_for(lambda i=i: bound(api, f"low-{i}"), what=f"low-{i} bound")
        uids = {f"low-{i}": uid_of(api, f"low-{i}") for i in range(4)}
        # Evictions take a moment, as a pod's termination does: the status shows it.
        api.faults.add(method="POST", path_regex=r"/eviction$", delay=0.3)
        with recorded(op) as calls:
            api.create(gang_app("hi", 2, "high"))
            for body in members("hi", 2, "high"):
                api.create(body)
            await wait_for(lambda: bound(api, "hi-") == {"hi-0", "hi-1"}, what="hi running")
            await op.settle()
        # One Eviction per victim (two of the four: no more than needed), policy/v1, with
        # the pod's UID as a precondition.
        victims = {c[1].split("/")[-2] for c in evictions(calls)}
        assert len(victims) == 2
        assert sorted((c[1], c[2]) for c in evictions(calls)) == sorted(
            (f"/api/v1/namespaces/default/pods/{name}/eviction",
             {"apiVersion": "policy/v1", "kind": "Eviction",
              "metadata": {"name": name, "namespace": "default"},
              "deleteOptions": {"preconditions": {"uid": uids[name]}}})
            for name in victims)
        assert bound(api, "low-") == set(uids) - victims
        # The Application said Preempting, with the victims, while they went.
        blocking = [g["blockingReason"] for s in statuses(calls, "hi")
                    for g in s.get("taskGroups") or []]
        preempting = [b for b in blocking if b["reason"] == "Preempting"]
        assert preempting[0]["details"]["victims"] == ", ".join(
            f"default/{name}" for name in sorted(victims))
        assert status_of(api, "applications", "default", "hi")["state"] == "Running"
        # Events: Preempted on each victim, Preempting on the preemptor.
        note = "evicted to make room for application default/hi (priority 1000) in queue default"
        assert {e["regarding"]["name"] for e in events(api, reason="Preempted")} == set(victims)
        assert {e["note"] for e in events(api, reason="Preempted")} == {note}
        (preempting_event,) = events(api, reason="Preempting", regarding="hi")
        assert preempting_event["note"].startswith("preempt: 2 pods are being evicted")
    finally:
        await op.kill()


async def test_a_gang_that_has_not_started_gives_up_its_placeholders_by_deletion(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(gang_app("low", 4, "low"))  # reserves the node, its pods never come
        await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")])
                       == 4, what="low reserved")
        held = {p["metadata"]["name"]: p["metadata"]["uid"] for p in placeholders(api)}
        with recorded(op) as calls:
            api.create(gang_app("hi", 2, "high"))
            for body in members("hi", 2, "high"):
                api.create(body)
            await wait_for(lambda: bound(api, "hi-") == {"hi-0", "hi-1"}, what="hi running")
            await op.settle()
        assert evictions(calls) == []  # our own placeholders: deleted, no Eviction
        deletes = {c[1].rsplit("/", 1)[1]: c[2] for c in calls if c[0] == "DELETE"}
        for name, uid in held.items():
            assert deletes[name]["preconditions"] == {"uid": uid}
        low = status_of(api, "applications", "default", "low")
        assert (low["state"], low["reserved"]) == ("Accepted", "0/4")
        (released,) = events(api, reason="Preempted", regarding="low")
        assert released["note"].startswith("the gang's reservation (4 placeholders) was "
                                           "released: evicted to make room for application "
                                           "default/hi (priority 1000)")
    finally:
        await op.kill()


async def test_a_disruption_budget_refusal_stops_the_preemption(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        for i in range(4):
            api.create(prioritised(f"web-{i}", "low", labels={"app": "web"}))
            await wait_for(lambda i=i: bound(api, f"web-{i}"), what=f"web-{i} bound")
        # Running first: the budget protects only healthy pods, and a pod still Pending
        # on its node is evicted without a budget check (the kubelet may lag under load).
        for i in range(4):
            await wait_for(lambda i=i: (api.get("pods", "default", f"web-{i}")
                                        .get("status") or {}).get("phase") == "Running",
                           what=f"web-{i} running")
        api.create(make_pdb("web", match_labels={"app": "web"}, min_available=4))
        with recorded(op) as calls:
            api.create(prioritised("urgent", "high"))
            await wait_for(lambda: events(api, reason="PreemptionFailed"),
                           what="PreemptionFailed")
            await op.settle()
        (victim,) = [c[1].split("/")[-2] for c in evictions(calls)]  # one, and refused
        assert len(bound(api, "web-")) == 4  # the budget held
        (failed,) = events(api, reason="PreemptionFailed", regarding="urgent")
        assert (f"evicting pod default/{victim} was refused (429, a PodDisruptionBudget "
                "forbids it)") in failed["note"]
        assert failed["note"].endswith("tries again in 30s")
        assert not bound(api, "urgent")
    finally:
        await op.kill()


async def test_a_budget_is_broken_by_deletion_only_when_nothing_else_makes_room(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    """kube-scheduler deletes a PDB-violating victim as a last resort. After the 429, the
    next attempt finds nothing else: the pod is DELETEd with its own grace period (no
    ``gracePeriodSeconds``, a UID precondition), and the waiting pod binds."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(prioritised("web-0", "low", cpu="4", labels={"app": "web"}))
        await wait_for(lambda: bound(api, "web-0"), what="web-0 bound")
        # Healthy first: the budget protects a Running pod (an unready one may go).
        await wait_for(lambda: (api.get("pods", "default", "web-0").get("status") or {})
                       .get("phase") == "Running", what="web-0 running")
        uid = uid_of(api, "web-0")
        api.create(make_pdb("web", match_labels={"app": "web"}, min_available=1))
        with recorded(op) as calls:
            api.create(prioritised("urgent", "high", cpu="2"))
            await wait_for(lambda: events(api, reason="PreemptionFailed"),
                           what="PreemptionFailed")
            await op.settle()
            assert bound(api, "web-0")
            await op.advance(31)
            op.wake()
            await wait_for(lambda: bound(api, "urgent"), what="urgent bound")
        deletes = [c for c in calls if c[0] == "DELETE"]
        assert [c[1] for c in deletes] == ["/api/v1/namespaces/default/pods/web-0"]
        assert deletes[0][2] == {"apiVersion": "v1", "kind": "DeleteOptions",
                                 "preconditions": {"uid": uid}}
        assert len(evictions(calls)) == 1  # the refused one
        notes = [e["note"] for e in events(api, reason="Preempted", regarding="web-0")]
        assert any("deleted past its PodDisruptionBudget" in note for note in notes), notes
    finally:
        await op.kill()


async def test_reclaim_takes_back_a_queues_share_from_another(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, op = await start(fake_api_factory, tmp_path, nodes=2)
    try:
        for name in ("a", "b"):
            api.create({"apiVersion": GANGSCHED, "kind": "Queue", "metadata": {"name": name},
                        "spec": {"weight": 1, "reclaimable": True}})
        for i in range(8):
            api.create(prioritised(f"a-{i}", "low", annotations={"gangsched.io/queue": "a"}))
            await wait_for(lambda i=i: bound(api, f"a-{i}"), what=f"a-{i} bound")
        with recorded(op) as calls:
            api.create(gang_app("job", 2, "low", queue="b", cpu="2"))
            api.create(pod("job-0", cpu="2", labels={"gangsched.io/app": "job"},
                           annotations={"gangsched.io/task-group": "g"}))
            api.create(pod("job-1", cpu="2", labels={"gangsched.io/app": "job"},
                           annotations={"gangsched.io/task-group": "g"}))
            await wait_for(lambda: bound(api, "job-") == {"job-0", "job-1"}, what="job running")
            await op.settle()
        # a keeps its deserved half (4 of 8 cpu): the 2-cpu placeholders need 4 cpu.
        assert len(evictions(calls)) == 4 and len(bound(api, "a-")) == 4
        reclaimed = events(api, reason="Reclaimed")
        assert len(reclaimed) == 4
        assert reclaimed[0]["note"] == (
            "evicted to make room for application default/job (priority 0) in queue b, below "
            "its deserved share (cpu 0 used of 4 deserved)")
        # (The queue's status is written after the cycle that counts the binds.)
        await wait_for(lambda: (status_of(api, "queues", None, "b").get("allocated") or {})
                       .get("cpu") == "4", what="queue b's status counting job's 4 cpu")
    finally:
        await op.kill()


async def test_a_pod_preempting_alone_is_nominated_on_the_node_where_room_is_made(
    fake_api_factory: Any, tmp_path: pathlib.Path
) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        for i in range(4):
            api.create(prioritised(f"low-{i}", "low"))
            await wait_for(lambda i=i: bound(api, f"low-{i}"), what=f"low-{i} bound")
        api.faults.add(method="POST", path_regex=r"/eviction$", delay=0.3)
        with recorded(op) as calls:
            api.create(prioritised("urgent", "high"))
            await wait_for(lambda: bound(api, "urgent"), what="urgent bound")
            await op.settle()
        nominations = [c for c in calls if c[0] == "PATCH"
                       and c[1].endswith("/pods/urgent/status")
                       and "nominatedNodeName" in (c[2] or {}).get("status", {})]
        assert [c[2]["status"]["nominatedNodeName"] for c in nominations] == ["node-0"]
        assert api.get("pods", "default", "urgent")["status"]["nominatedNodeName"] == "node-0"
    finally:
        await op.kill()
