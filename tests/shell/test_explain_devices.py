"""``gangsched explain``'s devices section, on pods and claims as the API returns them."""

from __future__ import annotations

from typing import Any

from gangsched.shell.explain import format_explanation
from gangsched.shell.explain_devices import device_lines

GPU = "gpu.example.com"


def member(name: str, node: str | None = None, message: str = "",
           **entry: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceClaims": [{"name": "gpu", **entry}]}
    if node:
        spec["nodeName"] = node
    status: dict[str, Any] = {}
    if message:
        status["conditions"] = [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable", "message": message}]
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def claim(name: str, device: str | None = None, *users: str) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if device is not None:
        status["allocation"] = {"devices": {"results": [
            {"request": "gpu", "driver": GPU, "pool": "node-0", "device": device}]}}
        status["reservedFor"] = [{"resource": "pods", "name": u, "uid": f"uid-{u}"}
                                 for u in users]
    return {"metadata": {"name": name}, "status": status}


def test_each_member_its_claims_and_devices_or_why_none() -> None:
    bound = member("w-0", "node-0", resourceClaimTemplateName="one-gpu")
    bound["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "w-0-gpu-x"}]
    waiting = member("w-1", message="0/3 nodes are available: 3 cannot allocate all claims.",
                     resourceClaimName="shared")
    unmade = member("w-2", message="waiting for the resourceclaim controller",
                    resourceClaimTemplateName="one-gpu")
    lines = device_lines([unmade, waiting, bound, {"metadata": {"name": "plain"}}],
                         [claim("w-0-gpu-x", "gpu-1", "w-0"), claim("shared")])
    assert lines == [
        "  devices (Dynamic Resource Allocation):",
        "    w-0: bound to node-0",
        f"      claim gpu -> w-0-gpu-x: {GPU}/node-0: gpu-1 (gpu); reserved for w-0",
        "    w-1: not bound",
        "      claim gpu -> shared: no devices allocated",
        "      why: 0/3 nodes are available: 3 cannot allocate all claims.",
        "    w-2: not bound",
        "      claim gpu: not made yet (the resourceclaim controller makes it from template "
        "one-gpu)",
        "      why: waiting for the resourceclaim controller",
    ]


def test_devices_of_one_pool_and_request_are_listed_together() -> None:
    pod = member("w-0", "node-0", resourceClaimName="quad")
    quad = claim("quad", "gpu-0", "w-0")
    results = quad["status"]["allocation"]["devices"]["results"]
    results.append({**results[0], "device": "gpu-1"})
    results.append({**results[0], "pool": "node-1", "device": "gpu-0"})
    assert device_lines([pod], [quad])[2] == (
        f"      claim gpu -> quad: {GPU}/node-0: gpu-0, gpu-1 (gpu), {GPU}/node-1: gpu-0 "
        "(gpu); reserved for w-0")


def test_no_claims_no_section_and_garbage_does_not_raise() -> None:
    assert device_lines([{"metadata": {"name": "p"}, "spec": {}}], []) == []
    assert device_lines([{"spec": {"resourceClaims": [7, {"name": "x"}]}, "status": "bad"}],
                        [7, {"metadata": None}])[1] == "    ?: not bound"
    text = format_explanation({"kind": "PodGroup", "metadata": {"name": "g",
                                                                "namespace": "default"}},
                              pods=[member("w-0", resourceClaimName="missing")], claims=[])
    assert "claim gpu -> missing: not found" in text
