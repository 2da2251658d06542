"""CRUD over HTTP: server-set metadata, versions, conflicts, patches, lists, deletes."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.builders import make_configmap, make_namespace, make_node, make_pod
from fakeapi.client import RawClient

PODS = "/api/v1/namespaces/default/pods"
CMS = "/api/v1/namespaces/default/configmaps"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


async def test_create_assigns_server_metadata(api: RawClient) -> None:
    status, pod = await api.post(PODS, make_pod("p1"))
    assert status == 201
    md = pod["metadata"]
    assert uuid.UUID(md["uid"]).version == 4
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", md["creationTimestamp"])
    assert md["generation"] == 1
    assert md["namespace"] == "default"
    assert int(md["resourceVersion"]) > 0
    assert pod["apiVersion"] == "v1" and pod["kind"] == "Pod"
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_resource_versions_increase_globally(api: RawClient) -> None:
    _, a = await api.post(PODS, make_pod("a"))
    _, b = await api.post(CMS, make_configmap("b"))
    _, n = await api.post("/api/v1/nodes", make_node("n"))
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, b, n)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


async def test_client_set_server_fields_are_replaced(api: RawClient) -> None:
    body = make_configmap("c")
    body["metadata"].update(uid="mine", generation=7, creationTimestamp="2000-01-01T00:00:00Z")
    _, cm = await api.post(CMS, body)
    assert cm["metadata"]["uid"] != "mine"
    assert cm["metadata"]["generation"] == 1
    assert cm["metadata"]["creationTimestamp"] != "2000-01-01T00:00:00Z"


async def test_generate_name(api: RawClient) -> None:
    names = set()
    for _ in range(20):
        status, pod = await api.post(PODS, make_pod(None, generate_name="worker-"))
        assert status == 201
        names.add(pod["metadata"]["name"])
    assert len(names) == 20
    assert all(re.fullmatch(r"worker-[a-z0-9]{5}", n) for n in names)


@pytest.mark.parametrize("path, body", [
    pytest.param(PODS, make_pod("dup"), id="pod"),
    pytest.param("/api/v1/nodes", make_node("dup"), id="node"),
])
async def test_create_duplicate_is_409_already_exists(api: RawClient, path: str,
                                                      body: dict[str, object]) -> None:
    assert (await api.post(path, body))[0] == 201
    status, err = await api.post(path, body)
    assert status == 409
    assert err["kind"] == "Status" and err["status"] == "Failure"
    assert err["reason"] == "AlreadyExists" and err["code"] == 409
    assert err["details"]["name"] == "dup"
    assert err["message"].endswith('"dup" already exists')


async def test_missing_object_is_404_status(api: RawClient) -> None:
    status, err = await api.get(f"{PODS}/nope")
    assert status == 404
    assert err["reason"] == "NotFound" and err["message"] == 'pods "nope" not found'
    assert err["details"] == {"name": "nope", "group": "", "kind": "pods"}


async def test_create_in_missing_namespace_is_404(api: RawClient) -> None:
    status, err = await api.post("/api/v1/namespaces/ghost/pods", make_pod("p", "ghost"))
    assert status == 404 and err["message"] == 'namespaces "ghost" not found'


async def test_namespace_mismatch_is_400(api: RawClient) -> None:
    await api.post("/api/v1/namespaces", make_namespace("other"))
    status, err = await api.post(PODS, make_pod("p", "other"))
    assert status == 400 and err["reason"] == "BadRequest"


async def test_update_with_stale_resource_version_is_409(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c", data={"a": "1"}))
    cm["data"] = {"a": "2"}
    status, fresh = await api.put(f"{CMS}/c", cm)
    assert status == 200
    assert int(fresh["metadata"]["resourceVersion"]) > int(cm["metadata"]["resourceVersion"])
    cm["data"] = {"a": "3"}  # still carries the old resourceVersion
    status, err = await api.put(f"{CMS}/c", cm)
    assert status == 409 and err["reason"] == "Conflict"
    assert "the object has been modified" in err["message"]


async def test_update_without_resource_version_is_unconditional(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c", data={"a": "1"}))
    del cm["metadata"]["resourceVersion"]
    cm["data"] = {"a": "2"}
    status, fresh = await api.put(f"{CMS}/c", cm)
    assert status == 200 and fresh["data"] == {"a": "2"}


async def test_noop_update_keeps_resource_version(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c", data={"a": "1"}))
    status, same = await api.put(f"{CMS}/c", cm)
    assert status == 200
    assert same["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


async def test_generation_counts_non_metadata_changes(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c", data={"a": "1"}))
    _, cm = await api.patch(f"{CMS}/c", {"metadata": {"labels": {"x": "y"}}})
    assert cm["metadata"]["generation"] == 1
    _, cm = await api.patch(f"{CMS}/c", {"data": {"a": "2"}})
    assert cm["metadata"]["generation"] == 2


async def test_update_cannot_change_immutable_metadata(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c"))
    cm["metadata"]["uid"] = "other"
    cm["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    _, fresh = await api.put(f"{CMS}/c", cm)
    assert fresh["metadata"]["uid"] != "other"
    assert fresh["metadata"]["creationTimestamp"] != "2000-01-01T00:00:00Z"


async def test_update_with_another_name_is_400(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c"))
    cm["metadata"]["name"] = "d"
    assert (await api.put(f"{CMS}/c", cm))[0] == 400


async def test_merge_patch(api: RawClient) -> None:
    await api.post(CMS, make_configmap("c", data={"a": "1", "b": "2"}))
    status, cm = await api.patch(f"{CMS}/c", {"data": {"a": None, "c": "3"}})
    assert status == 200 and cm["data"] == {"b": "2", "c": "3"}


async def test_strategic_merge_patch_merges_containers_by_name(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    patch = {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}
    status, pod = await api.patch(f"{PODS}/p", patch, "application/strategic-merge-patch+json")
    assert status == 200
    [container] = pod["spec"]["containers"]
    assert container["image"] == "busybox:1.37"
    assert container["terminationMessagePath"] == "/dev/termination-log"  # kept, not replaced


async def test_strategic_merge_patch_finalizers_as_a_set(api: RawClient) -> None:
    await api.post(CMS, make_configmap("c", finalizers=["a.dev/x"]))
    patch = {"metadata": {"finalizers": ["a.dev/y", "a.dev/x"]}}
    _, cm = await api.patch(f"{CMS}/c", patch, "application/strategic-merge-patch+json")
    assert cm["metadata"]["finalizers"] == ["a.dev/x", "a.dev/y"]


@pytest.mark.parametrize("ops, expected_status", [
    pytest.param([{"op": "add", "path": "/data/b", "value": "2"}], 200, id="add"),
    pytest.param([{"op": "test", "path": "/data/a", "value": "1"},
                  {"op": "replace", "path": "/data/a", "value": "9"}], 200, id="test-ok"),
    pytest.param([{"op": "test", "path": "/data/a", "value": "0"}], 422, id="test-fails"),
    pytest.param([{"op": "remove", "path": "/data/zzz"}], 422, id="bad-path"),
    pytest.param({"op": "add"}, 400, id="not-a-list"),
])
async def test_json_patch(api: RawClient, ops: object, expected_status: int) -> None:
    await api.post(CMS, make_configmap("c", data={"a": "1"}))
    status, _ = await api.patch(f"{CMS}/c", ops, "application/json-patch+json")
    assert status == expected_status


async def test_json_patch_resource_version_test_detects_staleness(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c"))
    await api.patch(f"{CMS}/c", {"data": {"x": "1"}})
    ops = [{"op": "test", "path": "/metadata/resourceVersion",
            "value": cm["metadata"]["resourceVersion"]},
           {"op": "add", "path": "/metadata/finalizers", "value": ["a.dev/f"]}]
    status, err = await api.patch(f"{CMS}/c", ops, "application/json-patch+json")
    assert status == 422 and err["reason"] == "Invalid"


async def test_patch_with_stale_resource_version_is_409(api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c"))
    old_rv = cm["metadata"]["resourceVersion"]
    await api.patch(f"{CMS}/c", {"data": {"x": "1"}})
    status, err = await api.patch(f"{CMS}/c", {"metadata": {"resourceVersion": old_rv},
                                               "data": {"x": "2"}})
    assert status == 409 and err["reason"] == "Conflict"


async def test_unknown_patch_type_is_415(api: RawClient) -> None:
    await api.post(CMS, make_configmap("c"))
    status, err = await api.patch(f"{CMS}/c", {"data": {}}, "application/json")
    assert status == 415 and err["reason"] == "UnsupportedMediaType"


async def test_list_paging_with_limit_and_continue(api: RawClient) -> None:
    for i in range(7):
        await api.post(CMS, make_configmap(f"c{i}"))
    seen: list[str] = []
    token = ""
    pages = 0
    list_rv = None
    while True:
        params = {"limit": "3", **({"continue": token} if token else {})}
        status, page = await api.get(CMS, **params)
        assert status == 200 and page["kind"] == "ConfigMapList"
        list_rv = list_rv or page["metadata"]["resourceVersion"]
        assert page["metadata"]["resourceVersion"] == list_rv
        seen += [i["metadata"]["name"] for i in page["items"]]
        pages += 1
        token = page["metadata"].get("continue", "")
        if not token:
            break
        assert page["metadata"]["remainingItemCount"] == 7 - len(seen)
    assert pages == 3 and seen == [f"c{i}" for i in range(7)]


async def test_list_items_of_builtins_have_no_type_meta(api: RawClient) -> None:
    await api.post(CMS, make_configmap("c"))
    _, page = await api.get(CMS)
    assert "kind" not in page["items"][0] and "apiVersion" not in page["items"][0]


async def test_cluster_wide_list_spans_namespaces(api: RawClient) -> None:
    await api.post("/api/v1/namespaces", make_namespace("other"))
    await api.post(PODS, make_pod("a"))
    await api.post("/api/v1/namespaces/other/pods", make_pod("b", "other"))
    _, page = await api.get("/api/v1/pods")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in page["items"]] == [
        ("default", "a"), ("other", "b")]
    _, page = await api.get("/api/v1/namespaces/other/pods")
    assert [i["metadata"]["name"] for i in page["items"]] == ["b"]


async def test_delete_returns_pod_and_status_for_others(api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    await api.post(CMS, make_configmap("c"))
    status, body = await api.delete(f"{PODS}/p")
    assert status == 200 and body["kind"] == "Pod"
    status, body = await api.delete(f"{CMS}/c")
    assert status == 200 and body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "c"
    assert (await api.delete(f"{CMS}/c"))[0] == 404


@pytest.mark.parametrize("field", ["uid", "resourceVersion"])
async def test_delete_preconditions(api: RawClient, field: str) -> None:
    _, cm = await api.post(CMS, make_configmap("c"))
    status, err = await api.delete(f"{CMS}/c", {"preconditions": {field: "wrong"}})
    assert status == 409 and "Precondition failed" in err["message"]
    good = {"preconditions": {field: cm["metadata"][field]}}
    assert (await api.delete(f"{CMS}/c", good))[0] == 200


async def test_delete_collection_by_label(api: RawClient) -> None:
    await api.post(CMS, make_configmap("a", labels={"app": "x"}))
    await api.post(CMS, make_configmap("b", labels={"app": "y"}))
    status, body = await api.request("DELETE", CMS, params={"labelSelector": "app=x"})
    assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["a"]
    _, page = await api.get(CMS)
    assert [i["metadata"]["name"] for i in page["items"]] == ["b"]


async def test_unknown_resource_is_404(api: RawClient) -> None:
    assert (await api.get("/api/v1/namespaces/default/gizmos"))[0] == 404
    assert (await api.get("/apis/nope.dev/v1"))[0] == 404


async def test_in_process_api_shares_state_and_errors(fake_api: FakeApiServer,
                                                     api: RawClient) -> None:
    fake_api.create(make_pod("p"))
    status, pod = await api.get(f"{PODS}/p")
    assert status == 200
    assert fake_api.get("pods", "default", "p")["metadata"]["uid"] == pod["metadata"]["uid"]
    with pytest.raises(Exception) as excinfo:
        fake_api.create(make_pod("p"))
    assert getattr(excinfo.value, "code", None) == 409
    assert fake_api.try_get("Pod", "default", "missing") is None
    assert [p["metadata"]["name"] for p in fake_api.list("po")] == ["p"]
