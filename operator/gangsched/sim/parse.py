"""Reading a workload file: the schema, checked field by field, with positioned errors.

``load(path)`` parses the YAML keeping positions (:mod:`gangsched.sim.source`), checks every
field (:class:`~gangsched.sim.schema.Reader`) and builds a
:class:`~gangsched.sim.workload.Workload`. All problems are reported together as one
:class:`~gangsched.sim.source.WorkloadError`, each as ``file:line:column: path: message``.
Quantities go through ``Resources.from_k8s``; taints, tolerations, node selectors and node
affinity through the ``gangsched.translate.k8s_constraints`` readers, so they mean exactly
what they mean on a real pod.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from gangsched.core.constraints import ANY_NODE, Taint
from gangsched.core.model import (
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    Node,
    PodGroupSpec,
    QueueSpec,
    SchedulerConfig,
    SchedulingPolicy,
    Scoring,
    SortPolicy,
    Style,
    TaskGroup,
)
from gangsched.core.resources import Resources
from gangsched.sim.schema import Reader
from gangsched.sim.source import Document, Path, read
from gangsched.sim.workload import (
    Behaviour,
    Event,
    EventKind,
    FailurePolicy,
    Job,
    JobKind,
    PodTemplate,
    Settings,
    Workload,
)
from gangsched.translate import k8s_constraints

NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
NAME_WHAT = "a valid name (lower-case letters, digits and '-', starting and ending " \
    "with a letter or digit)"

TOP = ("settings", "nodes", "queues", "applications", "podGroups", "pods", "events")
SETTINGS = ("until", "gcAfterSeconds", "scheduler")
SCHEDULER = ("sampleSize", "gangScoring", "podScoring", "defaultQueuePolicy")
NODE = ("pool", "name", "count", "cpu", "memory", "pods", "gpu", "resources", "labels",
        "taints")
QUEUE = ("name", "parent", "max", "guaranteed", "maxApplications", "sortPolicy",
         "stateAwareTimeoutSeconds")
JOB = ("name", "namespace", "submitAt", "queue", "priority", "replicas", "intervalSeconds",
       "driverTimeoutSeconds", "maxRetries", "retryDelaySeconds", "onPodFailure",
       "restartDelaySeconds")
APP = (*JOB, "style", "placeholderTimeoutSeconds", "waitingTimeoutSeconds", "taskGroups",
       "pods")
GROUP = (*JOB, "minMember", "minResources", "mode", "scheduleTimeoutSeconds", "pods")
TASK_GROUP = ("name", "minMember", "minResource", "nodeSelector", "tolerations", "affinity")
POD = ("name", "taskGroup", "count", "delay", "after", "duration", "cpu", "memory", "gpu",
       "resources", "priority", "nodeSelector", "tolerations", "affinity")
PLAIN = ("name", "namespace", "submitAt", "queue", "priority", "replicas", "intervalSeconds",
         "count", "duration", "cpu", "memory", "gpu", "resources", "nodeSelector",
         "tolerations", "affinity", "onPodFailure", "restartDelaySeconds")
EVENT = ("at", "nodeDown", "nodeUp", "podFails")
GPU = "nvidia.com/gpu"

E = TypeVar("E", bound=enum.Enum)


def enum_parser(cls: type[E]) -> Callable[[str], E]:
    """``cls.from_string`` typed as returning ``cls`` (its error names accepted values)."""
    def parse(text: str) -> E:
        return cls(getattr(cls, "from_string")(text))  # noqa: B009
    return parse


@dataclass(frozen=True, slots=True)
class _Common:
    """What every job kind shares, read once per entry."""

    replicas: list[tuple[str, float]]
    namespace: str
    queue: str
    priority: int
    behaviour: Behaviour
    line: int


def natural(name: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key putting ``spark-2`` before ``spark-10``."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in re.split(r"(\d+)", name) if part)


def load(path: str) -> Workload:
    """Read, check and build the workload in ``path``; raise WorkloadError listing problems."""
    return build(read(path))


def build(doc: Document) -> Workload:
    """Check ``doc`` against the workload schema and build it."""
    return _Builder(doc).build()


class _Builder:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.r = Reader(doc)
        self.paths: dict[str, Path] = {}

    def build(self) -> Workload:
        r = self.r
        top = r.mapping(self.doc.data, (), TOP, required=("nodes",))
        if top is None:
            r.raise_if_failed()
            raise AssertionError("unreachable: a non-mapping document is an error")
        settings = self.settings(top)
        nodes = self.nodes(top)
        queues = self.queues(top)
        queue_names = {q.name for q in queues} | {"default"}
        jobs: list[Job] = []
        for path, item in r.items(top, (), "applications"):
            jobs.extend(self.application(path, item, queue_names))
        for path, item in r.items(top, (), "podGroups"):
            jobs.extend(self.pod_group(path, item, queue_names))
        for path, item in r.items(top, (), "pods"):
            jobs.extend(self.plain(path, item, queue_names))
        seen: dict[str, Job] = {}
        for job in jobs:
            seen.setdefault(job.name, job)
        events = self.events(top, {n.name for n in nodes}, seen)
        r.raise_if_failed()
        jobs.sort(key=lambda j: (j.submit_at, natural(j.name)))
        return Workload(self.doc.file, tuple(nodes), tuple(jobs), tuple(queues),
                        tuple(sorted(events, key=lambda e: e.at)), settings)

    # --- settings, nodes, queues ----------------------------------------------------------

    def settings(self, top: Mapping[str, object]) -> Settings:
        r = self.r
        raw = top.get("settings")
        if raw is None:
            return Settings()
        obj = r.mapping(raw, ("settings",), SETTINGS)
        if obj is None:
            return Settings()
        path: Path = ("settings",)
        until = r.optional_number(obj, path, "until")
        gc_after = r.number(obj, path, "gcAfterSeconds", 60.0)
        config = SchedulerConfig()
        sched_raw = obj.get("scheduler")
        if sched_raw is not None:
            spath: Path = (*path, "scheduler")
            sched = r.mapping(sched_raw, spath, SCHEDULER)
            if sched is not None:
                config = SchedulerConfig(
                    sample_size=r.integer(sched, spath, "sampleSize", config.sample_size,
                                          minimum=1),
                    gang_scoring=r.choice(sched, spath, "gangScoring", enum_parser(Scoring),
                                          config.gang_scoring),
                    pod_scoring=r.choice(sched, spath, "podScoring", enum_parser(Scoring),
                                         config.pod_scoring),
                    default_queue_policy=r.choice(
                        sched, spath, "defaultQueuePolicy", enum_parser(SortPolicy),
                        config.default_queue_policy),
                )
        return Settings(until, gc_after, config)

    def nodes(self, top: Mapping[str, object]) -> list[Node]:
        r = self.r
        nodes: list[Node] = []
        names: dict[str, Path] = {}
        for path, item in r.items(top, (), "nodes", required=True):
            obj = r.mapping(item, path, NODE, required=("cpu", "memory"))
            if obj is None:
                continue
            has_pool, has_name = "pool" in obj, "name" in obj
            if has_pool == has_name:
                r.fail(path, "give either pool (with count) or name")
                continue
            if has_name and "count" in obj:
                r.fail((*path, "count"), "count goes with pool, not with name", key=True)
            base = r.string(obj, path, "pool" if has_pool else "name",
                            pattern=NAME, what=NAME_WHAT)
            count = r.integer(obj, path, "count", 1, minimum=1)
            before = len(r.errors)
            alloc = self.requests(obj, path, pods=r.integer(obj, path, "pods", 110, minimum=1))
            for resource in ("cpu", "memory"):
                if resource in obj and alloc.get(resource) <= 0 and len(r.errors) == before:
                    r.fail((*path, resource), "must be more than 0")
            labels = r.labels(obj, path, "labels")
            no_taints: tuple[Taint, ...] = ()
            taints = r.k8s(obj, path, "taints", k8s_constraints.taints_from_k8s, no_taints)
            if not base:
                continue
            for i in range(count):
                name = f"{base}-{i}" if has_pool else base
                if name in names:
                    r.fail(path, f'node "{name}" is defined twice')
                    break
                names[name] = path
                nodes.append(Node(name, alloc,
                                  {**labels, "kubernetes.io/hostname": name}, taints))
        return nodes

    def requests(self, obj: Mapping[str, object], path: Path, *, pods: int = 0) -> Resources:
        """cpu, memory, gpu and ``resources`` of a node or a pod as one vector."""
        r = self.r
        raw: dict[str, str | int | float] = {}
        raw.update(r.quantity(obj, path, "cpu", "cpu"))
        raw.update(r.quantity(obj, path, "memory", "memory"))
        raw.update(r.quantity(obj, path, "gpu", GPU))
        total = Resources.from_k8s(raw) + r.resources(obj, path, "resources")
        return total + Resources({"pods": pods}) if pods else total

    def queues(self, top: Mapping[str, object]) -> list[QueueSpec]:
        r = self.r
        queues: list[QueueSpec] = []
        paths: dict[str, Path] = {}
        for path, item in r.items(top, (), "queues"):
            obj = r.mapping(item, path, QUEUE, required=("name",))
            if obj is None:
                continue
            name = r.string(obj, path, "name", pattern=NAME, what=NAME_WHAT)
            if name in paths:
                r.fail((*path, "name"), f'queue "{name}" is defined twice')
            paths[name] = path
            queues.append(QueueSpec(
                name=name,
                parent=r.string(obj, path, "parent") or None,
                max=r.resources(obj, path, "max") if "max" in obj else None,
                guaranteed=r.resources(obj, path, "guaranteed"),
                max_applications=r.integer(obj, path, "maxApplications", 0, minimum=0),
                sort_policy=r.choice(obj, path, "sortPolicy", enum_parser(SortPolicy),
                                     SortPolicy.FIFO),
                state_aware_timeout=r.number(obj, path, "stateAwareTimeoutSeconds", 300.0),
            ))
        for queue in queues:
            if queue.parent is not None and queue.parent not in paths:
                r.fail((*paths[queue.name], "parent"),
                       f'no queue named "{queue.parent}" is defined')
        return queues

    # --- jobs -----------------------------------------------------------------------------

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
            ))
        return groups

    def requests_of(self, obj: Mapping[str, object], path: Path, key: str) -> Resources:
        """A ``{cpu, memory, gpu, ...}`` mapping at ``key`` (``gpu`` is nvidia.com/gpu)."""
        value = obj.get(key)
        if value is None:
            return Resources.ZERO
        sub = self.r.mapping(value, (*path, key), ("cpu", "memory", "gpu", "resources"))
        return self.requests(sub, (*path, key)) if sub is not None else Resources.ZERO

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
                requests=self.requests(p, ppath),
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
        members = sum(t.count for t in templates)
        if templates and members < min_member:
            r.fail((*path, "minMember"), f"is {min_member} but the pods list only {members} "
                   "members: the gang could never be scheduled")
        jobs = []
        for name, submit in common.replicas:
            spec = PodGroupSpec(GroupKey(f"{common.namespace}/{name}"), uid=f"{name}-uid",
                                min_member=min_member, min_resources=min_resources,
                                schedule_timeout=timeout, mode=mode, queue=common.queue,
                                priority=common.priority, creation=submit)
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
            requests=self.requests(obj, path),
            priority=common.priority,
            node_selector=r.k8s(obj, path, "nodeSelector",
                                k8s_constraints.node_selector_from_k8s, {}),
            tolerations=r.k8s(obj, path, "tolerations", k8s_constraints.tolerations_from_k8s,
                              ()),
            affinity=r.k8s(obj, path, "affinity", k8s_constraints.node_affinity_from_k8s,
                           ANY_NODE),
        )
        return [Job(name, JobKind.PODS, submit, (template,), {None: 1}, common.namespace,
                    common.queue, common.priority, behaviour=common.behaviour,
                    line=common.line)
                for name, submit in common.replicas]

    # --- events ---------------------------------------------------------------------------

    def events(self, top: Mapping[str, object], nodes: set[str],
               jobs: Mapping[str, Job]) -> list[Event]:
        r = self.r
        events: list[Event] = []
        for path, item in r.items(top, (), "events"):
            obj = r.mapping(item, path, EVENT, required=("at",))
            if obj is None:
                continue
            kinds = [k for k in EventKind if k.value in obj]
            if len(kinds) != 1:
                r.fail(path, "give exactly one of nodeDown, nodeUp, podFails")
                continue
            kind = kinds[0]
            at = r.number(obj, path, "at", 0.0)
            target = r.string(obj, path, kind.value)
            if not target:
                continue
            if kind is EventKind.POD_FAILS:
                job_name, _, pod = target.partition("/")
                job = jobs.get(job_name)
                if job is None:
                    r.fail((*path, kind.value), f'no job named "{job_name}" (write job/pod, '
                           'e.g. spark-1/executor-2)')
                    continue
                if pod not in job.member_names():
                    names = ", ".join(sorted(job.member_names())[:8])
                    r.fail((*path, kind.value), f'job {job_name} has no pod "{pod}" '
                           f"(its pods: {names})")
                    continue
            elif target not in nodes:
                r.fail((*path, kind.value), f'no node named "{target}" (pool nodes are '
                       "named <pool>-0, <pool>-1, ...)")
                continue
            events.append(Event(at, kind, target))
        return events

