"""422 Invalid (and 400 BadRequest) answers, with the real server's rules."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from fakeapi import FakeApiServer
from fakeapi.builders import make_configmap, make_namespace, make_node, make_pod
from fakeapi.client import RawClient

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


@pytest_asyncio.fixture
async def api(fake_api: FakeApiServer) -> AsyncIterator[RawClient]:
    async with RawClient(fake_api.url) as client:
        yield client


def _cm(**meta: Any) -> dict[str, Any]:
    body = make_configmap("ok")
    body["metadata"].update(meta)
    return body


@pytest.mark.parametrize("body, field", [
    pytest.param(_cm(name="Upper"), "metadata.name", id="uppercase-name"),
    pytest.param(_cm(name="under_score"), "metadata.name", id="underscore-name"),
    pytest.param(_cm(name="-lead"), "metadata.name", id="leading-dash"),
    pytest.param(_cm(name="a" * 254), "metadata.name", id="name-254"),
    pytest.param(_cm(name=None), "metadata.name", id="no-name"),
    pytest.param(_cm(labels={"app": "v" * 64}), "metadata.labels", id="label-value-64"),
    pytest.param(_cm(labels={"app": "-bad"}), "metadata.labels", id="label-value-dash"),
    pytest.param(_cm(labels={"bad key": "v"}), "metadata.labels", id="label-key-space"),
    pytest.param(_cm(labels={"k" * 64: "v"}), "metadata.labels", id="label-name-64"),
    pytest.param(_cm(labels={"Bad_Prefix.com/k": "v"}), "metadata.labels", id="label-prefix"),
    pytest.param(_cm(annotations={"bad/key/x": "v"}), "metadata.annotations", id="annot-key"),
    pytest.param(_cm(annotations={"a": "x" * (256 * 1024)}), "metadata.annotations",
                 id="annotations-too-big"),
    pytest.param(_cm(finalizers=["bad finalizer"]), "metadata.finalizers[0]", id="finalizer"),
    pytest.param(_cm(ownerReferences=[{"kind": "Pod", "name": "x"}]),
                 "metadata.ownerReferences[0].apiVersion", id="owner-ref"),
])
async def test_invalid_metadata_is_422(api: RawClient, body: dict[str, Any], field: str) -> None:
    status, err = await api.post(CMS, body)
    assert status == 422, err
    assert err["kind"] == "Status" and err["reason"] == "Invalid" and err["code"] == 422
    assert err["details"]["kind"] == "ConfigMap"
    assert field in [c["field"] for c in err["details"]["causes"]]
    assert "is invalid" in err["message"]


@pytest.mark.parametrize("labels", [
    pytest.param({"app": "v" * 63}, id="value-63"),
    pytest.param({"app": ""}, id="empty-value"),
    pytest.param({"example.com/App_1.x": "A-b_c.9"}, id="prefixed"),
])
async def test_valid_labels_pass(api: RawClient, labels: dict[str, str]) -> None:
    assert (await api.post(CMS, _cm(labels=labels)))[0] == 201


async def test_label_value_message_is_the_real_one(api: RawClient) -> None:
    _, err = await api.post(CMS, _cm(labels={"app": "v" * 64}))
    assert "must be no more than 63 characters" in err["message"]


@pytest.mark.parametrize("name, status", [
    pytest.param("dotted.name", 422, id="dots-not-allowed"),
    pytest.param("a" * 64, 422, id="64-chars"),
    pytest.param("team-a", 201, id="ok"),
])
async def test_namespace_names_are_dns_labels(api: RawClient, name: str, status: int) -> None:
    assert (await api.post("/api/v1/namespaces", make_namespace(name)))[0] == status


async def test_node_names_are_dns_subdomains(api: RawClient) -> None:
    assert (await api.post("/api/v1/nodes", make_node("node-1.zone-a.example")))[0] == 201


@pytest.mark.parametrize("spec, field", [
    pytest.param({"containers": []}, "spec.containers", id="no-containers"),
    pytest.param({"containers": [{"name": "c"}]}, "spec.containers[0].image", id="no-image"),
    pytest.param({"containers": [{"image": "x"}]}, "spec.containers[0].name", id="no-name"),
    pytest.param({"containers": [{"name": "c", "image": "x"}, {"name": "c", "image": "y"}]},
                 "spec.containers[1].name", id="duplicate-names"),
])
async def test_invalid_pod_spec_is_422(api: RawClient, spec: dict[str, Any], field: str) -> None:
    pod = make_pod("p")
    pod["spec"] = spec
    status, err = await api.post(PODS, pod)
    assert status == 422
    assert field in [c["field"] for c in err["details"]["causes"]]


@pytest.mark.parametrize("patch, status", [
    pytest.param({"spec": {"nodeName": "n1"}}, 422, id="set-node-name"),
    pytest.param({"spec": {"schedulerName": "other"}}, 422, id="scheduler-name"),
    pytest.param({"spec": {"restartPolicy": "Never"}}, 422, id="restart-policy"),
    pytest.param({"spec": {"activeDeadlineSeconds": 30}}, 200, id="active-deadline"),
    pytest.param({"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}}, 200,
                 id="image"),
    pytest.param({"spec": {"schedulingGates": None}}, 200, id="remove-gates"),
    pytest.param({"spec": {"schedulingGates": [{"name": "a"}, {"name": "new"}]}}, 422,
                 id="add-gate"),
    pytest.param({"metadata": {"labels": {"x": "y"}}}, 200, id="labels"),
])
async def test_pod_spec_is_immutable_except_allowed_fields(
        api: RawClient, patch: dict[str, Any], status: int) -> None:
    await api.post(PODS, make_pod("p", gates=["a"]))
    got, body = await api.patch(f"{PODS}/p", patch, "application/strategic-merge-patch+json")
    assert got == status, body


async def test_node_name_cannot_change_once_bound(fake_api: FakeApiServer,
                                                  api: RawClient) -> None:
    await api.post(PODS, make_pod("p"))
    fake_api.bind("default", "p", "n1")
    status, err = await api.patch(f"{PODS}/p", {"spec": {"nodeName": "n2"}})
    assert status == 422 and "pod updates may not change fields" in err["message"]
    _, pod = await api.get(f"{PODS}/p")
    pod["spec"]["nodeName"] = "n3"
    assert (await api.put(f"{PODS}/p", pod))[0] == 422


async def test_tolerations_may_only_be_added(api: RawClient) -> None:
    _, pod = await api.post(PODS, make_pod("p"))
    tolerations = pod["spec"]["tolerations"]
    more = [*tolerations, {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert (await api.patch(f"{PODS}/p", {"spec": {"tolerations": more}}))[0] == 200
    assert (await api.patch(f"{PODS}/p", {"spec": {"tolerations": tolerations}}))[0] == 422


@pytest.mark.parametrize("query, status", [
    pytest.param({"labelSelector": "app in (a,b),!legacy"}, 200, id="ok"),
    pytest.param({"labelSelector": "app in a,b"}, 400, id="no-parens"),
    pytest.param({"labelSelector": "app=" + "v" * 64}, 400, id="bad-value"),
    pytest.param({"fieldSelector": "spec.nodeName="}, 200, id="node-name"),
    pytest.param({"fieldSelector": "spec.bogus=1"}, 400, id="unsupported-field"),
    pytest.param({"fieldSelector": "nonsense"}, 400, id="no-operator"),
])
async def test_selector_syntax(api: RawClient, query: dict[str, str], status: int) -> None:
    got, body = await api.get(PODS, **query)
    assert got == status, body
    if status == 400:
        assert body["reason"] == "BadRequest"


async def test_finalizers_cannot_be_added_while_deleting(fake_api: FakeApiServer,
                                                         api: RawClient) -> None:
    await api.post(CMS, make_configmap("c", finalizers=["a.dev/f"]))
    await api.delete(f"{CMS}/c")
    status, _ = await api.patch(f"{CMS}/c", {"metadata": {"finalizers": ["a.dev/f", "a.dev/g"]}})
    assert status == 422
