"""Reading the jobs of a workload file: applications, PodGroups and plain pods.

Part of :mod:`gangsched.sim.parse`, which reads the rest (settings, nodes, queues,
events) and owns the :class:`~gangsched.sim.schema.Reader` the errors are collected in.
A job entry with ``replicas: N`` becomes N jobs named ``<name>-1`` .. ``<name>-N``,
submitted ``intervalSeconds`` apart; job names are unique across the whole file.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gangsched.core.values.constraints import ANY_NODE
from gangsched.core.values.model import (
    NO_TOPOLOGY,
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    PodGroupSpec,
    SchedulingPolicy,
    Style,
    TaskGroup,
    TopologyRequest,
)
from gangsched.core.values.resources import Resources
from gangsched.sim.schema import Reader, field_path
from gangsched.sim.source import Document, Path
from gangsched.sim.workload import Behaviour, FailurePolicy, Job, JobKind, PodTemplate
from gangsched.translate import fields, k8s_constraints, topology

NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
NAME_WHAT = "a valid name (lower-case letters, digits and '-', starting and ending " \
    "with a letter or digit)"

JOB = ("name", "namespace", "submitAt", "queue", "priority", "replicas", "intervalSeconds",
       "driverTimeoutSeconds", "maxRetries", "retryDelaySeconds", "onPodFailure",
       "restartDelaySeconds")
APP = (*JOB, "style", "placeholderTimeoutSeconds", "waitingTimeoutSeconds", "taskGroups",
       "pods")
GROUP = (*JOB, "minMember", "minResources", "mode", "scheduleTimeoutSeconds", "pods",
         "topology")
TASK_GROUP = ("name", "minMember", "minResource", "nodeSelector", "tolerations", "affinity",
              "topology")
POD = ("name", "taskGroup", "count", "delay", "after", "duration", "cpu", "memory", "gpu",
       "resources", "priority", "nodeSelector", "tolerations", "affinity", "claims")
PLAIN = ("name", "namespace", "submitAt", "queue", "priority", "replicas", "intervalSeconds",
         "count", "duration", "cpu", "memory", "gpu", "resources", "nodeSelector",
         "tolerations", "affinity", "onPodFailure", "restartDelaySeconds", "claims")
CLAIM = ("name", "template")
GPU = "nvidia.com/gpu"

E = TypeVar("E", bound=enum.Enum)


def enum_parser(cls: type[E]) -> Callable[[str], E]:
    """``cls.from_string`` typed as returning ``cls`` (its error names accepted values)."""
    def parse(text: str) -> E:
        return cls(getattr(cls, "from_string")(text))  # noqa: B009
    return parse


def requests(r: Reader, obj: Mapping[str, object], path: Path, *, pods: int = 0) -> Resources:
    """cpu, memory, gpu (``nvidia.com/gpu``) and ``resources`` of a node or pod, as one."""
    raw: dict[str, str | int | float] = {}
    raw.update(r.quantity(obj, path, "cpu", "cpu"))
    raw.update(r.quantity(obj, path, "memory", "memory"))
    raw.update(r.quantity(obj, path, "gpu", GPU))
    total = Resources.from_k8s(raw) + r.resources(obj, path, "resources")
    return total + Resources({"pods": pods}) if pods else total


@dataclass(frozen=True, slots=True)
class _Common:
    """What every job kind shares, read once per entry."""

    replicas: list[tuple[str, float]]
    namespace: str
    queue: str
    priority: int
    behaviour: Behaviour
    line: int


class JobReader:
    """Builds jobs from entries, reporting into ``r``; remembers where each name was."""

    def __init__(self, doc: Document, r: Reader) -> None:
        self.doc = doc
        self.r = r
        self.paths: dict[str, Path] = {}
        self.claim_templates: Mapping[str, object] = {}
        """The workload's claim templates by name (read before the jobs)."""

    def common(self, path: Path, obj: Mapping[str, object], queues: set[str]) -> _Common:
        """The (name, submit time) of each replica, and the fields every job kind shares."""
        r = self.r
        name = r.string(obj, path, "name", pattern=NAME, what=NAME_WHAT)
        submit = r.number(obj, path, "submitAt", 0.0)
        replicas = r.integer(obj, path, "replicas", 1, minimum=1)
        interval = r.number(obj, path, "intervalSeconds", 0.0)
        queue = r.string(obj, path, "queue", "default")
        if queue not in queues:
            known = ", ".join(sorted(queues))
            r.fail((*path, "queue"), f'no queue named "{queue}" is defined (queues: {known})')
        behaviour = Behaviour(
            job_timeout=r.optional_number(obj, path, "driverTimeoutSeconds"),
            max_retries=r.integer(obj, path, "maxRetries", 0, minimum=0),
            retry_delay=r.number(obj, path, "retryDelaySeconds", 30.0),
            on_pod_failure=r.choice(obj, path, "onPodFailure", FailurePolicy.from_string,
                                    FailurePolicy.REPLACE),
            restart_delay=r.number(obj, path, "restartDelaySeconds", 5.0),
        )
        mark = self.doc.mark(path)
        names = [(name, submit)] if replicas == 1 else [
            (f"{name}-{i + 1}", submit + i * interval) for i in range(replicas)]
        for replica, _ in names:
            first = self.paths.get(replica)
            if first is not None:
                where = self.doc.mark(first)
                line = f" (first on line {where.line})" if where is not None else ""
                r.fail((*path, "name"), f'job name "{replica}" is used twice{line}; names '
                       "are unique across applications, podGroups and pods")
            else:
                self.paths[replica] = path
        return _Common(
            replicas=names,
            namespace=r.string(obj, path, "namespace", "default", pattern=NAME, what=NAME_WHAT),
            queue=queue,
            priority=r.integer(obj, path, "priority", 0),
            behaviour=behaviour,
            line=mark.line if mark is not None else 0,
        )

    def application(self, path: Path, item: object, queues: set[str]) -> list[Job]:
        r = self.r
        obj = r.mapping(item, path, APP, required=("name", "pods"))
        if obj is None:
            return []
        common = self.common(path, obj, queues)
        policy = SchedulingPolicy(
            r.choice(obj, path, "style", enum_parser(Style), Style.SOFT),
            r.number(obj, path, "placeholderTimeoutSeconds", 900.0, positive=True),
            r.number(obj, path, "waitingTimeoutSeconds", 30.0),
        )
        groups = self.task_groups(path, obj)
        templates = self.templates(path, obj, {g.name: g for g in groups}, app=True)
        gang: dict[str | None, int] = {None: 1}
        if groups:
            gang = {g.name: min(g.min_member, sum(t.count for t in templates
                                                  if t.task_group == g.name))
                    for g in groups}
            for index, g in enumerate(groups):
                if templates and gang[g.name] < g.min_member:
                    r.warn((*path, "taskGroups", index, "minMember"),
                           f"task group {g.name} has minMember {g.min_member} but only "
                           f"{gang[g.name]} pods: {g.min_member - gang[g.name]} of its "
                           "placeholders are never taken (they hold their room until the "
                           "application completes)")
        jobs = []
        for name, submit in common.replicas:
            app = AppSpec(AppKey(f"{common.namespace}/{name}"), uid=f"{name}-uid",
                          queue=common.queue, task_groups=tuple(groups), policy=policy,
                          priority=common.priority, creation=submit)
            jobs.append(Job(name, JobKind.APPLICATION, submit, tuple(templates), gang,
                            common.namespace, common.queue, common.priority, app=app,
                            behaviour=common.behaviour, line=common.line))
        return jobs

    def task_groups(self, path: Path, obj: Mapping[str, object]) -> list[TaskGroup]:
        r = self.r
        groups: list[TaskGroup] = []
        for gpath, item in r.items(obj, path, "taskGroups"):
            g = r.mapping(item, gpath, TASK_GROUP, required=("name", "minMember",
                                                             "minResource"))
            if g is None:
                continue
            name = r.string(g, gpath, "name", pattern=NAME, what=NAME_WHAT)
            if any(existing.name == name for existing in groups):
                r.fail((*gpath, "name"), f'task group "{name}" is defined twice')
            groups.append(TaskGroup(
                name=name,
                min_member=r.integer(g, gpath, "minMember", 1, minimum=1),
                min_resource=self.requests_of(g, gpath, "minResource"),
                node_selector=r.k8s(g, gpath, "nodeSelector",
                                    k8s_constraints.node_selector_from_k8s, {}),
                tolerations=r.k8s(g, gpath, "tolerations",
                                  k8s_constraints.tolerations_from_k8s, ()),
                affinity=r.k8s(g, gpath, "affinity", k8s_constraints.node_affinity_from_k8s,
                               ANY_NODE),
                topology=self.topology(g, gpath, r.integer(g, gpath, "minMember", 1)),
            ))
        return groups

    def topology(self, obj: Mapping[str, object], path: Path,
                 members: int) -> TopologyRequest:
        """``topology: {required, preferred, sliceKey, sliceSize}``, checked as the CRD's
        field is (:func:`gangsched.translate.topology.from_k8s`)."""
        if obj.get("topology") is None:
            return NO_TOPOLOGY
        problems = fields.Problems()
        request = topology.from_k8s(obj["topology"], "topology", problems, members=members)
        for message in problems.messages:
            where, _, text = message.partition(": ")
            self.r.fail(field_path(path, where), text)
        return request

    def requests_of(self, obj: Mapping[str, object], path: Path, key: str) -> Resources:
        """A ``{cpu, memory, gpu, ...}`` mapping at ``key`` (``gpu`` is nvidia.com/gpu)."""
        value = obj.get(key)
        if value is None:
            return Resources.ZERO
        sub = self.r.mapping(value, (*path, key), ("cpu", "memory", "gpu", "resources"))
        return requests(self.r, sub, (*path, key)) if sub is not None else Resources.ZERO

    def claims(self, obj: Mapping[str, object], path: Path) -> tuple[tuple[str, str], ...]:
        """A pod entry's ``claims``: (name in the pod, template), each template one of
        ``claim_templates`` (the workload's ``claimTemplates``)."""
        r = self.r
        found = []
        names: set[str] = set()
        for cpath, item in r.items(obj, path, "claims"):
            claim = r.mapping(item, cpath, CLAIM, required=("name", "template"))
            if claim is None:
                continue
            name = r.string(claim, cpath, "name", pattern=NAME, what=NAME_WHAT)
            template = r.string(claim, cpath, "template", pattern=NAME, what=NAME_WHAT)
            if template and template not in self.claim_templates:
                known = ", ".join(sorted(self.claim_templates)) or "none are defined"
                r.fail((*cpath, "template"), f'no claim template "{template}" ({known})')
            if name in names:
                r.fail((*cpath, "name"), f'claim "{name}" is listed twice')
            names.add(name)
            found.append((name, template))
        return tuple(found)

    def templates(self, path: Path, obj: Mapping[str, object],
                  groups: Mapping[str, TaskGroup], *, app: bool) -> list[PodTemplate]:
        r = self.r
        templates: list[PodTemplate] = []
        next_index: dict[str, int] = {}
        for ppath, item in r.items(obj, path, "pods", required=True):
            p = r.mapping(item, ppath, POD if app else tuple(f for f in POD if f != "taskGroup"),
                          required=("duration",))
            if p is None:
                continue
            group_name = r.string(p, ppath, "taskGroup") or None
            group = groups.get(group_name) if group_name is not None else None
            if group_name is not None and group is None:
                known = ", ".join(groups) or "none are defined"
                r.fail((*ppath, "taskGroup"), f'no task group "{group_name}" ({known})')
            elif group_name is None and groups:
                r.fail((*ppath, "taskGroup"), "is required: the application has task groups")
            prefix = r.string(p, ppath, "name", group_name or "pod", pattern=NAME,
                              what=NAME_WHAT)
            after = r.string(p, ppath, "after") or None
            if after is not None and not any(t.prefix == after for t in templates):
                r.fail((*ppath, "after"), f'"{after}" must name the pods of an earlier entry')
            count = r.integer(p, ppath, "count", 1, minimum=1)
            templates.append(PodTemplate(
                prefix=prefix,
                first_index=next_index.get(prefix, 0),
                count=count,
                duration=r.number(p, ppath, "duration", 1.0, positive=True),
                requests=requests(self.r, p, ppath),
                task_group=group_name,
                delay=r.number(p, ppath, "delay", 0.0),
                after=after,
                priority=r.integer(p, ppath, "priority", 0),
                node_selector=r.k8s(p, ppath, "nodeSelector",
                                    k8s_constraints.node_selector_from_k8s,
                                    group.node_selector if group else {}),
                tolerations=r.k8s(p, ppath, "tolerations", k8s_constraints.tolerations_from_k8s,
                                  group.tolerations if group else ()),
                affinity=r.k8s(p, ppath, "affinity", k8s_constraints.node_affinity_from_k8s,
                               group.affinity if group else ANY_NODE),
                claims=self.claims(p, ppath),
            ))
            next_index[prefix] = next_index.get(prefix, 0) + count
        return templates

    def pod_group(self, path: Path, item: object, queues: set[str]) -> list[Job]:
        r = self.r
        obj = r.mapping(item, path, GROUP, required=("name", "minMember", "pods"))
        if obj is None:
            return []
        common = self.common(path, obj, queues)
        min_member = r.integer(obj, path, "minMember", 1, minimum=1)
        min_resources = self.requests_of(obj, path, "minResources")
        mode = r.choice(obj, path, "mode", enum_parser(GangMode), GangMode.STRICT)
        timeout = r.number(obj, path, "scheduleTimeoutSeconds", 600.0, positive=True)
        templates = self.templates(path, obj, {}, app=False)
        request = self.topology(obj, path, min_member)
        members = sum(t.count for t in templates)
        if templates and members < min_member:
            r.fail((*path, "minMember"), f"is {min_member} but the pods list only {members} "
                   "members: the gang could never be scheduled")
        jobs = []
        for name, submit in common.replicas:
            spec = PodGroupSpec(GroupKey(f"{common.namespace}/{name}"), uid=f"{name}-uid",
                                min_member=min_member, min_resources=min_resources,
                                schedule_timeout=timeout, mode=mode, queue=common.queue,
                                priority=common.priority, creation=submit,
                                topology=request)
            jobs.append(Job(name, JobKind.POD_GROUP, submit, tuple(templates),
                            {None: min_member}, common.namespace, common.queue,
                            common.priority, group=spec, behaviour=common.behaviour,
                            line=common.line))
        return jobs

    def plain(self, path: Path, item: object, queues: set[str]) -> list[Job]:
        r = self.r
        obj = r.mapping(item, path, PLAIN, required=("name", "duration"))
        if obj is None:
            return []
        common = self.common(path, obj, queues)
        template = PodTemplate(
            prefix="pod", first_index=0,
            count=r.integer(obj, path, "count", 1, minimum=1),
            duration=r.number(obj, path, "duration", 1.0, positive=True),
            requests=requests(self.r, obj, path),
            priority=common.priority,
            node_selector=r.k8s(obj, path, "nodeSelector",
                                k8s_constraints.node_selector_from_k8s, {}),
            tolerations=r.k8s(obj, path, "tolerations", k8s_constraints.tolerations_from_k8s,
                              ()),
            affinity=r.k8s(obj, path, "affinity", k8s_constraints.node_affinity_from_k8s,
                           ANY_NODE),
            claims=self.claims(obj, path),
        )
        return [Job(name, JobKind.PODS, submit, (template,), {None: 1}, common.namespace,
                    common.queue, common.priority, behaviour=common.behaviour,
                    line=common.line)
                for name, submit in common.replicas]
