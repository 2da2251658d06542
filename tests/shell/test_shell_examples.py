"""Every folder of ``examples/`` end to end: its manifests, the real operator, the fake API.

Each case loads the folder's YAML files (as ``kubectl apply -f`` would read them), creates
them in the fake API server in a stated order, runs the operator through kopf with a
:class:`FakeClock`, and checks what a user would see over the API: Application and
PodGroup status, placeholder pods, bindings, pod conditions and Events. Timeouts are
reached by advancing the clock, never by waiting.
"""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from fakeapi import FakeApiServer
from shellkit import (
    ROOT,
    FakeClock,
    OperatorUnderTest,
    add_node,
    assert_bound_at_most_once,
    condition,
    events,
    new_cluster,
    node,
    status_of,
    wait_for,
)

EXAMPLES = ROOT / "examples"
NS = "default"
FIT_REASONS = ("Capacity", "Constraints", "Reservation")
"""Reasons whose pods show kube-scheduler's FitError message as it is."""
FIT_ERROR = re.compile(r"\d+/\d+ nodes are available: ")
PAUSE = "registry.k8s.io/pause:3.10"
Obj = dict[str, Any]


def manifests(folder: str) -> list[Obj]:
    """Every object of the folder's YAML files, in file order (as kubectl reads them)."""
    docs: list[Obj] = []
    for path in sorted((EXAMPLES / folder).glob("*.yaml")):
        docs.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return docs


def _meta(obj: Obj) -> Obj:
    return dict(obj.get("metadata") or {})


def _labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def _annotations(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("annotations") or {})


def _is_placeholder(pod: Obj) -> bool:
    return _labels(pod).get("gangsched.io/placeholder") == "true"


@dataclass
class World:
    api: FakeApiServer
    op: OperatorUnderTest
    docs: list[Obj]

    # --- the manifests -----------------------------------------------------------------

    def objects(self, *kinds: str) -> list[Obj]:
        return [d for d in self.docs if d["kind"] in kinds]

    def doc(self, kind: str, name: str) -> Obj:
        return next(d for d in self.docs if d["kind"] == kind and _meta(d)["name"] == name)

    def real_pod_names(self, prefix: str = "") -> list[str]:
        return [_meta(d)["name"] for d in self.objects("Pod")
                if _meta(d)["name"].startswith(prefix)]

    def apply(self, docs: list[Obj]) -> None:
        for d in docs:
            self.api.create(d)

    def apply_pods(self, *names: str) -> None:
        self.apply([self.doc("Pod", n) for n in names])

    # --- what the API shows ------------------------------------------------------------

    def app(self, name: str) -> Obj:
        return status_of(self.api, "applications", NS, name)

    def group(self, name: str) -> Obj:
        return status_of(self.api, "podgroups", NS, name)

    def pod(self, name: str) -> Obj:
        return self.api.get("pods", NS, name)

    def placeholders(self, app: str | None = None) -> list[Obj]:
        return [p for p in self.api.list("pods", NS) if _is_placeholder(p)
                and (app is None or _labels(p).get("gangsched.io/app") == app)]

    def bound(self, *names: str) -> bool:
        return all(self.pod(n)["spec"].get("nodeName") for n in names)

    def unbound(self, *names: str) -> bool:
        return not any(self.pod(n)["spec"].get("nodeName") for n in names)

    def waiting_reason(self, name: str) -> str:
        """The message of the pod's PodScheduled=False condition ("<Reason>: <details>",
        or kube-scheduler's ``0/N nodes are available: ...`` when no node fits)."""
        found = condition(self.pod(name), "PodScheduled")
        return str(found.get("message") or "") if found.get("status") == "False" else ""

    def latest_word(self, name: str) -> str:
        """What the pod's condition says, or will say: a new message of the same reason
        is held back for ``pending_refresh`` seconds (``shell/pending.py``), so a pod whose
        gang was first tried before all its members were seen (a watch that delivers them
        over two cycles) shows the older counts until then. The word held back is the
        operator's latest, written when its time comes."""
        text = self.waiting_reason(name)
        runtime = self.op.runtime
        if not text or runtime is None:
            return text
        written = runtime.pending.pods.get(self.pod(name)["metadata"]["uid"])
        held = written.held if written is not None else None
        if held is None or not text.startswith(f"{held.reason}:"):
            return text
        return f"{held.reason}: {held.message}"

    def events(self, name: str, reason: str, kind: str | None = None) -> list[Obj]:
        return [e for e in events(self.api, NS, reason=reason, regarding=name)
                if kind is None or e["regarding"]["kind"] == kind]

    def binds(self) -> int:
        return self.api.request_count("create", "pods", "binding")

    # --- driving it --------------------------------------------------------------------

    async def app_is(self, app: str, **want: Any) -> Obj:
        """Wait until the Application's status has every field of ``want``; return it."""
        return await _status_with(lambda: self.app(app), want, f"application {app}")

    async def group_is(self, group: str, **want: Any) -> Obj:
        """Wait until the PodGroup's status has every field of ``want``; return it."""
        return await _status_with(lambda: self.group(group), want, f"podgroup {group}")

    async def state(self, app: str, state: str) -> Obj:
        return await self.app_is(app, state=state)

    async def phase(self, group: str, phase: str) -> Obj:
        return await self.group_is(group, phase=phase)

    async def event(self, name: str, reason: str, kind: str | None = None) -> Obj:
        found = await wait_for(lambda: self.events(name, reason, kind),
                               what=f"event {reason} on {name}")
        return dict(found[0])

    async def pending_with(self, reason: str, *names: str, message: str | None = None) -> None:
        """Wait until the pods wait with ``reason`` (and exactly ``message``, if given).

        A pod that no node fits shows kube-scheduler's words alone (``0/N nodes are
        available: ...``), whichever of those reasons the core gave."""
        def ok(name: str) -> bool:
            text = self.latest_word(name)
            if reason in FIT_REASONS:
                return FIT_ERROR.match(text) is not None and message in (None, text)
            if message is not None:
                return text == f"{reason}: {message}"
            return text.startswith(f"{reason}:")
        await wait_for(lambda: all(ok(n) for n in names),
                       what=f"{names} pending with {reason}: {message or '...'}")

    async def advance(self, seconds: float) -> None:
        """Move the operator's clock, then let it run a few cycles at the new time."""
        await self.op.advance(seconds)

    async def settle(self) -> None:
        """Let the operator run a few cycles and carry out their decisions."""
        await self.op.settle()

    async def finish(self, *names: str) -> None:
        for n in names:
            self.api.finish_pod(NS, n)


async def _status_with(read: Callable[[], Obj], want: dict[str, Any], what: str) -> Obj:
    def matches() -> Obj | None:
        status = read()
        return status if all(status.get(k) == v for k, v in want.items()) else None
    try:
        return dict(await wait_for(matches, what=f"{what} {want}"))
    except AssertionError:
        raise AssertionError(f"{what}: wanted {want}, status is {read()}") from None


# --- shared checks ------------------------------------------------------------------------


def assert_hardened_placeholders(w: World, app: str) -> None:
    """The placeholders of ``app``: one per member, hardened, sized, owned by the app."""
    obj = w.api.get("applications", NS, app)
    groups = {g["name"]: g for g in obj["spec"]["taskGroups"]}
    found = w.placeholders(app)
    assert len(found) == sum(g["minMember"] for g in groups.values())
    for ph in found:
        meta, spec = _meta(ph), ph["spec"]
        group = groups[_annotations(ph)["gangsched.io/task-group"]]
        assert spec["schedulerName"] == "gangsched"
        assert spec["restartPolicy"] == "Never"
        assert spec["terminationGracePeriodSeconds"] == 5
        assert spec["automountServiceAccountToken"] is False
        assert spec["enableServiceLinks"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        (container,) = spec["containers"]
        assert container["image"] == PAUSE
        assert container["securityContext"]["allowPrivilegeEscalation"] is False
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["resources"]["requests"] == group["minResource"]
        assert container["resources"]["limits"] == group["minResource"]
        assert spec.get("nodeSelector") == group.get("nodeSelector")
        (owner,) = meta["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
            "Application", app, obj["metadata"]["uid"], True)
        assert _labels(ph)["gangsched.io/app"] == app


async def reserved(w: World, app: str, *, pods_waiting: bool = False) -> Obj:
    """Wait for the gang to be fully reserved: N/N and the event GangReserved.

    With no real pod waiting, the N placeholders then all hold a node. With real pods
    waiting, they take the placeholders' places at once (see :func:`swapped`).
    """
    total = sum(g["minMember"] for g in w.api.get("applications", NS, app)["spec"]["taskGroups"])
    status = dict(await wait_for(
        lambda: w.app(app).get("reserved") == f"{total}/{total}" and w.app(app),
        what=f"{app} reserved {total}/{total}"))
    await w.event(app, "GangReserved", "Application")
    if not pods_waiting:
        await wait_for(lambda: len([p for p in w.placeholders(app) if p["spec"].get("nodeName")])
                       == total, what=f"{total} placeholders of {app} bound")
    return status


async def swapped(w: World, app: str, pods: list[str], *, running: int | None = None,
                  groups: tuple[str, ...] | None = None) -> Obj:
    """Each real pod took a placeholder's place: bound to that node, placeholders gone.
    ``running``: the pods the app then runs (default: these); ``groups``: the task groups
    whose members all took placeholders (default: every group)."""
    await wait_for(lambda: w.bound(*pods), what=f"{pods} bound")
    for name in pods:
        event = await w.event(name, "PlaceholderReplaced", "Pod")
        node_name = w.pod(name)["spec"]["nodeName"]
        assert event["note"].endswith(f"on node {node_name}"), event["note"]
        parked = await w.event(name, "WaitingForPlaceholder", "Pod")
        assert parked["note"].endswith("is being deleted to make room for this pod")
    await wait_for(lambda: not w.placeholders(app), what=f"placeholders of {app} deleted")
    count = len(pods) if running is None else running
    status = dict(await wait_for(
        lambda: w.app(app).get("state") == "Running" and w.app(app).get("running") == count
        and w.app(app), what=f"{app} Running with {count} pods"))
    for group in status["taskGroups"]:
        if groups is not None and group["name"] not in groups:
            continue
        assert group["placeholders"]["replaced"] == group["minMember"]
        assert group["placeholders"]["allocated"] == 0
    return status


async def completed(w: World, app: str, pods: list[str]) -> Obj:
    """The pods finish: Waiting, then Completed once the waiting timeout has passed."""
    await w.finish(*pods)
    waiting = await w.state(app, "Waiting")
    assert waiting["running"] == 0
    timeout = w.api.get("applications", NS, app)["spec"]["schedulingPolicy"][
        "waitingTimeoutSeconds"]
    await w.advance(timeout - 1)
    assert w.app(app)["state"] == "Waiting" and not w.events(app, "Completed")
    await w.advance(2)
    status = await w.state(app, "Completed")
    assert status["reason"] == "Completed"
    await w.event(app, "Completed", "Application")
    return status


# --- the scenarios, one per folder (and order) --------------------------------------------


async def single_gang(w: World) -> None:
    w.apply(w.objects("Application"))
    status = await reserved(w, "single-gang")
    assert (status["state"], status["running"]) == ("Accepted", 0)
    assert_hardened_placeholders(w, "single-gang")
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await swapped(w, "single-gang", pods)
    assert w.binds() == 6  # three placeholders, then three real pods
    await completed(w, "single-gang", pods)


async def single_gang_pods_first(w: World) -> None:
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("ApplicationNotFound", *pods)
    await w.event(pods[0], "ApplicationNotFound", "Pod")
    assert w.unbound(*pods)
    w.apply(w.objects("Application"))
    # Every member exists: held in memory, then bound together; no placeholder at all.
    await wait_for(lambda: w.bound(*pods), what=f"{pods} bound")
    event = await w.event("single-gang", "GangReserved", "Application")
    assert "3 pending members bound" in event["note"]
    status = await w.state("single-gang", "Running")
    assert (status["reserved"], status["running"]) == ("3/3", 3)
    assert w.api.request_count("create", "pods") == 0  # the operator made no pod
    assert w.binds() == 3 and not w.placeholders()
    await completed(w, "single-gang", pods)


async def spark_pods_first(w: World) -> None:
    w.apply_pods("spark-pi-driver")
    driver = w.pod("spark-pi-driver")
    app = await wait_for(lambda: w.api.try_get("applications", NS, "spark-pi"),
                         what="Application spark-pi created from the driver")
    (owner,) = app["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Pod", "spark-pi-driver", driver["metadata"]["uid"])
    annotations = _annotations(w.doc("Pod", "spark-pi-driver"))
    wanted = json.loads(annotations["gangsched.io/task-groups"])
    assert [(g["name"], g["minMember"]) for g in app["spec"]["taskGroups"]] == [
        (g["name"], g["minMember"]) for g in wanted]
    policy = json.loads(annotations["gangsched.io/scheduling-policy"])
    assert app["spec"]["schedulingPolicy"] == policy
    await w.event("spark-pi", "GangReserved", "Application")
    # The driver exists: held in memory and bound directly once the gang is reserved.
    # The executors do not exist yet: a placeholder holds each one's place.
    await wait_for(lambda: w.bound("spark-pi-driver"), what="driver bound")
    assert not w.events("spark-pi-driver", "PlaceholderReplaced")
    held = w.placeholders("spark-pi")
    assert len(held) == 2
    assert {_annotations(p)["gangsched.io/task-group"] for p in held} == {"executor"}
    await wait_for(lambda: all(p["spec"].get("nodeName") for p in w.placeholders("spark-pi")),
                   what="executor placeholders bound")
    await wait_for(lambda: (w.app("spark-pi").get("state"), w.app("spark-pi").get("reserved"),
                            w.app("spark-pi").get("running")) == ("Running", "3/3", 1),
                   what="spark-pi Running 3/3 with the driver")
    executors = w.real_pod_names("spark-pi-exec-")
    w.apply_pods(*executors)
    await swapped(w, "spark-pi", executors, running=3, groups=("executor",))
    await completed(w, "spark-pi", ["spark-pi-driver", *executors])


async def spark_executors_first(w: World) -> None:
    executors = w.real_pod_names("spark-pi-exec-")
    w.apply_pods(*executors)
    await w.pending_with("ApplicationNotFound", *executors,
                         message="application default/spark-pi does not exist yet; waiting for it")
    assert w.api.try_get("applications", NS, "spark-pi") is None
    w.apply_pods("spark-pi-driver")
    pods = ["spark-pi-driver", *executors]
    # Every member exists once the driver makes the Application: no placeholder at all.
    await wait_for(lambda: w.bound(*pods), what=f"{pods} bound")
    await w.event("spark-pi", "GangReserved", "Application")
    await w.state("spark-pi", "Running")
    assert w.api.request_count("create", "pods") == 0 and w.binds() == len(pods)
    await completed(w, "spark-pi", pods)


async def ps_workers(w: World) -> None:
    w.apply(w.objects("Application"))
    status = await reserved(w, "mnist-training")
    assert status["state"] == "Accepted"
    assert {g["name"]: g["placeholders"]["allocated"] for g in status["taskGroups"]} == {
        "ps": 2, "worker": 4}
    assert_hardened_placeholders(w, "mnist-training")
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    status = await swapped(w, "mnist-training", pods)
    assert {g["name"]: g["realPodsBound"] for g in status["taskGroups"]} == {
        "ps": 2, "worker": 4}
    for name in pods:  # a worker never takes a parameter server's placeholder
        note = (await w.event(name, "PlaceholderReplaced", "Pod"))["note"]
        group = _annotations(w.doc("Pod", name))["gangsched.io/task-group"]
        assert f"placeholder mnist-training-{group}-" in note, note
    await completed(w, "mnist-training", pods)


async def queue_quota_hold(w: World) -> None:
    w.apply(w.objects("Queue"))
    await wait_for(lambda: status_of(w.api, "queues", None, "research").get("max"),
                   what="queue research seen")
    w.apply(w.objects("Application"))
    await reserved(w, "job-a")
    assert_hardened_placeholders(w, "job-a")
    held = dict(await wait_for(
        lambda: w.app("job-b").get("taskGroups") and w.app("job-b")["taskGroups"][0]
        ["blockingReason"]["reason"] == "QueueQuota" and w.app("job-b"),
        what="job-b held by the queue quota"))
    assert (held["state"], held["reserved"]) == ("Accepted", "0/3")
    assert held["taskGroups"][0]["blockingReason"] == {
        "reason": "QueueQuota",
        "message": "queue research has cpu=100m free of max cpu=1; "
                   "the gang needs cpu=900m, memory=192Mi, pods=3",
        "details": {"queue": "research", "needed": "cpu=900m, memory=192Mi, pods=3",
                    "headroom": "cpu=100m", "max": "cpu=1"}}
    assert not w.placeholders("job-b")
    job_a, job_b = w.real_pod_names("job-a-"), w.real_pod_names("job-b-")
    w.apply(w.objects("Pod"))
    await swapped(w, "job-a", job_a)
    await w.pending_with("WaitingForGang", *job_b,
                         message="waiting until every task group of the gang has its minMember")
    assert w.unbound(*job_b) and not w.placeholders("job-b")
    # One event on the Application for its waiting pods, none on each pod.
    await w.event("job-b", "WaitingForGang", "Application")
    assert not any(w.events(name, "WaitingForGang", "Pod") for name in job_b)
    await wait_for(lambda: status_of(w.api, "queues", None, "research").get("usage")
                   == "cpu 900m/1, memory 192Mi/-", what="queue research usage")
    await w.settle()
    assert w.app("job-b")["state"] == "Accepted" and not w.events("job-b", "GangReserved")
    # job-a's pods finish: its quota is free, and job-b, whose pods all exist, is
    # reserved in memory and bound at once, without a placeholder.
    await w.finish(*job_a)
    await w.state("job-a", "Waiting")
    await reserved(w, "job-b", pods_waiting=True)
    await wait_for(lambda: w.bound(*job_b), what=f"{job_b} bound")
    await w.state("job-b", "Running")
    assert not w.placeholders("job-b")
    await w.advance(11)
    await w.state("job-a", "Completed")
    await completed(w, "job-b", job_b)


async def gang_too_large(w: World) -> None:
    w.apply(w.objects("Queue"))
    await wait_for(lambda: status_of(w.api, "queues", None, "small").get("max"),
                   what="queue small seen")
    w.apply(w.objects("Application"))
    status = await w.state("too-large", "Rejected")
    assert status["reason"] == "QueueQuotaExceeded"
    assert "more than queue small's max cpu=500m" in status["message"]
    event = await w.event("too-large", "QueueQuotaExceeded", "Application")
    assert event["type"] == "Warning"
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("ApplicationRejected", *pods)
    await w.event(pods[0], "ApplicationRejected", "Pod")
    assert w.unbound(*pods) and not w.placeholders()
    assert w.api.request_count("create", "pods") == 0  # no placeholder, ever
    assert w.binds() == 0
    # Editing the spec checks it again: two members (500m) fit the queue's max.
    spec = w.api.get("applications", NS, "too-large")["spec"]
    spec["taskGroups"][0]["minMember"] = 2
    w.api.patch("applications", NS, "too-large", {"spec": {"taskGroups": spec["taskGroups"]}})
    await reserved(w, "too-large", pods_waiting=True)
    await wait_for(lambda: sum(1 for n in pods if w.pod(n)["spec"].get("nodeName")) == 2,
                   what="two members bound")
    await w.event("too-large", "SpecChanged", "Application")
    status = dict(await wait_for(lambda: w.app("too-large").get("running") == 2
                                 and w.app("too-large"), what="too-large running 2"))
    assert (status["state"], status["reserved"]) == ("Running", "2/2")
    first = [n for n in pods if w.pod(n)["spec"].get("nodeName")]
    left = [n for n in pods if n not in first]
    await w.pending_with("QueueQuota", *left, message="queue small has none free of max "
                         "cpu=500m; the pod needs cpu=250m, memory=64Mi, pods=1")
    # Once the first two exit, the queue has room for the other two.
    await w.finish(*first)
    await wait_for(lambda: w.bound(*left), what="the other two bound")


async def _stuck_gang(w: World, app: str) -> list[str]:
    """06 and 07: one placeholder allocated (the timer runs), two held by constraints."""
    def blocking() -> dict[str, str]:
        return {g["name"]: g["blockingReason"]["reason"]
                for g in w.app(app).get("taskGroups") or []}

    w.apply(w.objects("Application"))
    status = await w.app_is(app, state="Accepted", reason="Accepted", reserved="1/3", running=0)
    assert status["placeholderTimerStart"]
    await wait_for(lambda: blocking() == {"driver": "None", "worker": "Constraints"},
                   what=f"{app}'s workers blocked by Constraints")
    assert_hardened_placeholders(w, app)
    waiting = [_meta(p)["name"] for p in w.placeholders(app) if not p["spec"].get("nodeName")]
    assert len(waiting) == 2
    await w.pending_with("Constraints", *waiting)
    assert w.waiting_reason(waiting[0]).endswith(
        "node(s) didn't match Pod's node affinity/selector.")
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("WaitingForGang", *pods,
                         message="waiting until every task group of the gang has its minMember")
    assert w.unbound(*pods) and w.binds() == 1
    assert not w.events(app, "GangReserved")
    timeout = w.api.get("applications", NS, app)["spec"]["schedulingPolicy"][
        "placeholderTimeoutSeconds"]
    await w.advance(timeout - 1)
    assert w.app(app)["state"] == "Accepted" and not w.events(app, "PlaceholderTimeout")
    assert len(w.placeholders(app)) == 3
    await w.advance(2)
    return pods


async def hard_timeout(w: World) -> None:
    pods = await _stuck_gang(w, "hard-timeout")
    status = await w.state("hard-timeout", "Killed")
    assert status["reason"] == "PlaceholderTimeout"
    assert "Hard style" in status["message"]
    event = await w.event("hard-timeout", "PlaceholderTimeout", "Application")
    assert event["type"] == "Warning" and "Accepted -> Killed" in event["note"]
    await wait_for(lambda: not w.placeholders("hard-timeout"), what="placeholders deleted")
    await w.pending_with("ApplicationKilled", *pods)
    assert (await w.event(pods[0], "ApplicationKilled", "Pod"))["type"] == "Warning"
    # Untouched: still there, Pending, unbound; nothing was failed or deleted.
    for name in pods:
        pod = w.pod(name)
        assert pod["status"]["phase"] == "Pending" and not pod["spec"].get("nodeName")
        assert _meta(pod).get("deletionTimestamp") is None
    assert w.binds() == 1
    status = w.app("hard-timeout")
    assert status["reserved"] == "0/3"
    assert sum(g["placeholders"]["released"] for g in status["taskGroups"]) == 3


async def soft_timeout(w: World) -> None:
    await _stuck_gang(w, "soft-timeout")
    event = await w.event("soft-timeout", "PlaceholderTimeout", "Application")
    assert "Accepted -> Resuming" in event["note"] and "Soft style" in event["note"]
    await wait_for(lambda: not w.placeholders("soft-timeout"), what="placeholders deleted")
    # The driver fits: scheduled as an ordinary pod, with no placeholder to take.
    await wait_for(lambda: w.bound("soft-timeout-driver"), what="driver bound")
    assert not w.events("soft-timeout-driver", "PlaceholderReplaced")
    await w.event("soft-timeout", "Running", "Application")
    status = dict(await wait_for(lambda: w.app("soft-timeout").get("running") == 1
                                 and w.app("soft-timeout"), what="soft-timeout running 1"))
    assert (status["state"], status["reserved"]) == ("Running", "0/3")
    workers = w.real_pod_names("soft-timeout-worker-")
    await w.pending_with("Constraints", *workers)
    assert w.waiting_reason(workers[0]).endswith(
        "node(s) didn't match Pod's node affinity/selector.")
    # The driver exits; with workers still pending the application keeps Running.
    await w.finish("soft-timeout-driver")
    await wait_for(lambda: w.app("soft-timeout").get("running") == 0, what="driver done")
    await w.settle()
    assert w.app("soft-timeout")["state"] == "Running" and w.unbound(*workers)
    # A node gets the label the workers need: they start too, as ordinary pods.
    w.api.patch("nodes", None, "node-1", {"metadata": {"labels": {"example.com/pool": "reserved"}}})
    await wait_for(lambda: w.bound(*workers), what="workers bound")
    assert {w.pod(n)["spec"]["nodeName"] for n in workers} == {"node-1"}
    assert w.binds() == 1 + 3
    await completed(w, "soft-timeout", workers)


async def strict_podgroup(w: World) -> None:
    w.apply(w.objects("PodGroup"))
    first, second, third = w.real_pod_names()
    w.apply_pods(first, second)
    await w.pending_with("WaitingForGang", first, second,
                         message="gang members placed: default/strict-gang 2/3")
    await w.group_is("strict-gang", phase="Inqueue", members=2, scheduled=0, running=0, assumed=0)
    assert w.unbound(first, second) and w.binds() == 0
    w.apply_pods(third)
    await wait_for(lambda: w.bound(first, second, third), what="all three bound")
    assert w.binds() == 3
    event = await w.event("strict-gang", "GangScheduled", "PodGroup")
    assert "binding 3 members" in event["note"]
    status = await w.phase("strict-gang", "Running")
    assert (status["scheduled"], status["running"]) == (3, 3)
    await w.finish(first, second, third)
    status = await w.phase("strict-gang", "Finished")
    assert (status["scheduled"], status["running"], status["succeeded"]) == (3, 0, 3)


async def strict_podgroup_pods_first(w: World) -> None:
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("PodGroupNotFound", *pods)
    assert w.unbound(*pods)
    w.apply(w.objects("PodGroup"))
    await wait_for(lambda: w.bound(*pods), what="all three bound")
    await w.event("strict-gang", "GangScheduled", "PodGroup")
    await w.phase("strict-gang", "Running")


async def strict_podgroup_rolls_back(w: World) -> None:
    """Strict: room for two members only; nothing is bound or held until all three fit."""
    w.apply(w.objects("PodGroup", "Pod"))
    pods = w.real_pod_names()
    await w.pending_with("WaitingForGang", *pods,
                         message="gang members placed: default/strict-gang 2/3")
    await w.group_is("strict-gang", phase="Inqueue", members=3, assumed=0, scheduled=0)
    # The nodes, all together, cannot hold three members: said at once, not failed.
    await wait_for(lambda: w.group("strict-gang")["blockingReason"]["reason"]
                   == "Unsatisfiable", what="strict-gang blocked as Unsatisfiable")
    assert "cannot run until nodes are added" in w.group("strict-gang")["blockingReason"][
        "message"]
    assert w.binds() == 0
    add_node(w.api, node("node-2", cpu="2", memory="4Gi"))  # as an autoscaler would
    await wait_for(lambda: w.bound(*pods), what="all three bound")
    assert w.binds() == 3
    await w.phase("strict-gang", "Running")


async def strict_podgroup_times_out(w: World) -> None:
    """Never complete within scheduleTimeoutSeconds: TimedOut, and its pods stay unbound."""
    w.apply(w.objects("PodGroup", "Pod"))
    pods = w.real_pod_names()
    await w.pending_with("WaitingForGang", *pods,
                         message="gang members placed: default/strict-gang 2/3")
    status = await w.group_is("strict-gang", phase="Inqueue", members=3, assumed=0)
    assert status["scheduleStartTime"]  # counted from the first (rolled back) placement
    timeout = w.doc("PodGroup", "strict-gang")["spec"]["scheduleTimeoutSeconds"]
    await w.advance(timeout - 1)
    assert w.group("strict-gang")["phase"] == "Inqueue"
    await w.advance(2)
    status = await w.group_is("strict-gang", phase="TimedOut", reason="ScheduleTimeout")
    event = await w.event("strict-gang", "ScheduleTimeout", "PodGroup")
    assert event["type"] == "Warning"
    # Strict: the attempts were rolled back, so nothing is placed when it expires.
    assert event["note"].startswith("0/3 members placed when the 300s schedule timeout expired")
    await w.pending_with("GangTimedOut", *pods)
    add_node(w.api, node("node-2", cpu="2", memory="4Gi"))  # room now, but too late
    await w.settle()
    assert w.unbound(*pods) and w.binds() == 0


async def ganggroup(w: World) -> None:
    w.apply(w.objects("PodGroup"))
    w.apply_pods("gg-ps-0", "gg-worker-0")
    await w.pending_with("WaitingForGang", "gg-ps-0", "gg-worker-0",
                         message="gang members placed: default/gg-ps 1/1, default/gg-workers 1/2")
    assert w.unbound("gg-ps-0", "gg-worker-0") and w.binds() == 0
    await w.group_is("gg-ps", phase="Inqueue", members=1, scheduled=0)
    await w.group_is("gg-workers", phase="Inqueue", members=1, scheduled=0)
    w.apply_pods("gg-worker-1")
    pods = ["gg-ps-0", "gg-worker-0", "gg-worker-1"]
    await wait_for(lambda: w.bound(*pods), what="the whole GangGroup bound")
    assert w.binds() == 3
    for group in ("gg-ps", "gg-workers"):
        event = await w.event(group, "GangScheduled", "PodGroup")
        assert "all 2 PodGroups" in event["note"]
    assert (await w.phase("gg-ps", "Running"))["scheduled"] == 1
    assert (await w.phase("gg-workers", "Running"))["scheduled"] == 2
    await w.finish(*pods)
    await w.phase("gg-ps", "Finished")
    await w.phase("gg-workers", "Finished")


async def ganggroup_member_missing(w: World) -> None:
    w.apply([w.doc("PodGroup", "gg-ps")])
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("WaitingForGangGroup", "gg-ps-0",
                         message="GangGroup member PodGroup default/gg-workers does not exist yet")
    await w.pending_with("PodGroupNotFound", "gg-worker-0", "gg-worker-1")
    assert w.unbound(*pods)
    w.apply([w.doc("PodGroup", "gg-workers")])
    await wait_for(lambda: w.bound(*pods), what="the whole GangGroup bound")
    await w.phase("gg-ps", "Running")
    await w.phase("gg-workers", "Running")


async def anti_affinity_gang(w: World) -> None:
    w.apply(w.objects("Application"))
    await reserved(w, "mpi")
    held = [p["spec"]["nodeName"] for p in w.placeholders("mpi")]
    assert len(held) == len(set(held)) == 3  # one placeholder per node
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await swapped(w, "mpi", pods)
    assert len({w.pod(name)["spec"]["nodeName"] for name in pods}) == 3
    await completed(w, "mpi", pods)


async def anti_affinity_gang_too_few_nodes(w: World) -> None:
    """Two nodes for three one-per-node members: the third placeholder waits, saying why
    in kube-scheduler's words."""
    w.apply(w.objects("Application"))
    await wait_for(lambda: len([p for p in w.placeholders("mpi")
                                if p["spec"].get("nodeName")]) == 2, what="two placeholders")
    waiting = [p["metadata"]["name"] for p in w.placeholders("mpi")
               if not p["spec"].get("nodeName")]
    await w.pending_with("Constraints", *waiting)
    assert w.waiting_reason(waiting[0]).endswith(
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.")


async def spread_gang(w: World) -> None:
    w.apply(w.objects("Application"))
    await reserved(w, "trainers")
    held = sorted(p["spec"]["nodeName"] for p in w.placeholders("trainers"))
    assert held == ["node-0", "node-0", "node-1", "node-1"]
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await swapped(w, "trainers", pods)
    placed = sorted(w.pod(name)["spec"]["nodeName"] for name in pods)
    assert placed == ["node-0", "node-0", "node-1", "node-1"]
    await completed(w, "trainers", pods)


# --- the table ----------------------------------------------------------------------------

Scenario = Callable[[World], Awaitable[None]]
ROOMY = (2, "2")
"""Two nodes of 2 CPUs: every example fits, so only the gang rules decide."""
TIGHT = (1, "250m")
"""One node with room for two 100m members only."""
THREE = (3, "2")
"""Three nodes: one per member of a three-member gang."""


async def local_volume_job(w: World) -> None:
    w.apply(w.objects("StorageClass", "PersistentVolume", "PersistentVolumeClaim"))
    await w.settle()
    claims = ["scratch-worker-0", "scratch-worker-1"]
    assert all(w.api.get("persistentvolumeclaims", NS, c)["status"]["phase"] == "Pending"
               for c in claims)  # WaitForFirstConsumer: nothing binds them before a pod
    w.apply(w.objects("PodGroup", "Pod"))
    pods = w.real_pod_names()
    await wait_for(lambda: w.bound(*pods), what="both workers bound")
    for index, pod in enumerate(pods):
        assert w.pod(pod)["spec"]["nodeName"] == f"node-{index}"
        claim = w.api.get("persistentvolumeclaims", NS, claims[index])
        assert claim["status"]["phase"] == "Bound"
        assert claim["spec"]["volumeName"] == f"local-disk-node-{index}"
    assert w.binds() == 2
    await w.phase("local-volume-job", "Running")


async def local_volume_job_claim_missing(w: World) -> None:
    w.apply(w.objects("StorageClass", "PersistentVolume"))
    w.apply([w.doc("PersistentVolumeClaim", "scratch-worker-1")])
    w.apply(w.objects("PodGroup", "Pod"))
    missing = 'persistentvolumeclaim "scratch-worker-0" not found'
    blocking = await wait_for(
        lambda: missing in str(w.group("local-volume-job").get("blockingReason"))
        and w.group("local-volume-job")["blockingReason"],
        what="the PodGroup's blocking reason names the missing claim")
    assert blocking["message"] == f"0/2 nodes are available: {missing}."
    await w.pending_with("WaitingForGang", "local-volume-job-0", "local-volume-job-1")
    assert w.unbound(*w.real_pod_names()) and w.binds() == 0
    w.apply([w.doc("PersistentVolumeClaim", "scratch-worker-0")])
    await wait_for(lambda: w.bound(*w.real_pod_names()), what="both bound once it exists")


WORKLOAD_API = "scheduling.k8s.io/v1alpha2"


def native_condition(w: World, name: str) -> Obj:
    """The PodGroupScheduled condition of a Kubernetes PodGroup ({} while absent)."""
    return condition(w.api.try_get("podgroups", NS, name, api_version=WORKLOAD_API),
                     "PodGroupScheduled")


async def workload_gang(w: World) -> None:
    w.apply(w.objects("PodGroup"))
    *first, last = w.real_pod_names()
    w.apply_pods(*first)
    await w.pending_with("WaitingForGang", *first, message="waiting for minCount pods from a "
                         "gang to appear in scheduling queue (minCount 4)")
    await w.settle()
    assert w.unbound(*first) and w.binds() == 0
    assert native_condition(w, "training") == {}  # not attempted before the quorum
    w.apply_pods(last)
    await wait_for(lambda: w.bound(*first, last), what="all four bound")
    assert w.binds() == 4
    found = await wait_for(lambda: native_condition(w, "training"), what="condition written")
    assert (found["status"], found["reason"], found["message"]) == (
        "True", "Scheduled", "4 pods of the group scheduled")


async def workload_gang_pods_first(w: World) -> None:
    pods = w.real_pod_names()
    w.apply(w.objects("Pod"))
    await w.pending_with("PodGroupNotFound", *pods, message="waiting for pod's pod group "
                         '"training" to appear in scheduling queue')
    await w.event(pods[0], "PodGroupNotFound", "Pod")
    assert w.unbound(*pods)
    w.apply(w.objects("PodGroup"))
    await wait_for(lambda: w.bound(*pods), what="all four bound once it exists")


RACKS = (4, "4")
"""Four nodes of 4 CPUs, labelled into two racks by the scenario."""
RACK = "topology.gangsched.io/rack"


def _label_racks(w: World) -> None:
    for index in range(4):
        w.api.patch("nodes", None, f"node-{index}",
                    {"metadata": {"labels": {RACK: "r1" if index < 2 else "r2"}}})


async def rack_gang(w: World) -> None:
    _label_racks(w)
    fillers = [_meta(d)["name"] for d in w.objects("Pod") if _meta(d)["name"].startswith("filler")]
    w.apply_pods(*fillers)
    await wait_for(lambda: w.bound(*fillers), what="the fillers bound in r1")
    assert {w.pod(f)["spec"]["nodeName"] for f in fillers} == {"node-0", "node-1"}
    w.apply(w.objects("PodGroup"))
    members = w.real_pod_names("rack-gang")
    w.apply_pods(*members)
    await wait_for(lambda: w.bound(*members), what="the four members bound")
    await w.phase("rack-gang", "Running")
    group = w.api.get("podgroups", NS, "rack-gang")
    assert group["spec"]["topology"] == {"required": RACK}


async def rack_gang_in_one_rack(w: World) -> None:
    """The issue's MostAllocated case: r1 is the fullest, but only r2 holds all four."""
    await rack_gang(w)
    members = w.real_pod_names("rack-gang")
    assert {w.pod(m)["spec"]["nodeName"] for m in members} == {"node-2", "node-3"}


async def gpu_gang(w: World) -> None:
    """Four one-GPU members on the four GPUs of node-0 and node-1; the pair waits, holding
    nothing, until the first gang is gone."""
    w.apply(w.objects("DeviceClass", "ResourceSlice", "ResourceClaimTemplate"))
    w.apply([d for d in w.docs if d["kind"] in ("PodGroup", "Pod")
             and _meta(d)["name"].startswith("gpu-gang")])
    members = w.real_pod_names("gpu-gang")
    await wait_for(lambda: w.bound(*members), what="the four members bound", timeout=30)
    await w.phase("gpu-gang", "Running")
    assert {w.pod(m)["spec"]["nodeName"] for m in members} == {"node-0", "node-1"}
    devices = []
    for member in members:
        (entry,) = w.pod(member)["status"]["resourceClaimStatuses"]
        claim = w.api.get("resourceclaims", NS, entry["resourceClaimName"])
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [member]
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == w.pod(member)["spec"]["nodeName"]
        devices.append((result["pool"], result["device"]))
    assert len(set(devices)) == 4
    w.apply([d for d in w.docs if d["kind"] in ("PodGroup", "Pod")
             and _meta(d)["name"].startswith("gpu-pair")])
    pair = w.real_pod_names("gpu-pair")
    await wait_for(lambda: w.waiting_reason(pair[0]), what="the pair waiting")
    await w.op.settle(cycles=4)
    assert w.unbound(*pair)
    for member in members:
        w.api.delete("pods", NS, member)
    await wait_for(lambda: w.bound(*pair), what="the pair bound once the GPUs are free",
                   timeout=30)


async def gpu_placeholders(w: World) -> None:
    """The Application's two placeholders hold a GPU each (nothing written for them);
    the trainers take their places and get those very GPUs."""
    w.apply(w.objects("DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "Application"))
    await wait_for(lambda: len(w.placeholders("gpu-train")) == 2 and all(
        p["spec"].get("nodeName") for p in w.placeholders("gpu-train")),
        what="two placeholders bound", timeout=30)
    held = sorted(p["spec"]["nodeName"] for p in w.placeholders("gpu-train"))
    assert not w.api.list("resourceclaims", NS)
    w.apply([d for d in w.objects("Pod") if _meta(d)["name"].startswith("gpu-train")])
    trainers = w.real_pod_names("gpu-train")
    await wait_for(lambda: w.bound(*trainers), what="the trainers bound", timeout=30)
    assert sorted(w.pod(t)["spec"]["nodeName"] for t in trainers) == held
    devices = []
    for trainer in trainers:
        (entry,) = w.pod(trainer)["status"]["resourceClaimStatuses"]
        claim = w.api.get("resourceclaims", NS, entry["resourceClaimName"])
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["pool"] == w.pod(trainer)["spec"]["nodeName"]
        devices.append((result["pool"], result["device"]))
    assert len(set(devices)) == 2


def case(folder: str, scenario: Scenario, variant: str = "",
         nodes: tuple[int, str] = ROOMY) -> Any:
    return pytest.param(folder, scenario, nodes, id=f"{folder}-{variant}" if variant else folder)


CASES = [
    case("01-single-gang", single_gang),
    case("01-single-gang", single_gang_pods_first, "pods-first"),
    case("02-spark-pods-first", spark_pods_first),
    case("02-spark-pods-first", spark_executors_first, "executors-first"),
    case("03-ps-workers", ps_workers),
    case("04-queue-quota-hold", queue_quota_hold),
    case("05-gang-too-large", gang_too_large),
    case("06-hard-timeout", hard_timeout),
    case("07-soft-timeout", soft_timeout),
    case("08-strict-podgroup", strict_podgroup),
    case("08-strict-podgroup", strict_podgroup_pods_first, "pods-first"),
    case("08-strict-podgroup", strict_podgroup_rolls_back, "rollback", TIGHT),
    case("08-strict-podgroup", strict_podgroup_times_out, "timeout", TIGHT),
    case("09-ganggroup", ganggroup),
    case("09-ganggroup", ganggroup_member_missing, "member-missing"),
    case("10-anti-affinity-gang", anti_affinity_gang, nodes=THREE),
    case("10-anti-affinity-gang", anti_affinity_gang_too_few_nodes, "too-few-nodes"),
    case("11-spread-gang", spread_gang),
    case("12-local-volume-job", local_volume_job),
    case("12-local-volume-job", local_volume_job_claim_missing, "claim-missing"),
    case("13-workload-gang", workload_gang),
    case("13-workload-gang", workload_gang_pods_first, "pods-first"),
    case("14-rack-gang", rack_gang, nodes=RACKS),
    case("14-rack-gang", rack_gang_in_one_rack, "one-rack", nodes=RACKS),
    case("15-gpu-gang", gpu_gang, nodes=THREE),
    case("15-gpu-gang", gpu_placeholders, "placeholders", nodes=THREE),
]


def test_every_example_folder_has_a_case() -> None:
    folders = {p.name for p in EXAMPLES.iterdir() if p.is_dir() and p.name[:2].isdigit()}
    assert folders == {c.values[0] for c in CASES}
    for folder in folders:
        assert (EXAMPLES / folder / "README.md").is_file(), folder


@pytest.mark.parametrize(("folder", "scenario", "nodes"), CASES)
async def test_example(fake_api_factory: Any, tmp_path: pathlib.Path, folder: str,
                       scenario: Scenario, nodes: tuple[int, str]) -> None:
    count, cpu = nodes
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=count, cpu=cpu,
                                        memory="4Gi")
    api.serve_workload_api()  # Kubernetes 1.36 with GenericWorkload on, as example 13 needs
    api.serve_dra()  # and resource.k8s.io/v1, as example 15 needs
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        await scenario(World(api, op, manifests(folder)))
    finally:
        await op.kill()
    assert not api.internal_errors
    assert_bound_at_most_once(api)
