"""Pods: binding, eviction with disruption budgets, status subresource, kubelet, priority."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import ApiError, FakeApiServer
from fakeapi.builders import make_node, make_pdb, make_pod, make_priority_class
from fakeapi.client import RawClient
from fakeapi.fixtures import ServerFactory

PODS = "/api/v1/namespaces/default/pods"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def binding(name: str, node: str, uid: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, **({"uid": uid} if uid else {})}
    return {"apiVersion": "v1", "kind": "Binding", "metadata": md,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


async def test_binding_sets_node_and_condition(api: RawClient) -> None:
    _, pod = await api.post(PODS, make_pod("p"))
    status, body = await api.post(f"{PODS}/p/binding", binding("p", "node-without-object"))
    assert status == 201
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                    "code": 201}
    _, bound = await api.get(f"{PODS}/p")
    assert bound["spec"]["nodeName"] == "node-without-object"
    [cond] = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "True"
    assert int(bound["metadata"]["resourceVersion"]) > int(pod["metadata"]["resourceVersion"])


async def test_binding_via_the_bindings_collection(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    status, _ = await api.post("/api/v1/namespaces/default/bindings", binding("p", "n1"))
    assert status == 201
    assert (await api.get(f"{PODS}/p"))[1]["spec"]["nodeName"] == "n1"


async def test_binding_twice_is_409_with_the_real_message(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    await api.post(f"{PODS}/p/binding", binding("p", "n1"))
    status, err = await api.post(f"{PODS}/p/binding", binding("p", "n2"))
    assert status == 409 and err["reason"] == "Conflict"
    assert err["message"] == ('Operation cannot be fulfilled on pods/binding "p": '
                              'pod p is already assigned to node "n1"')


async def test_binding_uid_precondition(api: RawClient) -> None:
    _, pod = await api.post(PODS, make_pod("p"))
    status, err = await api.post(f"{PODS}/p/binding", binding("p", "n1", uid="stale-uid"))
    assert status == 409 and "Precondition failed: UID in precondition" in err["message"]
    status, _ = await api.post(f"{PODS}/p/binding", binding("p", "n1", pod["metadata"]["uid"]))
    assert status == 201


@pytest.mark.parametrize("setup, status", [
    pytest.param("missing", 404, id="missing-pod"),
    pytest.param("gated", 409, id="scheduling-gates"),
    pytest.param("deleting", 409, id="being-deleted"),
])
async def test_binding_refusals(fake_api: FakeApiServer, api: RawClient, setup: str,
                                status: int) -> None:
    if setup == "gated":
        fake_api.create(make_pod("p", gates=["wait"]))
    if setup == "deleting":
        fake_api.create(make_pod("p", finalizers=["a.dev/hold"]))
        fake_api.delete("pods", "default", "p")
    got, err = await api.post(f"{PODS}/p/binding", binding("p", "n1"))
    assert got == status, err


async def test_binding_without_target_is_422(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    body = binding("p", "n1")
    del body["target"]["name"]
    assert (await api.post(f"{PODS}/p/binding", body))[0] == 422


async def test_pod_with_node_name_at_creation_is_allowed(api: RawClient) -> None:
    status, pod = await api.post(PODS, make_pod("static", node_name="n1"))
    assert status == 201 and pod["spec"]["nodeName"] == "n1"


async def test_status_subresource_separation(api: RawClient) -> None:
    await api.post(PODS, make_pod("p", labels={"a": "1"}))
    _, pod = await api.patch(f"{PODS}/p", {"status": {"phase": "Running"},
                                           "metadata": {"labels": {"a": "2"}}})
    assert pod["status"]["phase"] == "Pending" and pod["metadata"]["labels"] == {"a": "2"}
    _, pod = await api.patch(f"{PODS}/p/status", {"status": {"phase": "Running"},
                                                  "metadata": {"labels": {"a": "3"}}})
    assert pod["status"]["phase"] == "Running" and pod["metadata"]["labels"] == {"a": "2"}
    pod["status"]["phase"] = "Failed"
    pod["spec"]["activeDeadlineSeconds"] = 5
    status, put = await api.put(f"{PODS}/p/status", pod)
    assert status == 200
    assert put["status"]["phase"] == "Failed" and "activeDeadlineSeconds" not in put["spec"]


async def test_node_status_is_kept_on_create_and_separate_on_update(api: RawClient) -> None:
    _, node = await api.post("/api/v1/nodes", make_node("n1", cpu="4"))
    assert node["status"]["allocatable"]["cpu"] == "4"
    _, node = await api.patch("/api/v1/nodes/n1", {"status": {"allocatable": {"cpu": "8"}}})
    assert node["status"]["allocatable"]["cpu"] == "4"
    _, node = await api.patch("/api/v1/nodes/n1/status", {"status": {"allocatable": {"cpu": "8"}}})
    assert node["status"]["allocatable"]["cpu"] == "8"


async def test_auto_run_and_finish_pod(fake_api_factory: ServerFactory) -> None:
    server = await fake_api_factory(auto_run=True)
    server.create(make_pod("p"))
    server.bind("default", "p", "n1")
    pod = server.get("pods", "default", "p")
    assert pod["status"]["phase"] == "Running"
    conditions = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
    assert conditions["Ready"] == "True" and conditions["PodScheduled"] == "True"
    pod = server.finish_pod("default", "p", "Failed")
    assert pod["status"]["phase"] == "Failed"
    assert pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1


async def test_eviction_deletes_the_pod(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    body = {"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "p", "namespace": "default"}}
    status, res = await api.post(f"{PODS}/p/eviction", body)
    assert status == 201 and res["status"] == "Success"
    assert (await api.get(f"{PODS}/p"))[0] == 404
    assert (await api.post(f"{PODS}/p/eviction", body))[0] == 404


@pytest.mark.parametrize("budget, running, allowed", [
    pytest.param({"min_available": 2}, 2, False, id="min-available-at-limit"),
    pytest.param({"min_available": 2}, 3, True, id="min-available-spare"),
    pytest.param({"max_unavailable": 0}, 3, False, id="max-unavailable-zero"),
    pytest.param({"max_unavailable": 1}, 3, True, id="max-unavailable-one"),
    pytest.param({"min_available": "100%"}, 3, False, id="min-available-percent"),
])
async def test_eviction_respects_disruption_budgets(
        fake_api_factory: ServerFactory, budget: dict[str, Any], running: int,
        allowed: bool) -> None:
    server = await fake_api_factory(auto_run=True)
    server.create(make_pdb("budget", match_labels={"app": "db"}, **budget))
    for i in range(running):
        server.create(make_pod(f"db-{i}", labels={"app": "db"}))
        server.bind("default", f"db-{i}", "n1")
    async with RawClient(server.url) as api:
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-0"}}
        status, res = await api.post(f"{PODS}/db-0/eviction", body)
    if allowed:
        assert status == 201
    else:
        assert status == 429 and res["reason"] == "TooManyRequests"
        assert res["details"]["causes"][0]["reason"] == "DisruptionBudget"
        assert server.try_get("pods", "default", "db-0") is not None


async def test_pending_pods_are_evicted_regardless_of_budget(fake_api: FakeApiServer) -> None:
    fake_api.create(make_pdb("budget", match_labels={"app": "db"}, min_available=5))
    fake_api.create(make_pod("db-0", labels={"app": "db"}))
    async with RawClient(fake_api.url) as api:
        status, _ = await api.post(f"{PODS}/db-0/eviction", {"metadata": {"name": "db-0"}})
    assert status == 201


@pytest.mark.parametrize("class_name, expected", [
    pytest.param("high", 1000, id="named"),
    pytest.param(None, 10, id="global-default"),
    pytest.param("system-node-critical", 2_000_001_000, id="built-in"),
])
async def test_priority_admission(fake_api: FakeApiServer, class_name: str | None,
                                  expected: int) -> None:
    fake_api.create(make_priority_class("high", 1000))
    fake_api.create(make_priority_class("usual", 10, global_default=True))
    pod = fake_api.create(make_pod("p", priority_class=class_name))
    assert pod["spec"]["priority"] == expected
    assert pod["spec"]["preemptionPolicy"] == "PreemptLowerPriority"


async def test_unknown_priority_class_is_403(fake_api: FakeApiServer) -> None:
    with pytest.raises(ApiError) as excinfo:
        fake_api.create(make_pod("p", priority_class="nope"))
    assert excinfo.value.code == 403
    assert "no PriorityClass with name nope was found" in excinfo.value.message


@pytest.mark.parametrize("cpu, memory, limits, qos", [
    pytest.param(None, None, False, "BestEffort", id="best-effort"),
    pytest.param("1", None, False, "Burstable", id="burstable"),
    pytest.param("1", "1Gi", True, "Guaranteed", id="guaranteed"),
])
async def test_pod_defaults_and_qos(fake_api: FakeApiServer, cpu: str | None,
                                    memory: str | None, limits: bool, qos: str) -> None:
    body = make_pod("p", cpu=cpu, memory=memory)
    if limits:
        container = body["spec"]["containers"][0]
        container["resources"] = {"limits": container["resources"]["requests"]}
    pod = fake_api.create(body)
    spec = pod["spec"]
    assert spec["schedulerName"] == "default-scheduler" and spec["restartPolicy"] == "Always"
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert pod["status"]["qosClass"] == qos
    if limits:
        assert spec["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}


async def test_field_selectors_for_schedulers(fake_api: FakeApiServer, api: RawClient) -> None:
    fake_api.create(make_pod("mine", scheduler_name="gangsched"))
    fake_api.create(make_pod("other"))
    fake_api.create(make_pod("bound", scheduler_name="gangsched"))
    fake_api.bind("default", "bound", "n1")
    _, page = await api.get("/api/v1/pods",
                            fieldSelector="spec.schedulerName=gangsched,spec.nodeName=")
    assert [i["metadata"]["name"] for i in page["items"]] == ["mine"]
    _, page = await api.get("/api/v1/pods", fieldSelector="status.phase=Pending")
    assert len(page["items"]) == 3
