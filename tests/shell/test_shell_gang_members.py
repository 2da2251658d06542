"""The real members the operator keeps per gang (they own a gang made from pods): a pod
is in its current gang's members only, leaves the one it was in when its gang changes
or it goes, and no other gang's members move (a pod's event no longer walks them)."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.shell.client import Connection, KubeClient
from gangsched.shell.runtime import Runtime
from gangsched.shell.settings import OperatorSettings
from gangsched.translate.labels import ANN_TASK_GROUP, LABEL_APP, LABEL_POD_GROUP
from shellkit import pod

pytestmark = pytest.mark.asyncio


def member(name: str, uid: str, *, app: str | None = None, group: str | None = None,
           scheduler: str = "gangsched") -> dict[str, Any]:
    labels = {LABEL_APP: app} if app else {LABEL_POD_GROUP: group} if group else {}
    obj = pod(name, labels=labels, annotations={ANN_TASK_GROUP: "w"} if app else {},
              scheduler=scheduler)
    obj["metadata"].update(uid=uid, creationTimestamp="2026-01-01T00:00:00Z")
    return obj


def members(rt: Runtime) -> dict[str, list[str]]:
    return {gang: sorted(pods) for gang, pods in rt.gang_members.items()}


async def test_a_pod_is_kept_under_its_current_gang_only() -> None:
    rt = Runtime(KubeClient(Connection("http://127.0.0.1:1")),
                 OperatorSettings(leader_election=False))
    rt.leading.set()
    rt.on_pod("ADDED", member("a1", "u-a1", app="a"))
    rt.on_pod("ADDED", member("a2", "u-a2", app="a"))
    rt.on_pod("ADDED", member("b1", "u-b1", group="b"))
    rt.on_pod("ADDED", member("x", "u-x"))  # in no gang
    rt.on_pod("ADDED", member("o", "u-o", app="a", scheduler="other"))  # not ours
    assert members(rt) == {"Application/default/a": ["u-a1", "u-a2"],
                           "PodGroup/default/b": ["u-b1"]}

    rt.on_pod("MODIFIED", member("a2", "u-a2", group="b"))  # its gang changed
    assert members(rt) == {"Application/default/a": ["u-a1"],
                           "PodGroup/default/b": ["u-a2", "u-b1"]}

    rt.on_pod("MODIFIED", member("b1", "u-b1"))  # left its gang for none
    rt.on_pod("DELETED", {"metadata": {"uid": "u-a1", "name": "a1", "namespace": "default"}})
    assert members(rt) == {"PodGroup/default/b": ["u-a2"]}
    assert rt.member_of == {"u-a2": "PodGroup/default/b"}

    rt.on_pod("DELETED", {"metadata": {"uid": "u-a2", "name": "a2", "namespace": "default"}})
    assert members(rt) == {} and rt.member_of == {}
    await rt.client.close()
