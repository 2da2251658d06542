"""Builders for core tests: make_node, make_pod, make_app, make_group, make_queue.

Sizes are given the Kubernetes way (``cpu="500m"``, ``memory="1Gi"``).
"""

from __future__ import annotations

from collections.abc import Mapping

from gangsched.core.values.constraints import ANY_NODE, NodeAffinity, Taint, Toleration
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    Node,
    PersistedAppStatus,
    PlaceholderPolicy,
    Pod,
    PodGroupSpec,
    PodPhase,
    PodUID,
    QueueSpec,
    SchedulerConfig,
    SchedulingPolicy,
    SortPolicy,
    Style,
    TaskGroup,
)
from gangsched.core.values.naming import placeholder_name
from gangsched.core.values.placement_terms import NO_PLACEMENT, Placement
from gangsched.core.values.resources import Resources

PARTIAL_GANGS = SchedulerConfig(overcommit_factor=100.0)
"""``enqueue`` admits gangs the cluster cannot hold: for tests of partial reservations,
placeholder timeouts and the like (quota still holds gangs back)."""

ALWAYS = SchedulerConfig(placeholders=PlaceholderPolicy.ALWAYS)
"""A placeholder for every member, present or not (YuniKorn's way): for tests of the
placeholder and swap path with real pods that exist from the start."""

PARTIAL_GANGS_ALWAYS = SchedulerConfig(overcommit_factor=100.0,
                                       placeholders=PlaceholderPolicy.ALWAYS)


def res(cpu: str | int | None = None, memory: str | None = None, **extra: str | int) -> Resources:
    raw: dict[str, str | int] = {}
    if cpu is not None:
        raw["cpu"] = cpu
    if memory is not None:
        raw["memory"] = memory
    raw.update({k.replace("_", "."): v for k, v in extra.items()})
    return Resources.from_k8s(raw)


def make_node(
    name: str,
    cpu: str | int = 4,
    memory: str = "32Gi",
    pods: int = 110,
    *,
    labels: Mapping[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
    ready: bool = True,
    gpu: int = 0,
) -> Node:
    alloc: dict[str, str | int] = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpu:
        alloc["nvidia.com/gpu"] = gpu
    return Node(
        name=name,
        allocatable=Resources.from_k8s(alloc),
        labels=dict(labels or {}),
        taints=taints,
        unschedulable=unschedulable,
        ready=ready,
    )


def make_pod(
    name: str,
    cpu: str | int = 1,
    memory: str = "1Gi",
    *,
    namespace: str = "default",
    uid: str | None = None,
    app: str | None = None,
    task_group: str | None = None,
    pod_group: str | None = None,
    node: str | None = None,
    phase: PodPhase = PodPhase.PENDING,
    priority: int = 0,
    creation: float = 0.0,
    ours: bool = True,
    queue: str | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: tuple[Toleration, ...] = (),
    affinity: NodeAffinity = ANY_NODE,
    placeholder: bool = False,
    member_index: int = -1,
    invalid: str | None = None,
    requests: Resources | None = None,
    preemptible: bool = True,
    placement: Placement = NO_PLACEMENT,
) -> Pod:
    return Pod(
        uid=PodUID(uid or f"uid-{namespace}-{name}"),
        namespace=namespace,
        name=name,
        requests=requests if requests is not None else res(cpu, memory),
        priority=priority,
        creation=creation,
        node_name=node,
        phase=phase,
        ours=ours,
        node_selector=dict(node_selector or {}),
        tolerations=tolerations,
        affinity=affinity,
        app=AppKey(f"{namespace}/{app}") if app else None,
        task_group=task_group,
        pod_group=GroupKey(f"{namespace}/{pod_group}") if pod_group else None,
        placeholder=placeholder,
        member_index=member_index,
        queue=queue,
        invalid=invalid,
        preemptible=preemptible,
        placement=placement,
    )


def make_group(
    name: str, min_member: int, cpu: str | int = 1, memory: str = "1Gi", **kw: object
) -> TaskGroup:
    return TaskGroup(name=name, min_member=min_member, min_resource=res(cpu, memory), **kw)  # type: ignore[arg-type]


def make_app(
    name: str,
    *groups: TaskGroup,
    namespace: str = "default",
    queue: str = "default",
    style: Style = Style.SOFT,
    placeholder_timeout: float = 900.0,
    waiting_timeout: float = 30.0,
    priority: int = 0,
    creation: float = 0.0,
    invalid: str | None = None,
    uid: str | None = None,
    persisted: PersistedAppStatus | None = None,
) -> AppSpec:
    return AppSpec(
        key=AppKey(f"{namespace}/{name}"),
        uid=uid or f"app-uid-{name}",
        queue=queue,
        task_groups=tuple(groups),
        policy=SchedulingPolicy(style, placeholder_timeout, waiting_timeout),
        priority=priority,
        creation=creation,
        invalid=invalid,
        persisted=persisted,
    )


def make_podgroup(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    mode: GangMode = GangMode.STRICT,
    timeout: float = 600.0,
    gang_group: tuple[str, ...] = (),
    queue: str = "default",
    priority: int = 0,
    creation: float = 0.0,
    min_resources: Resources = Resources.ZERO,
    invalid: str | None = None,
    persisted_start: float | None = None,
    persisted_phase: str = "",
) -> PodGroupSpec:
    return PodGroupSpec(
        key=GroupKey(f"{namespace}/{name}"),
        uid=f"pg-uid-{name}",
        min_member=min_member,
        min_resources=min_resources,
        schedule_timeout=timeout,
        mode=mode,
        gang_group=tuple(GroupKey(k) for k in gang_group),
        queue=queue,
        priority=priority,
        creation=creation,
        invalid=invalid,
        persisted_start=persisted_start,
        persisted_phase=persisted_phase,
    )


def make_queue(
    name: str,
    *,
    parent: str | None = None,
    max: Resources | None = None,
    policy: SortPolicy = SortPolicy.FIFO,
    max_applications: int = 0,
    state_aware_timeout: float = 300.0,
    weight: int = 1,
    reclaimable: bool = True,
    guaranteed: Resources = Resources.ZERO,
) -> QueueSpec:
    return QueueSpec(
        name=name,
        parent=parent,
        max=max,
        sort_policy=policy,
        max_applications=max_applications,
        state_aware_timeout=state_aware_timeout,
        weight=weight,
        reclaimable=reclaimable,
        guaranteed=guaranteed,
    )


def placeholder_of(app: AppSpec, group: str, index: int) -> str:
    return placeholder_name(app.name, app.uid, group, index)
