"""Opt-in end-to-end tests of Dynamic Resource Allocation on a real cluster:
``pytest --e2e tests/e2e/test_e2e_dra.py``.

The cluster must serve ``resource.k8s.io/v1`` (Kubernetes 1.34 or later) and run a DRA
driver that publishes devices of ``gpu.example.com`` as ResourceSlices: the DRA example
driver (kubernetes-sigs/dra-example-driver, e.g. on kind with its ``demo/`` scripts),
configured with **two devices on each of two nodes** (``numDevices: 2`` and two worker
nodes), which is the layout of the issue's measurements. Tests that find another layout
skip with what they found. The operator must run (``kubectl apply -k manifests/``, or
``--e2e-operator``). Each test deletes what it applied.

The scenarios are those of ``tests/shell/test_shell_dra.py``, there run against the fake
API server: a gang of four one-device pods is bound whole with four distinct devices; a
second gang binds nothing while no device is free and binds once the first is gone; a
claim of two devices that must share an attribute goes to the node whose devices do; a
high-priority gang preempts exactly the holders it needs.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from test_e2e_examples import (
    EXAMPLES,
    NS,
    applied,
    get,
    kubectl,
    node_of,
    scheduled_message,
    wait_bound,
    wait_until,
)

pytestmark = pytest.mark.e2e
DRIVER = "gpu.example.com"
FOLDER = "15-gpu-gang"


def slices() -> list[dict[str, Any]]:
    out = kubectl("get", "resourceslices.resource.k8s.io", "-o", "json",
                  f"--field-selector=spec.driver={DRIVER}")
    return list(json.loads(out)["items"])


@pytest.fixture(scope="module", autouse=True)
def two_by_two() -> dict[str, int]:
    """The devices per node the driver publishes; skips unless two nodes have two."""
    try:
        found = slices()
    except Exception as error:  # resource.k8s.io/v1 not served, or kubectl refused
        pytest.skip(f"no resource.k8s.io/v1 ResourceSlices to read: {error}")
    per_node = Counter[str]()
    for item in found:
        per_node[item["spec"].get("nodeName") or ""] += len(item["spec"].get("devices") or [])
    if sorted(per_node.values()) != [2, 2]:
        pytest.skip(f"needs 2 devices of {DRIVER} on each of 2 nodes, found {dict(per_node)}")
    return dict(per_node)


def claim_results(pod: str) -> list[tuple[str, str]]:
    for entry in get("pods", pod).get("status", {}).get("resourceClaimStatuses") or []:
        claim = get("resourceclaims.resource.k8s.io", entry["resourceClaimName"])
        allocation = claim.get("status", {}).get("allocation") or {}
        return [(r["pool"], r["device"]) for r in allocation.get("devices", {}).get(
            "results", [])]
    return []


def reserved_for(pod: str) -> list[str]:
    for entry in get("pods", pod).get("status", {}).get("resourceClaimStatuses") or []:
        claim = get("resourceclaims.resource.k8s.io", entry["resourceClaimName"])
        return [r["name"] for r in claim.get("status", {}).get("reservedFor") or []]
    return []


def test_a_gang_of_four_gets_four_devices_and_a_second_gang_waits(
        two_by_two: dict[str, int]) -> None:
    gang = [f"gpu-gang-{i}" for i in range(4)]
    pair = ["gpu-pair-0", "gpu-pair-1"]
    with applied(FOLDER, "1-deviceclass.yaml", "3-claim-template.yaml", "4-gang.yaml"):
        wait_bound(*gang)
        assert {node_of(p) for p in gang} == set(two_by_two)
        devices = [d for p in gang for d in claim_results(p)]
        assert len(devices) == 4 and len(set(devices)) == 4
        for p in gang:
            assert reserved_for(p) == [p]
        kubectl("apply", "-f", str(EXAMPLES / FOLDER / "5-second-gang.yaml"))
        for _ in range(5):  # 0 of 2 bound at every sample while the first gang runs
            wait_until(lambda: scheduled_message("gpu-pair-0"), "gpu-pair-0 waiting", 60)
            assert not node_of("gpu-pair-0") and not node_of("gpu-pair-1")
        kubectl("delete", "pods", *gang, "-n", NS, "--wait=false")
        wait_bound(*pair, timeout=240)
        assert len(set(claim_results(pair[0]) + claim_results(pair[1]))) == 2


MATCHED = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
    "metadata": {"name": "same-node-pair", "namespace": NS},
    "spec": {"spec": {"devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": DRIVER, "count": 2}}],
        # The example driver's devices carry no topology attribute; their model is the
        # same on every device, so the constraint holds on each node with two.
        "constraints": [{"requests": ["gpus"], "matchAttribute": f"{DRIVER}/model"}]}}},
}


def test_a_claim_of_two_matching_devices_goes_to_one_node_and_a_second_waits(
        two_by_two: dict[str, int], tmp_path: Any) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(json.dumps(MATCHED))
    pods = []
    for name in ("pair-a", "pair-b", "pair-c"):
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": NS},
                     "spec": {"schedulerName": "gangsched", "restartPolicy": "Never",
                              "terminationGracePeriodSeconds": 0,
                              "resourceClaims": [{"name": "gpus",
                                                  "resourceClaimTemplateName":
                                                      "same-node-pair"}],
                              "containers": [{"name": "main",
                                              "image": "registry.k8s.io/pause:3.10",
                                              "resources": {"claims": [{"name": "gpus"}]}}]}})
    manifest = tmp_path / "pods.yaml"
    manifest.write_text("\n---\n".join(json.dumps(p) for p in pods))
    try:
        kubectl("apply", "-f", str(template))
        kubectl("apply", "-f", str(manifest))
        wait_until(lambda: sum(1 for p in ("pair-a", "pair-b", "pair-c") if node_of(p)) == 2,
                   "two pairs bound")
        bound = [p for p in ("pair-a", "pair-b", "pair-c") if node_of(p)]
        for p in bound:
            assert {pool for pool, _ in claim_results(p)} == {node_of(p)}
        waiting = ({"pair-a", "pair-b", "pair-c"} - set(bound)).pop()
        wait_until(lambda: scheduled_message(waiting), f"{waiting} waiting")
    finally:
        kubectl("delete", "-f", str(manifest), "--ignore-not-found", "--timeout=120s")
        kubectl("delete", "-f", str(template), "--ignore-not-found")


def test_a_high_priority_gang_preempts_exactly_the_holders_it_needs(
        two_by_two: dict[str, int], tmp_path: Any) -> None:
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": f"dra-e2e-{name}"}, "value": value}
               for name, value in (("low", 10), ("high", 1000))]
    group = {"apiVersion": "gangsched.io/v1alpha1", "kind": "PodGroup",
             "metadata": {"name": "urgent", "namespace": NS},
             "spec": {"minMember": 2, "scheduleTimeoutSeconds": 600}}

    def one_gpu(name: str, priority: str, labels: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": NS, "labels": labels},
                "spec": {"schedulerName": "gangsched", "priorityClassName": priority,
                         "terminationGracePeriodSeconds": 0,
                         "resourceClaims": [{"name": "gpu",
                                             "resourceClaimTemplateName": "single-gpu"}],
                         "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"claims": [{"name": "gpu"}]}}]}}

    low = [one_gpu(f"holder-{i}", "dra-e2e-low", {}) for i in range(4)]
    urgent = [one_gpu(f"urgent-{i}", "dra-e2e-high", {"gangsched.io/pod-group": "urgent"})
              for i in range(2)]
    files = {}
    for name, objects in (("classes", classes), ("low", low), ("urgent", [group, *urgent])):
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text("\n---\n".join(json.dumps(o) for o in objects))
    try:
        with applied(FOLDER, "1-deviceclass.yaml", "3-claim-template.yaml"):
            kubectl("apply", "-f", str(files["classes"]))
            kubectl("apply", "-f", str(files["low"]))
            wait_bound(*(p["metadata"]["name"] for p in low))
            kubectl("apply", "-f", str(files["urgent"]))
            wait_bound("urgent-0", "urgent-1", timeout=240)
            left = [p["metadata"]["name"] for p in low
                    if get("pods", p["metadata"]["name"]) and
                    not get("pods", p["metadata"]["name"])["metadata"].get("deletionTimestamp")]
            assert len(left) == 2, left
    finally:
        for name in ("urgent", "low", "classes"):
            kubectl("delete", "-f", str(files[name]), "--ignore-not-found", "--timeout=120s")
