"""Deletion: finalizers, owner-reference garbage collection, namespace termination."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fakeapi import ApiError, FakeApiServer
from fakeapi.builders import make_configmap, make_namespace, make_pod
from fakeapi.client import RawClient

CMS = "/api/v1/namespaces/default/configmaps"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def _names(server: FakeApiServer, what: str, ns: str | None = "default") -> list[str]:
    return [o["metadata"]["name"] for o in server.list(what, ns)]


async def test_finalizers_hold_the_object_until_removed(fake_api: FakeApiServer,
                                                        api: RawClient) -> None:
    _, cm = await api.post(CMS, make_configmap("c", finalizers=["a.dev/one", "a.dev/two"]))
    rv = cm["metadata"]["resourceVersion"]
    status, deleting = await api.delete(f"{CMS}/c")
    assert status == 200 and deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["generation"] == 2
    status, again = await api.delete(f"{CMS}/c")  # deleting twice changes nothing
    assert status == 200
    assert again["metadata"]["resourceVersion"] == deleting["metadata"]["resourceVersion"]
    await api.patch(f"{CMS}/c", {"metadata": {"finalizers": ["a.dev/two"]}})
    assert (await api.get(f"{CMS}/c"))[0] == 200
    status, final = await api.patch(f"{CMS}/c", {"metadata": {"finalizers": None}})
    assert status == 200
    assert (await api.get(f"{CMS}/c"))[0] == 404
    events = await api.watch(CMS, 3, resourceVersion=rv)
    assert [e["type"] for e in events] == ["MODIFIED", "MODIFIED", "DELETED"]
    assert events[2]["object"]["metadata"]["resourceVersion"] == \
        final["metadata"]["resourceVersion"]


async def test_owner_deletion_cascades_in_background(fake_api: FakeApiServer) -> None:
    owner = fake_api.create(make_configmap("owner"))
    child = fake_api.create(make_configmap("child", owner=owner))
    fake_api.create(make_pod("grandchild", owner=child))
    fake_api.create(make_configmap("unrelated"))
    fake_api.delete("configmaps", "default", "owner")
    assert _names(fake_api, "configmaps") == ["unrelated"]
    assert _names(fake_api, "pods") == []


async def test_dependent_with_another_live_owner_only_loses_the_reference(
        fake_api: FakeApiServer) -> None:
    a = fake_api.create(make_configmap("a"))
    b = fake_api.create(make_configmap("b"))
    dep = make_configmap("dep", owner=a)
    dep["metadata"]["ownerReferences"].append(
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": b["metadata"]["uid"]})
    fake_api.create(dep)
    fake_api.delete("configmaps", "default", "a")
    kept = fake_api.get("configmaps", "default", "dep")
    assert [r["name"] for r in kept["metadata"]["ownerReferences"]] == ["b"]


async def test_orphan_policy_keeps_dependents(fake_api: FakeApiServer, api: RawClient) -> None:
    owner = fake_api.create(make_configmap("owner"))
    fake_api.create(make_configmap("child", owner=owner))
    status, _ = await api.delete(f"{CMS}/owner", {"propagationPolicy": "Orphan"})
    assert status == 200
    child = fake_api.get("configmaps", "default", "child")
    assert "ownerReferences" not in child["metadata"]


async def test_foreground_waits_for_dependents(fake_api: FakeApiServer) -> None:
    owner = fake_api.create(make_configmap("owner"))
    fake_api.create(make_configmap("child", owner=owner, finalizers=["a.dev/hold"]))
    deleting = fake_api.delete("configmaps", "default", "owner", propagation_policy="Foreground")
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    assert fake_api.get("configmaps", "default", "child")["metadata"]["deletionTimestamp"]
    fake_api.patch("configmaps", "default", "child", {"metadata": {"finalizers": None}})
    assert _names(fake_api, "configmaps") == []


async def test_dependent_finalizers_are_honoured_by_gc(fake_api: FakeApiServer) -> None:
    owner = fake_api.create(make_configmap("owner"))
    fake_api.create(make_configmap("child", owner=owner, finalizers=["a.dev/hold"]))
    fake_api.delete("configmaps", "default", "owner")
    child = fake_api.get("configmaps", "default", "child")
    assert child["metadata"]["deletionTimestamp"]


async def test_object_created_with_absent_owner_is_collected(fake_api: FakeApiServer) -> None:
    ghost = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "ghost", "uid": "00000000-0000-4000-8000-000000000000"}}
    fake_api.create(make_configmap("orphan", owner=ghost))
    assert _names(fake_api, "configmaps") == []


async def test_owner_of_an_unserved_kind_is_left_alone(fake_api: FakeApiServer) -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": "rs", "uid": "00000000-0000-4000-8000-000000000001"}}
    fake_api.create(make_configmap("kept", owner=rs))
    assert _names(fake_api, "configmaps") == ["kept"]


@pytest.mark.parametrize("policy", [None, "Background"])
async def test_namespace_deletion_removes_content(fake_api: FakeApiServer,
                                                  policy: str | None) -> None:
    fake_api.create(make_namespace("team"))
    fake_api.create(make_pod("p", "team"))
    fake_api.create(make_configmap("held", "team", finalizers=["a.dev/hold"]))
    ns = fake_api.delete("namespaces", None, "team", propagation_policy=policy)
    assert ns["status"]["phase"] == "Terminating"
    assert _names(fake_api, "pods", "team") == []
    with pytest.raises(ApiError) as excinfo:
        fake_api.create(make_pod("late", "team"))
    assert excinfo.value.code == 403
    fake_api.patch("configmaps", "team", "held", {"metadata": {"finalizers": None}})
    assert fake_api.try_get("namespaces", None, "team") is None


async def test_new_namespace_gets_defaults(fake_api: FakeApiServer) -> None:
    ns = fake_api.create(make_namespace("team"))
    assert ns["status"] == {"phase": "Active"}
    assert ns["spec"] == {"finalizers": ["kubernetes"]}
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}


async def test_bad_propagation_policy_is_422(api: RawClient) -> None:
    await api.post(CMS, make_configmap("c"))
    status, _ = await api.delete(f"{CMS}/c", {"propagationPolicy": "Sideways"})
    assert status == 422
