"""Opt-in end-to-end tests on a real cluster (kind, k3s, EKS...): ``pytest --e2e tests/e2e``.

They apply the CRDs and each example folder with kubectl, assume the operator is running
(``kubectl apply -k manifests/`` or ``gangsched run``), and assert on
``kubectl get applications`` output.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.e2e


def kubectl(*args: str) -> str:
    return subprocess.run(["kubectl", *args], check=True, capture_output=True,
                          text=True).stdout


def wait_state(name: str, namespace: str, states: set[str], timeout: float = 180.0) -> str:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        out = kubectl("get", "applications.gangsched.io", name, "-n", namespace, "-o", "json")
        state = json.loads(out).get("status", {}).get("state", "")
        if state in states:
            return state
        time.sleep(2)
    raise AssertionError(f"{namespace}/{name} stayed {state!r}, wanted one of {states}")


def test_crds_apply_and_print_columns() -> None:
    kubectl("apply", "-f", str(ROOT / "crds"))
    out = kubectl("get", "applications.gangsched.io", "-A")
    assert "No resources found" in out or "STATE" in out


def test_single_gang_example_reserves_and_runs() -> None:
    folder = ROOT / "examples" / "01-single-gang"
    kubectl("apply", "-f", str(folder))
    try:
        assert wait_state("single-gang", "default", {"Running", "Waiting", "Completed"})
        table = kubectl("get", "applications.gangsched.io", "-n", "default")
        assert "single-gang" in table and "RESERVED" in table
    finally:
        kubectl("delete", "-f", str(folder), "--ignore-not-found")
