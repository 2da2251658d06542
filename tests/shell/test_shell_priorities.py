"""PriorityClasses over the API: Applications and PodGroups get their class's priority."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched.core.values.model import AppKey, GroupKey
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    group,
    node,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    api: FakeApiServer = await fake_api_factory(auto_run=True)
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    add_node(api, node("node-0"))
    return api, api.write_kubeconfig(tmp_path / "kubeconfig")


def priority_class(name: str, value: int, default: bool = False) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "globalDefault": default}


async def test_gangs_take_their_priority_class_value_also_when_it_comes_later(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.create(priority_class("batch-low", 10, default=True))
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    runtime = op.runtime
    assert runtime is not None
    try:
        app = application("train", [group("worker", 1)])
        app["spec"]["priorityClassName"] = "training-high"  # not made yet
        api.create(app)
        api.create({"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
                    "metadata": {"name": "etl", "namespace": "default"},
                    "spec": {"minMember": 1}})
        scheduler = runtime.scheduler

        def priorities() -> tuple[int, int] | None:
            found = scheduler.apps.get(AppKey("default/train")), scheduler.groups.get(
                GroupKey("default/etl"))
            if found[0] is None or found[1] is None:
                return None
            return found[0].spec.priority, found[1].spec.priority

        # the unknown class counts as none: the global default, as for the PodGroup
        await wait_for(lambda: priorities() == (10, 10), what="the global default")
        api.create(priority_class("training-high", 1000))
        await wait_for(lambda: priorities() == (1000, 10), what="the class once it exists")
    finally:
        await op.kill()
