"""Bad input never crashes the operator or loses other work.

Every kind of bad input the API server lets through (it validates CRs against the CRDs'
schemas, so e.g. ``cpu: abc`` is refused there with a 422) is submitted to one cluster,
next to a good gang. Each bad object must end in a well-defined state with a precise
message in its status (a pod: its PodScheduled condition) and an Event, and the good gang
must still be reserved and run. A case that fails names itself and what is wrong.
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakeapi import FakeApiServer
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    application,
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

APP = "gangsched.io/v1alpha1"


@dataclass(frozen=True)
class Bad:
    """One bad input: the objects to create, and where its message must show."""

    id: str
    objects: list[dict[str, Any]]
    kind: str
    """``applications``, ``podgroups`` or ``pods``: whose status (condition) to read."""
    name: str
    state: dict[str, str]
    """Expected status fields (a pod: fields of its PodScheduled condition)."""
    message: str
    """A fragment the status message and the Event's note must both contain."""
    event: str
    """The Event's reason, on the object ``name``."""
    extra: list[Callable[[FakeApiServer], object]] = field(default_factory=list)
    """More checks, each returning a falsy value on failure."""


def podgroup(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": APP, "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def driver(name: str, app: str, annotations: dict[str, str]) -> dict[str, Any]:
    return pod(name, labels={"gangsched.io/app": app}, annotations=annotations)


def no_placeholders_of(app: str) -> Callable[[FakeApiServer], object]:
    return lambda api: not [p for p in placeholders(api)
                            if p["metadata"]["labels"].get("gangsched.io/app") == app]


def unbound(name: str) -> Callable[[FakeApiServer], object]:
    return lambda api: not api.get("pods", "default", name)["spec"].get("nodeName")


def blocked(app: str, reason: str, fragment: str) -> Callable[[FakeApiServer], object]:
    def check(api: FakeApiServer) -> object:
        gang = condition(api.try_get("applications", "default", app), "GangReserved")
        groups = status_of(api, "applications", "default", app).get("taskGroups") or [{}]
        blocking = groups[0].get("blockingReason") or {}
        return (gang.get("status") == "False" and gang.get("reason") == reason
                and blocking.get("reason") == reason and fragment in blocking.get("message", ""))
    return check


CASES = [
    Bad("pods-first-invalid-json",
        [driver("drv-json", "spark-json", {"gangsched.io/task-groups": "[{not json"})],
        "pods", "drv-json", {"status": "False", "reason": "Unschedulable"},
        "metadata.annotations[gangsched.io/task-groups]: invalid JSON at line 1 column 3",
        "InvalidTaskGroups", [unbound("drv-json")]),
    Bad("pods-first-invalid-group",
        [driver("drv-group", "spark-group", {
            "gangsched.io/task-groups": json.dumps([{"name": "Exec_1", "minMember": 0}])})],
        "pods", "drv-group", {"status": "False"},
        "gangsched.io/task-groups][0].minMember", "InvalidTaskGroups", [unbound("drv-group")]),
    Bad("pods-first-invalid-policy",
        [driver("drv-policy", "spark-policy", {
            "gangsched.io/task-groups": json.dumps([group("d", 1)]),
            "gangsched.io/scheduling-policy": "gangSchedulingStyle=Maybe"})],
        "pods", "drv-policy", {"status": "False"},
        'gangSchedulingStyle: unknown style "Maybe" (accepted: Hard, Soft)',
        "InvalidTaskGroups", [unbound("drv-policy")]),
    Bad("negative-quantity",
        [application("neg", [group("w", 1, cpu="-1")])],
        "applications", "neg", {"state": "Rejected", "reason": "InvalidSpec"},
        'spec.taskGroups[0].minResource.cpu: invalid quantity "-1": must not be negative',
        "InvalidSpec", [no_placeholders_of("neg")]),
    Bad("negative-integer-quantity",
        [application("negint", [{"name": "w", "minMember": 1, "minResource": {"memory": -2}}])],
        "applications", "negint", {"state": "Rejected", "reason": "InvalidSpec"},
        "spec.taskGroups[0].minResource.memory: invalid quantity -2: must not be negative",
        "InvalidSpec"),
    Bad("absurd-quantity",
        [application("absurd", [group("w", 1, cpu="1e1000")])],
        "applications", "absurd", {"state": "Rejected", "reason": "InvalidSpec"},
        'spec.taskGroups[0].minResource.cpu: invalid quantity "1e1000": too large',
        "InvalidSpec"),
    Bad("duplicate-task-groups",
        [application("dup", [group("w", 1), group("w", 2)])],
        "applications", "dup", {"state": "Rejected", "reason": "InvalidSpec"},
        'spec.taskGroups[1].name: duplicate task group name "w"', "InvalidSpec"),
    Bad("unknown-queue",
        [application("lost", [group("w", 1)], queue="nope")],
        "applications", "lost", {"state": "New", "reason": "QueueNotFound"},
        'queue "nope" does not exist; waiting for it', "QueueNotFound",
        [no_placeholders_of("lost")]),
    Bad("gang-over-queue-max",
        [{"apiVersion": APP, "kind": "Queue", "metadata": {"name": "small"},
          "spec": {"max": {"cpu": "2"}}},
         application("greedy", [group("w", 3)], queue="small")],
        "applications", "greedy", {"state": "Rejected", "reason": "QueueQuotaExceeded"},
        "the gang needs cpu=3, memory=3Gi, pods=3, more than queue small's max cpu=2",
        "QueueQuotaExceeded", [no_placeholders_of("greedy")]),
    Bad("podgroup-over-queue-max",
        [{"apiVersion": APP, "kind": "Queue", "metadata": {"name": "tiny"},
          "spec": {"max": {"cpu": "1"}}},
         podgroup("greedy-pg", minMember=2, queue="tiny", minResources={"cpu": "2"}),
         pod("greedy-pg-0", labels={"gangsched.io/pod-group": "greedy-pg"})],
        "podgroups", "greedy-pg", {"phase": "Failed", "reason": "QueueQuotaExceeded"},
        "minResources cpu=2 exceed queue tiny's max cpu=1", "QueueQuotaExceeded",
        [unbound("greedy-pg-0")]),
    Bad("member-larger-than-any-node",
        [application("huge", [group("w", 1, cpu="64")])],
        "applications", "huge", {"state": "Accepted"},
        "", "Accepted",
        # Not enqueued, and said at once: no node could ever hold its member.
        [blocked("huge", "Unsatisfiable", "task group w needs cpu=64, memory=1Gi, pods=1 per "
                 "member; the largest of the 3 nodes its constraints allow has cpu=4"),
         no_placeholders_of("huge")]),
    Bad("gang-on-no-node",
        [application("nowhere", [{**group("w", 2), "nodeSelector": {"zone": "mars"}}])],
        "applications", "nowhere", {"state": "Accepted"}, "", "Accepted",
        [blocked("nowhere", "Constraints", "3 node(s) didn't match Pod's node affinity/selector")]),
    Bad("app-and-pod-group",
        [application("both", [group("w", 1)]), podgroup("pg", minMember=1),
         pod("conflict", labels={"gangsched.io/app": "both", "gangsched.io/pod-group": "pg"},
             annotations={"gangsched.io/task-group": "w"})],
        "pods", "conflict", {"status": "False", "reason": "Unschedulable"},
        'conflicting gang membership: label gangsched.io/app names Application "both" and '
        'label gangsched.io/pod-group names PodGroup "pg"', "InvalidPod",
        [unbound("conflict")]),
    Bad("missing-app-and-pod-group",
        [podgroup("pg2", minMember=1),
         pod("conflict2", labels={"gangsched.io/app": "absent",
                                  "gangsched.io/pod-group": "pg2"})],
        "pods", "conflict2", {"status": "False", "reason": "Unschedulable"},
        'conflicting gang membership: label gangsched.io/app names Application "absent"',
        "InvalidPod", [unbound("conflict2")]),
    Bad("total-below-min-member",  # CEL would refuse it; a server without CEL does not
        [podgroup("short", minMember=3, totalNumber=2),
         pod("member", labels={"gangsched.io/pod-group": "short"})],
        "pods", "member", {"status": "False"},
        "spec.totalNumber: must be at least spec.minMember (3), got 2",
        "InvalidPodGroup",
        [lambda api: status_of(api, "podgroups", "default", "short").get("phase") == "Failed",
         lambda api: "spec.totalNumber: must be at least spec.minMember (3), got 2"
         in status_of(api, "podgroups", "default", "short").get("message", ""),
         lambda api: events(api, reason="InvalidSpec", regarding="short")]),
    Bad("unknown-priority-class",
        [{**application("vip", [group("w", 1)]),
          "spec": {**application("vip", [group("w", 1)])["spec"],
                   "priorityClassName": "platinum"}}],
        "applications", "vip", {"state": "Accepted"},
        "", "PlaceholderCreateFailed",
        [lambda api: any("no PriorityClass with name platinum was found" in e["note"]
                         for e in events(api, reason="PlaceholderCreateFailed",
                                         regarding="vip")),
         no_placeholders_of("vip")]),
    Bad("bad-annotation",
        [pod("odd", annotations={"gangsched.io/preemptible": "maybe"})],
        "pods", "odd", {"status": "False"},
        'metadata.annotations[gangsched.io/preemptible]: expected "true" or "false", got '
        '"maybe"', "InvalidPod", [unbound("odd")]),
]


@pytest.fixture
async def cluster(fake_api_factory, tmp_path: pathlib.Path):  # type: ignore[no-untyped-def]
    return await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4")


def failure(api: FakeApiServer, case: Bad) -> str:
    """What is wrong with ``case`` now ("" when all is as expected)."""
    obj = api.try_get(case.kind, "default", case.name)
    if obj is None:
        return "object missing"
    pod_status = case.kind == "pods"
    found = condition(obj, "PodScheduled") if pod_status else dict(obj.get("status") or {})
    wrong = {k: found.get(k) for k, v in case.state.items() if found.get(k) != v}
    if wrong:
        return f"status {wrong}, expected {case.state}"
    if case.message not in str(found.get("message")):
        return f"status message {found.get('message')!r} lacks {case.message!r}"
    notes = [e["note"] for e in events(api, reason=case.event, regarding=case.name)]
    if not any(case.message in note for note in notes):
        return f"no {case.event} Event with {case.message!r}: {notes}"
    bad = [i for i, check in enumerate(case.extra) if not check(api)]
    return f"extra checks {bad} failed" if bad else ""


async def test_bad_input_is_reported_and_a_good_gang_still_runs(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        for case in CASES:
            for obj in case.objects:
                api.create(obj)
        api.create(application("good", [group("w", 2)]))
        for i in range(2):
            api.create(pod(f"good-{i}", labels={"gangsched.io/app": "good"},
                           annotations={"gangsched.io/task-group": "w"}))
        await wait_for(lambda: status_of(api, "applications", "default", "good")
                       .get("state") == "Running", what="the good gang runs")
        problems: dict[str, str] = {}
        for case in CASES:
            try:
                await wait_for(lambda case=case: not failure(api, case), timeout=3,
                               what=case.id)
            except AssertionError:
                problems[case.id] = failure(api, case)
        assert not problems, json.dumps(problems, indent=1)
        assert not api.internal_errors
        assert op.task is not None and not op.task.done()
        assert op.runtime is not None
        cycles = op.runtime.cycles
        await op.settle(3)
        assert op.runtime.cycles > cycles
    finally:
        await op.kill()


async def test_a_missing_queue_that_appears_admits_the_app(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(application("lost", [group("w", 2)], queue="nope"))
        await wait_for(lambda: status_of(api, "applications", "default", "lost")
                       .get("reason") == "QueueNotFound", what="QueueNotFound")
        api.create({"apiVersion": APP, "kind": "Queue", "metadata": {"name": "nope"},
                    "spec": {}})
        await wait_for(lambda: status_of(api, "applications", "default", "lost")
                       .get("reserved") == "2/2", what="admitted and reserved")
    finally:
        await op.kill()


async def test_a_rejected_app_is_checked_again_when_fixed(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(application("neg", [group("w", 1, cpu="-1")]))
        await wait_for(lambda: status_of(api, "applications", "default", "neg")
                       .get("state") == "Rejected", what="Rejected")
        api.patch("applications", "default", "neg",
                  {"spec": {"taskGroups": [group("w", 1, cpu="1")]}})
        await wait_for(lambda: status_of(api, "applications", "default", "neg")
                       .get("reserved") == "1/1", what="accepted and reserved once fixed")
    finally:
        await op.kill()


async def test_placeholder_creation_refused_shows_in_status(cluster) -> None:  # type: ignore[no-untyped-def]
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        app = application("vip", [group("w", 1)])
        app["spec"]["priorityClassName"] = "platinum"
        api.create(app)
        await wait_for(lambda: events(api, reason="PlaceholderCreateFailed"), what="Event")
        await op.settle(3)
        gang = condition(api.try_get("applications", "default", "vip"), "GangReserved")
        assert gang["status"] == "False"
        assert "no PriorityClass with name platinum was found" in gang["message"]
        blocking = status_of(api, "applications", "default", "vip")["taskGroups"][0]
        assert "platinum" in blocking["blockingReason"]["message"]
    finally:
        await op.kill()


async def test_an_app_recreated_under_its_name_gets_its_status(cluster) -> None:  # type: ignore[no-untyped-def]
    """Its status would be the very one written for the old object: it is written again."""
    api, kubeconfig = cluster
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(application("lost", [group("w", 1)], queue="nope"))
        await wait_for(lambda: status_of(api, "applications", "default", "lost")
                       .get("reason") == "QueueNotFound", what="QueueNotFound")
        api.delete("applications", "default", "lost")
        await op.settle()
        api.create(application("lost", [group("w", 1)], queue="nope"))
        await wait_for(lambda: status_of(api, "applications", "default", "lost")
                       .get("reason") == "QueueNotFound", what="QueueNotFound again")
    finally:
        await op.kill()
