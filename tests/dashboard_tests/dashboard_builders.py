"""Builders of the decisions and nodes the dashboard's view is made from."""

from __future__ import annotations

import dataclasses
from typing import Any

from gangsched.core.values.decisions import (
    BlockingReason,
    EventType,
    ObjectRef,
    PlaceholderCounts,
    RecordEvent,
    SetAppStatus,
    SetPodGroupStatus,
    SetQueueStatus,
    TaskGroupStatus,
)
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources
from gangsched.view.model import NodeUse

GIB = 1 << 30


def res(cpu: float = 0, memory_gib: float = 0, **others: int) -> Resources:
    return Resources({"cpu": int(cpu * 1000), "memory": int(memory_gib * GIB), **others})


def task_group(name: str = "workers", min_member: int = 2, *, allocated: int = 0,
               pending: int = 0, bound: int = 0, waiting: int = 0, reason: str = "None",
               message: str = "", details: dict[str, str] | None = None) -> TaskGroupStatus:
    return TaskGroupStatus(name, min_member,
                           PlaceholderCounts(created=allocated + pending, allocated=allocated,
                                             pending=pending),
                           bound, waiting, BlockingReason(reason, message, details or {}))


def app(key: str = "default/train", *, state: str = "Accepted", queue: str = "default",
        groups: tuple[TaskGroupStatus, ...] = (), since: float | None = 100.0,
        reason: str = "", message: str = "") -> SetAppStatus:
    groups = groups or (task_group(),)
    reserved = sum(g.placeholders.allocated for g in groups)
    wanted = sum(g.min_member for g in groups)
    return SetAppStatus(AppKey(key), state, reason, message, queue, f"{reserved}/{wanted}", 0,
                        groups, since, None, None, None)


def podgroup(key: str = "default/pg", *, phase: str = "Pending", members: int = 3,
             scheduled: int = 0, assumed: int = 0, reason: str = "None",
             message: str = "") -> SetPodGroupStatus:
    return SetPodGroupStatus(GroupKey(key), phase, "", "", members, assumed, scheduled, 0, 0,
                             0, None, BlockingReason(reason, message, {}))


def queue(name: str = "default", *, allocated: Resources = Resources.ZERO,
          pending: Resources = Resources.ZERO, held: Resources = Resources.ZERO,
          quota: Resources | None = None, guaranteed: Resources = Resources.ZERO,
          apps: dict[str, int] | None = None, message: str = "") -> SetQueueStatus:
    return SetQueueStatus(name, allocated, pending, held, quota, guaranteed, apps or {},
                          message)


def event(kind: str, key: str, reason: str, message: str = "",
          warning: bool = False) -> RecordEvent:
    namespace, _, name = key.partition("/")
    return RecordEvent(ObjectRef(kind, namespace, name),
                       EventType.WARNING if warning else EventType.NORMAL, reason, message)


def node(name: str, cpu: float = 8, memory_gib: float = 32, *, used_cpu: float = 0,
         held_cpu: float = 0, labels: dict[str, str] | None = None,
         schedulable: bool = True, **others: Any) -> NodeUse:
    return NodeUse(name, res(cpu, memory_gib, **others), res(used_cpu), res(held_cpu),
                   labels or {}, schedulable)


@dataclasses.dataclass
class FakeNodeState:
    """What :func:`gangsched.view.model.node_uses` reads of the core's node state."""

    node: Any
    used: Resources
    pods: dict[str, Resources]
