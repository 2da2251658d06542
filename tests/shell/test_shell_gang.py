"""End-to-end through kopf and the runtime against the fake API server: one gang."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched.core.values.model import SchedulerConfig
from shellkit import (
    KUBELETS,
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    group,
    node,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture(params=KUBELETS)
async def cluster(fake_api_factory, tmp_path: pathlib.Path, request):  # type: ignore[no-untyped-def]
    api: FakeApiServer = await fake_api_factory(auto_run=True, timing=request.param)
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    for i in range(3):
        add_node(api, node(f"node-{i}", cpu="4", memory="16Gi"))
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


async def test_gang_reserves_then_swaps_and_completes(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        api.create(application("train", [group("ps", 1), group("worker", 4, cpu="2")],
                               style="Hard", timeout=120, waiting=30))
        def bound_placeholders() -> int:
            return len([p for p in placeholders(api) if p["spec"].get("nodeName")])

        await wait_for(lambda: bound_placeholders() == 5, what="5 placeholders bound")
        status = await wait_for(lambda: status_of(api, "applications", "default", "train")
                                .get("reserved") == "5/5" and status_of(api, "applications",
                                                                       "default", "train"),
                                what="status reserved 5/5")
        assert status["state"] == "Accepted"
        for ph in placeholders(api):
            spec = ph["spec"]
            assert spec["restartPolicy"] == "Never"
            assert spec["terminationGracePeriodSeconds"] == 5
            assert spec["automountServiceAccountToken"] is False
            assert ph["metadata"]["ownerReferences"][0]["kind"] == "Application"

        assert op.runtime is not None
        client = op.runtime.client
        sent = client.request
        deletes: list[object] = []

        async def request(method: str, path: str, **kwargs: Any) -> Any:
            if method == "DELETE":
                deletes.append(kwargs.get("body"))
            return await sent(method, path, **kwargs)

        client.request = request  # type: ignore[method-assign]
        api.create(pod("ps-0", labels={"gangsched.io/app": "train"},
                       annotations={"gangsched.io/task-group": "ps"}))
        for i in range(4):
            api.create(pod(f"worker-{i}", cpu="2", labels={"gangsched.io/app": "train"},
                           annotations={"gangsched.io/task-group": "worker"}))

        def real_bound() -> bool:
            real = [p for p in pods_in(api) if not p["metadata"]["name"].startswith("train-")]
            return len(real) == 5 and all(p["spec"].get("nodeName") for p in real)

        await wait_for(real_bound, what="real pods bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        # Deleted gracefully (never forced), with a UID precondition.
        assert len(deletes) == 5
        assert all(isinstance(d, dict) and d["gracePeriodSeconds"] == 5
                   and d["preconditions"]["uid"] for d in deletes), deletes
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Running", what="Running")

        for p in pods_in(api):
            api.finish_pod("default", p["metadata"]["name"])
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Waiting", what="Waiting")
        clock.advance(31)
        op.wake()
        status = await wait_for(lambda: status_of(api, "applications", "default", "train")
                                .get("state") == "Completed" and status_of(
                                    api, "applications", "default", "train"), what="Completed")
        assert any(c["type"] for c in status.get("conditions", []))
        await op.settle()  # Events may follow the status: both wait for the binds
        reasons = {e.get("reason") for e in api.list("events", "default",
                                                     api_version="events.k8s.io/v1")}
        assert {"GangReserved", "Completed"} <= reasons
        assert api.request_count("create", "pods", "binding") == 10
    finally:
        await op.kill()


def _member(name: str, app: str, task_group: str, cpu: str = "1") -> dict[str, object]:
    return pod(name, cpu=cpu, labels={"gangsched.io/app": app},
               annotations={"gangsched.io/task-group": task_group})


async def test_a_gang_whose_members_all_exist_gets_no_placeholder(cluster) -> None:  # type: ignore[no-untyped-def]
    """Pods first, then the Application: every member is held in memory and bound
    directly, one bind each; the operator creates no pod at all."""
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        names = ["ps-0", *(f"worker-{i}" for i in range(4))]
        api.create(_member("ps-0", "train", "ps"))
        for name in names[1:]:
            api.create(_member(name, "train", "worker", cpu="2"))
        await op.settle()
        api.create(application("train", [group("ps", 1), group("worker", 4, cpu="2")],
                               style="Hard", timeout=120))
        await wait_for(lambda: all(api.get("pods", "default", n)["spec"].get("nodeName")
                                   for n in names), what="every member bound")
        status = await wait_for(lambda: status_of(api, "applications", "default", "train")
                                .get("state") == "Running" and status_of(
                                    api, "applications", "default", "train"), what="Running")
        assert (status["reserved"], status["running"]) == ("5/5", 5)
        assert api.request_count("create", "pods") == 0  # no placeholder, ever
        assert api.request_count("create", "pods", "binding") == 5
        assert api.request_count("delete", "pods") == 0
        await op.settle()  # Events may follow the status: both wait for the binds
        reasons = [e.get("reason") for e in api.list("events", "default",
                                                     api_version="events.k8s.io/v1")]
        assert reasons.count("GangReserved") == 1
    finally:
        await op.kill()


async def test_late_executors_take_placeholders_and_the_gang_never_starts_partly(cluster) -> None:  # type: ignore[no-untyped-def]
    """A Spark-like gang: the driver exists, the executors come later. Each missing
    executor gets a placeholder; the driver is held in memory and bound only once every
    executor's placeholder holds a node; the executors then take the placeholders."""
    api, kubeconfig = cluster
    # Enqueue admits the gang although the nodes cannot hold it yet (a partial
    # reservation to look at).
    core = SchedulerConfig(overcommit_factor=100.0)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), core=core).start()
    try:
        # 3 nodes of 4 cpu: the driver (1) and four executors of 3 cpu cannot all fit.
        api.create(_member("driver", "spark", "driver"))
        api.create(application("spark", [group("driver", 1), group("executor", 4, cpu="3")],
                               style="Hard", timeout=120))
        await wait_for(lambda: len(placeholders(api)) == 4, what="4 executor placeholders")
        await op.settle()
        assert {p["metadata"]["annotations"]["gangsched.io/task-group"]
                for p in placeholders(api)} == {"executor"}
        # The driver and three placeholders hold a node each; the fourth finds none.
        status = await wait_for(lambda: status_of(api, "applications", "default", "spark")
                                .get("reserved") == "4/5" and status_of(
                                    api, "applications", "default", "spark"), what="4/5")
        assert status["state"] == "Accepted"
        await op.settle()
        assert not api.get("pods", "default", "driver")["spec"].get("nodeName")
        # Room for the fourth executor: the whole gang is reserved, the driver bound.
        add_node(api, node("node-3", cpu="4", memory="16Gi"))
        await wait_for(lambda: api.get("pods", "default", "driver")["spec"].get("nodeName"),
                       what="driver bound")
        await wait_for(lambda: len([p for p in placeholders(api)
                                    if p["spec"].get("nodeName")]) == 4,
                       what="4 placeholders bound")
        for i in range(4):
            api.create(_member(f"exec-{i}", "spark", "executor", cpu="3"))
        names = ["driver", *(f"exec-{i}" for i in range(4))]
        await wait_for(lambda: all(api.get("pods", "default", n)["spec"].get("nodeName")
                                   for n in names), what="every member bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        status = await wait_for(lambda: status_of(api, "applications", "default", "spark")
                                .get("running") == 5 and status_of(
                                    api, "applications", "default", "spark"), what="5 running")
        assert status["reserved"] == "5/5"
        assert api.request_count("create", "pods") == 4  # the executors' placeholders
    finally:
        await op.kill()


async def test_a_placeholder_deletion_that_fails_is_tried_again_at_once(cluster) -> None:  # type: ignore[no-untyped-def]
    """The real pod waits for its placeholder's room: a DELETE answered 500 (or lost) is
    tried again after a short backoff, not left to the core's retry 10 s later (the
    operator's clock does not move here: only the shell's retry can free the room)."""
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(application("train", [group("worker", 2, cpu="2")], style="Hard",
                               timeout=120))
        await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")])
                       == 2, what="2 placeholders bound")
        failing = api.faults.add(method="DELETE", path_regex=r"/pods/train-", status=500,
                                 times=2)
        for i in range(2):
            api.create(_member(f"worker-{i}", "train", "worker", cpu="2"))
        await wait_for(lambda: all(api.get("pods", "default", f"worker-{i}")["spec"]
                                   .get("nodeName") for i in range(2)),
                       what="both workers bound")
        assert failing.hits == 2
        await wait_for(lambda: not placeholders(api), what="placeholders gone")
    finally:
        await op.kill()
