"""Which members become owners of a gang made from pods (``owners_to_add``)."""

from __future__ import annotations

from typing import Any

import pytest
from gangsched.core.values.model import Pod, PodPhase, PodUID
from gangsched.core.values.resources import Resources
from gangsched.translate import labels
from gangsched.translate.pods_first import owner_ref, owners_to_add


def member(name: str, **kw: Any) -> Pod:
    return Pod(uid=PodUID(f"uid-{name}"), namespace="default", name=name,
               requests=Resources.ZERO, **kw)


def gang(*owners: str, managed: bool = True, deleting: bool = False,
         kind: str = "Pod") -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": "spark-pi", "namespace": "default", "resourceVersion": "7",
        "labels": {labels.LABEL_MANAGED_BY: labels.MANAGED_BY} if managed else {},
        "ownerReferences": [{"apiVersion": "v1" if kind == "Pod" else "batch/v1",
                             "kind": kind, "name": o, "uid": f"uid-{o}"} for o in owners],
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    return {"metadata": meta}


@pytest.mark.parametrize(("obj", "members", "added"), [
    pytest.param(gang("e0"), [member("e0"), member("e2"), member("e1")], ["e1", "e2"],
                 id="the-others-in-name-order"),
    pytest.param(gang("e0", "e1"), [member("e0"), member("e1")], None, id="all-owners-already"),
    pytest.param(gang("e0"), [member("ph", placeholder=True)], None, id="not-a-placeholder"),
    pytest.param(gang("e0"), [member("e1", terminating=True)], None, id="not-one-that-goes"),
    pytest.param(gang("e0"), [member("e1", phase=PodPhase.SUCCEEDED)], None,
                 id="not-one-that-finished"),
    pytest.param(gang("e0", managed=False), [member("e1")], None, id="not-made-by-gangsched"),
    pytest.param(gang("job", kind="Job"), [member("e1")], None, id="not-made-from-pods"),
    pytest.param(gang(), [member("e1")], None, id="no-owner-at-all"),
    pytest.param(gang("e0", deleting=True), [member("e1")], None, id="being-deleted"),
])
def test_owners_to_add(obj: dict[str, Any], members: list[Pod], added: list[str] | None) -> None:
    ops = owners_to_add(obj, members)
    if added is None:
        assert ops is None
        return
    assert ops is not None
    assert ops[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "7"}
    assert [op["value"]["name"] for op in ops[1:]] == added
    assert all(op["op"] == "add" and op["path"] == "/metadata/ownerReferences/-"
               for op in ops[1:])


def test_a_member_owns_without_controlling_or_blocking() -> None:
    assert owner_ref(member("e1")) == {"apiVersion": "v1", "kind": "Pod", "name": "e1",
                                       "uid": "uid-e1", "controller": False,
                                       "blockOwnerDeletion": False}
