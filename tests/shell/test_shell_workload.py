"""Kubernetes-native gangs (the Workload API) run by the real operator against the fake API
server, on the cluster of the real-cluster comparison: 4 nodes of 4 cpu, the
``scheduling.k8s.io/v1alpha2`` API served as on Kubernetes 1.36 with ``GenericWorkload``
and ``GangScheduling`` on.

Each case is one row of that comparison, as kube-scheduler answered it: a gang that fits
is bound whole; a gang of 6 × 3 cpu where only 4 fit binds nothing and says why; a gang of
``minCount`` 4 with 3 pods binds nothing until the 4th pod comes, then all 4. Then: a pod
whose PodGroup does not exist yet waits and says so; basic pods are scheduled one by one;
a Job created with the Job controller's Workload integration runs as one gang; an invalid
PodGroup gets a precise Event and condition and harms no other gang; on a cluster
without the API there are no errors and no polling storm, and the API is picked up once it
is turned on (a failing discovery is asked again soon); a PodGroup whose pods another
scheduler schedules is left to it; and a restart keeps a bound gang as it is.
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
    add_node,
    condition,
    events,
    new_cluster,
    node,
    wait_for,
)
from translate.workload_objects import BASIC, gang, job_objects, member, podgroup

pytestmark = pytest.mark.asyncio

V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
SCHEDULED = "PodGroupScheduled"


async def start(fake_api_factory: Any, tmp_path: pathlib.Path, *,
                served: bool = True) -> tuple[FakeApiServer, OperatorUnderTest]:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, cpu="4",
                                        memory="16Gi")
    if served:
        api.serve_workload_api()
    operator = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    return api, operator


def create(api: FakeApiServer, objects: list[dict[str, Any]]) -> list[str]:
    names = []
    for obj in objects:
        obj["metadata"].pop("uid", None)
        names.append(api.create(obj)["metadata"]["name"])
    return names


def members(group: str, count: int, cpu: str, first: int = 0) -> list[dict[str, Any]]:
    return [member(f"{group}-{i}", group, cpu=cpu) for i in range(first, first + count)]


def bound(api: FakeApiServer, names: list[str]) -> list[str]:
    found = []
    for name in names:
        obj = api.try_get("pods", "default", name)
        if obj is not None and obj["spec"].get("nodeName"):
            found.append(name)
    return found


def group_condition(api: FakeApiServer, name: str) -> dict[str, Any]:
    return condition(api.try_get("podgroups", "default", name, api_version=V1ALPHA2),
                     SCHEDULED)


def pod_says(api: FakeApiServer, name: str) -> str:
    return str(condition(api.try_get("pods", "default", name), "PodScheduled").get("message"))


async def test_a_gang_that_fits_is_bound_whole(fake_api_factory: Any,
                                               tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(podgroup("fits", policy=gang(4)))
        names = create(api, members("fits", 4, cpu="1500m"))
        await wait_for(lambda: len(bound(api, names)) == 4, what="gang bound")
        found = await wait_for(lambda: group_condition(api, "fits").get("status") == "True"
                               and group_condition(api, "fits"), what="condition written")
        assert (found["reason"], found["observedGeneration"]) == ("Scheduled", 1)
        assert api.request_count("patch", "podgroups", "status") >= 1
    finally:
        await op.kill()


async def test_a_gang_too_big_binds_nothing_and_says_why(fake_api_factory: Any,
                                                         tmp_path: pathlib.Path) -> None:
    """6 × 3 cpu on 4 nodes of 4 cpu: 4 members fit, the gang does not. kube-scheduler
    binds none of them; gangsched bound 4 when it ignored ``schedulingGroup``."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(podgroup("big", policy=gang(6)))
        names = create(api, members("big", 6, cpu="3"))
        found = await wait_for(lambda: group_condition(api, "big"), what="condition written")
        await op.settle(4)
        assert bound(api, names) == [], "a partial gang was bound"
        assert (found["status"], found["reason"]) == ("False", "Unschedulable")
        assert "needs 6 x cpu=3" in found["message"], found  # more than the 4 nodes have
        await wait_for(lambda: all(pod_says(api, name) != "None" for name in names),
                       what="every member says why")
        assert all("WaitingForGang" in pod_says(api, name) for name in names)
        # Room for two more 3-cpu pods: now the whole gang fits, and all 6 bind.
        add_node(api, node("node-4", cpu="4"))
        add_node(api, node("node-5", cpu="4"))
        await wait_for(lambda: len(bound(api, names)) == 6, what="the whole gang bound")
        await wait_for(lambda: group_condition(api, "big").get("status") == "True",
                       what="condition turned True")
    finally:
        await op.kill()


async def test_nothing_binds_before_the_quorum(fake_api_factory: Any,
                                               tmp_path: pathlib.Path) -> None:
    """minCount 4 with 3 pods created: kube-scheduler binds none until the 4th comes;
    gangsched bound 3 when it ignored ``schedulingGroup``."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(podgroup("quorum", policy=gang(4)))
        names = create(api, members("quorum", 3, cpu="1"))
        await wait_for(lambda: "minCount" in pod_says(api, names[0]), what="pods say why")
        await op.settle(4)
        assert bound(api, names) == [], "bound before the quorum"
        assert pod_says(api, names[0]) == (
            "WaitingForGang: waiting for minCount pods from a gang to appear in scheduling "
            "queue (minCount 4)")
        assert group_condition(api, "quorum") == {}  # not attempted: no condition yet
        names += create(api, members("quorum", 1, cpu="1", first=3))
        await wait_for(lambda: len(bound(api, names)) == 4, what="all 4 bound")
    finally:
        await op.kill()


async def test_a_pod_waits_for_its_podgroup_and_says_so(fake_api_factory: Any,
                                                        tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        names = create(api, members("late", 2, cpu="1"))
        await wait_for(lambda: "late" in pod_says(api, names[0]), what="pods say why")
        assert pod_says(api, names[0]) == (
            "PodGroupNotFound: waiting for pod's pod group \"late\" to appear in scheduling "
            "queue")
        said = events(api, reason="PodGroupNotFound", regarding=names[0])
        assert said and said[0]["type"] == "Normal"
        await op.settle(2)
        assert bound(api, names) == []
        api.create(podgroup("late", policy=gang(2)))
        await wait_for(lambda: len(bound(api, names)) == 2, what="bound once it exists")
    finally:
        await op.kill()


async def test_basic_pods_are_scheduled_one_by_one(fake_api_factory: Any,
                                                   tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(podgroup("plain", policy=BASIC))
        names = create(api, members("plain", 6, cpu="3"))
        await wait_for(lambda: len(bound(api, names)) == 4, what="the 4 that fit bound")
        await op.settle(3)
        assert len(bound(api, names)) == 4
    finally:
        await op.kill()


async def test_a_job_with_the_workload_integration_runs_as_one_gang(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """The objects the Job controller creates (``WorkloadWithJob``): the Workload, the
    PodGroup it owns, and pods naming that PodGroup. Two Jobs: one of parallelism 4 that
    fits, one of parallelism 6 × 3 cpu that does not once the first runs."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        jobs = {}
        for job, parallelism, cpu in (("fits", 4, "1"), ("waits", 6, "3")):
            workload_obj, group, pods = job_objects(job, f"uid-job-{job}",
                                                    parallelism=parallelism, cpu=cpu)
            created = api.create(workload_obj)
            group["metadata"]["ownerReferences"][1]["uid"] = created["metadata"]["uid"]
            api.create(group)
            jobs[job] = (group["metadata"]["name"], create(api, pods))
        fits_group, fits = jobs["fits"]
        waits_group, waits = jobs["waits"]
        await wait_for(lambda: len(bound(api, fits)) == 4, what="the Job's gang bound")
        await wait_for(lambda: group_condition(api, fits_group).get("status") == "True",
                       what="its PodGroup scheduled")
        await wait_for(lambda: group_condition(api, waits_group), what="the other tried")
        await op.settle(3)
        assert bound(api, waits) == []
        assert group_condition(api, waits_group)["reason"] == "Unschedulable"
        gone = api.try_get("workloads", "default", created["metadata"]["name"],
                           api_version=V1ALPHA2)
        assert gone is not None, "the Workload is the Job controller's, never touched"
    finally:
        await op.kill()


async def test_an_invalid_podgroup_is_precise_and_harms_no_other_gang(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, op = await start(fake_api_factory, tmp_path)
    try:
        bad = podgroup("bad", policy=gang(2))
        bad["spec"]["schedulingConstraints"] = {"topology": [{"key": "rack/"}]}
        api.create(bad)
        api.create(podgroup("good", policy=gang(2)))
        bad_pods = create(api, members("bad", 2, cpu="1"))
        good_pods = create(api, members("good", 2, cpu="1"))
        await wait_for(lambda: len(bound(api, good_pods)) == 2, what="the good gang bound")
        said = await wait_for(lambda: events(api, reason="InvalidSpec", regarding="bad"),
                              what="an Event on the bad PodGroup")
        assert said[0]["type"] == "Warning"
        assert said[0]["regarding"]["apiVersion"] == V1ALPHA2
        assert said[0]["note"].startswith(
            'spec.schedulingConstraints.topology[0].key: invalid label key "rack/"')
        found = await wait_for(lambda: group_condition(api, "bad"), what="condition")
        assert (found["status"], found["reason"]) == ("False", "SchedulerError")
        assert found["message"] == said[0]["note"]
        assert bound(api, bad_pods) == []
    finally:
        await op.kill()


async def test_without_the_api_no_errors_no_storm_and_picked_up_once_served(
        fake_api_factory: Any, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Not served at start-up: one discovery request, no list; then one discovery request
    per ``RECHECK`` and never a list of a version that is not served. Once the API is
    turned on, it is found at the next look and its gangs are scheduled, no restart."""
    monkeypatch.setattr(foreign_groups, "RECHECK", 0.5)
    api, op = await start(fake_api_factory, tmp_path, served=False)

    def asked() -> list[str]:
        return [e.path_qs for e in api.request_log if "scheduling.k8s.io" in e.path_qs
                and "priorityclasses" not in e.path_qs]
    try:
        await op.settle(2)
        assert asked() == ["/apis/scheduling.k8s.io"], asked()
        await wait_for(lambda: len(asked()) >= 2, what="looked for again")
        assert set(asked()) == {"/apis/scheduling.k8s.io"}  # discovery only, no 404 lists
        assert [e for e in api.request_log if e.status >= 400
                and "scheduling.k8s.io" in e.path_qs] == []
        api.serve_workload_api()
        api.create(podgroup("later", policy=gang(2)))
        names = create(api, members("later", 2, cpu="1"))
        await wait_for(lambda: len(bound(api, names)) == 2, what="bound once served")
        looks = len([p for p in asked() if p == "/apis/scheduling.k8s.io"])
        await op.settle(4)
        assert len([p for p in asked() if p == "/apis/scheduling.k8s.io"]) == looks, \
            "still looking once found"
    finally:
        await op.kill()


async def test_the_newest_served_version_is_used(fake_api_factory: Any,
                                                 tmp_path: pathlib.Path) -> None:
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, cpu="4")
    api.serve_workload_api("v1alpha2", "v1beta1")
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(podgroup("new", policy=gang(2)))
        names = create(api, members("new", 2, cpu="1"))
        await wait_for(lambda: len(bound(api, names)) == 2, what="bound")
        found = await wait_for(lambda: condition(api.try_get(
            "podgroups", "default", "new", api_version="scheduling.k8s.io/v1beta1"),
            "PodGroupInitiallyScheduled"), what="the later version's condition")
        assert found["status"] == "True"
        assert any("/scheduling.k8s.io/v1beta1/podgroups" in e.path_qs
                   for e in api.request_log)
        assert not any("/scheduling.k8s.io/v1alpha2/podgroups" in e.path_qs
                       for e in api.request_log)
    finally:
        await op.kill()


async def test_a_failing_discovery_is_tried_again_soon(fake_api_factory: Any,
                                                       tmp_path: pathlib.Path) -> None:
    """A 500 from discovery is no "not served": it is asked again after a short backoff,
    not after ``RECHECK`` (a minute here)."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, cpu="4")
    api.serve_workload_api()
    rule = api.faults.add(method="GET", path_regex=r"/apis/scheduling\.k8s\.io$", status=500,
                          times=2)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(podgroup("retry", policy=gang(2)))
        names = create(api, members("retry", 2, cpu="1"))
        await wait_for(lambda: len(bound(api, names)) == 2, what="bound after the retries")
        assert rule.hits == 2
    finally:
        await op.kill()


async def test_a_podgroup_of_another_schedulers_pods_is_left_to_it(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    """kube-scheduler writes the condition of the PodGroups whose pods it schedules:
    gangsched writes none there (two writers would fight), and binds none of them."""
    api, op = await start(fake_api_factory, tmp_path)
    try:
        api.create(podgroup("theirs", policy=gang(2)))
        theirs = members("theirs", 2, cpu="1")
        for obj in theirs:
            obj["spec"]["schedulerName"] = "default-scheduler"
        names = create(api, theirs)
        await op.settle(4)
        assert bound(api, names) == []
        assert api.request_count("patch", "podgroups", "status") == 0
        assert group_condition(api, "theirs") == {}
    finally:
        await op.kill()


async def test_a_restart_keeps_a_bound_gang_as_it_is(fake_api_factory: Any,
                                                     tmp_path: pathlib.Path) -> None:
    """Everything is rebuilt from the cluster: the bound gang counts as scheduled, is not
    bound again, and its condition (and its transition time) stay as they were."""
    api, kubeconfig = await new_cluster(fake_api_factory, tmp_path, nodes=4, cpu="4")
    api.serve_workload_api()
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        api.create(podgroup("kept", policy=gang(3)))
        names = create(api, members("kept", 3, cpu="1"))
        await wait_for(lambda: len(bound(api, names)) == 3, what="gang bound")
        before = await wait_for(lambda: group_condition(api, "kept").get("status") == "True"
                                and group_condition(api, "kept"), what="condition written")
    finally:
        await op.kill()
    binds = api.request_count("create", "pods", "binding")
    again = await OperatorUnderTest(api, kubeconfig, FakeClock(start=1_800_000_600.0)).start()
    try:
        await again.settle(4)
        assert api.request_count("create", "pods", "binding") == binds
        assert group_condition(api, "kept") == before
    finally:
        await again.kill()
