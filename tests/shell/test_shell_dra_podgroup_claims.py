"""The Workload API's PodGroup-level ResourceClaims end to end (Kubernetes 1.36,
``DRAWorkloadResourceClaims``): the fake API server's resourceclaim controller makes one
claim for the PodGroup from its template and gives it to the members whose claim matches;
gangsched allocates it once and reserves it for the PodGroup; the kubelet lets every
member use it."""

from __future__ import annotations

from typing import Any

import pytest
from shellkit import FakeClock, OperatorUnderTest, assert_bound_at_most_once, wait_for
from test_shell_dra import V1, cluster, gpus, node_of, running, template
from translate.workload_objects import gang, member, podgroup

pytestmark = pytest.mark.asyncio
__all__ = ["cluster"]  # the fixture, shared with test_shell_dra.py

V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
CLAIM = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}


def worker(name: str) -> dict[str, Any]:
    body = member(name, "train", uid=False)
    body["spec"]["resourceClaims"] = [dict(CLAIM)]
    body["spec"]["terminationGracePeriodSeconds"] = 1
    return body


def group_claim(api: Any) -> dict[str, Any] | None:
    found = api.try_get("podgroups", "default", "train", api_version=V1ALPHA2) or {}
    for status in (found.get("status") or {}).get("resourceClaimStatuses") or []:
        return api.try_get("resourceclaims", "default", status["resourceClaimName"])
    return None


async def test_a_podgroup_claim_is_allocated_once_and_reserved_for_the_group(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    api.serve_workload_api()
    gpus(api, "node-1", "a")  # the one GPU, on node-1
    template(api)
    group = podgroup("train", policy=gang(3))
    group["spec"]["resourceClaims"] = [dict(CLAIM)]
    created = api.create(group)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        for i in range(3):
            api.create(worker(f"w{i}"))
        for _ in range(20):  # past the pods' backoff, as often as it takes
            if all(running(api, f"w{i}") for i in range(3)):
                break
            await op.advance(2)
        await wait_for(lambda: all(running(api, f"w{i}") for i in range(3)),
                       what="the three members running", timeout=30)
        assert {node_of(api, f"w{i}") for i in range(3)} == {"node-1"}
        claims = api.list("resourceclaims", "default")
        assert len(claims) == 1  # one claim, the group's: none per pod
        claim = group_claim(api)
        assert claim is not None and claim["metadata"]["name"] == claims[0]["metadata"]["name"]
        assert claim["status"]["reservedFor"] == [{
            "apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "train",
            "uid": created["metadata"]["uid"]}]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["pool"], result["device"]) == ("node-1", "gpu-0")
        assert api.request_count("update", "resourceclaims", "status") == 1
        assert_bound_at_most_once(api)
    finally:
        await op.kill()


__all__ += ["V1"]
