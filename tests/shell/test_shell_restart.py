"""Recovery: the operator is killed mid-gang and a new one takes over from the cluster.

Each test kills the operator at a chosen point of a gang's life, starts a *new* operator
against the same API server and checks what the issue asks of a restart: nothing is
bound twice (no binding is answered 409, none succeeds twice), no placeholder is
duplicated (their names are deterministic) or left behind, the placeholder timer goes on
from ``status.placeholderTimerStart``, and the gang finishes.
"""

from __future__ import annotations

import collections
import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched.core.values.model import SchedulerConfig
from gangsched.translate import times
from shellkit import (
    KUBELETS,
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    assert_bound_at_most_once,
    bind_answers,
    events,
    group,
    new_cluster,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

PARTIAL = SchedulerConfig(overcommit_factor=100.0)
"""Enqueue admits gangs the nodes cannot hold: for restarts mid-reservation."""

pytestmark = pytest.mark.asyncio

GANG = [group("ps", 1), group("worker", 4, cpu="2")]


@pytest.fixture(params=KUBELETS)
async def cluster(fake_api_factory, tmp_path: pathlib.Path, request):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4", timing=request.param)


def app_status(api: FakeApiServer, name: str = "train") -> dict[str, Any]:
    return status_of(api, "applications", "default", name)


def bound(api: FakeApiServer, names: list[str]) -> bool:
    found = {p["metadata"]["name"]: p for p in pods_in(api)}
    return all(name in found and found[name]["spec"].get("nodeName") for name in names)


def real_pods(api: FakeApiServer) -> None:
    api.create(pod("ps-0", labels={"gangsched.io/app": "train"},
                   annotations={"gangsched.io/task-group": "ps"}))
    for i in range(4):
        api.create(pod(f"worker-{i}", cpu="2", labels={"gangsched.io/app": "train"},
                       annotations={"gangsched.io/task-group": "worker"}))


REAL = ["ps-0", *(f"worker-{i}" for i in range(4))]


async def finish_gang(api: FakeApiServer, op: OperatorUnderTest) -> None:
    """The real pods run to completion; the app goes Waiting, then Completed."""
    for name in REAL:
        api.finish_pod("default", name)
    await wait_for(lambda: app_status(api).get("state") == "Waiting", what="Waiting")
    await op.advance(31)
    await wait_for(lambda: app_status(api).get("state") == "Completed", what="Completed")


def check_no_duplicates(api: FakeApiServer) -> None:
    assert_bound_at_most_once(api)
    # One placeholder per member over both lives of the operator (the test creates the
    # real pods in-process, so every pod created over HTTP is a placeholder).
    creates = [e for e in api.request_log if e.method == "POST"
               and e.path_qs.split("?")[0].endswith("/namespaces/default/pods")]
    assert len([e for e in creates if e.status == 201]) == 5, creates


async def test_restart_with_placeholders_created_but_not_all_bound(cluster) -> None:  # type: ignore[no-untyped-def]
    """Room for 2 of 4 workers: killed while the gang is half reserved; a node is added
    while no operator runs; the new operator finishes the reservation and the gang."""
    api, kubeconfig = cluster
    api.delete("nodes", None, "node-2")
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: len(placeholders(api)) == 5, what="5 placeholders created")
    await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")]) == 4,
                   what="4 of 5 placeholders bound")
    await wait_for(lambda: app_status(api).get("reserved") == "4/5", what="reserved 4/5")
    before = {p["metadata"]["name"] for p in placeholders(api)}
    await op.kill()

    add_node(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-2"},
                "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                           "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    try:
        await wait_for(lambda: app_status(api).get("reserved") == "5/5", what="reserved 5/5")
        assert {p["metadata"]["name"] for p in placeholders(api)} == before
        real_pods(api)
        await wait_for(lambda: bound(api, REAL), what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        await wait_for(lambda: app_status(api).get("state") == "Running", what="Running")
        await finish_gang(api, op)
        check_no_duplicates(api)
    finally:
        await op.kill()


async def test_restart_after_reservation_with_real_pods_created_meanwhile(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: app_status(api).get("reserved") == "5/5", what="reserved 5/5")
    await op.settle()
    await op.kill()

    real_pods(api)  # the job's pods arrive while no operator runs
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        await wait_for(lambda: bound(api, REAL), what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="no placeholder left")
        await wait_for(lambda: app_status(api).get("state") == "Running", what="Running")
        await op.settle()  # Events follow the binds (they wait for the binds under way)
        replaced = {e["regarding"]["name"] for e in events(api, reason="PlaceholderReplaced")}
        assert replaced == set(REAL)
        await finish_gang(api, op)
        check_no_duplicates(api)
    finally:
        await op.kill()


async def test_restart_while_the_first_lists_fail(cluster) -> None:  # type: ignore[no-untyped-def]
    """The new operator's start-up lists fail at first: it tries them again before it
    schedules anything, and then recognises the reserved gang as it is."""
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: app_status(api).get("reserved") == "5/5", what="reserved 5/5")
    await op.kill()

    apps = api.faults.add(method="GET", path_regex=r"/applications\?limit=", times=2,
                          status=500)
    pods = api.faults.add(method="GET", path_regex=r"^/api/v1/pods\?limit=", times=2,
                          drop_connection=True)
    op = await OperatorUnderTest(api, kubeconfig, clock, api_retry_initial=0.05).start()
    try:
        assert (apps.hits, pods.hits) == (2, 2)
        real_pods(api)
        await wait_for(lambda: bound(api, REAL), what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="no placeholder left")
        check_no_duplicates(api)
    finally:
        await op.kill()


async def test_restart_mid_swap(cluster) -> None:  # type: ignore[no-untyped-def]
    """Killed with the ps and two worker placeholders deleted but their real pods not yet
    bound (their binds fail), and the other two placeholders' deletions failing."""
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: app_status(api).get("reserved") == "5/5", what="reserved 5/5")
    ph_names = sorted(p["metadata"]["name"] for p in placeholders(api))
    workers = [n for n in ph_names if "-worker-" in n]
    api.faults.add(method="POST", path_regex=r"/pods/(ps|worker)-\d/binding", status=500,
                   message="etcd is sad")
    kept = api.faults.add(method="DELETE", path_regex="|".join(workers[2:]), status=503)
    real_pods(api)
    await wait_for(lambda: len(placeholders(api)) == 2, what="3 placeholders deleted")
    await wait_for(lambda: kept.hits >= 2, what="2 deletions refused")
    await wait_for(lambda: len(bind_answers(api)) - 5 >= 3, what="3 real binds refused")
    await op.settle()
    assert not any(bound(api, [name]) for name in REAL)
    await op.kill()

    api.faults.clear()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        await wait_for(lambda: bound(api, REAL), what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="no placeholder left")
        await wait_for(lambda: app_status(api).get("state") == "Running", what="Running")
        await finish_gang(api, op)
        assert_bound_at_most_once(api)
        # The nodes hold exactly the gang: nothing is counted twice.
        per_node = collections.Counter(p["spec"]["nodeName"] for p in pods_in(api))
        assert sum(per_node.values()) == 5
    finally:
        await op.kill()


async def test_placeholder_timer_survives_restart(cluster) -> None:  # type: ignore[no-untyped-def]
    """A Hard gang that cannot be reserved times out at its original deadline, although
    the operator was restarted half-way through the timeout."""
    api, kubeconfig = cluster
    clock = FakeClock()
    start = clock.now
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    api.create(application("big", [group("worker", 8, cpu="2")], style="Hard", timeout=100))
    await wait_for(lambda: app_status(api, "big").get("reserved") == "6/8", what="6/8 reserved")
    timer = app_status(api, "big").get("placeholderTimerStart")
    assert times.parse_time(timer) == pytest.approx(start, abs=1)
    await op.advance(60)
    await op.kill()

    clock.advance(5)  # the restart takes a while
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    try:
        await op.settle()
        status = app_status(api, "big")
        assert status["state"] == "Accepted"
        assert status["placeholderTimerStart"] == timer
        await op.advance(30)  # start + 95: not yet
        assert app_status(api, "big")["state"] == "Accepted"
        await op.advance(6)  # start + 101: the original deadline has passed
        await wait_for(lambda: app_status(api, "big").get("state") == "Killed", what="Killed")
        assert app_status(api, "big")["reason"] == "PlaceholderTimeout"
        assert "6/8 members reserved" in app_status(api, "big")["message"]
        await wait_for(lambda: not placeholders(api), what="placeholders released")
        assert_bound_at_most_once(api)
    finally:
        await op.kill()


# --- the last status write lost -----------------------------------------------------------
#
# A crash can always come before the batched status write that follows a change. These
# cases make that certain (the Application's status cannot be written before the kill)
# and check that the new operator still finishes the gang cleanly from the pods alone.


async def test_restart_after_a_swap_whose_status_was_lost(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    api.faults.add(method="PATCH", path_regex="applications/train/status", status=503)
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")]) == 5,
                   what="5 placeholders bound")
    api.create(pod("ps-0", labels={"gangsched.io/app": "train"},
                   annotations={"gangsched.io/task-group": "ps"}))
    await wait_for(lambda: bound(api, ["ps-0"]), what="ps-0 swapped in")
    await op.settle()
    await op.kill()

    api.faults.clear()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        for i in range(4):
            api.create(pod(f"worker-{i}", cpu="2", labels={"gangsched.io/app": "train"},
                           annotations={"gangsched.io/task-group": "worker"}))
        await wait_for(lambda: bound(api, REAL), what="real pods bound")
        await op.settle(5)
        assert [p["metadata"]["name"] for p in placeholders(api)] == []
    finally:
        await op.kill()


async def test_timer_of_a_gang_whose_status_was_lost(cluster) -> None:  # type: ignore[no-untyped-def]
    """With its start lost, the timer counts from the restart: late, never early."""
    api, kubeconfig = cluster
    clock = FakeClock()
    api.faults.add(method="PATCH", path_regex="applications/big/status", status=503)
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    api.create(application("big", [group("worker", 8, cpu="2")], style="Hard", timeout=100))
    await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")]) == 6,
                   what="6 of 8 placeholders bound")
    await op.settle()
    await op.kill()

    api.faults.clear()
    op = await OperatorUnderTest(api, kubeconfig, clock, core=PARTIAL).start()
    try:
        await op.settle()
        await op.advance(99)
        assert app_status(api, "big").get("state") == "Accepted"
        await op.advance(2)
        await wait_for(lambda: app_status(api, "big").get("state") == "Killed", what="Killed")
        await wait_for(lambda: not placeholders(api), what="placeholders released")
    finally:
        await op.kill()


async def test_placeholders_are_hardened_and_recognised_after_a_restart(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "batch-high"}, "value": 1000})
    for i in range(3):
        api.patch("nodes", None, f"node-{i}", {"metadata": {"labels": {"pool": "gpu"}}})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}
    workers = {**group("worker", 2, cpu="1500m", memory="2Gi"),
               "nodeSelector": {"pool": "gpu"}, "affinity": affinity,
               "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
               "labels": {"team": "ml"}, "annotations": {"cost-center": "42"}}
    app = application("train", [workers])
    app["spec"]["priorityClassName"] = "batch-high"
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock,
                                 placeholder_image="mirror.example/pause:3.10").start()
    api.create(app)
    await wait_for(lambda: app_status(api).get("reserved") == "2/2", what="reserved")
    owner = api.get("applications", "default", "train")["metadata"]
    found = sorted(placeholders(api), key=lambda p: p["metadata"]["name"])
    assert [p["metadata"]["name"] for p in found] == [
        f"train-worker-{p['metadata']['name'].split('-')[2]}-{i}" for i, p in enumerate(found)]
    for index, ph in enumerate(found):
        meta, spec = ph["metadata"], ph["spec"]
        assert meta["labels"] == {"team": "ml", "gangsched.io/app": "train",
                                  "gangsched.io/placeholder": "true",
                                  "app.kubernetes.io/managed-by": "gangsched"}
        assert meta["annotations"] == {"cost-center": "42", "gangsched.io/task-group": "worker",
                                       "gangsched.io/member-index": str(index),
                                       "gangsched.io/app-name": "train"}
        assert meta["ownerReferences"] == [{
            "apiVersion": "gangsched.io/v1alpha1", "kind": "Application", "name": "train",
            "uid": owner["uid"], "controller": True, "blockOwnerDeletion": True}]
        (container,) = spec["containers"]
        assert container["image"] == "mirror.example/pause:3.10"
        assert container["resources"] == {"requests": {"cpu": "1500m", "memory": "2Gi"},
                                          "limits": {"cpu": "1500m", "memory": "2Gi"}}
        security = container["securityContext"]
        assert security["runAsNonRoot"] is True and security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert (spec["restartPolicy"], spec["terminationGracePeriodSeconds"],
                spec["automountServiceAccountToken"]) == ("Never", 5, False)
        assert spec["nodeSelector"] == {"pool": "gpu"}
        assert spec["affinity"] == affinity
        assert {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
        assert (spec["priorityClassName"], spec["priority"]) == ("batch-high", 1000)
        assert spec["schedulerName"] == "gangsched"
        assert ph["status"]["qosClass"] == "Guaranteed"
    await op.kill()

    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        await op.settle(5)
        assert app_status(api)["reserved"] == "2/2"
        assert sorted(p["metadata"]["name"] for p in placeholders(api)) == [
            p["metadata"]["name"] for p in found]
        real = pod("worker-0", cpu="1500m", memory="2Gi", labels={"gangsched.io/app": "train"},
                   annotations={"gangsched.io/task-group": "worker"})
        real["spec"]["nodeSelector"] = {"pool": "gpu"}
        api.create(real)
        await wait_for(lambda: bound(api, ["worker-0"]) and len(placeholders(api)) == 1,
                       what="the real pod takes a recognised placeholder")
        # Events follow the binds (they wait for the binds under way).
        await wait_for(lambda: events(api, reason="PlaceholderReplaced", regarding="worker-0"),
                       what="PlaceholderReplaced")
        creates = [e for e in api.request_log if e.method == "POST"
                   and e.path_qs.split("?")[0].endswith("/namespaces/default/pods")]
        assert len(creates) == 2
    finally:
        await op.kill()


async def test_a_graceful_stop_writes_the_last_status(cluster) -> None:  # type: ignore[no-untyped-def]
    """Statuses are batched (here: at most one write per 60 s); stopping (SIGTERM, a
    rollout) writes what is pending, so the next operator starts from it."""
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock, status_interval=60).start()
    api.create(application("train", GANG, timeout=600))
    await wait_for(lambda: app_status(api).get("state"), what="a first status")
    await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")]) == 5,
                   what="5 placeholders bound")
    await op.settle()
    assert app_status(api).get("reserved") != "5/5"  # not written yet
    await op.kill()
    status = app_status(api)
    assert (status["reserved"], status["state"]) == ("5/5", "Accepted")
    assert status["placeholderTimerStart"]
