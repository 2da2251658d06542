"""Real clients against the fake: kubernetes_asyncio, pykube-ng, and a kopf operator."""

from __future__ import annotations

import asyncio
import logging
import pathlib
from typing import Any

import kopf
import pykube
import pytest
from fakeapi import FakeApiServer
from fakeapi.builders import make_crd, make_node, make_pod
from fakeapi.client import RawClient
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

WIDGETS = "/apis/example.dev/v1/namespaces/default/widgets"


async def _core_api(kubeconfig: pathlib.Path) -> k8s.ApiClient:
    configuration = k8s.Configuration()
    await k8s_config.load_kube_config(config_file=str(kubeconfig),
                                      client_configuration=configuration)
    return k8s.ApiClient(configuration)


async def test_kubernetes_asyncio_list_bind_and_conflict(fake_api: FakeApiServer,
                                                         fake_kubeconfig: pathlib.Path) -> None:
    fake_api.create(make_pod("p", labels={"app": "x"}))
    fake_api.create(make_node("n1"))
    async with await _core_api(fake_kubeconfig) as api_client:
        v1 = k8s.CoreV1Api(api_client)
        pods = await v1.list_namespaced_pod("default", label_selector="app=x")
        assert [p.metadata.name for p in pods.items] == ["p"]
        assert pods.metadata.resource_version
        nodes = await v1.list_node()
        assert nodes.items[0].status.allocatable["cpu"] == "8"
        body = k8s.V1Binding(
            metadata=k8s.V1ObjectMeta(name="p", uid=pods.items[0].metadata.uid),
            target=k8s.V1ObjectReference(api_version="v1", kind="Node", name="n1"))
        resp: Any = await v1.create_namespaced_pod_binding("p", "default", body,
                                                           _preload_content=False)
        assert resp.status == 201
        pod = await v1.read_namespaced_pod("p", "default")
        assert pod.spec.node_name == "n1"
        # Without preloading, the client does not raise: the caller reads the status.
        resp = await v1.create_namespaced_pod_binding("p", "default", body,
                                                      _preload_content=False)
        assert resp.status == 409
        assert (await resp.json())["reason"] == "Conflict"
        patched = await v1.patch_namespaced_pod_status(
            "p", "default", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        types = [c.type for c in patched.status.conditions]
        assert types == ["PodScheduled", "Ready"]  # strategic merge: merged by type


async def test_kubernetes_asyncio_watch_stream(fake_api: FakeApiServer,
                                               fake_kubeconfig: pathlib.Path) -> None:
    first = fake_api.create(make_pod("a"))
    fake_api.create(make_pod("b"))
    fake_api.delete("pods", "default", "a")
    async with await _core_api(fake_kubeconfig) as api_client:
        v1 = k8s.CoreV1Api(api_client)
        seen = []
        watcher = k8s_watch.Watch()
        async with asyncio.timeout(5):
            async for event in watcher.stream(
                    v1.list_namespaced_pod, "default", timeout_seconds=5,
                    resource_version=first["metadata"]["resourceVersion"]):
                seen.append((event["type"], event["object"].metadata.name))
                if len(seen) == 2:
                    watcher.stop()
        assert seen == [("ADDED", "b"), ("DELETED", "a")]


async def test_kubernetes_asyncio_custom_objects(fake_api: FakeApiServer,
                                                 fake_kubeconfig: pathlib.Path) -> None:
    fake_api.create(make_crd())
    async with await _core_api(fake_kubeconfig) as api_client:
        custom = k8s.CustomObjectsApi(api_client)
        created = await custom.create_namespaced_custom_object(
            "example.dev", "v1", "default", "widgets",
            {"apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
             "spec": {"image": "nginx"}})
        assert created["spec"]["size"] == 1
        # The client picks json-patch for a dict body unless told otherwise; a real server
        # rejects that with 400 too, so callers must pass the merge-patch content type.
        with pytest.raises(k8s.ApiException) as excinfo:
            await custom.patch_namespaced_custom_object_status(
                "example.dev", "v1", "default", "widgets", "w", {"status": {"ok": True}})
        assert excinfo.value.status == 400
        merge: dict[str, Any] = {"_content_type": "application/merge-patch+json"}
        patched = await custom.patch_namespaced_custom_object_status(
            "example.dev", "v1", "default", "widgets", "w", {"status": {"ok": True}}, **merge)
        assert patched["status"] == {"ok": True}
        with pytest.raises(k8s.ApiException) as excinfo:
            await custom.get_namespaced_custom_object("example.dev", "v1", "default",
                                                      "widgets", "missing")
        assert excinfo.value.status == 404


async def test_pykube_reads_through_the_kubeconfig(fake_api: FakeApiServer,
                                                   fake_kubeconfig: pathlib.Path) -> None:
    fake_api.create(make_pod("a", labels={"app": "x"}))
    fake_api.create(make_pod("b"))

    def query() -> tuple[list[str], list[str]]:
        api = pykube.HTTPClient(pykube.KubeConfig.from_file(str(fake_kubeconfig)))
        try:
            everything = [p.name for p in pykube.Pod.objects(api).filter(namespace="default")]
            selected = [p.name for p in pykube.Pod.objects(api).filter(
                namespace="default", selector={"app": "x"})]
            pykube.ConfigMap(api, {"metadata": {"name": "from-pykube",
                                                "namespace": "default"}}).create()
            return everything, selected
        finally:
            api.session.close()

    everything, selected = await asyncio.to_thread(query)
    assert sorted(everything) == ["a", "b"] and selected == ["a"]
    assert fake_api.get("configmaps", "default", "from-pykube")["metadata"]["uid"]


@pytest.mark.parametrize("initial_streaming", [False, True], ids=["list-then-watch", "streaming"])
async def test_kopf_operator_handles_a_custom_resource(fake_api: FakeApiServer,
                                                       caplog: pytest.LogCaptureFixture,
                                                       initial_streaming: bool) -> None:
    caplog.set_level(logging.WARNING)
    fake_api.create(make_crd())
    registry = kopf.OperatorRegistry()
    deleted = asyncio.Event()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.watching.server_timeout = 2
        settings.watching.initial_streaming = initial_streaming
        settings.watching.client_timeout = 5
        settings.networking.error_backoffs = [0.1]

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=fake_api.url, default_namespace="default")

    @kopf.on.create("example.dev", "v1", "widgets", registry=registry)
    def on_create(spec: kopf.Spec, patch: kopf.Patch, **_: Any) -> None:
        patch.status["seen"] = spec["image"]

    @kopf.on.delete("example.dev", "v1", "widgets", registry=registry)
    def on_delete(**_: Any) -> None:
        deleted.set()

    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()
    operator = asyncio.create_task(kopf.operator(
        registry=registry, clusterwide=True, standalone=True,
        stop_flag=stop_flag, ready_flag=ready_flag))
    try:
        async with RawClient(fake_api.url) as api:
            async with asyncio.timeout(10):
                await ready_flag.wait()
            _, page = await api.get(WIDGETS)
            rv = page["metadata"]["resourceVersion"]
            status, _ = await api.post(WIDGETS, {
                "apiVersion": "example.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"image": "nginx"}})
            assert status == 201
            events = await api.watch(
                WIDGETS, timeout=10, resourceVersion=rv,
                until=lambda e: (e["object"].get("status") or {}).get("seen") == "nginx")
            handled = events[-1]["object"]
            assert handled["metadata"]["finalizers"] == ["kopf.zalando.org/KopfFinalizerMarker"]
            await api.delete(f"{WIDGETS}/w")
            events = await api.watch(WIDGETS, timeout=10,
                                     resourceVersion=handled["metadata"]["resourceVersion"],
                                     until=lambda e: e["type"] == "DELETED")
            assert deleted.is_set() and events[-1]["type"] == "DELETED"
    finally:
        stop_flag.set()
        async with asyncio.timeout(10):
            await operator
    assert fake_api.internal_errors == []
    assert fake_api.request_count("watch", "widgets") >= 1
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
