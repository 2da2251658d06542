"""Opt-in end-to-end tests on a real cluster (kind, k3s, EKS...): ``pytest --e2e tests/e2e``.

They apply the CRDs and each example folder with kubectl, and assert on what ``kubectl
get`` shows, as each example's README describes it. The operator must be running: either
deployed (``kubectl apply -k manifests/``) or, with ``--e2e-operator``, started from this
checkout for the session (see ``conftest.py``). Every test deletes what it applied, also
when it fails. They pass on any conformant cluster: no test waits for a container to exit
by itself (simulated nodes and ``pause`` images never do); a test that needs pods to end
deletes them, as a finished job's pods would go. The timeout examples take a little over
a minute each.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
NS = "default"
pytestmark = pytest.mark.e2e


def kubectl(*args: str, stderr: bool = False) -> str:
    """Run kubectl; its stdout (and stderr, where "No resources found" goes, if asked)."""
    done = subprocess.run(["kubectl", *args], check=True, capture_output=True, text=True)
    return done.stdout + (done.stderr if stderr else "")


def get(resource: str, name: str, namespace: str | None = NS) -> dict[str, Any]:
    """The object as JSON ({} when it does not exist)."""
    where = ["-n", namespace] if namespace else []
    out = kubectl("get", resource, name, *where, "-o", "json", "--ignore-not-found")
    return json.loads(out) if out.strip() else {}


def status(resource: str, name: str, namespace: str | None = NS) -> dict[str, Any]:
    return dict(get(resource, name, namespace).get("status") or {})


def pods(selector: str) -> list[dict[str, Any]]:
    return list(json.loads(kubectl("get", "pods", "-n", NS, "-l", selector, "-o", "json"))
                ["items"])


def node_of(name: str) -> str:
    return str(get("pods", name).get("spec", {}).get("nodeName") or "")


def scheduled_message(name: str) -> str:
    """The message of the pod's PodScheduled=False condition, e.g. "WaitingForGang: ..."."""
    for c in get("pods", name).get("status", {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message") or "")
    return ""


def wait_until(check: Callable[[], Any], what: str, timeout: float = 180.0) -> Any:
    """Poll ``check`` every 2 s until it returns something truthy, or fail."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(2)
    raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")


def wait_bound(*names: str, timeout: float = 180.0) -> None:
    for name in names:
        wait_until(lambda name=name: node_of(name), f"{name} bound", timeout)


def wait_state(name: str, namespace: str, states: set[str], timeout: float = 180.0) -> str:
    def state() -> str:
        found = str(status("applications.gangsched.io", name, namespace).get("state", ""))
        return found if found in states else ""
    return str(wait_until(state, f"{namespace}/{name} in one of {sorted(states)}", timeout))


def wait_phase(name: str, phases: set[str], timeout: float = 180.0) -> str:
    def phase() -> str:
        found = str(status("podgroups.gangsched.io", name).get("phase", ""))
        return found if found in phases else ""
    return str(wait_until(phase, f"podgroup {name} in one of {sorted(phases)}", timeout))


@contextlib.contextmanager
def applied(folder: str, *files: str, extra: tuple[tuple[str, str], ...] = ()) -> Iterator[None]:
    """Apply the example (or some of its files); delete all of it afterwards.

    ``extra`` names objects the operator creates for the example, deleted too.
    """
    path = EXAMPLES / folder
    try:
        for target in [path / f for f in files] or [path]:
            kubectl("apply", "-f", str(target))
        yield
    finally:
        kubectl("delete", "-f", str(path), "--ignore-not-found", "--timeout=120s")
        for resource, name in extra:
            kubectl("delete", resource, name, "-n", NS, "--ignore-not-found")


def end_pods(*names: str) -> None:
    """End pods this test started, as their containers finishing would (deleted, so that
    it works with any image on any node)."""
    kubectl("delete", "pods", *names, "-n", NS, "--ignore-not-found", "--wait=false")


def placeholders_of(app: str) -> list[dict[str, Any]]:
    return pods(f"gangsched.io/app={app},gangsched.io/placeholder=true")


def skip_if_pool_exists() -> None:
    """06 and 07 rely on no node having the label their workers need."""
    out = kubectl("get", "nodes", "-l", "example.com/pool=reserved", "-o", "name")
    if out.strip():
        pytest.skip("a node is labelled example.com/pool=reserved: the gang would fit")


@pytest.fixture(scope="module", autouse=True)
def crds() -> None:
    kubectl("apply", "-f", str(ROOT / "crds"))


def test_crds_apply_and_print_columns() -> None:
    out = kubectl("get", "applications.gangsched.io", "-A", stderr=True)
    assert "No resources found" in out or "STATE" in out


def test_single_gang_example_reserves_and_runs() -> None:
    with applied("01-single-gang"):
        assert wait_state("single-gang", "default", {"Running", "Waiting", "Completed"})
        table = kubectl("get", "applications.gangsched.io", "-n", "default")
        assert "single-gang" in table and "RESERVED" in table
        assert status("applications.gangsched.io", "single-gang")["reserved"] == "3/3"
        wait_bound("single-gang-0", "single-gang-1", "single-gang-2")
        wait_until(lambda: not placeholders_of("single-gang"), "placeholders replaced")
        end_pods("single-gang-0", "single-gang-1", "single-gang-2")
        # Nothing runs or waits any more: Waiting, then Completed after waitingTimeout.
        assert wait_state("single-gang", "default", {"Completed"})


def test_spark_pods_first_example_creates_its_application() -> None:
    with applied("02-spark-pods-first", "1-driver.yaml",
                 extra=(("applications.gangsched.io", "spark-pi"),)):
        app = wait_until(lambda: get("applications.gangsched.io", "spark-pi"),
                         "the Application spark-pi created from the driver", 60)
        (owner,) = app["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("Pod", "spark-pi-driver")
        assert [g["name"] for g in app["spec"]["taskGroups"]] == ["driver", "executor"]
        wait_bound("spark-pi-driver")
        held = wait_until(lambda: [p for p in placeholders_of("spark-pi")
                                   if p["spec"].get("nodeName")], "executor placeholders held")
        assert len(held) == 2
        kubectl("apply", "-f", str(EXAMPLES / "02-spark-pods-first" / "2-executors.yaml"))
        wait_bound("spark-pi-exec-1", "spark-pi-exec-2")
        assert status("applications.gangsched.io", "spark-pi")["reserved"] == "3/3"
        assert wait_state("spark-pi", NS, {"Running", "Waiting", "Completed"})


def test_ps_workers_example_reserves_both_groups() -> None:
    with applied("03-ps-workers"):
        wait_bound("mnist-ps-0", "mnist-ps-1", *(f"mnist-worker-{i}" for i in range(4)))
        found = status("applications.gangsched.io", "mnist-training")
        assert found["reserved"] == "6/6"
        assert {g["name"]: g["placeholders"]["replaced"] for g in found["taskGroups"]} == {
            "ps": 2, "worker": 4}
        assert wait_state("mnist-training", NS, {"Running", "Waiting", "Completed"})


def test_queue_quota_holds_the_second_gang() -> None:
    with applied("04-queue-quota-hold"):
        wait_state("job-a", NS, {"Running"}, 120)
        held = status("applications.gangsched.io", "job-b")
        assert (held["state"], held["reserved"]) == ("Accepted", "0/3"), held
        assert held["taskGroups"][0]["blockingReason"]["reason"] == "QueueQuota"
        assert not placeholders_of("job-b")
        assert not any(node_of(f"job-b-{i}") for i in range(3))
        # job-a's pods end (deleted here: not every cluster runs their containers to
        # completion); then job-b fits.
        end_pods(*(f"job-a-{i}" for i in range(3)))
        assert wait_state("job-b", NS, {"Running", "Waiting", "Completed"})
        assert wait_state("job-a", NS, {"Waiting", "Completed"})


def test_gang_larger_than_its_queue_is_rejected() -> None:
    with applied("05-gang-too-large"):
        wait_state("too-large", NS, {"Rejected"}, 60)
        found = status("applications.gangsched.io", "too-large")
        assert found["reason"] == "QueueQuotaExceeded"
        wide = kubectl("get", "applications.gangsched.io", "too-large", "-n", NS, "-o", "wide")
        assert "QueueQuotaExceeded" in wide
        names = [f"too-large-{i}" for i in range(4)]
        for name in names:
            wait_until(lambda name=name: scheduled_message(name).startswith(
                "ApplicationRejected:"), f"{name} pending with ApplicationRejected", 60)
        assert not placeholders_of("too-large")
        assert not any(node_of(name) for name in names)


def test_hard_timeout_kills_and_leaves_pods_pending() -> None:
    skip_if_pool_exists()
    with applied("06-hard-timeout"):
        wait_until(lambda: status("applications.gangsched.io", "hard-timeout")
                   .get("reserved") == "1/3", "hard-timeout reserved 1/3", 60)
        wait_state("hard-timeout", NS, {"Killed"})
        assert status("applications.gangsched.io", "hard-timeout")["reason"] == \
            "PlaceholderTimeout"
        wait_until(lambda: not placeholders_of("hard-timeout"), "placeholders deleted", 60)
        for name in ("hard-timeout-driver", "hard-timeout-worker-0", "hard-timeout-worker-1"):
            pod = get("pods", name)
            assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
            wait_until(lambda name=name: scheduled_message(name).startswith(
                "ApplicationKilled:"), f"{name} pending with ApplicationKilled", 60)


def test_soft_timeout_resumes_as_ordinary_pods() -> None:
    skip_if_pool_exists()
    with applied("07-soft-timeout"):
        wait_until(lambda: status("applications.gangsched.io", "soft-timeout")
                   .get("reserved") == "1/3", "soft-timeout reserved 1/3", 60)
        wait_state("soft-timeout", NS, {"Resuming", "Running"})
        wait_until(lambda: node_of("soft-timeout-driver"), "driver bound as an ordinary pod")
        wait_until(lambda: not placeholders_of("soft-timeout"), "placeholders deleted", 60)
        for name in ("soft-timeout-worker-0", "soft-timeout-worker-1"):
            assert not node_of(name)
            wait_until(lambda name=name: scheduled_message(name).startswith(
                "Constraints:"), f"{name} pending with Constraints", 60)


def test_strict_podgroup_binds_all_members() -> None:
    with applied("08-strict-podgroup"):
        wait_phase("strict-gang", {"Scheduled", "Running", "Finished"})
        assert all(node_of(f"strict-gang-{i}") for i in range(3))
        # The Mode column has priority 1: kubectl shows it with -o wide only.
        table = kubectl("get", "podgroups.gangsched.io", "strict-gang", "-n", NS, "-o", "wide")
        assert "Strict" in table


def test_ganggroup_binds_both_podgroups() -> None:
    with applied("09-ganggroup"):
        for group in ("gg-ps", "gg-workers"):
            wait_phase(group, {"Scheduled", "Running", "Finished"})
        assert all(node_of(n) for n in ("gg-ps-0", "gg-worker-0", "gg-worker-1"))
