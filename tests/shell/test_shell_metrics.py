"""``/metrics`` of the real operator, scraped over HTTP after gang lifecycles.

The operator runs against the fake API server under a fake clock, so every duration the
metrics report is known exactly: a gang waits 30 s for nodes, its placeholders idle for
60 s, its swaps take 5 s; a Hard gang times out; a gang too large for its queue is
rejected; a bind fails once. The scrape must say exactly that.
"""

from __future__ import annotations

import logging
import pathlib
import socket
from typing import Any

import aiohttp
import pytest
from fakeapi import FakeApiServer
from gangsched.core.values.decisions import (
    BindGang,
    BindPod,
    DeletePod,
    DeleteReason,
    EventType,
    ObjectRef,
    PodPending,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
)
from gangsched.core.values.model import (
    AppKey,
    GroupKey,
    Node,
    Pod,
    PodPhase,
    PodUID,
    SchedulerConfig,
)
from gangsched.core.values.resources import Resources
from gangsched.shell.metrics import Metrics
from gangsched.translate import times
from prometheus_client.parser import text_string_to_metric_families
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    group,
    new_cluster,
    node,
    placeholders,
    pod,
    pods_in,
    status_of,
    wait_for,
)

GIB = 1 << 30
CRD = "gangsched.io/v1alpha1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(port: int) -> Samples:
    async with aiohttp.ClientSession() as session, \
            session.get(f"http://127.0.0.1:{port}/metrics") as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = await response.text()
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        assert family.name.startswith("gangsched_"), family.name
        assert family.documentation, family.name
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; 0 when absent (a counter never incremented has no sample)."""
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def state(api: FakeApiServer, name: str) -> str:
    return str(status_of(api, "applications", "default", name).get("state", ""))


def all_bound(api: FakeApiServer, names: list[str]) -> bool:
    found = {p["metadata"]["name"]: p for p in pods_in(api)}
    return all(found.get(n, {}).get("spec", {}).get("nodeName") for n in names)


def member(name: str, task_group: str, app: str, cpu: str = "1") -> dict[str, Any]:
    return pod(name, cpu=cpu, labels={"gangsched.io/app": app},
               annotations={"gangsched.io/task-group": task_group})


async def test_metrics_after_gang_lifecycles(fake_api_factory: Any, tmp_path: pathlib.Path,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="gangsched.shell.runtime")
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=0)
    for obj in ({"apiVersion": CRD, "kind": "Queue", "metadata": {"name": "batch"},
                 "spec": {"guaranteed": {"cpu": "1"}}},
                {"apiVersion": CRD, "kind": "Queue", "metadata": {"name": "small"},
                 "spec": {"max": {"cpu": "2", "memory": "8Gi"}}}):
        api.create(obj)
    clock = FakeClock()
    port = free_port()
    # Over-commit: gangs the nodes cannot hold are enqueued, so that they hold placeholders.
    op = await OperatorUnderTest(api, kubeconfig, clock, metrics_port=port,
                                 core=SchedulerConfig(overcommit_factor=100.0)).start()
    try:
        # A gang of 1 + 2x2 cpu is accepted with no node to hold it: it waits 30 s.
        api.create(application("train", [group("ps", 1), group("worker", 2, cpu="2")],
                               waiting=30))
        await wait_for(lambda: state(api, "train") == "Accepted", what="train accepted")
        await op.advance(30)
        for i in range(2):
            add_node(api, node(f"node-{i}", cpu="4", memory="16Gi"))
        await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")])
                       == 3, what="3 placeholders bound")
        await wait_for(lambda: status_of(api, "applications", "default", "train")
                       .get("reserved") == "3/3", what="train reserved")
        await op.settle()
        samples = await scrape(port)
        assert value(samples, "gangsched_time_to_full_gang_seconds_count",
                     kind="Application", queue="default") == 1
        assert value(samples, "gangsched_time_to_full_gang_seconds_sum",
                     kind="Application", queue="default") == 30
        assert value(samples, "gangsched_time_to_full_gang_seconds_bucket",
                     kind="Application", queue="default", le="10.0") == 0
        assert value(samples, "gangsched_time_to_full_gang_seconds_bucket",
                     kind="Application", queue="default", le="30.0") == 1
        assert value(samples, "gangsched_binds_total", reason="PlaceholderAllocated") == 3
        assert value(samples, "gangsched_applications", queue="default", state="Accepted") == 1
        assert value(samples, "gangsched_queue_allocated", queue="default", resource="cpu") == 5
        assert value(samples, "gangsched_queue_reserved_by_placeholders", queue="default",
                     resource="memory") == 3 * GIB
        assert value(samples, "gangsched_pending_pods", queue="default") == 0

        # The placeholders idle for 60 s; then the real pods take their places, and the
        # placeholders' deletions take 5 s to land.
        await op.advance(60)
        slow = api.faults.add(method="DELETE", path_regex=r"/pods/", delay=1.0)
        for name, task_group, cpu in (("ps-0", "ps", "1"), ("worker-0", "worker", "2"),
                                      ("worker-1", "worker", "2")):
            api.create(member(name, task_group, "train", cpu))
        await wait_for(lambda: slow.hits == 3, what="3 placeholder deletions asked for")
        clock.advance(5)
        await wait_for(lambda: all_bound(api, ["ps-0", "worker-0", "worker-1"]),
                       what="the real pods bound")
        api.faults.clear()
        await wait_for(lambda: state(api, "train") == "Running", what="train running")
        for name in ("ps-0", "worker-0", "worker-1"):
            api.finish_pod("default", name)
        await wait_for(lambda: state(api, "train") == "Waiting", what="train waiting")
        await op.advance(31)
        await wait_for(lambda: state(api, "train") == "Completed", what="train completed")

        # A Hard gang that can never be whole times out after 60 s, its 2 placeholders
        # idle all along; a gang larger than its queue's max is rejected.
        api.create(application("hard", [group("w", 2), group("huge", 1, cpu="64")],
                               queue="batch", style="Hard", timeout=60))
        await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")])
                       == 2, what="2 of hard's placeholders bound")
        await op.settle()
        await op.advance(60)
        await wait_for(lambda: state(api, "hard") == "Killed", what="hard killed")
        api.create(application("greedy", [group("w", 3)], queue="small"))
        await wait_for(lambda: state(api, "greedy") == "Rejected", what="greedy rejected")

        # An ordinary pod whose first bind fails.
        api.faults.add(method="POST", path_regex=r"/pods/solo/binding", times=1, status=500)
        api.create(pod("solo"))
        runtime = op.runtime
        assert runtime is not None
        await wait_for(lambda: value(_samples(runtime.metrics), "gangsched_bind_errors_total",
                                     code="500"), what="the failed bind")
        await op.advance(30)
        await wait_for(lambda: all_bound(api, ["solo"]), what="solo bound")
        # hard's placeholders hold their room until the kubelet confirms their deletion
        await wait_for(lambda: not placeholders(api), what="hard's placeholders gone")
        await op.settle()
        samples = await scrape(port)
    finally:
        await op.kill()

    assert value(samples, "gangsched_binds_total", reason="PlaceholderAllocated") == 5
    assert value(samples, "gangsched_binds_total", reason="PlaceholderReplaced") == 3
    assert value(samples, "gangsched_overcommitted_nodes") == 0
    # train's real pods were all bound in one cycle, once its placeholders were deleted:
    # one span of no (fake) time; none over the threshold
    assert value(samples, "gangsched_gang_partial_seconds_count", kind="Application") == 1
    assert value(samples, "gangsched_gang_partial_seconds_sum", kind="Application") == 0
    assert value(samples, "gangsched_gang_partial_violations_total", kind="Application") == 0
    assert value(samples, "gangsched_binds_total", reason="Scheduled") == 1
    assert value(samples, "gangsched_bind_errors_total", code="500") == 1
    # The client's own count of that answer, among every request it sent.
    assert value(samples, "gangsched_api_requests_total", method="POST", code="500") == 1
    assert value(samples, "gangsched_api_requests_total", method="POST", code="201") >= 5
    assert value(samples, "gangsched_api_requests_total", method="GET", code="200") > 0
    assert value(samples, "gangsched_pod_deletions_total", reason="PlaceholderReplaced") == 3
    # hard's 2 bound placeholders and the pending one.
    assert value(samples, "gangsched_pod_deletions_total", reason="PlaceholderTimeout") == 3

    assert value(samples, "gangsched_placeholder_swap_duration_seconds_count") == 3
    assert value(samples, "gangsched_placeholder_swap_duration_seconds_sum") == 15
    # Requests x fake seconds: train's 5 cpu and 3 GiB for 60 s, hard's 2 cpu for 60 s.
    assert value(samples, "gangsched_placeholder_idle_resource_seconds_total",
                 queue="default", resource="cpu") == pytest.approx(5 * 60)
    assert value(samples, "gangsched_placeholder_idle_resource_seconds_total",
                 queue="default", resource="memory") == pytest.approx(3 * GIB * 60)
    assert value(samples, "gangsched_placeholder_idle_resource_seconds_total",
                 queue="batch", resource="cpu") == pytest.approx(2 * 60)
    # Only train was ever whole.
    assert value(samples, "gangsched_time_to_full_gang_seconds_count",
                 kind="Application", queue="default") == 1

    assert value(samples, "gangsched_timeouts_total", kind="Application",
                 reason="PlaceholderTimeout", outcome="Killed") == 1
    assert value(samples, "gangsched_rejections_total", kind="Application",
                 reason="QueueQuotaExceeded") == 1
    assert value(samples, "gangsched_applications", queue="default", state="Completed") == 1
    assert value(samples, "gangsched_applications", queue="batch", state="Killed") == 1
    assert value(samples, "gangsched_applications", queue="small", state="Rejected") == 1
    assert value(samples, "gangsched_queue_max", queue="small", resource="cpu") == 2
    assert value(samples, "gangsched_queue_max", queue="small", resource="memory") == 8 * GIB
    assert value(samples, "gangsched_queue_guaranteed", queue="batch", resource="cpu") == 1
    assert value(samples, "gangsched_queue_allocated", queue="batch", resource="cpu") == 0
    assert value(samples, "gangsched_queue_allocated", queue="default", resource="cpu") == 1
    assert op.runtime is not None
    assert 0 < value(samples, "gangsched_scheduling_cycle_duration_seconds_count") \
        <= op.runtime.cycles
    assert value(samples, "gangsched_decisions_total", kind="BindPod") == 10

    # The log lines of those decisions carry their fields.
    records = [r for r in caplog.records if r.name == "gangsched.shell.runtime"]
    bound = [r for r in records if r.getMessage().startswith("bound pod default/worker-0")]
    assert bound and bound[0].__dict__["node"].startswith("node-")
    assert bound[0].__dict__["pod"] == "default/worker-0"
    killed = [r for r in records if getattr(r, "state", None) == "Killed"]
    assert killed and killed[0].__dict__["app"] == "default/hard"
    assert killed[0].__dict__["queue"] == "batch" and killed[0].levelno == logging.WARNING
    created = [r for r in records if r.getMessage().startswith("created placeholder")]
    assert len(created) == 3 + 3 and all(r.__dict__["app"] for r in created)
    deleted = [r for r in records if r.getMessage().startswith("deleted pod")]
    assert {r.__dict__["reason"] for r in deleted} == {"PlaceholderReplaced",
                                                        "PlaceholderTimeout"}


async def test_no_metrics_port_serves_nothing(fake_api_factory: Any,
                                              tmp_path: pathlib.Path) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    port = free_port()
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), metrics_port=0).start()
    try:
        with pytest.raises(aiohttp.ClientConnectionError):
            await scrape(port)
    finally:
        await op.kill()


async def test_a_busy_metrics_port_does_not_stop_scheduling(
        fake_api_factory: Any, tmp_path: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        port = int(busy.getsockname()[1])
        op = await OperatorUnderTest(api, kubeconfig, FakeClock(), metrics_port=port).start()
        try:
            api.create(pod("solo"))
            await wait_for(lambda: all_bound(api, ["solo"]), what="solo bound")
        finally:
            await op.kill()
    assert f"cannot serve metrics on port {port}" in caplog.text


def test_every_metric_is_documented_and_every_documented_one_exists() -> None:
    doc = (ROOT / "docs" / "metrics.md").read_text()
    exposed = set()
    for family in Metrics().registry.collect():
        name = f"{family.name}_total" if family.type == "counter" else family.name
        exposed.add(name)
        assert family.documentation, name
    documented = {line.split("`")[1] for line in doc.splitlines()
                  if line.startswith("| `gangsched_")}
    assert exposed == documented


# --- the derivations, fed with decisions directly ------------------------------------------

T0 = 1_800_000_000.0


def _pod(uid: str, *, node: str | None = None, app: str = "default/a",
         terminating: bool = False) -> Pod:
    return Pod(PodUID(uid), "default", uid, requests=Resources({"cpu": 500, "memory": GIB}),
               node_name=node, app=AppKey(app), task_group="w", placeholder=True,
               terminating=terminating)


def _status(state: str, since: float, key: str = "default/a",
            queue: str = "q") -> SetAppStatus:
    return SetAppStatus(AppKey(key), state, state, "", queue, "0/1", 0, (), since, None, None,
                        None)


def _event(reason: str, kind: str = "Application", name: str = "a") -> RecordEvent:
    return RecordEvent(ObjectRef(kind, "default", name), EventType.NORMAL, reason, "")


def _samples(metrics: Metrics) -> Samples:
    found: Samples = {}
    for family in metrics.registry.collect():
        for s in family.samples:
            found[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return found


def test_idle_seconds_stop_at_release_or_when_the_pod_goes() -> None:
    m = Metrics()
    m.pod_observed(_pod("p1"), T0)  # pending: holds nothing
    m.observe_cycle(0.001, [_status("Accepted", T0)], T0)
    m.pod_observed(_pod("p1", node="n"), T0 + 10)
    m.pod_observed(_pod("p2", node="n"), T0 + 10)
    m.observe_cycle(0.001, [], T0 + 20)
    m.observe_cycle(0.001, [DeletePod(PodUID("p1"), "default", "p1",
                                      DeleteReason.PLACEHOLDER_REPLACED, "")], T0 + 30)
    m.pod_observed(_pod("p1", node="n", terminating=True), T0 + 31)
    m.pod_gone(PodUID("p2"), T0 + 40)
    m.observe_cycle(0.001, [], T0 + 25)  # a clock going back adds nothing
    m.observe_cycle(0.001, [], T0 + 100)
    samples = _samples(m)
    assert value(samples, "gangsched_placeholder_idle_resource_seconds_total", queue="q",
                 resource="cpu") == pytest.approx(0.5 * 20 + 0.5 * 30)
    assert value(samples, "gangsched_placeholder_idle_resource_seconds_total", queue="q",
                 resource="memory") == pytest.approx(GIB * 50)


def test_a_gang_found_reserved_after_a_restart_is_not_timed_again() -> None:
    m = Metrics()
    m.pod_observed(_pod("p1", node="n"), T0 + 100)  # bound before the restart
    m.observe_cycle(0.001, [_status("Accepted", T0), _event("GangReserved")], T0 + 100)
    assert value(_samples(m), "gangsched_time_to_full_gang_seconds_count",
                 kind="Application", queue="q") == 0
    m.pod_observed(_pod("p2", app="default/b"), T0 + 100)
    m.observe_cycle(0.001, [_status("Accepted", T0 + 90, key="default/b"),
                            BindPod(PodUID("p2"), "default", "p2", "n", "PlaceholderAllocated"),
                            _event("GangReserved", name="b")], T0 + 100)
    samples = _samples(m)
    assert value(samples, "gangsched_time_to_full_gang_seconds_count",
                 kind="Application", queue="q") == 1
    assert value(samples, "gangsched_time_to_full_gang_seconds_sum",
                 kind="Application", queue="q") == 10


def test_a_podgroup_is_timed_from_its_creation() -> None:
    groups = {"default/g": {"metadata": {"creationTimestamp": times.format_time(T0)},
                            "spec": {"queue": "hpc"}}}
    m = Metrics(objects={"podgroups": groups})
    m.observe_cycle(0.001, [_event("GangScheduled", "PodGroup", "g")], T0 + 42)
    assert value(_samples(m), "gangsched_time_to_full_gang_seconds_sum",
                 kind="PodGroup", queue="hpc") == 42


@pytest.mark.parametrize(("decisions", "name", "labels"), [
    pytest.param([SetPodGroupStatus(GroupKey("default/a"), "TimedOut", "", "", 1, 0, 0, 0, 0,
                                    0, None), _event("ScheduleTimeout", "PodGroup")],
                 "gangsched_timeouts_total",
                 {"kind": "PodGroup", "reason": "ScheduleTimeout", "outcome": "TimedOut"},
                 id="podgroup-timeout"),
    pytest.param([_status("Resuming", T0), _event("PlaceholderTimeout")],
                 "gangsched_timeouts_total",
                 {"kind": "Application", "reason": "PlaceholderTimeout", "outcome": "Resuming"},
                 id="soft-timeout"),
    pytest.param([_event("InvalidSpec", "PodGroup")], "gangsched_rejections_total",
                 {"kind": "PodGroup", "reason": "InvalidSpec"}, id="invalid-podgroup"),
    pytest.param([_event("DeadlockBroken")], "gangsched_deadlock_breaks_total",
                 {"kind": "Application", "reason": "DeadlockBroken"}, id="deadlock-broken"),
])
def test_events_counted_by_reason(decisions: list[Any], name: str,
                                  labels: dict[str, str]) -> None:
    m = Metrics()
    m.observe_cycle(0.001, decisions, T0)
    assert value(_samples(m), name, **labels) == 1


def test_deleted_objects_leave_the_gauges() -> None:
    m = Metrics()
    m.observe_cycle(0.001, [_status("Running", T0), SetPodGroupStatus(
        GroupKey("default/g"), "Running", "", "", 1, 0, 1, 1, 0, 0, None)], T0)
    assert value(_samples(m), "gangsched_applications", queue="q", state="Running") == 1
    m.forget("applications", "default/a")
    m.forget("podgroups", "default/g")
    samples = _samples(m)
    assert ("gangsched_applications", (("queue", "q"), ("state", "Running"))) not in samples
    assert value(samples, "gangsched_podgroups", phase="Running") == 0


# --- over-committed nodes and partial gangs, from the pods the watches show ----------------

def _member(uid: str, *, node: str | None = None, cpu: int = 1000, placeholder: bool = False,
            terminating: bool = False, phase: PodPhase = PodPhase.PENDING,
            app: str = "default/a", ours: bool = True) -> Pod:
    return Pod(PodUID(uid), "default", uid, requests=Resources({"cpu": cpu}), node_name=node,
               phase=phase, app=AppKey(app) if ours else None, task_group="w",
               placeholder=placeholder, terminating=terminating, ours=ours)


def _app(minimums: list[int]) -> dict[str, Any]:
    return {"default/a": {"spec": {"taskGroups": [{"name": f"g{i}", "minMember": m}
                                                  for i, m in enumerate(minimums)]}}}


def test_overcommitted_nodes_count_terminating_pods_and_placeholders() -> None:
    m = Metrics()
    m.node_observed(Node("n", Resources({"cpu": 2000})))
    m.pod_observed(_member("ph", node="n", placeholder=True), T0)
    m.pod_observed(_member("other", node="n", ours=False, phase=PodPhase.RUNNING), T0)
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 0
    m.pod_observed(_member("ph", node="n", placeholder=True, terminating=True), T0 + 1)
    m.pod_observed(_member("real", node="n"), T0 + 1)  # into the room still held
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 1
    m.pod_gone(PodUID("ph"), T0 + 2)
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 0
    m.pod_observed(_member("other", node="n", ours=False, phase=PodPhase.SUCCEEDED), T0 + 3)
    m.pod_observed(_member("big", node="n", cpu=1000), T0 + 3)  # the finished pod holds none
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 0
    m.pod_observed(_member("huge", node="n", cpu=4000), T0 + 4)
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 1
    m.node_gone("n")  # pods left on a node that is gone: nothing to judge them against
    assert value(_samples(m), "gangsched_overcommitted_nodes") == 0


def test_a_swap_is_a_short_partial_span_and_a_lost_room_a_violation() -> None:
    m = Metrics(objects={"applications": _app([1, 2])})
    m.pod_observed(_member("ph1", node="n", placeholder=True), T0)  # reserving: not partial
    m.observe_cycle(0.001, [], T0 + 5)
    m.pod_observed(_member("ph2", node="n", placeholder=True), T0 + 5)
    m.pod_observed(_member("d", node="n", phase=PodPhase.RUNNING), T0 + 6)
    # ph1 swapped for e1 in 1.5 s
    m.pod_observed(_member("ph1", node="n", placeholder=True, terminating=True), T0 + 10)
    m.observe_cycle(0.001, [], T0 + 11)
    m.pod_gone(PodUID("ph1"), T0 + 11)
    m.pod_observed(_member("e1", node="n"), T0 + 11.5)
    # ph2's room is lost: e2 waits 7 s
    m.pod_observed(_member("ph2", node="n", placeholder=True, terminating=True), T0 + 20)
    m.pod_gone(PodUID("ph2"), T0 + 21)
    m.observe_cycle(0.001, [], T0 + 24)
    samples = _samples(m)
    assert value(samples, "gangsched_gang_partial_violations_total", kind="Application") == 1
    assert value(samples, "gangsched_gang_partial_seconds_count", kind="Application") == 1
    m.pod_observed(_member("e2", node="n2"), T0 + 27)
    m.observe_cycle(0.001, [], T0 + 30)
    samples = _samples(m)
    assert value(samples, "gangsched_gang_partial_seconds_count", kind="Application") == 2
    assert value(samples, "gangsched_gang_partial_seconds_sum",
                 kind="Application") == pytest.approx(1.5 + 7)
    assert value(samples, "gangsched_gang_partial_violations_total", kind="Application") == 1
    assert m.holdings.partial_seconds("default/a", T0 + 30) == pytest.approx(7)


@pytest.mark.parametrize(("objects", "finish"), [
    pytest.param({}, False, id="minimum-not-known"),
    pytest.param(_app([3]), True, id="winding-down"),
])
def test_gangs_not_measured(objects: dict[str, Any], finish: bool) -> None:
    m = Metrics(objects={"applications": objects})
    m.pod_observed(_member("a", node="n", phase=PodPhase.RUNNING), T0)
    m.pod_observed(_member("b", node="n", phase=PodPhase.RUNNING), T0)
    m.pod_observed(_member("c", node="n", phase=PodPhase.RUNNING), T0)
    if finish:
        m.pod_observed(_member("a", node="n", phase=PodPhase.SUCCEEDED), T0 + 1)
    m.pod_gone(PodUID("a"), T0 + 2)
    m.observe_cycle(0.001, [], T0 + 60)
    assert value(_samples(m), "gangsched_gang_partial_violations_total",
                 kind="Application") == 0


def test_a_deleted_gang_ends_its_span() -> None:
    apps = _app([2])
    m = Metrics(objects={"applications": apps})
    m.observe_cycle(0.001, [], T0)
    m.pod_observed(_member("a", node="n"), T0)
    m.observe_cycle(0.001, [], T0 + 2)
    m.forget("applications", "default/a")
    samples = _samples(m)
    assert value(samples, "gangsched_gang_partial_seconds_count", kind="Application") == 1
    assert value(samples, "gangsched_gang_partial_seconds_sum", kind="Application") == 2


def _pending(uid: str, reason: str) -> PodPending:
    return PodPending(PodUID(uid), "default", uid, reason, "")


def _pending_by_reason(m: Metrics) -> dict[str, float]:
    return {dict(labels)["reason"]: v for (name, labels), v in _samples(m).items()
            if name == "gangsched_pending_pods_by_reason"}


def test_pending_pods_are_counted_once_by_their_latest_reason() -> None:
    m = Metrics()
    m.observe_cycle(0.001, [_pending("a", "Capacity"), _pending("b", "Capacity"),
                            _pending("c", "WaitingForGang")], T0)
    assert _pending_by_reason(m) == {"Capacity": 2, "WaitingForGang": 1}
    m.observe_cycle(0.001, [_pending("a", "WaitingForGang")], T0 + 1)  # a new reason
    assert _pending_by_reason(m) == {"Capacity": 1, "WaitingForGang": 2}
    # bound one by one, bound with its gang, gone
    bind = BindPod(PodUID("a"), "default", "a", "n", "Scheduled")
    m.observe_cycle(0.001, [bind, BindGang((BindPod(PodUID("b"), "default", "b", "n",
                                                    "GangSatisfied"),))], T0 + 2)
    assert _pending_by_reason(m) == {"WaitingForGang": 1}
    m.pod_gone(PodUID("c"), T0 + 3)
    assert _pending_by_reason(m) == {}
    # a bind that failed: the core says why the pod waits again
    m.observe_cycle(0.001, [_pending("a", "Capacity")], T0 + 4)
    assert _pending_by_reason(m) == {"Capacity": 1}


def test_api_answers_and_retries_are_exposed_as_counters() -> None:
    m = Metrics()
    m.api_answers = {("POST", 201): 7, ("PATCH", 0): 2, ("GET", 200): 3}
    m.api_retries.inc(2)
    samples = _samples(m)
    assert value(samples, "gangsched_api_requests_total", method="POST", code="201") == 7
    assert value(samples, "gangsched_api_requests_total", method="PATCH", code="0") == 2
    assert value(samples, "gangsched_api_requests_total", method="GET", code="200") == 3
    assert value(samples, "gangsched_api_retries_total") == 2


async def test_the_runtime_counts_its_clients_answers_and_its_retries() -> None:
    from gangsched.shell.client import Connection, KubeClient
    from gangsched.shell.runtime import Runtime
    from gangsched.shell.settings import OperatorSettings

    async def job() -> None:
        return None

    client = KubeClient(Connection("http://127.0.0.1:1"))
    runtime = Runtime(client, OperatorSettings(leader_election=False, api_retry_initial=60.0))
    client.answers["PATCH", 503] += 1
    runtime._later(job, 0)  # a write tried again after a backoff
    samples = _samples(runtime.metrics)
    assert value(samples, "gangsched_api_requests_total", method="PATCH", code="503") == 1
    assert value(samples, "gangsched_api_retries_total") == 1
    await client.close()
