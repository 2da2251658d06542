"""Applications: admission, placeholders, reservation, timeouts, completion, bad input."""

from __future__ import annotations

import dataclasses

import pytest
from builders import (
    ALWAYS,
    PARTIAL_GANGS,
    PARTIAL_GANGS_ALWAYS,
    make_app,
    make_group,
    make_node,
    make_pod,
    make_queue,
    placeholder_of,
    res,
)
from gangsched.core.gangs import reservation
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import (
    BindPod,
    CreatePlaceholder,
    DeletePod,
    DeleteReason,
    EventType,
    PodPending,
    SetAppStatus,
)
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    PodPhase,
    QueueSpec,
    SchedulerConfig,
    Scoring,
    SortPolicy,
    Style,
)
from gangsched.core.values.observations import (
    AppObserved,
    NodeObserved,
    PlaceholderCreateFailed,
    PodObserved,
)
from simworld import SimWorld


def world(*cpus: int, queues: tuple[QueueSpec, ...] = (),
          config: SchedulerConfig | None = None) -> SimWorld:
    w = SimWorld(config=config)
    for i, cpu in enumerate(cpus):
        w.add_node(make_node(f"n{i}", cpu=cpu))
    for queue in queues:
        w.add_queue(queue)
    return w


def reals(w: SimWorld, app: AppSpec, count: int, group: str = "g", cpu: int | str = 1,
          first: int = 0) -> None:
    for i in range(first, first + count):
        w.add_pod(make_pod(f"{app.name}-r{i}", cpu=cpu, app=app.name, task_group=group,
                           creation=float(i)))


def events(w: SimWorld, reason: str) -> list[str]:
    return [e.message for e in w.events if e.reason == reason]


# --- admission ---------------------------------------------------------------------------

GANG = (make_group("g", 2, cpu=2),)
TREE = (
    make_queue("root", max=res(memory="10Gi")),
    make_queue("small", parent="root", max=res(3)),
    make_queue("big", parent="root", max=res(16)),
    make_queue("fair", policy=SortPolicy.FAIR),
    make_queue("full", max_applications=1),
)


@pytest.mark.parametrize(
    ("app", "state", "reason", "message"),
    [
        pytest.param(make_app("a", *GANG, queue="big"), "Accepted", "Accepted", "queue big",
                     id="fits"),
        pytest.param(make_app("a", *GANG, invalid="taskGroups[0].minMember: must be >= 0"),
                     "Rejected", "InvalidSpec", "taskGroups[0].minMember: must be >= 0",
                     id="invalid-spec"),
        pytest.param(make_app("a", *GANG, queue="nowhere"), "New", "QueueNotFound",
                     'queue "nowhere" does not exist; waiting for it', id="unknown-queue"),
        pytest.param(make_app("a", *GANG, queue="root"), "Rejected", "NotALeafQueue",
                     'queue "root" has child queues; applications go to leaf queues',
                     id="parent-queue"),
        pytest.param(make_app("a", *GANG, queue="fair"), "Rejected", "FairQueue",
                     'queue "fair" uses the fair policy', id="gang-in-fair-queue"),
        pytest.param(make_app("a", queue="fair"), "Accepted", "Accepted", "queue fair",
                     id="non-gang-in-fair-queue"),
        pytest.param(make_app("a", *GANG, queue="small"), "Rejected", "QueueQuotaExceeded",
                     "the gang needs cpu=4, memory=2Gi, pods=2, more than queue small's max "
                     "cpu=3", id="over-leaf-max"),
        pytest.param(make_app("a", make_group("g", 11, cpu=1), queue="big"), "Rejected",
                     "QueueQuotaExceeded", "more than queue root's max memory=10Gi",
                     id="over-parent-max"),
    ],
)
def test_admission(app: AppSpec, state: str, reason: str, message: str) -> None:
    w = world(8, queues=TREE)
    w.add_app(app)
    w.step(0)
    rt = w.scheduler.apps[app.key]
    assert (rt.state.value, rt.reason) == (state, reason)
    assert message in rt.message
    status = w.app_status[app.key]
    assert (status.state, status.reason) == (state, reason)
    event = [e for e in w.events if e.reason == reason][-1]
    assert event.target.name == "a"
    assert event.type is (EventType.NORMAL if state == "Accepted" else EventType.WARNING)
    if state != "Accepted":
        assert not [d for d in w.decisions if isinstance(d, CreatePlaceholder)]


def test_unknown_queue_is_picked_up_when_it_appears() -> None:
    w = world(8)
    app = make_app("a", *GANG, queue="late")
    w.add_app(app)
    reals(w, app, 1)
    w.settle(0)
    assert w.app_state("default/a") == "New"
    assert w.pending_reason("a-r0") == "QueueNotFound"
    assert len(events(w, "QueueNotFound")) == 1  # said once, not every cycle
    w.add_queue(make_queue("late"))
    w.settle(1)
    assert w.app_state("default/a") == "Running"
    assert w.node_of("a-r0") == "n0"


def test_max_applications_holds_apps_in_new() -> None:
    w = world(8, queues=TREE)
    first, second = make_app("a", queue="full"), make_app("b", queue="full", creation=1)
    w.add_app(first)
    w.add_app(second)
    w.step(0)
    assert (w.app_state("default/a"), w.app_state("default/b")) == ("Accepted", "New")
    assert w.scheduler.apps[second.key].reason == "MaxApplications"
    w.remove_app(first.key)
    w.step(1)
    assert w.app_state("default/b") == "Accepted"


def test_a_rejected_app_is_checked_again_when_its_spec_is_fixed() -> None:
    w = world(8)
    app = make_app("a", *GANG, invalid="bad minMember")
    w.add_app(app)
    w.step(0)
    assert w.app_state("default/a") == "Rejected"
    w.add_app(dataclasses.replace(app, invalid=None))  # used to raise IllegalTransition
    w.settle(1)
    assert w.app_state("default/a") == "Accepted"
    assert len(w.placeholders(app.key)) == 2


def test_invalid_app_does_not_stop_others() -> None:
    w = world(8)
    w.add_app(make_app("bad", *GANG, invalid="broken"))
    good = make_app("good", *GANG)
    w.add_app(good)
    w.add_pod(make_pod("plain", cpu=1))
    reals(w, make_app("bad", *GANG), 1)
    w.settle(0)
    assert w.app_state("default/bad") == "Rejected"
    assert w.pending_reason("bad-r0") == "ApplicationRejected"
    assert len([p for p in w.placeholders(good.key) if p.node_name]) == 2
    assert w.node_of("plain") == "n0"


def test_pods_of_a_missing_app_wait_for_it() -> None:
    w = world(8)
    app = make_app("a")
    w.add_pod(make_pod("r", app="a"))
    w.step(0)
    assert w.pending_reason("r") == "ApplicationNotFound"
    w.add_app(app)
    w.step(1)
    assert w.node_of("r") == "n0"


# --- placeholders and the reservation ----------------------------------------------------


def test_placeholders_are_named_sized_and_counted_like_any_pod() -> None:
    w = world(4, 4, queues=(make_queue("q", max=res(8)),))
    app = make_app("a", make_group("g", 3, cpu=2, memory="1Gi"), queue="q")
    w.add_app(app)
    created = [d for d in w.step(0) if isinstance(d, CreatePlaceholder)]
    assert [d.name for d in created] == [placeholder_of(app, "g", i) for i in range(3)]
    assert {d.requests for d in created} == {res(2, "1Gi")}
    w.step(1)
    placed = [p.node_name or "" for p in w.placeholders(app.key)]
    assert sorted(placed) == ["n0", "n0", "n1"]  # binpack: fill n0 first
    s = w.scheduler
    assert s.cluster.nodes["n0"].used == res(4, "2Gi", pods=2)
    assert s.queues.usage("q") == res(6, "3Gi", pods=3)
    status = w.queue_status["q"]
    assert status.reserved_by_placeholders == res(6, "3Gi", pods=3)
    assert w.app_status[app.key].reserved == "3/3"
    assert len(events(w, "GangReserved")) == 1


@pytest.mark.parametrize("style", [Style.HARD, Style.SOFT])
def test_no_real_pod_binds_before_every_placeholder_is_allocated(style: Style) -> None:
    w = world(4, config=PARTIAL_GANGS_ALWAYS)
    app = make_app("a", make_group("g", 3, cpu=2), style=style)
    w.add_app(app)
    reals(w, app, 3, cpu=2)
    w.settle(0)
    assert w.bound_names() == {placeholder_of(app, "g", 0), placeholder_of(app, "g", 1)}
    assert w.pending_reason("a-r0") == "WaitingForGang"
    assert w.app_status[app.key].reserved == "2/3"
    w.add_node(make_node("n1", cpu=2))
    w.settle(1)
    assert {w.node_of(f"a-r{i}") for i in range(3)} == {"n0", "n1"}
    assert w.placeholders(app.key) == []


@pytest.mark.parametrize("style", [Style.HARD, Style.SOFT])
def test_pending_members_are_held_in_memory_and_bound_together(style: Style) -> None:
    w = world(4, config=PARTIAL_GANGS)
    app = make_app("a", make_group("g", 3, cpu=2), style=style)
    w.add_app(app)
    reals(w, app, 3, cpu=2)
    w.settle(0)
    assert w.bound_names() == set()  # two are held on n0, nothing is bound
    assert len(w.scheduler.apps[app.key].assumed) == 2
    assert w.scheduler.cluster.nodes["n0"].used == res(4, "2Gi", pods=2)
    assert w.app_status[app.key].reserved == "2/3"
    held = [n for n in ("a-r0", "a-r1", "a-r2")
            if w.pending_reasons[w.uid_of(n)].message.startswith("held on node n0")]
    assert len(held) == 2
    assert {w.pending_reason(f"a-r{i}") for i in range(3)} == {"WaitingForGang"}
    # One event on the Application says it for the three pods, none on each pod.
    waiting = [d for d in w.decisions if isinstance(d, PodPending)]
    assert waiting and not any(d.event for d in waiting)
    (event,) = [e for e in w.reasons("WaitingForGang")]
    assert event.target.kind == "Application"
    assert event.message.startswith("3 pods wait until every task group")
    w.add_node(make_node("n1", cpu=2))
    out = w.settle(1)
    binds = [d for d in out if isinstance(d, BindPod)]
    assert sorted(d.name for d in binds) == ["a-r0", "a-r1", "a-r2"]
    assert {d.reason for d in binds} == {"GangReserved"}
    assert {w.node_of(f"a-r{i}") for i in range(3)} == {"n0", "n1"}
    assert [d for d in w.decisions if isinstance(d, CreatePlaceholder)] == []
    assert w.app_state("default/a") == "Running"


GATHERING = SchedulerConfig(gather_window=1.0)


def created(w: SimWorld) -> list[str]:
    return [d.name for d in w.decisions if isinstance(d, CreatePlaceholder)]


def test_members_that_come_together_get_no_placeholder() -> None:
    """Spark's allocator makes three executors within half a second: no placeholder is
    made while they come (the gathering bound), and all three are bound in the cycle the
    last one is seen."""
    w = world(4, config=GATHERING)
    app = make_app("a", make_group("g", 3))
    w.add_app(app)
    for i, at in enumerate((0.0, 0.25, 0.5)):
        w.add_pod(make_pod(f"a-r{i}", app="a", task_group="g", creation=at))
        w.step(at)
        assert created(w) == []
    assert w.bound_names() == {"a-r0", "a-r1", "a-r2"}


def test_after_the_gathering_bound_the_missing_members_get_placeholders() -> None:
    """One executor, and nothing more by the end of the bound: placeholders stand for the
    two others from then on (and not before)."""
    w = world(4, config=GATHERING)
    app = make_app("a", make_group("g", 3))
    w.add_app(app)
    w.add_pod(make_pod("a-r0", app="a", task_group="g", creation=0.0))
    w.step(0.0)
    w.step(0.9)
    assert created(w) == []
    w.step(1.0)
    assert len(created(w)) == 2


def test_a_held_gang_creates_nothing_and_blocks_no_running_app() -> None:
    w = world(16, queues=(make_queue("q", max=res(6)),))
    running = make_app("run", queue="q")
    w.add_app(running)
    w.add_pod(make_pod("run-0", cpu=3, app="run"))
    w.step(0)
    gang = make_app("gang", make_group("g", 2, cpu=2), queue="q", creation=1)
    w.add_app(gang)
    w.settle(1)
    assert w.app_state("default/gang") == "Accepted"
    assert w.placeholders(gang.key) == []  # held: only 3 cpu free, the gang needs 4
    blocking = w.app_status[gang.key].task_groups[0].blocking
    assert blocking.reason == "QueueQuota"
    assert blocking.details["needed"] == "cpu=4, memory=2Gi, pods=2"
    w.add_pod(make_pod("run-1", cpu=2, app="run", creation=2))
    w.settle(2)
    assert w.node_of("run-1") == "n0"  # the held gang does not block it
    w.finish("run-0")
    w.finish("run-1")
    w.settle(3)
    assert len([p for p in w.placeholders(gang.key) if p.node_name]) == 2


def test_an_admitted_gang_earmarks_its_ask_so_a_later_gang_waits() -> None:
    w = world(2, queues=(make_queue("q", max=res(4)),), config=PARTIAL_GANGS)
    first = make_app("first", make_group("g", 2, cpu=2), queue="q")
    second = make_app("second", make_group("g", 1, cpu=1), queue="q", creation=1)
    w.add_app(first)
    w.add_app(second)
    w.settle(0)  # only one 2-cpu placeholder of "first" fits the cluster
    assert len(w.placeholders(first.key)) == 2
    assert w.placeholders(second.key) == []  # 4 cpu earmarked by "first"
    w.add_node(make_node("n1", cpu=8))
    w.settle(1)
    assert all(p.node_name for p in w.placeholders(first.key))


def test_placeholder_deleted_by_someone_else_is_recreated_while_accepted() -> None:
    w = world(8)
    app = make_app("a", *GANG)
    w.add_app(app)
    w.settle(0)
    name = placeholder_of(app, "g", 0)
    w.delete(name)
    w.settle(1)
    assert w.node_of(name) == "n0"
    reals(w, app, 1, cpu=2)
    w.settle(2)
    assert w.app_state("default/a") == "Running"
    w.delete(placeholder_of(app, "g", 1))
    w.settle(3)
    assert w.placeholders(app.key) == []  # no longer Accepted: not recreated


def test_create_failure_is_reported_and_retried() -> None:
    s = Scheduler()
    s.observe(NodeObserved(make_node("n")))
    app = make_app("a", make_group("g", 1))
    s.observe(AppObserved(app))
    name = placeholder_of(app, "g", 0)
    assert [d.name for d in s.cycle(0) if isinstance(d, CreatePlaceholder)] == [name]
    s.observe(PlaceholderCreateFailed(app.key, name, 403, 'priority class "vip" not found'))
    out = s.cycle(1)
    assert [d for d in out if isinstance(d, CreatePlaceholder)] == []
    failed = [d for d in out if getattr(d, "reason", "") == "PlaceholderCreateFailed"]
    message = f'creating placeholder {name} failed (403): priority class "vip" not found'
    assert failed[0].message == message + "; retrying in 10s"  # type: ignore[union-attr]
    status = next(d for d in out if isinstance(d, SetAppStatus))
    assert status.task_groups[0].blocking.reason == "PlaceholderCreateFailed"
    assert status.task_groups[0].blocking.message == message
    assert [d.name for d in s.cycle(10) if isinstance(d, CreatePlaceholder)] == [name]
    s.observe(placeholder_pod(app, 0))
    out = s.cycle(11)
    status = next(d for d in out if isinstance(d, SetAppStatus))
    assert status.task_groups[0].blocking.reason == "None"


# --- timeouts ----------------------------------------------------------------------------


def test_placeholder_timer_starts_at_first_allocation_not_submission() -> None:
    w = world(1, config=PARTIAL_GANGS)
    app = make_app("a", make_group("g", 2, cpu=2), style=Style.HARD, placeholder_timeout=50)
    w.add_app(app)
    w.settle(0)
    w.step(100)  # nothing fits: no timer
    assert w.scheduler.apps[app.key].timer_start is None
    w.add_node(make_node("n1", cpu=2))
    w.step(110)
    assert w.app_status[app.key].placeholder_timer_start == 110
    w.step(159)
    assert w.app_state("default/a") == "Accepted"
    w.step(160)
    assert w.app_state("default/a") == "Killed"


@pytest.mark.parametrize(
    ("style", "state"),
    [pytest.param(Style.HARD, "Killed", id="hard"), pytest.param(Style.SOFT, "Resuming",
                                                                id="soft")],
)
def test_placeholder_timeout_before_the_gang_starts(style: Style, state: str) -> None:
    w = world(4, config=PARTIAL_GANGS_ALWAYS)
    app = make_app("a", make_group("g", 3, cpu=2), style=style, placeholder_timeout=30)
    w.add_app(app)
    reals(w, app, 2, cpu=1)
    w.settle(0)
    deletes_before = len([d for d in w.decisions if isinstance(d, DeletePod)])
    out = w.step(30)
    deletes = [d for d in out if isinstance(d, DeletePod)]
    assert {d.reason for d in deletes} == {DeleteReason.PLACEHOLDER_TIMEOUT}
    assert len(deletes) == 3  # the two allocated and the pending one
    assert deletes_before == 0
    assert w.placeholders(app.key) == []
    rt = w.scheduler.apps[app.key]
    assert (rt.state.value, rt.reason) == (state, "PlaceholderTimeout")
    assert rt.message.startswith("2/3 members reserved when the 30s timeout expired")
    w.settle(31)
    if style is Style.HARD:
        assert "the application is killed" in rt.message
        assert w.pending_reason("a-r0") == "ApplicationKilled"
        assert w.bound_names() == set()
        assert all(p.phase is PodPhase.PENDING for p in w.pods.values())  # no pod failed
    else:
        assert w.bound_names() == {"a-r0", "a-r1"}  # scheduled as ordinary pods
        assert w.app_state("default/a") == "Running"


def test_placeholder_timeout_after_the_gang_started_releases_the_unused_ones() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 3, cpu=1), placeholder_timeout=30)
    w.add_app(app)
    reals(w, app, 2)
    w.settle(0)
    assert len(w.placeholders(app.key)) == 1
    w.step(30)
    assert w.placeholders(app.key) == []
    assert w.app_state("default/a") == "Running"
    assert events(w, "PlaceholdersReleased") == ["released 1 unused placeholders after 30s"]
    reals(w, app, 1, first=2)
    w.settle(31)
    assert w.node_of("a-r2") == "n0"  # as an ordinary pod: there is no placeholder


def test_waiting_then_completed_releases_leftover_placeholders() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 3, cpu=1), waiting_timeout=20)
    w.add_app(app)
    reals(w, app, 1)
    w.settle(0)
    w.finish("a-r0")
    w.step(5)
    assert w.app_state("default/a") == "Waiting"
    assert w.app_status[app.key].waiting_since == 5
    assert len(w.placeholders(app.key)) == 2
    w.step(24)
    assert w.app_state("default/a") == "Waiting"
    out = w.step(25)
    assert w.app_state("default/a") == "Completed"
    assert {d.reason for d in out if isinstance(d, DeletePod)} == {DeleteReason.APP_COMPLETED}
    assert w.placeholders(app.key) == []
    assert w.scheduler.apps[app.key].message == "nothing ran for 20s; released 2 unused " \
                                                "placeholders"


def test_new_asks_move_waiting_back_to_running() -> None:
    w = world(8)
    app = make_app("a")
    w.add_app(app)
    w.add_pod(make_pod("r0", app="a"))
    w.settle(0)
    w.finish("r0")
    w.step(1)
    assert w.app_state("default/a") == "Waiting"
    w.add_pod(make_pod("r1", app="a"))
    w.step(2)
    assert w.app_state("default/a") == "Running"
    assert w.node_of("r1") == "n0"


def test_non_gang_app_states() -> None:
    w = world(8)
    w.add_app(make_app("a", waiting_timeout=10))
    w.add_pod(make_pod("r0", app="a"))
    w.add_pod(make_pod("r1", app="a", cpu=100))  # never fits
    w.step(0)
    assert w.app_state("default/a") == "Starting"
    w.delete("r1")
    w.step(1)
    assert w.app_state("default/a") == "Running"  # nothing left to ask for
    w.finish("r0")
    w.step(2)
    w.step(12)
    assert w.app_state("default/a") == "Completed"


@pytest.mark.parametrize("recreated", [False, True], ids=["same-object", "new-object"])
def test_a_completed_app_id_can_be_submitted_again(recreated: bool) -> None:
    w = world(4, queues=(make_queue("q", max=res(4)),))
    app = make_app("a", make_group("g", 2, cpu=1), queue="q", waiting_timeout=5)
    w.add_app(app)
    reals(w, app, 2)
    w.settle(0)
    w.finish("a-r0")
    w.finish("a-r1")
    w.settle(1)
    w.step(10)
    assert w.app_state("default/a") == "Completed"
    w.add_pod(make_pod("other", cpu=3, queue="q"))  # leaves 1 cpu of quota
    w.step(11)
    if recreated:
        app = dataclasses.replace(app, uid="second-uid")
        w.add_app(app)
    reals(w, app, 2, first=2)
    w.settle(12)
    assert w.app_state("default/a") == "Accepted"
    assert w.placeholders(app.key) == []  # admitted only when the whole ask fits again
    assert w.scheduler.apps[app.key].admitted is False
    w.finish("other")
    w.settle(13)
    assert w.app_state("default/a") == "Running"
    assert {w.node_of("a-r2"), w.node_of("a-r3")} == {"n0"}


def test_app_deleted_mid_reservation_releases_its_placeholders_and_earmark() -> None:
    w = world(2, queues=(make_queue("q", max=res(4)),), config=PARTIAL_GANGS)
    first = make_app("first", make_group("g", 2, cpu=2), queue="q")
    w.add_app(first)
    w.settle(0)
    second = make_app("second", make_group("g", 2, cpu=1), queue="q", creation=1)
    w.add_app(second)
    w.settle(1)
    assert w.placeholders(second.key) == []
    w.remove_app(first.key)
    out = w.settle(2)
    assert {d.reason for d in out if isinstance(d, DeletePod)} == {DeleteReason.APP_GONE}
    assert w.placeholders(first.key) == []
    assert all(p.node_name for p in w.placeholders(second.key))
    assert len(w.placeholders(second.key)) == 2


def test_pods_larger_than_their_task_group_are_reported_on_arrival() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 1, cpu=1), queue="missing")
    w.add_app(app)
    w.add_pod(make_pod("big", cpu=2, app="a", task_group="g"))
    w.add_pod(make_pod("odd", cpu=1, app="a", task_group="nope"))
    w.settle(0)
    assert w.app_state("default/a") == "New"  # reported although the app waits
    assert events(w, "PodLargerThanTaskGroup") == [
        "pod default/big requests cpu=2, memory=1Gi, more than task group g's minResource "
        "cpu=1, memory=1Gi (by cpu=1); it may not fit in its placeholder's place"
    ]
    assert len(events(w, "UnknownTaskGroup")) == 1


# --- placeholders no longer wanted -------------------------------------------------------


def placeholder_pod(app: AppSpec, index: int, node: str | None = None) -> PodObserved:
    name = placeholder_of(app, "g", index)
    return PodObserved(make_pod(name, cpu=1, app=app.name, task_group="g", placeholder=True,
                                member_index=index, node=node, uid=f"ph-{name}"))


@pytest.mark.parametrize(
    ("style", "reason"),
    [
        pytest.param(Style.HARD, DeleteReason.APP_KILLED, id="killed"),
        pytest.param(Style.SOFT, DeleteReason.PLACEHOLDER_TIMEOUT, id="resuming"),
    ],
)
def test_a_placeholder_created_after_the_timeout_is_released(
    style: Style, reason: DeleteReason
) -> None:
    s = Scheduler()
    s.observe(NodeObserved(make_node("n", cpu=8)))
    app = make_app("a", make_group("g", 2, cpu=1), style=style, placeholder_timeout=10)
    s.observe(AppObserved(app))
    s.cycle(0)
    s.observe(placeholder_pod(app, 0))  # the second creation is slow
    s.cycle(1)
    s.cycle(11)
    # Soft: Resuming, and at once Waiting, as no real pod asks for anything
    assert s.apps[app.key].state.value == ("Killed" if style is Style.HARD else "Waiting")
    s.observe(placeholder_pod(app, 1))  # and lands only now
    out = s.cycle(12)
    deletes = [d for d in out if isinstance(d, DeletePod)]
    assert [(d.name, d.reason) for d in deletes] == [(placeholder_of(app, "g", 1), reason)]


def test_placeholders_of_an_older_spec_are_released() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 3, cpu=1))
    w.add_app(app)
    w.settle(0)
    w.add_app(dataclasses.replace(app, task_groups=(make_group("g", 2, cpu=1),)))
    out = w.settle(1)
    assert [(d.name, d.reason) for d in out if isinstance(d, DeletePod)] == [
        (placeholder_of(app, "g", 2), DeleteReason.ORPHANED)
    ]
    assert len(w.placeholders(app.key)) == 2


def test_deletion_is_asked_again_until_seen() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 1, cpu=1), placeholder_timeout=5)
    w.add_app(app)
    w.settle(0)
    name = placeholder_of(app, "g", 0)
    w.hold_deletes.add(name)
    w.step(5)
    assert w.app_state("default/a") == "Waiting"  # Resuming with nothing to run
    assert [d for d in w.step(14) if isinstance(d, DeletePod)] == []
    again = [d for d in w.step(15) if isinstance(d, DeletePod)]
    assert [(d.name, d.message) for d in again] == [(name, "deletion asked for again")]
    w.hold_deletes.clear()
    w.step(30)
    assert w.placeholders(app.key) == []
    assert [d for d in w.step(60) if isinstance(d, DeletePod)] == []


def test_real_pods_decisions_carry_reasons() -> None:
    w = world(8, config=ALWAYS)
    app = make_app("a", make_group("g", 1, cpu=1))
    w.add_app(app)
    reals(w, app, 2)
    w.settle(0)
    binds = {d.name: d.reason for d in w.decisions if isinstance(d, BindPod)}
    assert binds == {
        placeholder_of(app, "g", 0): "PlaceholderAllocated",
        "a-r0": "PlaceholderReplaced",
        "a-r1": "Scheduled",
    }
    pending = [d for d in w.decisions if isinstance(d, PodPending) and d.name == "a-r0"]
    assert [d.reason for d in pending] == ["WaitingForGang", "WaitingForPlaceholder"]
    assert w.scheduler.apps[AppKey("default/a")].state.value == "Running"


def test_a_pending_member_is_bound_directly_and_the_rest_as_ordinary_pods() -> None:
    w = world(8)
    app = make_app("a", make_group("g", 1, cpu=1))
    w.add_app(app)
    reals(w, app, 2)
    w.settle(0)
    binds = {d.name: d.reason for d in w.decisions if isinstance(d, BindPod)}
    assert binds == {"a-r0": "GangReserved", "a-r1": "Scheduled"}
    assert [d for d in w.decisions if isinstance(d, PodPending)] == []
    assert w.placeholders(app.key) == []
    assert w.scheduler.apps[AppKey("default/a")].state.value == "Running"


@pytest.mark.parametrize(
    ("policy", "winner"),
    [
        pytest.param(SortPolicy.FIFO, "old", id="fifo-oldest-first"),
        pytest.param(SortPolicy.PRIORITY, "urgent", id="priority-highest-first"),
    ],
)
def test_gangs_compete_for_capacity_in_queue_order(policy: SortPolicy, winner: str) -> None:
    # Without preemption: with it, the urgent gang would take the old one's reservation.
    no_preemption = SchedulerConfig(actions=("enqueue", "allocate", "backfill"))
    w = world(2, queues=(make_queue("q", policy=policy),), config=no_preemption)
    w.add_app(make_app("old", make_group("g", 2), queue="q", creation=1))
    w.add_app(make_app("urgent", make_group("g", 2), queue="q", creation=2, priority=100))
    w.settle(0)
    allocated = {key.split("/")[1] for key, status in w.app_status.items()
                 if status.reserved == "2/2"}
    assert allocated == {winner}


@pytest.mark.parametrize(
    ("scoring", "nodes_used"),
    [pytest.param(Scoring.BINPACK, 1, id="binpack-default"),
     pytest.param(Scoring.SPREAD, 3, id="spread")],
)
def test_placeholders_use_the_gang_scoring(scoring: Scoring, nodes_used: int) -> None:
    w = SimWorld(config=SchedulerConfig(gang_scoring=scoring))
    for i in range(3):
        w.add_node(make_node(f"n{i}", cpu=8))
    app = make_app("a", make_group("g", 3))
    w.add_app(app)
    w.settle(0)
    assert len({p.node_name for p in w.placeholders(app.key)}) == nodes_used


@pytest.mark.parametrize("style, state", [
    pytest.param(Style.HARD, {"Killed"}, id="hard"),
    pytest.param(Style.SOFT, {"Resuming", "Waiting"}, id="soft"),
])
def test_placeholder_timeout_clears_the_blocking_reason(style: Style, state: set[str]) -> None:
    """A gang that timed out no longer waits for placeholders: its groups say None."""
    world = SimWorld(config=PARTIAL_GANGS)
    world.add_node(make_node("n0", cpu=2))
    app = make_app("tight", make_group("big", 2, cpu=2), style=style, placeholder_timeout=60)
    world.add_app(app)
    world.settle(0.0)
    assert world.app_status[app.key].task_groups[0].blocking.reason == "Unsatisfiable"
    world.settle(61.0)
    status = world.app_status[app.key]
    assert status.state in state
    assert status.task_groups[0].blocking.reason == "None"


def test_an_apps_members_are_sorted_again_whenever_one_joins_leaves_or_changes() -> None:
    """``reservation.members`` keeps its sorted lists between calls: a member observed
    with a new priority, a new member and a member gone each show in the next call."""
    w = SimWorld()
    w.add_app(make_app("spark", make_group("exec", 3, cpu=1)))
    for name in ("a", "b"):
        w.add_pod(make_pod(name, app="spark", task_group="exec"))
    w.step(0.0)
    rt = w.scheduler.apps[AppKey("default/spark")]

    def reals() -> list[str]:
        return [ps.pod.name for ps in reservation.members(w.scheduler, rt)[1]]

    assert reals() == ["a", "b"]
    assert reals() == ["a", "b"]  # kept
    w.add_pod(make_pod("b", app="spark", task_group="exec", priority=5))  # observed again
    assert reals() == ["b", "a"]
    w.add_pod(make_pod("c", app="spark", task_group="exec", priority=9))
    assert reals() == ["c", "b", "a"]
    w.delete("b")
    assert reals() == ["c", "a"]
    mine = reservation.members(w.scheduler, rt)[1]
    mine.clear()  # a caller's list is its own
    assert reals() == ["c", "a"]
