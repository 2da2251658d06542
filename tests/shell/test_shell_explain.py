"""``gangsched explain`` against the real operator and the fake API server.

The operator runs against the fake; a real blocking situation is produced (a quota hold,
a capacity shortfall, constraints that exclude every node, a PodGroup too large for any
node); then the CLI's ``explain`` reads the cluster with pykube (``$KUBECONFIG`` pointing
at the fake) in a thread, since pykube is synchronous, and what it prints is checked.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched import cli
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    group,
    new_cluster,
    node,
    pod,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio
QUEUE = "gangsched.io/v1alpha1"


def queue(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": QUEUE, "kind": "Queue", "metadata": {"name": name}, "spec": spec}


def podgroup(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": QUEUE, "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member, **spec}}


def blocking_of(api: FakeApiServer, plural: str, name: str, group_name: str | None) -> str:
    status = status_of(api, plural, "default", name)
    if group_name is None:
        return str((status.get("blockingReason") or {}).get("reason", ""))
    for found in status.get("taskGroups") or []:
        if found.get("name") == group_name:
            return str((found.get("blockingReason") or {}).get("reason", ""))
    return ""


@dataclasses.dataclass
class Scenario:
    objects: list[dict[str, Any]]
    """Created in order; the last once the others are in place (see ``ready``)."""
    argv: list[str]
    plural: str
    name: str
    group: str | None
    reason: str
    expected: list[str]
    events: list[str] = dataclasses.field(default_factory=lambda: ["Accepted"])
    """Reasons of the object's first Events, oldest first."""
    ready: Callable[[FakeApiServer], bool] = lambda api: True
    extra_nodes: list[dict[str, Any]] = dataclasses.field(default_factory=list)


def _first_reserved(api: FakeApiServer) -> bool:
    return status_of(api, "applications", "default", "first").get("reserved") == "3/3"


SCENARIOS = [
    pytest.param(Scenario(
        objects=[queue("team", max={"cpu": "4"}),
                 application("first", [group("w", 3)], queue="team"),
                 application("second", [group("w", 2)], queue="team")],
        argv=["explain", "second"], plural="applications", name="second", group="w",
        reason="QueueQuota", ready=_first_reserved,
        expected=["state:   Accepted", "gang:    0/2 placeholders allocated",
                  "blocked by QueueQuota at queue team (the queue has no room for it):",
                  "needed: cpu=2, memory=2Gi, pods=2", "queue headroom: cpu=1",
                  "queue max: cpu=4"]), id="quota-hold"),
    pytest.param(Scenario(
        # The cluster (3 x 4 cpu) has room for the gang as a whole, so it is enqueued, but
        # no node could ever hold its 6-cpu member: said at once, with the numbers.
        objects=[application("big", [group("driver", 1), group("w", 1, cpu="6")])],
        argv=["explain", "default/big"], plural="applications", name="big", group="w",
        reason="Unsatisfiable",
        expected=["blocked by Unsatisfiable (it can never fit the nodes as they are; it waits "
                  "for nodes to be added):",
                  "task group w needs cpu=6, memory=1Gi, pods=1 per member; the largest of the "
                  "3 nodes its constraints allow has cpu=4, memory=16Gi, pods=110",
                  "each member needs: cpu=6, memory=1Gi, pods=1",
                  "largest node allowed: cpu=4, memory=16Gi, pods=110",
                  "nodes allowed: 3"],
        events=[]), id="member-larger-than-every-node"),
    pytest.param(Scenario(
        objects=[application("huge", [group("w", 4, cpu="4")])],
        argv=["explain", "huge"], plural="applications", name="huge", group="w",
        reason="Unsatisfiable",
        expected=["gang:    0/4 placeholders allocated",
                  "blocked by Unsatisfiable",
                  "task group w needs 4 x cpu=4, memory=1Gi, pods=1 = cpu=16, memory=4Gi, "
                  "pods=4; the 3 nodes its constraints allow have cpu=12, memory=48Gi, "
                  "pods=330 together: it cannot run until nodes are added",
                  "needed: cpu=16, memory=4Gi, pods=4",
                  "placeholders: 0 allocated, 0 pending, 0 replaced, 0 released (created 0)"],
        events=[]), id="more-than-the-whole-cluster"),
    pytest.param(Scenario(
        objects=[application("picky", [{**group("w", 2), "nodeSelector": {"disk": "ssd"}}])],
        extra_nodes=[node("ssd-0", labels={"disk": "ssd"},
                          taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}])],
        argv=["explain", "picky", "-n", "default"], plural="applications", name="picky",
        group="w", reason="Constraints",
        expected=["blocked by Constraints (its constraints exclude every node that has room):",
                  "nodes: 3 node(s) didn't match Pod's node affinity/selector, 1 node(s) had "
                  "untolerated taint {dedicated: db}",
                  "2 placeholders: 0/4 nodes are available: 1 node(s) had "
                  "untolerated taint {dedicated: db}, 3 node(s) didn't match Pod's node "
                  "affinity/selector."]), id="constraints"),
    pytest.param(Scenario(
        objects=[podgroup("mpi", 2, scheduleTimeoutSeconds=600),
                 pod("mpi-0", cpu="8", labels={"gangsched.io/pod-group": "mpi"}),
                 pod("mpi-1", cpu="8", labels={"gangsched.io/pod-group": "mpi"})],
        argv=["explain", "mpi", "--kind", "podgroup"], plural="podgroups", name="mpi",
        group=None, reason="Unsatisfiable",
        expected=["PodGroup default/mpi", "phase:   Inqueue  (min 2, mode Strict, queue default)",
                  "blocked by Unsatisfiable",
                  "PodGroup default/mpi needs cpu=8, memory=1Gi, pods=1 per member; the "
                  "largest of the 3 nodes its constraints allow has cpu=4",
                  "pods:    2, 0 bound, 2 waiting",
                  "2 pods: WaitingForGang: gang members placed: default/mpi 0/2"],
        events=["Unsatisfiable"]), id="podgroup-member-larger-than-every-node"),
]


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_explain_prints_why_a_gang_waits(
        scenario: Scenario, fake_api_factory: Any, tmp_path: pathlib.Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    for extra in scenario.extra_nodes:
        add_node(api, extra)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        *before, last = scenario.objects
        for obj in before:
            api.create(obj)
        await wait_for(lambda: scenario.ready(api), what="the scenario in place")
        api.create(last)
        await wait_for(lambda: blocking_of(api, scenario.plural, scenario.name, scenario.group)
                       == scenario.reason, what=f"{scenario.reason} in the status")
        await op.settle()
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        capsys.readouterr()
        code = await asyncio.to_thread(cli.main, scenario.argv)
        out = capsys.readouterr().out
    finally:
        await op.kill()
    assert code == cli.EXIT_OK
    lines = [line.strip() for line in out.splitlines()]
    for expected in scenario.expected:
        assert any(line.startswith(expected) for line in lines), f"{expected!r} in\n{out}"
    history = out.partition("events (oldest first):\n")[2].splitlines()
    reasons = [line.split()[2].rstrip(":") for line in history]
    assert reasons[:len(scenario.events)] == scenario.events, out


async def test_explain_shows_the_event_history_in_order(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=0)
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock).start()
    try:
        # Accepted with no node; whole 10 s later, when a node comes; killed 60 s on.
        api.create(application("train", [group("w", 2)], style="Hard", timeout=60))
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Accepted", what="accepted")
        await op.advance(10)
        add_node(api, node("node-0"))
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("reserved") == "2/2", what="reserved")
        await op.advance(61)
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("state") == "Killed", what="killed")
        await op.settle()
        monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
        capsys.readouterr()
        code = await asyncio.to_thread(cli.main, ["explain", "train"])
        out = capsys.readouterr().out
    finally:
        await op.kill()
    assert code == cli.EXIT_OK
    assert "state:   Killed" in out
    assert "reason:  PlaceholderTimeout: 2/2 members reserved when the 60s timeout " \
           "expired" in out
    history = out.split("events (oldest first):\n", 1)[1].splitlines()
    reasons = [line.split()[2].rstrip(":") for line in history]
    assert reasons == ["Accepted", "GangReserved", "PlaceholderTimeout"], out


async def test_explain_of_a_missing_object_exits_1(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    _api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    code = await asyncio.to_thread(cli.main, ["explain", "ghost", "--kind", "podgroup"])
    assert code == 1
    assert "PodGroup default/ghost not found" in capsys.readouterr().err


async def test_explain_without_a_cluster_is_one_line_and_exit_2(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    code = await asyncio.to_thread(cli.main, ["explain", "spark"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.splitlines() == ["gangsched explain: no cluster configured (Configuration file "
                                "~/.kube/config not found); set KUBECONFIG or run it in a pod"]


async def test_explain_with_an_unreachable_cluster_is_one_line_and_exit_2(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "kubeconfig"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: x}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n")
    monkeypatch.setenv("KUBECONFIG", str(config))
    code = await asyncio.to_thread(cli.main, ["explain", "spark"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    assert err.splitlines() == ["gangsched explain: cannot reach http://127.0.0.1:9: "
                                "ConnectionError"]
