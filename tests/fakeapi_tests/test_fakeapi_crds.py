"""Custom resources: CRD registration, discovery, schema pruning/defaulting/validation."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import yaml
from fakeapi import FakeApiServer
from fakeapi.builders import make_crd
from fakeapi.client import RawClient

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.dev/v1/namespaces/default/widgets"
REPO_CRDS = pathlib.Path(__file__).parents[2] / "crds"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        status, _ = await client.post(CRDS, make_crd())
        assert status == 201
        yield client


def widget(name: str = "w", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"image": "nginx", **spec}}


async def test_crd_is_established(api: RawClient) -> None:
    _, crd = await api.get(f"{CRDS}/widgets.example.dev")
    conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]


async def test_discovery_lists_the_new_resource(api: RawClient) -> None:
    _, groups = await api.get("/apis")
    [group] = [g for g in groups["groups"] if g["name"] == "example.dev"]
    assert group["preferredVersion"] == {"groupVersion": "example.dev/v1", "version": "v1"}
    _, group_doc = await api.get("/apis/example.dev")
    assert group_doc["kind"] == "APIGroup" and group_doc["name"] == "example.dev"
    _, resources = await api.get("/apis/example.dev/v1")
    assert resources["kind"] == "APIResourceList"
    assert resources["groupVersion"] == "example.dev/v1"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["widgets"] == {
        "name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update",
                  "watch"],
        "shortNames": ["wd"],
    }
    assert by_name["widgets/status"]["verbs"] == ["get", "patch", "update"]


async def test_core_discovery_has_pod_subresources(api: RawClient) -> None:
    _, core = await api.get("/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["shortNames"] == ["po"] and by_name["pods"]["namespaced"] is True
    assert by_name["pods/binding"]["kind"] == "Binding"
    assert by_name["pods/eviction"]["group"] == "policy"
    assert by_name["pods/eviction"]["kind"] == "Eviction"
    assert by_name["nodes"]["namespaced"] is False
    _, versions = await api.get("/api")
    assert versions["versions"] == ["v1"]
    _, version = await api.get("/version")
    assert version["major"] == "1"


async def test_defaults_and_pruning(api: RawClient) -> None:
    body = widget(bogus=1, port="http", note=None, size=None,
                  extra={"anything": {"goes": [1, 2]}}, labels={"a": "b"})
    body["bogus"] = "top-level"
    body["status"] = {"ignored": "on create"}
    status, created = await api.post(WIDGETS, body)
    assert status == 201, created
    assert created["spec"] == {"image": "nginx", "size": 1, "mode": "safe", "port": "http",
                               "note": None, "extra": {"anything": {"goes": [1, 2]}},
                               "labels": {"a": "b"}}
    assert "bogus" not in created and "status" not in created
    assert created["metadata"]["generation"] == 1


@pytest.mark.parametrize("spec, field", [
    pytest.param({"size": 0}, "spec.size", id="minimum"),
    pytest.param({"size": "two"}, "spec.size", id="type"),
    pytest.param({"mode": "turbo"}, "spec.mode", id="enum"),
    pytest.param({"port": True}, "spec.port", id="int-or-string"),
    pytest.param({"image": None}, "spec.image", id="required-after-null-pruned"),
    pytest.param({"labels": {"a": 1}}, "spec.labels.a", id="additional-properties"),
])
async def test_schema_validation_is_422(api: RawClient, spec: dict[str, Any], field: str) -> None:
    status, err = await api.post(WIDGETS, widget(**spec))
    assert status == 422, err
    assert err["details"]["kind"] == "Widget" and err["details"]["group"] == "example.dev"
    assert field in [c["field"] for c in err["details"]["causes"]]


async def test_int_or_string_accepts_both(api: RawClient) -> None:
    assert (await api.post(WIDGETS, widget("a", port=80)))[0] == 201
    assert (await api.post(WIDGETS, widget("b", port="http")))[0] == 201


async def test_status_subresource_and_generation(api: RawClient) -> None:
    await api.post(WIDGETS, widget())
    _, w = await api.patch(f"{WIDGETS}/w", {"status": {"phase": "Ready"}})
    assert "status" not in w and w["metadata"]["generation"] == 1
    _, w = await api.patch(f"{WIDGETS}/w/status", {"status": {"phase": "Ready"},
                                                   "spec": {"size": 5}})
    assert w["status"] == {"phase": "Ready"} and w["spec"]["size"] == 1
    assert w["metadata"]["generation"] == 1
    _, w = await api.patch(f"{WIDGETS}/w", {"metadata": {"labels": {"x": "y"}}})
    assert w["metadata"]["generation"] == 1
    _, w = await api.patch(f"{WIDGETS}/w", {"spec": {"size": 3}})
    assert w["metadata"]["generation"] == 2 and w["status"] == {"phase": "Ready"}


async def test_crd_without_status_subresource_bumps_generation_on_status(
        fake_api: FakeApiServer) -> None:
    fake_api.create(make_crd(group="plain.dev", plural="things", kind="Thing", status=False))
    fake_api.create({"apiVersion": "plain.dev/v1", "kind": "Thing", "metadata": {"name": "t"},
                     "spec": {"image": "x"}, "status": {"phase": "New"}})
    thing = fake_api.patch_status("things", "default", "t", {"phase": "Old"})
    assert thing["status"] == {"phase": "Old"} and thing["metadata"]["generation"] == 2


async def test_strategic_merge_patch_on_custom_resources_is_415(api: RawClient) -> None:
    await api.post(WIDGETS, widget())
    status, _ = await api.patch(f"{WIDGETS}/w", {"spec": {"size": 2}},
                                "application/strategic-merge-patch+json")
    assert status == 415


async def test_cluster_scoped_custom_resource(fake_api: FakeApiServer) -> None:
    fake_api.create(make_crd(group="c.dev", plural="pools", kind="Pool", scope="Cluster"))
    async with RawClient(fake_api.url) as api:
        status, pool = await api.post("/apis/c.dev/v1/pools", {
            "apiVersion": "c.dev/v1", "kind": "Pool", "metadata": {"name": "p"},
            "spec": {"image": "x"}})
        assert status == 201 and "namespace" not in pool["metadata"]
        assert (await api.get("/apis/c.dev/v1/pools/p"))[0] == 200


async def test_versions_share_storage(fake_api: FakeApiServer) -> None:
    fake_api.create(make_crd(group="v.dev", plural="gadgets", kind="Gadget",
                             versions=("v1", "v2")))
    async with RawClient(fake_api.url) as api:
        await api.post("/apis/v.dev/v1/namespaces/default/gadgets", {
            "apiVersion": "v.dev/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"image": "x"}})
        status, got = await api.get("/apis/v.dev/v2/namespaces/default/gadgets/g")
    assert status == 200 and got["apiVersion"] == "v.dev/v2"


async def test_deleting_the_crd_removes_objects_and_discovery(api: RawClient) -> None:
    await api.post(WIDGETS, widget())
    assert (await api.delete(f"{CRDS}/widgets.example.dev"))[0] == 200
    assert (await api.get("/apis/example.dev/v1"))[0] == 404
    assert (await api.get(f"{WIDGETS}/w"))[0] == 404
    await api.post(CRDS, make_crd())  # re-created: empty, and the old version is too old
    _, page = await api.get(WIDGETS)
    assert page["items"] == []


async def test_watch_custom_resources(api: RawClient) -> None:
    _, page = await api.get(WIDGETS)
    await api.post(WIDGETS, widget())
    events = await api.watch(WIDGETS, 1, resourceVersion=page["metadata"]["resourceVersion"])
    assert events[0]["type"] == "ADDED" and events[0]["object"]["kind"] == "Widget"
    assert events[0]["object"]["apiVersion"] == "example.dev/v1"


@pytest.mark.parametrize("crd_patch, field", [
    pytest.param({"metadata": {"name": "wrong.example.dev"}}, "metadata.name", id="name"),
    pytest.param({"spec": {"scope": "Global"}}, "spec.scope", id="scope"),
])
async def test_invalid_crd_is_422(api: RawClient, crd_patch: dict[str, Any], field: str) -> None:
    body = make_crd(group="bad.dev")
    for key, value in crd_patch.items():
        body[key].update(value)
    status, err = await api.post(CRDS, body)
    assert status == 422 and field in [c["field"] for c in err["details"]["causes"]]


async def test_install_crds_from_dir(fake_api: FakeApiServer, tmp_path: pathlib.Path) -> None:
    docs = [make_crd(group="d.dev"), {"apiVersion": "v1", "kind": "ConfigMap"},
            make_crd(group="d.dev", plural="gears", kind="Gear", short_names=())]
    (tmp_path / "all.yaml").write_text(yaml.safe_dump_all(docs))
    (tmp_path / "notes.txt").write_text("not yaml: [")
    assert fake_api.install_crds_from_dir(tmp_path) == ["widgets.d.dev", "gears.d.dev"]
    assert fake_api.install_crds_from_dir(tmp_path) == ["widgets.d.dev", "gears.d.dev"]
    assert fake_api.resolve("gears").kind == "Gear"


@pytest.mark.skipif(not any(REPO_CRDS.glob("*.yaml")), reason="no CRDs in the repository yet")
async def test_the_repository_crds_install(fake_api: FakeApiServer) -> None:
    names = fake_api.install_crds_from_dir(REPO_CRDS)
    assert names
    for name in names:
        plural, group = name.split(".", 1)
        assert fake_api.resolve(plural).group == group
