"""The operator against an API server that fails: binds, writes, watches, conflicts.

Faults are injected at the HTTP level (:mod:`fakeapi.faults`). Each test checks that the
work is not lost (the pod is bound later, the status is written later), that nothing is
done twice, and what users see (Events, aggregated; status written only on change).
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    add_node,
    application,
    assert_bound_at_most_once,
    bind_answers,
    condition,
    events,
    group,
    new_cluster,
    placeholders,
    pod,
    status_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=1, cpu="8", memory="32Gi")


@pytest.fixture
async def op(cluster):  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    operator = await OperatorUnderTest(api, kubeconfig, FakeClock(), request_timeout=0.5,
                                       api_retry_initial=0.05).start()
    yield operator
    await operator.kill()


def node_of(api: FakeApiServer, name: str) -> str | None:
    found = api.try_get("pods", "default", name)
    return None if found is None else found["spec"].get("nodeName")


BIND_FAULTS = [
    pytest.param({"status": 500, "message": "etcdserver: request timed out"}, id="500"),
    pytest.param({"status": 503, "retry_after": 1}, id="503"),
    pytest.param({"status": 429}, id="429-throttled"),
    pytest.param({"drop_connection": True}, id="connection-dropped"),
    pytest.param({"status": 404}, id="404-injected"),
]


@pytest.mark.parametrize("fault", BIND_FAULTS)
async def test_failed_bind_backs_off_then_binds(cluster, op, fault: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    rule = api.faults.add(method="POST", path_regex=r"/pods/solo/binding", times=1, **fault)
    api.create(pod("solo"))
    await wait_for(lambda: rule.hits == 1, what="the bind to fail")
    await op.settle(5)
    # Backing off on the operator's clock: no retry while it does not move.
    assert node_of(api, "solo") is None
    assert len(bind_answers(api, "solo")) == 1
    await wait_for(lambda: events(api, reason="BindFailed", regarding="solo"), what="event")
    await op.advance(1.1)
    await wait_for(lambda: node_of(api, "solo") == "node-0", what="bound after the backoff")
    assert len(bind_answers(api, "solo")) == 2
    assert_bound_at_most_once(api)


async def test_bind_timeout_backs_off_then_binds(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """The API server does not answer within the request timeout: the bind counts as
    failed (the server drops the request when the client goes away)."""
    api, _ = cluster
    rule = api.faults.add(method="POST", path_regex=r"/pods/slow/binding", times=1, delay=2.0,
                          status=504)
    api.create(pod("slow"))
    await wait_for(lambda: rule.hits == 1, what="the bind to be sent")
    note = await wait_for(lambda: events(api, reason="BindFailed", regarding="slow"),
                          what="BindFailed event")
    assert "(0)" in note[0]["note"]
    await op.advance(1.1)
    await wait_for(lambda: node_of(api, "slow") == "node-0", what="bound after the backoff")
    assert_bound_at_most_once(api)


async def test_409_on_bind_is_retried_at_once(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """An injected 409 (the pod looked bound): no backoff, the next cycle binds again."""
    api, _ = cluster
    rule = api.faults.add(method="POST", path_regex=r"/pods/p/binding", times=1, status=409,
                          message='pod p is already assigned to node "elsewhere"')
    api.create(pod("p"))
    await wait_for(lambda: node_of(api, "p") == "node-0", what="bound on the retry")
    assert rule.hits == 1
    # The event is written beside the retried bind, not before it: wait for it too.
    await wait_for(lambda: events(api, reason="BindFailed", regarding="p"),
                   what="the BindFailed event")
    event = events(api, reason="BindFailed", regarding="p")[0]
    assert "already assigned" in event["note"]


async def test_pod_bound_by_someone_else_meanwhile(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """A real 409: the pod was bound elsewhere while our bind was in flight. The operator
    takes the cluster's word for it and never binds that pod again."""
    api, _ = cluster
    add_node(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "other"},
                "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
    gate = api.faults.add(method="POST", path_regex=r"/pods/raced/binding", times=1, delay=0.3)
    api.create(pod("raced", cpu="6"))
    await wait_for(lambda: gate.hits == 1, what="our bind in flight")
    api.bind("default", "raced", "other")
    await wait_for(lambda: bind_answers(api, "raced"), what="our bind answered")
    assert bind_answers(api, "raced") == [("raced", 409)]
    await op.settle(5)
    assert node_of(api, "raced") == "other"
    assert len(bind_answers(api, "raced")) == 1
    # node-0 is still free for the next pod of that size: the core did not keep it.
    api.create(pod("next", cpu="6"))
    await wait_for(lambda: node_of(api, "next") == "node-0", what="next pod bound")


async def test_pod_deleted_while_bind_in_flight(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    gate = api.faults.add(method="POST", path_regex=r"/pods/doomed/binding", times=1, delay=0.3)
    api.create(pod("doomed", cpu="6"))
    await wait_for(lambda: gate.hits == 1, what="bind in flight")
    api.delete("pods", "default", "doomed")
    await wait_for(lambda: bind_answers(api, "doomed"), what="bind answered")
    assert bind_answers(api, "doomed") == [("doomed", 404)]
    api.create(pod("after", cpu="6"))
    await wait_for(lambda: node_of(api, "after") == "node-0", what="the node is free again")


async def test_pod_recreated_under_the_same_name_while_bind_in_flight(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """The bind carries the pod's UID as a precondition: it cannot bind the new pod that
    took the old one's name. The new pod is scheduled on its own, once."""
    api, _ = cluster
    gate = api.faults.add(method="POST", path_regex=r"/pods/same/binding", times=1, delay=0.3)
    old_uid = api.create(pod("same", cpu="6"))["metadata"]["uid"]
    await wait_for(lambda: gate.hits == 1, what="bind in flight")
    api.delete("pods", "default", "same")
    new_uid = api.create(pod("same", cpu="6"))["metadata"]["uid"]
    assert new_uid != old_uid
    await wait_for(lambda: node_of(api, "same") == "node-0", what="the new pod bound")
    await wait_for(lambda: len(bind_answers(api, "same")) == 2, what="the old bind answered")
    assert sorted(bind_answers(api, "same")) == [("same", 201), ("same", 409)]
    await op.settle()
    assert len(bind_answers(api, "same")) == 2


async def test_repeated_event_is_one_event_with_a_growing_series(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    rule = api.faults.add(method="POST", path_regex=r"/pods/flaky/binding", times=3, status=500,
                          message="etcd leader changed")
    api.create(pod("flaky"))
    for attempt in range(1, 4):
        await wait_for(lambda attempt=attempt: rule.hits == attempt, what=f"failure {attempt}")
        await op.settle()
        await op.advance(2 ** attempt)
    await wait_for(lambda: node_of(api, "flaky") == "node-0", what="bound at last")
    failed = events(api, reason="BindFailed", regarding="flaky")
    assert len(failed) == 1
    assert failed[0]["series"]["count"] == 3
    assert "etcd leader changed" in failed[0]["note"]


async def test_event_series_continues_after_a_restart(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    rule = api.faults.add(method="POST", path_regex=r"/pods/flaky/binding", times=3, status=500)
    api.create(pod("flaky"))
    await wait_for(lambda: rule.hits == 1, what="failure 1")
    await op.settle()  # the failure handled (its backoff set) before the clock moves on
    await op.advance(1.1)
    await wait_for(lambda: rule.hits == 2, what="failure 2")
    await op.settle()
    await op.kill()
    again = await OperatorUnderTest(api, kubeconfig, op.clock, request_timeout=0.5).start()
    try:
        await again.advance(5)
        await wait_for(lambda: rule.hits == 3, what="failure 3")
        await again.settle()
        failed = events(api, reason="BindFailed", regarding="flaky")
        assert [e["series"]["count"] for e in failed] == [3]
    finally:
        await again.kill()


async def test_status_is_patched_only_when_it_changes(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    api.create(application("idle", [group("w", 2)]))
    await wait_for(lambda: status_of(api, "applications", "default", "idle")
                   .get("reserved") == "2/2", what="reserved")
    await op.settle(5)
    counts = (api.request_count("patch", "applications", "status"),
              api.request_count("patch", "queues", "status"),
              api.request_count("patch", "pods", "status"),
              api.request_count("create", "events"), api.request_count("patch", "events"))
    await op.settle(12)  # idle cycles
    await op.advance(5, cycles=10)  # time passes, nothing happens
    assert counts == (api.request_count("patch", "applications", "status"),
                      api.request_count("patch", "queues", "status"),
                      api.request_count("patch", "pods", "status"),
                      api.request_count("create", "events"), api.request_count("patch", "events"))


@pytest.mark.parametrize("code", [409, 500, 0])
async def test_status_write_failure_is_retried(cluster, op, code: int) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    fault: dict[str, Any] = {"drop_connection": True} if code == 0 else {"status": code}
    rule = api.faults.add(method="PATCH", path_regex=r"applications/retry/status", times=2,
                          **fault)
    api.create(application("retry", [group("w", 1)]))
    await wait_for(lambda: status_of(api, "applications", "default", "retry")
                   .get("reserved") == "1/1", what="status written in the end")
    assert rule.hits == 2


@pytest.mark.parametrize("code", [409, 500, 0])
async def test_pod_condition_write_failure_is_retried(cluster, op, code: int) -> None:  # type: ignore[no-untyped-def]
    """The PodScheduled=False condition is written even when the first attempts fail."""
    api, _ = cluster
    fault: dict[str, Any] = {"drop_connection": True} if code == 0 else {"status": code}
    rule = api.faults.add(method="PATCH", path_regex=r"/pods/huge/status", times=2, **fault)
    api.create(pod("huge", cpu="64"))
    found = await wait_for(lambda: condition(api.try_get("pods", "default", "huge"),
                                             "PodScheduled"), what="condition written")
    assert found["status"] == "False"
    assert found["reason"] == "Unschedulable"
    assert found["message"].startswith("0/1 nodes are available: ")  # kube-scheduler's words
    assert rule.hits == 2
    assert events(api, reason="Capacity", regarding="huge")


async def test_pending_reason_updates_its_condition_in_place(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """PodScheduled is written with a strategic merge patch of pods/status: a new message
    replaces it in place (once the refresh interval passed: the reason is the same, so
    no new Event), and the pod's other conditions stay."""
    api, _ = cluster
    api.create(pod("huge", cpu="64"))
    first = await wait_for(lambda: condition(api.try_get("pods", "default", "huge"),
                                             "PodScheduled"), what="condition")
    assert "0/1 nodes are available" in first["message"]
    api.patch("pods", "default", "huge",
              {"status": {"conditions": [{"type": "example.com/Checked", "status": "True"}]}},
              subresource="status", content_type="application/strategic-merge-patch+json")
    add_node(api, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
                "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
    await op.settle()
    assert "0/1 nodes are available" in condition(api.try_get("pods", "default", "huge"),
                                                  "PodScheduled")["message"]  # same reason: held
    await op.advance(op.settings.pending_refresh)
    await wait_for(lambda: "0/2 nodes are available" in condition(
        api.try_get("pods", "default", "huge"), "PodScheduled").get("message", ""),
        what="the new message")
    kinds = [c["type"] for c in api.get("pods", "default", "huge")["status"]["conditions"]]
    assert sorted(kinds) == ["PodScheduled", "example.com/Checked"]
    assert len(events(api, reason="Capacity", regarding="huge")) == 1  # no new reason


async def test_placeholder_creation_failure_is_retried(cluster, op) -> None:  # type: ignore[no-untyped-def]
    api, _ = cluster
    rule = api.faults.add(method="POST", path_regex=r"namespaces/default/pods$", times=1,
                          status=500, message="admission webhook timed out")
    api.create(application("gang", [group("w", 2)]))
    await wait_for(lambda: len(placeholders(api)) == 1, what="one placeholder created")
    note = await wait_for(lambda: events(api, reason="PlaceholderCreateFailed"), what="event")
    assert "admission webhook timed out" in note[0]["note"]
    await op.advance(11)
    await wait_for(lambda: status_of(api, "applications", "default", "gang")
                   .get("reserved") == "2/2", what="reserved after the retry")
    assert rule.hits == 1


@pytest.mark.parametrize("fault", [
    pytest.param({"drop_connection": True}, id="dropped"),
    pytest.param({"status": 410}, id="410-gone"),
    pytest.param({"status": 500}, id="500"),
])
async def test_pod_watch_failure_loses_nothing(cluster, fault: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    """The API server ends the pod watch (at its timeout, 1 s here) and the next watch
    request fails: what happened meanwhile, a new pod and a deletion, is not lost."""
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), watch_timeout=1).start()
    try:
        api.create(pod("first", cpu="6"))
        await wait_for(lambda: node_of(api, "first") == "node-0", what="first pod bound")
        rule = api.faults.add(method="GET", path_regex=r"^/api/v1/pods\?.*watch=true",
                              times=1, **fault)
        await wait_for(lambda: rule.hits == 1, what="the next pod watch to fail")
        api.delete("pods", "default", "first")
        api.create(pod("second", cpu="6"))  # fits only once the first one is gone
        await wait_for(lambda: node_of(api, "second") == "node-0", what="second pod bound")
        assert_bound_at_most_once(api)
    finally:
        await op.kill()


async def test_slow_pending_condition_never_lands_after_the_bind(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """A real pod says WaitingForPlaceholder while its placeholder goes; that condition
    write is slow, the bind is not. The pod must end PodScheduled=True, not False."""
    api, _ = cluster
    api.create(application("swap", [group("w", 1)]))
    await wait_for(lambda: status_of(api, "applications", "default", "swap")
                   .get("reserved") == "1/1", what="reserved")
    slow = api.faults.add(method="PATCH", path_regex=r"/pods/real/status", delay=0.3)
    api.create(pod("real", labels={"gangsched.io/app": "swap"},
                   annotations={"gangsched.io/task-group": "w"}))
    await wait_for(lambda: node_of(api, "real") == "node-0", what="bound")
    await wait_for(lambda: slow.hits >= 1, what="the condition write")
    await op.settle()
    await wait_for(lambda: len([e for e in api.request_log if e.method == "PATCH" and
                                "/pods/real/status" in e.path_qs]) == slow.hits,
                   what="the slow writes answered")
    found = condition(api.get("pods", "default", "real"), "PodScheduled")
    assert found["status"] == "True", found


async def test_a_gated_pod_gets_its_condition_and_nothing_else(cluster, op) -> None:  # type: ignore[no-untyped-def]
    """As kube-scheduler: PodScheduled=False, reason SchedulingGated, no Event, no bind;
    once its gates are removed it is scheduled."""
    api, _ = cluster
    gated = pod("gated", cpu="100m")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    api.create(gated)
    api.create(pod("plain", cpu="100m"))
    await wait_for(lambda: node_of(api, "plain"), what="the ungated pod bound")
    found = await wait_for(lambda: condition(api.try_get("pods", "default", "gated"),
                                             "PodScheduled"), what="condition")
    assert (found["status"], found["reason"], found["message"]) == (
        "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")
    assert not [e for e in api.list("events", "default")
                if (e.get("regarding") or {}).get("name") == "gated"]
    assert bind_answers(api, "gated") == []
    api.patch("pods", "default", "gated", {"spec": {"schedulingGates": None}})
    await wait_for(lambda: node_of(api, "gated"), what="the pod bound once ungated")
