"""The core's value types: enums, defaults, the placeholder ask, zero-quota limits."""

from __future__ import annotations

import pytest
from builders import make_app, make_group, make_pod, make_podgroup, res
from gangsched.core.gangs.reservation import gang_ask
from gangsched.core.values.constraints import ConstraintError
from gangsched.core.values.model import (
    AppSpec,
    GangMode,
    PodPhase,
    QueueSpec,
    SchedulerConfig,
    SchedulingPolicy,
    Scoring,
    SortPolicy,
    Style,
    TaskGroup,
)
from gangsched.core.values.resources import Resources


@pytest.mark.parametrize(
    ("enum", "text", "member"),
    [
        pytest.param(Style, "Hard", Style.HARD, id="style-hard"),
        pytest.param(Style, "Soft", Style.SOFT, id="style-soft"),
        pytest.param(GangMode, "Strict", GangMode.STRICT, id="mode-strict"),
        pytest.param(GangMode, "NonStrict", GangMode.NON_STRICT, id="mode-nonstrict"),
        pytest.param(SortPolicy, "fifo", SortPolicy.FIFO, id="policy-fifo"),
        pytest.param(SortPolicy, "stateaware", SortPolicy.STATE_AWARE, id="policy-stateaware"),
        pytest.param(SortPolicy, "priority", SortPolicy.PRIORITY, id="policy-priority"),
        pytest.param(SortPolicy, "fair", SortPolicy.FAIR, id="policy-fair"),
        pytest.param(Scoring, "binpack", Scoring.BINPACK, id="scoring-binpack"),
        pytest.param(Scoring, "spread", Scoring.SPREAD, id="scoring-spread"),
        pytest.param(PodPhase, "Running", PodPhase.RUNNING, id="phase-running"),
    ],
)
def test_from_string(enum: type[Style], text: str, member: object) -> None:
    assert enum.from_string(text) is member


@pytest.mark.parametrize(
    ("enum", "text", "accepted"),
    [
        pytest.param(Style, "hard", "Hard, Soft", id="style-is-case-sensitive"),
        pytest.param(GangMode, "strict", "Strict, NonStrict", id="mode"),
        pytest.param(SortPolicy, "FIFO", "fifo, stateaware, priority, fair", id="policy"),
        pytest.param(Scoring, "pack", "binpack, spread", id="scoring"),
    ],
)
def test_from_string_names_the_accepted_values(
    enum: type[Style], text: str, accepted: str
) -> None:
    with pytest.raises(ConstraintError, match=f"accepted: {accepted}"):
        enum.from_string(text)


def test_scheduling_policy_defaults() -> None:
    policy = AppSpec(key=make_app("a").key).policy
    assert policy == SchedulingPolicy(Style.SOFT, 900.0, 30.0)


def test_scheduler_config_defaults_binpack_gangs() -> None:
    config = SchedulerConfig()
    assert config.gang_scoring is Scoring.BINPACK
    assert config.default_queue_policy is SortPolicy.PRIORITY


@pytest.mark.parametrize(
    ("groups", "ask"),
    [
        pytest.param((), Resources.ZERO, id="no-groups-no-gang"),
        pytest.param((make_group("g", 3, cpu=2, memory="1Gi"),), res(6, "3Gi"), id="one-group"),
        pytest.param(
            (make_group("driver", 1, cpu=1, memory="2Gi"),
             make_group("worker", 4, cpu="500m", memory="1Gi")),
            res(3, "6Gi"), id="two-groups",
        ),
        pytest.param((make_group("g", 0, cpu=2),), Resources.ZERO, id="zero-members"),
    ],
)
def test_placeholder_ask_is_sum_of_min_member_times_min_resource(
    groups: tuple[TaskGroup, ...], ask: Resources
) -> None:
    spec = make_app("a", *groups)
    assert spec.placeholder_ask == ask
    assert spec.gang is bool(groups)
    members = sum(g.min_member for g in groups)
    assert gang_ask(spec) == ask + res(pods=members)  # one pod slot per placeholder


def test_app_group_lookup_and_names() -> None:
    spec = make_app("a", make_group("g", 1), namespace="ns")
    assert (spec.namespace, spec.name) == ("ns", "a")
    assert spec.group("g") is spec.task_groups[0]
    assert spec.group("h") is None
    assert spec.group(None) is None


@pytest.mark.parametrize(
    ("gang_group", "expected"),
    [
        pytest.param((), ("default/pg",), id="alone"),
        pytest.param(("default/other",), ("default/other", "default/pg"), id="with-partner"),
        pytest.param(("default/pg", "x/y"), ("default/pg", "x/y"), id="names-itself"),
    ],
)
def test_podgroup_gang_group_always_includes_itself(
    gang_group: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    assert make_podgroup("pg", 1, gang_group=gang_group).members_of_gang_group == expected


@pytest.mark.parametrize(
    ("phase", "active"),
    [
        pytest.param(PodPhase.PENDING, True, id="pending"),
        pytest.param(PodPhase.RUNNING, True, id="running"),
        pytest.param(PodPhase.UNKNOWN, True, id="unknown"),
        pytest.param(PodPhase.SUCCEEDED, False, id="succeeded"),
        pytest.param(PodPhase.FAILED, False, id="failed"),
    ],
)
def test_terminal_pods_hold_no_capacity(phase: PodPhase, active: bool) -> None:
    assert make_pod("p", phase=phase).active is active
    assert phase.terminal is not active


GPU = "nvidia.com/gpu"


def gpus(n: int) -> Resources:
    return Resources({GPU: n})


@pytest.mark.parametrize(
    ("queue", "usage", "within"),
    [
        pytest.param(QueueSpec("q"), res(100) + gpus(8), True, id="no-max-no-limit"),
        pytest.param(QueueSpec("q", max=res(4)), res(4), True, id="at-max"),
        pytest.param(QueueSpec("q", max=res(4)), res(5), False, id="over-max"),
        pytest.param(QueueSpec("q", max=res(4)), res(1) + gpus(3), True,
                     id="resource-missing-from-max-is-unlimited"),
        pytest.param(QueueSpec("q", max=res(4), limited=frozenset({GPU})),
                     res(1) + gpus(1), False, id="zero-limit-allows-none"),
        pytest.param(QueueSpec("q", max=res(4), limited=frozenset({GPU})), res(4), True,
                     id="zero-limit-other-resources-fine"),
        pytest.param(QueueSpec("q", max=Resources.ZERO, limited=frozenset({GPU})),
                     res(64), True, id="only-a-zero-limit"),
        pytest.param(QueueSpec("q", limited=frozenset({GPU})), gpus(1), False,
                     id="limited-without-max-is-zero"),
        pytest.param(QueueSpec("q", max=res(4), limited=frozenset({"cpu"})), res(4), True,
                     id="listed-and-set-uses-the-amount"),
    ],
)
def test_queue_within_max(queue: QueueSpec, usage: Resources, within: bool) -> None:
    assert queue.within_max(usage) is within


@pytest.mark.parametrize(
    ("queue", "name", "limit"),
    [
        pytest.param(QueueSpec("q"), "cpu", None, id="no-max"),
        pytest.param(QueueSpec("q", max=res(4)), "cpu", 4000, id="set"),
        pytest.param(QueueSpec("q", max=res(4)), GPU, None, id="missing"),
        pytest.param(QueueSpec("q", max=res(4), limited=frozenset({GPU})), GPU, 0, id="zero"),
    ],
)
def test_queue_limit(queue: QueueSpec, name: str, limit: int | None) -> None:
    assert queue.limit(name) == limit
