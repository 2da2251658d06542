"""The ``Scheduled`` Event of every pod the operator binds, as kube-scheduler writes it;
none with the flag off; dropped before any Binding when the API server pushes back; and
what a gang writes beyond its binds: one Event per cycle, one status patch."""

from __future__ import annotations

import asyncio
import collections
import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from fakeapi.flowcontrol import FlowLimiter
from gangsched.shell import scheduled
from gangsched.shell.client import ApiError
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
    bind_answers,
    events,
    group,
    new_cluster,
    placeholders,
    pod,
    status_of,
    wait_for,
)
from translate.dialect_manifests import (
    COSCHEDULING_DEPLOYMENT,
    COSCHEDULING_PODGROUP,
    VOLCANO_POD,
    VOLCANO_PODGROUP,
    YUNIKORN_HARD_JOB,
    load,
    pods_of,
)

pytestmark = pytest.mark.asyncio

HERE = pathlib.Path(__file__).resolve().parent
SCHEDULERS = frozenset({"gangsched", "yunikorn", "scheduler-plugins-scheduler", "volcano"})


def create_pods(api: FakeApiServer, objects: list[dict[str, Any]]) -> list[str]:
    names = []
    for obj in objects:
        obj["metadata"].pop("uid", None)
        obj.pop("status", None)
        names.append(api.create(obj)["metadata"]["name"])
    return names


def all_bound(api: FakeApiServer, names: list[str]) -> bool:
    return all((api.try_get("pods", "default", n) or {}).get("spec", {}).get("nodeName")
               for n in names)


async def written(op: OperatorUnderTest) -> None:
    """Let the Events of the binds so far be written (``settle`` waits for them)."""
    await op.settle()


async def test_every_pod_bound_has_one_scheduled_event_as_kube_scheduler_writes_it(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """Plain pods, an Application's placeholders and the pods that take their place, a
    gang whose members all exist, and the gangs of three other schedulers' dialects."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=6)
    api.install_crds_from_dir(HERE / "foreign_crds")
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(),
                                 scheduler_names=SCHEDULERS).start()
    try:
        real = create_pods(api, [pod("plain-0"), pod("plain-1")])
        api.create(application("train", [group("worker", 2)], style="Hard"))
        await wait_for(lambda: len([p for p in placeholders(api) if p["spec"].get("nodeName")])
                       == 2, what="placeholders bound")
        real += create_pods(api, [pod(f"worker-{i}", labels={"gangsched.io/app": "train"},
                                 annotations={"gangsched.io/task-group": "worker"})
                             for i in range(2)])
        api.create({"apiVersion": "gangsched.io/v1alpha1", "kind": "Queue",
                    "metadata": {"name": "fifo"}, "spec": {"sortPolicy": "fifo"}})
        real += create_pods(api, pods_of(YUNIKORN_HARD_JOB, 4, uids=False))
        api.create(load(VOLCANO_PODGROUP))
        real += create_pods(api, pods_of(VOLCANO_POD, 3, uids=False))
        podgroup = load(COSCHEDULING_PODGROUP)
        podgroup["metadata"]["namespace"] = "default"
        api.create(podgroup)
        real += create_pods(api, pods_of(COSCHEDULING_DEPLOYMENT, 3, uids=False))
        await wait_for(lambda: all_bound(api, real), what="every pod bound: " + ", ".join(
            n for n in real if not all_bound(api, [n])))
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        await written(op)

        bound = [name for name, code in bind_answers(api) if code < 300]
        assert len(bound) == len(real) + 2  # the two placeholders too
        found = events(api, reason="Scheduled")
        assert collections.Counter(e["regarding"]["name"] for e in found) == \
            collections.Counter(bound)
        by_name = {e["regarding"]["name"]: e for e in found}
        schedulers = set()
        for name in real:
            obj = api.get("pods", "default", name)
            event = by_name[name]
            scheduler = obj["spec"]["schedulerName"]
            schedulers.add(scheduler)
            assert event["type"] == "Normal"
            assert event["action"] == "Binding"
            assert event["note"] == \
                f"Successfully assigned default/{name} to {obj['spec']['nodeName']}"
            assert event["reportingController"] == scheduler
            assert event["reportingInstance"] == f"{scheduler}-op-1"
            assert event["eventTime"]
            assert event["regarding"] == {"apiVersion": "v1", "kind": "Pod",
                                          "namespace": "default", "name": name,
                                          "uid": obj["metadata"]["uid"]}
        assert schedulers == SCHEDULERS
        assert op.runtime is not None
        assert op.runtime.scheduled.written == len(bound)
        assert not op.runtime.scheduled.dropped
    finally:
        await op.kill()


async def test_no_scheduled_event_with_the_flag_off(fake_api_factory: Any,
                                                     tmp_path: pathlib.Path) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), scheduled_events=False).start()
    try:
        names = create_pods(api, [pod(f"p-{i}") for i in range(4)])
        await wait_for(lambda: all_bound(api, names), what="pods bound")
        await written(op)
        assert events(api, reason="Scheduled") == []
        assert api.request_count("create", "events") == 0
    finally:
        await op.kill()


async def test_scheduled_events_are_dropped_before_any_binding_when_the_server_pushes_back(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """The API server answers 429 past 40 requests a second: every pod is bound all the
    same (a Binding answered 429 is tried again); Scheduled Events are dropped instead:
    none is sent within a second of a 429, none is sent twice."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, cpu="16")
    clock = FakeClock()
    op = await OperatorUnderTest(api, kubeconfig, clock, qps=0).start()
    assert op.runtime is not None
    sent = op.runtime.scheduled
    client = sent.client
    create = client.create
    tries: list[tuple[str, float | None, float, int]] = []
    """(pod, the last 429 before, when sent, answer)"""

    async def recorded(group: str, version: str, plural: str, namespace: str | None,
                       body: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        if body.get("reason") != "Scheduled":
            return await create(group, version, plural, namespace, body, **kwargs)
        last, now = client.pushed_back_at, client.monotonic()
        try:
            found = await create(group, version, plural, namespace, body, **kwargs)
        except ApiError as err:
            tries.append((body["regarding"]["name"], last, now, err.code))
            raise
        tries.append((body["regarding"]["name"], last, now, 201))
        return found

    client.create = recorded  # type: ignore[method-assign]
    try:
        api.flow = FlowLimiter(40, 10)
        names = create_pods(api, [pod(f"p-{i:02}", cpu="100m") for i in range(60)])
        for _ in range(200):  # a Binding answered 429 is tried again after its backoff
            if all_bound(api, names):
                break
            await asyncio.sleep(0.05)  # the server's limit refills on the real clock
            await op.advance(10.0)
        assert all_bound(api, names)
        await written(op)
        assert sum(api.flow.rejected.values()) > 0, "no pushback: the test shows nothing"
        assert sent.dropped["pushback"] > 0
        assert sent.written + sent.dropped["pushback"] == len(names)
        assert len(events(api, reason="Scheduled")) == sent.written
        assert len({name for name, *_ in tries}) == len(tries), "an Event sent twice"
        assert [t for t in tries if t[1] is not None and t[2] - t[1] < scheduled.PUSHBACK_SECONDS
                ] == [], "sent while the server pushed back"
        assert len([t for t in tries if t[3] == 429]) < sent.dropped["pushback"]
    finally:
        api.flow = None
        await op.kill()


async def test_a_gang_writes_one_event_and_one_status_patch_beyond_its_binds(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """A gang of 8 whose members all exist is accepted, reserved, bound and running in
    one cycle: 8 Bindings, 8 Scheduled Events, one Event on the Application that says
    both the moves and the reservation, and its status patched once."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, auto_run=False)
    app = api.create(application("gang", [group("worker", 8, cpu="500m")]))
    names = create_pods(api, [pod(f"w-{i}", cpu="500m", labels={"gangsched.io/app": "gang"},
                             annotations={"gangsched.io/task-group": "worker"})
                         for i in range(8)])
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        await wait_for(lambda: all_bound(api, names), what="gang bound")
        await wait_for(lambda: status_of(api, "applications", "default", "gang")
                       .get("state") == "Running", what="Running")
        await written(op)
        writes = collections.Counter(
            (e.method, e.path_qs.split("?")[0]) for e in api.request_log
            if e.method in ("POST", "PATCH", "PUT", "DELETE")
            and ("/pods" in e.path_qs or "/events" in e.path_qs
                 or "/applications" in e.path_qs))
        status_path = "/apis/gangsched.io/v1alpha1/namespaces/default/applications/gang/status"
        assert writes.pop(("PATCH", status_path)) == 1
        assert writes.pop(("POST", "/apis/events.k8s.io/v1/namespaces/default/events")) == 9
        assert writes == collections.Counter(
            {("POST", f"/api/v1/namespaces/default/pods/{n}/binding"): 1 for n in names})
        assert len(events(api, reason="Scheduled")) == 8
        said = [e for e in events(api, regarding="gang")
                if e["regarding"]["uid"] == app["metadata"]["uid"]]
        assert len(said) == 1, said
        assert said[0]["reason"] == "GangReserved"
        assert "New -> Accepted -> Starting -> Running" in said[0]["note"]
        assert "every task group has its minMember" in said[0]["note"]
    finally:
        await op.kill()
