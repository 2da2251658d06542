"""Jobs written for other gang schedulers, run unchanged by the real operator.

One test per dialect takes the manifest from that scheduler's documentation (see
``tests/translate/dialect_manifests.py``) through the whole flow against the fake API
server, with the foreign PodGroup CRDs installed (``foreign_crds/``), the operator
answering to that scheduler's name. Each must be scheduled as a gang: nothing bound
before the minimum is there, then every member bound. Then: a pod whose dialects
disagree gets a precise Event, and invalid values give a precise Event and status
without affecting a good gang next to them.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from fakeapi import FakeApiServer
from gangsched.shell import foreign as foreign_groups
from shellkit import (
    FakeClock,
    OperatorUnderTest,
    bind_answers,
    condition,
    events,
    new_cluster,
    placeholders,
    status_of,
    wait_for,
)
from shellkit import pod as plain_pod
from translate.dialect_manifests import (
    COSCHEDULING_DEPLOYMENT,
    COSCHEDULING_PODGROUP,
    KOORDINATOR_GANG_A,
    KOORDINATOR_GANG_B,
    KUEUE_POD,
    VOLCANO_POD,
    VOLCANO_PODGROUP,
    YUNIKORN_HARD_JOB,
    load,
    pod,
    pods_of,
)

pytestmark = pytest.mark.asyncio

HERE = pathlib.Path(__file__).resolve().parent
SCHEDULERS = frozenset({"gangsched", "yunikorn", "koord-scheduler",
                        "scheduler-plugins-scheduler", "volcano"})
COSCHEDULING = "scheduling.x-k8s.io/v1alpha1"
VOLCANO = "scheduling.volcano.sh/v1beta1"
GANGSCHED = "gangsched.io/v1alpha1"


async def start(fake_api_factory: Any, tmp_path: pathlib.Path,
                names: frozenset[str] = SCHEDULERS,
                namespaces: tuple[str, ...] = ()) -> tuple[FakeApiServer, OperatorUnderTest]:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4",
                                        memory="16Gi")
    api.install_crds_from_dir(HERE / "foreign_crds")
    for namespace in namespaces:
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    operator = await OperatorUnderTest(api, kubeconfig, FakeClock(),
                                       scheduler_names=names).start()
    return api, operator


def create(api: FakeApiServer, objects: list[dict[str, Any]]) -> list[str]:
    """Create pods (no uid, as a controller would); their names."""
    names = []
    for obj in objects:
        obj["metadata"].pop("uid", None)
        obj.pop("status", None)
        names.append(api.create(obj)["metadata"]["name"])
    return names


def bound(api: FakeApiServer, names: list[str], namespace: str = "default") -> list[str]:
    found = []
    for name in names:
        obj = api.try_get("pods", namespace, name)
        if obj is not None and obj["spec"].get("nodeName"):
            found.append(name)
    return found


async def assert_none_bound(op: OperatorUnderTest, api: FakeApiServer, names: list[str],
                            namespace: str = "default") -> None:
    await op.settle(4)
    assert bound(api, names, namespace) == [], "bound before the gang was complete"


def owner_of(obj: dict[str, Any] | None) -> str:
    """The first owner of a gang made from pods: the pod it was made from (the other
    members become owners too, none of them its controller)."""
    assert obj is not None
    found = obj["metadata"]["ownerReferences"]
    assert all((o["kind"], o["controller"]) == ("Pod", False) for o in found)
    return str(found[0]["name"])


async def test_yunikorn_job(fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create({"apiVersion": GANGSCHED, "kind": "Queue", "metadata": {"name": "fifo"},
                    "spec": {"sortPolicy": "fifo"}})
        names = create(api, pods_of(YUNIKORN_HARD_JOB, 4, uids=False))
        await wait_for(lambda: len(bound(api, names)) == 4, what="gang bound")
        await wait_for(lambda: not placeholders(api), what="placeholders replaced")
        app = api.try_get("applications", "default", "gang-app-timeout")
        assert owner_of(app) == "gang-app-timeout-0"
        assert app is not None
        assert app["spec"]["queue"] == "fifo"
        assert app["spec"]["schedulingPolicy"] == {
            "style": "Hard", "placeholderTimeoutSeconds": 60, "waitingTimeoutSeconds": 30}
        # Every member existed: reserved in memory, bound directly, no placeholder made.
        order = [name for name, code in bind_answers(api) if code < 300]
        assert sorted(order) == sorted(names), order
        assert api.request_count("create", "pods") == 0  # the operator made no pod
        await wait_for(lambda: status_of(api, "applications", "default", "gang-app-timeout")
                       .get("state") == "Running", what="Running")
    finally:
        await op.kill()


async def test_koordinator_gang_group_across_namespaces(fake_api_factory: Any,
                                                        tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path, namespaces=("namespace-a", "namespace-b"))
    try:
        gang_a = create(api, pods_of(KOORDINATOR_GANG_A, 5, uids=False))
        gang_b = create(api, pods_of(KOORDINATOR_GANG_B, 4, uids=False))
        await wait_for(lambda: api.try_get("podgroups", "namespace-b", "gang-b"),
                       what="PodGroup gang-b made from its pods")
        # gang-a is complete, but its GangGroup waits for gang-b.
        await assert_none_bound(op, api, gang_a, "namespace-a")
        assert bound(api, gang_b, "namespace-b") == []
        last = create(api, pods_of(KOORDINATOR_GANG_B, 5, uids=False)[4:])
        await wait_for(lambda: len(bound(api, gang_a, "namespace-a")) == 5
                       and len(bound(api, gang_b + last, "namespace-b")) == 5,
                       what="both gangs bound")
        group = api.try_get("podgroups", "namespace-a", "gang-a", api_version=GANGSCHED)
        assert owner_of(group) == "gang-a-member-0"
        assert group is not None and group["spec"] == {
            "minMember": 5, "scheduleTimeoutSeconds": 3600, "totalNumber": 5, "mode": "Strict",
            "gangGroup": ["namespace-a/gang-a", "namespace-b/gang-b"], "queue": "default",
            "onTimeout": "Requeue", "waitForMinMember": True}
        await wait_for(lambda: status_of(api, "podgroups", "namespace-b", "gang-b")
                       .get("phase") in ("Scheduled", "Running"), what="gang-b Scheduled")
    finally:
        await op.kill()


async def test_coscheduling_podgroup(fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        podgroup = load(COSCHEDULING_PODGROUP)
        podgroup["metadata"]["namespace"] = "default"
        api.create(podgroup)
        replicas = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 2, uids=False))  # replicas: 2
        await assert_none_bound(op, api, replicas)
        waiting = await wait_for(lambda: condition(api.try_get("pods", "default", replicas[0]),
                                                   "PodScheduled"), what="condition")
        assert waiting["status"] == "False"
        scaled = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 3, uids=False)[2:])  # scaled to 3
        await wait_for(lambda: len(bound(api, replicas + scaled)) == 3, what="gang bound")

        def written() -> dict[str, Any]:
            obj = api.try_get("podgroups", "default", "pg1", api_version=COSCHEDULING)
            return dict((obj or {}).get("status") or {})

        await wait_for(lambda: written().get("phase") == "Running"
                       and written().get("running") == 3, what="coscheduling status written")
        status = written()
        assert set(status) == {"phase", "running", "succeeded", "failed", "scheduleStartTime"}
        assert api.try_get("podgroups", "default", "pg1", api_version=GANGSCHED) is None
    finally:
        await op.kill()


async def test_a_coscheduling_group_waits_for_its_quorum_before_its_timer(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """scheduler-plugins' pg1 (minMember 3, scheduleTimeoutSeconds 10): two pods at once,
    the third 25 s later. coscheduling's PreFilter turns the group away until its third
    pod exists, so its Permit wait starts only then: the late pod binds with the others,
    and the group is never timed out."""
    api, op = await start(fake_api_factory, tmp_path)
    assert isinstance(op.clock, FakeClock)
    try:
        podgroup = load(COSCHEDULING_PODGROUP)
        podgroup["metadata"]["namespace"] = "default"
        api.create(podgroup)
        replicas = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 2, uids=False))
        for _ in range(5):  # 25 s in steps, a cycle at each
            op.clock.advance(5)
            await op.settle(2)
        assert bound(api, replicas) == []
        await wait_for(lambda: "has 2 of its minMember 3 pods" in condition(
            api.try_get("pods", "default", replicas[0]), "PodScheduled").get("message", ""),
            what="the pods say they wait for the third")
        assert events(api, reason="ScheduleTimeout") == []
        late = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 3, uids=False)[2:])
        await wait_for(lambda: len(bound(api, replicas + late)) == 3, what="gang bound")
        obj = api.get("podgroups", "default", "pg1", api_version=COSCHEDULING)
        assert (obj.get("status") or {}).get("phase") != "TimedOut"
    finally:
        await op.kill()


async def test_a_foreign_crd_installed_later_is_looked_for_again(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Missing at start-up (404): not listed again at once, but every ``RECHECK``
    seconds; once installed, its PodGroups are watched with no restart."""
    monkeypatch.setattr(foreign_groups, "RECHECK", 0.5)
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=3, cpu="4",
                                        memory="16Gi")
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(),
                                 scheduler_names=SCHEDULERS).start()
    path = "/apis/scheduling.x-k8s.io/v1alpha1/podgroups"

    def lists() -> int:
        return sum(1 for e in api.request_log
                   if e.path_qs.startswith(path + "?") and "watch=true" not in e.path_qs)
    try:
        await op.settle(2)
        assert lists() == 1, "listed again right after the start-up list's 404"
        await wait_for(lambda: lists() >= 2, what="looked for again")
        api.install_crds_from_dir(HERE / "foreign_crds")
        podgroup = load(COSCHEDULING_PODGROUP)
        podgroup["metadata"]["namespace"] = "default"
        api.create(podgroup)
        replicas = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 3, uids=False))
        await wait_for(lambda: len(bound(api, replicas)) == 3, what="gang bound")
    finally:
        await op.kill()


async def test_coscheduling_podgroup_status_is_written_only_with_a_pod_of_ours(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """A coscheduling PodGroup whose pods the coscheduling plugin schedules is not ours to
    write; once one of its pods names gangsched, its status is written, in coscheduling's
    phases (``PreScheduling``, never Volcano's ``Inqueue``)."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        podgroup = load(COSCHEDULING_PODGROUP)
        podgroup["metadata"]["namespace"] = "default"
        api.create(podgroup)
        theirs = pods_of(COSCHEDULING_DEPLOYMENT, 2, uids=False)
        for obj in theirs:
            obj["spec"]["schedulerName"] = "another-scheduler"
        create(api, theirs)
        await op.settle(4)
        assert api.request_count("patch", "podgroups", "status") == 0
        ours = create(api, pods_of(COSCHEDULING_DEPLOYMENT, 3, uids=False)[2:])
        await wait_for(lambda: api.request_count("patch", "podgroups", "status") >= 1,
                       what="status written")
        phases = set()
        await op.settle(2)
        obj = api.get("podgroups", "default", "pg1", api_version=COSCHEDULING)
        phases.add((obj.get("status") or {}).get("phase"))
        assert phases <= {"Pending", "PreScheduling", "Scheduling", "Scheduled", "Running",
                          "Unknown", "Finished", "Failed"}, phases
        assert ours
    finally:
        await op.kill()


async def test_volcano_podgroup_is_read_only(fake_api_factory: Any,
                                             tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(load(VOLCANO_PODGROUP))
        members = create(api, pods_of(VOLCANO_POD, 2, uids=False))
        await assert_none_bound(op, api, members)
        members += create(api, pods_of(VOLCANO_POD, 3, uids=False)[2:])
        await wait_for(lambda: len(bound(api, members)) == 3, what="gang bound")
        await op.settle(3)
        obj = api.try_get("podgroups", "default", "test", api_version=VOLCANO)
        assert obj is not None and not obj.get("status")
        patches = [e for e in api.request_log if e.method == "PATCH"
                   and "scheduling.volcano.sh" in e.path_qs]
        assert patches == []
    finally:
        await op.kill()


async def test_a_volcano_group_whose_minimum_exceeds_the_cluster_evicts_and_binds_nothing(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """Volcano keeps a PodGroup whose ``minResources`` exceed the cluster Pending: its
    member (1 cpu, priority above the 12 low pods filling the 12 cpu) would fit after one
    eviction, but the gang's minimum (30 cpu) never fits. No eviction, no bind, and the
    member says why, with the numbers."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": "high"}, "value": 1000})
        low = [api.create(plain_pod(f"low-{i}"))["metadata"]["name"] for i in range(12)]
        await wait_for(lambda: len(bound(api, low)) == 12, what="the low pods run")
        group = load(VOLCANO_PODGROUP)
        group["spec"]["minMember"] = 1
        group["spec"]["minResources"] = {"cpu": "30"}
        api.create(group)
        member = pods_of(VOLCANO_POD, 1, uids=False)[0]
        member["spec"]["priorityClassName"] = "high"
        (name,) = create(api, [member])
        await wait_for(lambda: "cpu=30" in condition(api.try_get("pods", "default", name),
                                                     "PodScheduled").get("message", ""),
                       what="the member says why")
        await op.settle(3)
        assert api.request_count("create", "pods", "eviction") == 0
        assert bound(api, [name]) == [] and len(bound(api, low)) == 12
        said = condition(api.get("pods", "default", name), "PodScheduled")
        assert said["reason"] == "Unschedulable"
        assert said["message"].startswith("Unsatisfiable: PodGroup default/volcano:test "
                                          "needs cpu=30 in all"), said
        assert "cpu=12" in said["message"]
    finally:
        await op.kill()


async def test_kueue_plain_pod_group(fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    # Kueue's pods name no scheduler: gangsched answers to default-scheduler here.
    api, op = await start(fake_api_factory, tmp_path,
                          names=frozenset({"gangsched", "default-scheduler"}))
    try:
        api.create({"apiVersion": GANGSCHED, "kind": "Queue",
                    "metadata": {"name": "user-queue"}, "spec": {}})
        first = create(api, pods_of(KUEUE_POD, 1, uids=False))
        await wait_for(lambda: api.try_get("podgroups", "default", "sample-group",
                                           api_version=GANGSCHED), what="PodGroup made")
        await assert_none_bound(op, api, first)
        second = create(api, pods_of(KUEUE_POD, 2, uids=False)[1:])
        await wait_for(lambda: len(bound(api, first + second)) == 2, what="group bound")
        group = api.try_get("podgroups", "default", "sample-group", api_version=GANGSCHED)
        assert owner_of(group) == first[0]
        assert group is not None and group["spec"]["queue"] == "user-queue"
        assert group["spec"]["minMember"] == group["spec"]["totalNumber"] == 2
    finally:
        await op.kill()


async def test_dialects_that_disagree_get_a_precise_event(fake_api_factory: Any,
                                                          tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        obj = pod(KUEUE_POD, name="both", labels={"kueue.x-k8s.io/queue-name": None},
                  annotations={"gang.scheduling.koordinator.sh/name": "koord-gang",
                               "gang.scheduling.koordinator.sh/min-available": "1"})
        obj["spec"]["schedulerName"] = "koord-scheduler"
        create(api, [obj])
        found = await wait_for(lambda: events(api, reason="GangDialectConflict",
                                              regarding="both"), what="conflict event")
        assert found[0]["type"] == "Warning"
        assert found[0]["note"] == (
            'the pod names two gangs: PodGroup "koord-gang" (koordinator: '
            "metadata.annotations[gang.scheduling.koordinator.sh/name]) and PodGroup "
            '"sample-group" (kueue: metadata.labels[kueue.x-k8s.io/pod-group-name]); it joins '
            "the koordinator one (precedence native > workload > yunikorn > koordinator > "
            "coscheduling > volcano > kueue)")
        # The precedence decided: the Koordinator gang of one is made and bound.
        await wait_for(lambda: bound(api, ["both"]), what="bound in the koordinator gang")
        assert api.try_get("podgroups", "default", "koord-gang", api_version=GANGSCHED)
        assert api.try_get("podgroups", "default", "sample-group", api_version=GANGSCHED) is None
        await op.settle(2)
        assert len(events(api, reason="GangDialectConflict", regarding="both")) == 1
    finally:
        await op.kill()


BAD_PODS = [
    # (pod name, manifest, changes, the Event's reason, a fragment of its note and condition)
    ("yk-json", YUNIKORN_HARD_JOB,
     {"labels": {"applicationId": "yk-json"},
      "annotations": {"yunikorn.apache.org/task-groups": '[{"name": "sched-style",'}},
     "InvalidTaskGroups",
     "application default/yk-json cannot be created from this pod: metadata.annotations"
     "[yunikorn.apache.org/task-groups]: invalid JSON at line 1 column 25: Expecting property "
     "name enclosed in double quotes"),
    ("yk-negative", YUNIKORN_HARD_JOB,
     {"labels": {"applicationId": "yk-negative"},
      "annotations": {"yunikorn.apache.org/task-groups":
                      '[{"name": "sched-style", "minMember": -4}]'}},
     "InvalidTaskGroups",
     "metadata.annotations[yunikorn.apache.org/task-groups][0].minMember: must be at least 1, "
     "got -4"),
    ("koord-duration", KOORDINATOR_GANG_A,
     {"namespace": "default", "annotations": {
         "gang.scheduling.koordinator.sh/name": "koord-duration",
         "gang.scheduling.koordinator.sh/groups": None,
         "gang.scheduling.koordinator.sh/waiting-time": "10x"}},
     "InvalidPodGroup",
     'pod group default/koord-duration cannot be created from this pod: metadata.annotations'
     '[gang.scheduling.koordinator.sh/waiting-time]: invalid duration "10x": unknown unit "x"'),
    ("koord-mode", KOORDINATOR_GANG_A,
     {"namespace": "default", "annotations": {
         "gang.scheduling.koordinator.sh/name": "koord-mode",
         "gang.scheduling.koordinator.sh/groups": None,
         "gang.scheduling.koordinator.sh/mode": "Sloppy"}},
     "InvalidPodGroup",
     'metadata.annotations[gang.scheduling.koordinator.sh/mode]: unknown mode "Sloppy" '
     "(accepted: Strict, NonStrict)"),
    ("koord-negative", KOORDINATOR_GANG_A,
     {"namespace": "default", "annotations": {
         "gang.scheduling.koordinator.sh/name": "koord-negative",
         "gang.scheduling.koordinator.sh/groups": None,
         "gang.scheduling.koordinator.sh/total-number": None,
         "gang.scheduling.koordinator.sh/min-available": "-5"}},
     "InvalidPodGroup",
     "metadata.annotations[gang.scheduling.koordinator.sh/min-available]: must be at least 1, "
     "got -5"),
    ("kueue-negative", KUEUE_POD,
     {"labels": {"kueue.x-k8s.io/pod-group-name": "kueue-negative",
                 "kueue.x-k8s.io/queue-name": None},
      "annotations": {"kueue.x-k8s.io/pod-group-total-count": "-2"}},
     "InvalidPodGroup",
     "metadata.annotations[kueue.x-k8s.io/pod-group-total-count]: must be at least 1, got -2"),
]


async def test_invalid_values_are_precise_and_harm_no_good_gang(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path, names=SCHEDULERS | {"default-scheduler"})
    try:
        api.create({"apiVersion": GANGSCHED, "kind": "Queue", "metadata": {"name": "fifo"},
                    "spec": {"sortPolicy": "fifo"}})
        for name, manifest, changes, _, _ in BAD_PODS:
            obj = pod(manifest, name=name, **changes)
            obj["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m"}}
            create(api, [obj])
        # Foreign PodGroups with a negative minMember (their CRDs have no minimum).
        bad_cosched = load(COSCHEDULING_PODGROUP)
        bad_cosched["metadata"].update(name="pg-negative", namespace="default")
        bad_cosched["spec"]["minMember"] = -1
        api.create(bad_cosched)
        bad_volcano = load(VOLCANO_PODGROUP)
        bad_volcano["metadata"]["name"] = "vc-negative"
        bad_volcano["spec"]["minMember"] = -3
        api.create(bad_volcano)
        create(api, [pod(COSCHEDULING_DEPLOYMENT, name="cosched-member",
                         labels={"scheduling.x-k8s.io/pod-group": "pg-negative"}),
                     pod(VOLCANO_POD, name="volcano-member",
                         annotations={"scheduling.k8s.io/group-name": "vc-negative"})])
        # A good gang next to them: Kueue's example group.
        good = create(api, pods_of(KUEUE_POD, 2, uids=False))
        api.create({"apiVersion": GANGSCHED, "kind": "Queue",
                    "metadata": {"name": "user-queue"}, "spec": {}})
        await wait_for(lambda: len(bound(api, good)) == 2, what="the good gang bound")

        for name, _, _, reason, fragment in BAD_PODS:
            found = await wait_for(lambda name=name, reason=reason: events(
                api, reason=reason, regarding=name), what=f"{reason} event on {name}")
            assert fragment in found[0]["note"], (name, found[0]["note"])
            state = await wait_for(lambda name=name, fragment=fragment: (lambda c: c if fragment
                                   in c.get("message", "") else None)(condition(
                                       api.try_get("pods", "default", name), "PodScheduled")),
                                   what=f"condition of {name}")
            assert state["status"] == "False", name
            assert bound(api, [name]) == [], name

        for group, member, api_version in (("pg-negative", "cosched-member", COSCHEDULING),
                                           ("vc-negative", "volcano-member", VOLCANO)):
            found = await wait_for(lambda group=group: events(api, reason="InvalidSpec",
                                                              regarding=group),
                                   what=f"InvalidSpec on {group}")
            assert found[0]["regarding"]["apiVersion"] == api_version
            assert "spec.minMember: must be at least 1" in found[0]["note"]
            state = await wait_for(lambda member=member: condition(
                api.try_get("pods", "default", member), "PodScheduled"), what=member)
            assert state["message"].startswith("InvalidPodGroup: spec.minMember: must be at "
                                               "least 1"), state
        await wait_for(lambda: (api.try_get("podgroups", "default", "pg-negative",
                                            api_version=COSCHEDULING) or {})
                       .get("status", {}).get("phase") == "Failed",
                       what="coscheduling status Failed")
        assert op.runtime is not None and op.task is not None and not op.task.done()
    finally:
        await op.kill()
