"""Reading a workload file: the schema, checked field by field, with positioned errors.

``load(path)`` parses the YAML keeping positions (:mod:`gangsched.sim.source`), checks every
field (:class:`~gangsched.sim.schema.Reader`) and builds a
:class:`~gangsched.sim.workload.Workload`. All problems are reported together as one
:class:`~gangsched.sim.source.WorkloadError`, each as ``file:line:column: path: message``.
Quantities go through ``Resources.from_k8s``; taints, tolerations, node selectors and node
affinity through the ``gangsched.translate.k8s_constraints`` readers, so they mean exactly
what they mean on a real pod. Job entries are read by :mod:`gangsched.sim.parse_jobs`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from gangsched.core.actions import factory
from gangsched.core.values import devices as dv
from gangsched.core.values.constraints import ConstraintError, Taint
from gangsched.core.values.model import (
    Node,
    PlaceholderPolicy,
    QueueSpec,
    SchedulerConfig,
    Scoring,
    SortPolicy,
)
from gangsched.core.values.profile import ProfileConfig
from gangsched.sim import devices, racks
from gangsched.sim.latency import NO_LATENCY, Latency
from gangsched.sim.parse_jobs import NAME, NAME_WHAT, JobReader, enum_parser, requests
from gangsched.sim.schema import Reader
from gangsched.sim.source import Document, Path, read
from gangsched.sim.workload import Event, EventKind, Job, Settings, Workload
from gangsched.translate import k8s_constraints
from gangsched.translate.fields import TranslationError
from gangsched.translate.profile import profile_from_k8s

TOP = ("settings", "nodes", "queues", "applications", "podGroups", "pods", "events",
       "deviceClasses", "claimTemplates")
SETTINGS = ("until", "gcAfterSeconds", "scheduler", "latency")
LATENCY = ("gracefulDeletionSeconds", "stoppedBeforeGoneSeconds", "runningAfterSeconds",
           "watchDelaySeconds")
SCHEDULER = ("percentageOfNodesToScore", "gangScoring", "podScoring", "defaultQueuePolicy",
             "actions", "overcommitFactor", "starvationThresholdSeconds",
             "reservationTimeoutSeconds", "deadlockBackoffSeconds", "nominationTimeoutSeconds",
             "evictionBackoffSeconds", "profile", "placeholders", "gatherWindowSeconds")
NODE = ("pool", "name", "count", "cpu", "memory", "pods", "gpu", "resources", "labels",
        "taints", "topology", "devices")
QUEUE = ("name", "parent", "max", "guaranteed", "maxApplications", "sortPolicy",
         "stateAwareTimeoutSeconds", "weight", "reclaimable")
EVENT = ("at", "nodeDown", "nodeUp", "podFails")
MAX_NODES = 100_000
"""The most nodes a workload may have: the largest clusters run today (EKS announced
100,000 nodes for AI workloads; GKE supports 65,000), well past Kubernetes' documented
5,000. The simulator is measured up to 65,000 (bench/README.md); above 100,000 a typo
(``count: 1000000``) would run for hours and take tens of GiB before saying anything."""
MAX_NODES_WHY = "the largest clusters run today: EKS's 100,000 nodes"
"""Why :data:`MAX_NODES`, as the refusals say it."""


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
        self.jobs = JobReader(doc, self.r)
        self.slices: list[dv.ResourceSlice] = []

    def build(self) -> Workload:
        r = self.r
        top = r.mapping(self.doc.data, (), TOP, required=("nodes",))
        if top is None:
            r.raise_if_failed()
            raise AssertionError("unreachable: a non-mapping document is an error")
        settings = self.settings(top)
        classes = devices.read_classes(r, top)
        claim_templates = devices.read_templates(r, top)
        self.jobs.claim_templates = claim_templates
        nodes = self.nodes(top)
        queues = self.queues(top)
        queue_names = {q.name for q in queues} | {"default"}
        jobs: list[Job] = []
        for path, item in r.items(top, (), "applications"):
            jobs.extend(self.jobs.application(path, item, queue_names))
        for path, item in r.items(top, (), "podGroups"):
            jobs.extend(self.jobs.pod_group(path, item, queue_names))
        for path, item in r.items(top, (), "pods"):
            jobs.extend(self.jobs.plain(path, item, queue_names))
        seen: dict[str, Job] = {}
        for job in jobs:
            seen.setdefault(job.name, job)
        events = self.events(top, {n.name for n in nodes}, seen)
        r.raise_if_failed()
        jobs.sort(key=lambda j: (j.submit_at, natural(j.name)))
        warnings = sorted(r.warnings, key=lambda e: (e.mark.line, e.mark.column)
                          if e.mark is not None else (0, 0))
        return Workload(self.doc.file, tuple(nodes), tuple(jobs), tuple(queues),
                        tuple(sorted(events, key=lambda e: e.at)), settings,
                        tuple(str(w) for w in warnings), classes, tuple(self.slices),
                        claim_templates)

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
                    percentage_of_nodes_to_score=r.integer(
                        sched, spath, "percentageOfNodesToScore",
                        config.percentage_of_nodes_to_score, minimum=0),
                    gang_scoring=r.choice(sched, spath, "gangScoring", enum_parser(Scoring),
                                          config.gang_scoring),
                    pod_scoring=r.choice(sched, spath, "podScoring", enum_parser(Scoring),
                                         config.pod_scoring),
                    default_queue_policy=r.choice(
                        sched, spath, "defaultQueuePolicy", enum_parser(SortPolicy),
                        config.default_queue_policy),
                    actions=self.actions(sched, spath, config.actions),
                    overcommit_factor=r.number(sched, spath, "overcommitFactor",
                                               config.overcommit_factor, positive=True),
                    starvation_threshold=r.number(sched, spath, "starvationThresholdSeconds",
                                                  config.starvation_threshold),
                    reservation_timeout=r.number(sched, spath, "reservationTimeoutSeconds",
                                                 config.reservation_timeout, positive=True),
                    deadlock_backoff=r.number(sched, spath, "deadlockBackoffSeconds",
                                              config.deadlock_backoff),
                    nomination_timeout=r.number(sched, spath, "nominationTimeoutSeconds",
                                                config.nomination_timeout, positive=True),
                    eviction_backoff=r.number(sched, spath, "evictionBackoffSeconds",
                                              config.eviction_backoff, positive=True),
                    profile=self.profile(sched, spath),
                    placeholders=r.choice(sched, spath, "placeholders",
                                          enum_parser(PlaceholderPolicy), config.placeholders),
                    gather_window=r.number(sched, spath, "gatherWindowSeconds",
                                           config.gather_window),
                )
        return Settings(until, gc_after, config, self.latency(obj, path))

    def latency(self, obj: Mapping[str, object], path: Path) -> Latency:
        """``latency``: how slow the simulated cluster is (see ``gangsched.sim.latency``);
        missing: instant. ``gracefulDeletionSeconds`` is a number or ``[min, max]``."""
        r = self.r
        raw = obj.get("latency")
        if raw is None:
            return NO_LATENCY
        lpath: Path = (*path, "latency")
        lat = r.mapping(raw, lpath, LATENCY)
        if lat is None:
            return NO_LATENCY
        grace = lat.get("gracefulDeletionSeconds", 0.0)
        gpath: Path = (*lpath, "gracefulDeletionSeconds")
        low = high = 0.0
        if isinstance(grace, list) and len(grace) == 2:
            bounds = []
            for i, value in enumerate(grace):
                if (not isinstance(value, int | float) or isinstance(value, bool)
                        or not math.isfinite(value) or value < 0):
                    r.fail((*gpath, i), f"must be a number ≥ 0, got {value!r}")
                    value = 0.0
                bounds.append(float(value))
            low, high = bounds
            if high < low:
                r.fail(gpath, f"[min, max]: {high:g} is less than {low:g}")
                high = low
        elif isinstance(grace, list):
            r.fail(gpath, "expected a number of seconds or [min, max]")
        else:
            low = high = r.number(lat, lpath, "gracefulDeletionSeconds", 0.0)
        return Latency(low, high, r.number(lat, lpath, "runningAfterSeconds", 0.0),
                       r.number(lat, lpath, "watchDelaySeconds", 0.0),
                       r.number(lat, lpath, "stoppedBeforeGoneSeconds", 0.0))

    def profile(self, obj: Mapping[str, object], path: Path) -> ProfileConfig:
        """``profile``: plugins and pluginConfig as in a KubeSchedulerConfiguration profile
        (see ``gangsched.translate.profile``); errors name the field."""
        raw = obj.get("profile")
        if raw is None:
            return ProfileConfig()
        try:
            return profile_from_k8s(raw)
        except (ConstraintError, TranslationError) as error:
            self.r.fail((*path, "profile"), str(error))
            return ProfileConfig()

    def actions(self, obj: Mapping[str, object], path: Path,
                default: tuple[str, ...]) -> tuple[str, ...]:
        """``actions``: the scheduler's actions in order, a list of names (or one string
        with commas), each known and none twice."""
        raw = obj.get("actions")
        if raw is None:
            return default
        if isinstance(raw, str):
            raw = [part.strip() for part in raw.split(",") if part.strip()]
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            self.r.fail((*path, "actions"), "must be a list of action names, e.g. "
                        "[enqueue, allocate, backfill]")
            return default
        try:
            return factory.validate(raw)
        except ValueError as error:
            self.r.fail((*path, "actions"), str(error))
            return default

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
            alloc = requests(r, obj, path, pods=r.integer(obj, path, "pods", 110, minimum=1))
            for resource in ("cpu", "memory"):
                if resource in obj and alloc.get(resource) <= 0 and len(r.errors) == before:
                    r.fail((*path, resource), "must be more than 0")
            labels = r.labels(obj, path, "labels")
            no_taints: tuple[Taint, ...] = ()
            taints = r.k8s(obj, path, "taints", k8s_constraints.taints_from_k8s, no_taints)
            hierarchy = self.hierarchy(obj, path, count)
            published = devices.read_devices(r, obj, path)
            if not base:
                continue
            if len(nodes) + count > MAX_NODES:
                r.fail((*path, "count") if has_pool else path,
                       f"the workload would have {len(nodes) + count:,} nodes, more than "
                       f"{MAX_NODES:,} ({MAX_NODES_WHY})")
                continue
            for i in range(count):
                name = f"{base}-{i}" if has_pool else base
                if name in names:
                    r.fail(path, f'node "{name}" is defined twice')
                    break
                names[name] = path
                placed = (racks.hierarchy_labels(base, i, count, *hierarchy)
                          if hierarchy is not None else {})
                nodes.append(Node(name, alloc, {**labels, **placed,
                                                "kubernetes.io/hostname": name}, taints))
                self.slices.extend(devices.slice_for(name, spec) for spec in published)
        return nodes

    def hierarchy(self, obj: Mapping[str, object], path: Path,
                  count: int) -> tuple[int, int, int] | None:
        """``topology: {zones, blocks, racks}`` (each default 1; blocks per zone, racks per
        block): ``None`` when absent or wrong. ``count`` must be a multiple of the racks."""
        r = self.r
        raw = obj.get("topology")
        if raw is None:
            return None
        tpath: Path = (*path, "topology")
        spec = r.mapping(raw, tpath, racks.LEVELS)
        if spec is None:
            return None
        before = len(r.errors)
        zones, blocks, per_block = (r.integer(spec, tpath, level, 1, minimum=1)
                                    for level in racks.LEVELS)
        total = zones * blocks * per_block
        if len(r.errors) == before and count % total:
            r.fail((*path, "count"), f"is {count}, not a multiple of the {total} racks of "
                   f"topology {{zones: {zones}, blocks: {blocks}, racks: {per_block}}}: "
                   "every rack gets the same number of nodes")
        return (zones, blocks, per_block) if len(r.errors) == before else None

    def queues(self, top: Mapping[str, object]) -> list[QueueSpec]:
        r = self.r
        queues: list[QueueSpec] = []
        paths: dict[str, Path] = {}
        where: list[Path] = []
        """The path of each queue in ``queues``: errors name the entry they are about."""
        for path, item in r.items(top, (), "queues"):
            obj = r.mapping(item, path, QUEUE, required=("name",))
            if obj is None:
                continue
            name = r.string(obj, path, "name", pattern=NAME, what=NAME_WHAT)
            if name in paths:
                r.fail((*path, "name"), f'queue "{name}" is defined twice')
            paths.setdefault(name, path)
            where.append(path)
            queues.append(QueueSpec(
                name=name,
                parent=r.string(obj, path, "parent") or None,
                max=r.resources(obj, path, "max") if "max" in obj else None,
                guaranteed=r.resources(obj, path, "guaranteed"),
                max_applications=r.integer(obj, path, "maxApplications", 0, minimum=0),
                sort_policy=r.choice(obj, path, "sortPolicy", enum_parser(SortPolicy),
                                     SortPolicy.FIFO),
                state_aware_timeout=r.number(obj, path, "stateAwareTimeoutSeconds", 300.0),
                weight=r.integer(obj, path, "weight", 1, minimum=1),
                reclaimable=self.flag(obj, path, "reclaimable", True),
            ))
        for path, queue in zip(where, queues, strict=True):
            if queue.parent is not None and queue.parent not in paths:
                r.fail((*path, "parent"), f'no queue named "{queue.parent}" is defined')
        return queues

    def flag(self, obj: Mapping[str, object], path: Path, key: str, default: bool) -> bool:
        """A boolean (``true``/``false``); anything else is an error and gives ``default``."""
        value = obj.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.r.fail((*path, key), f"must be true or false, got {value!r}")
            return default
        return value

    # --- jobs -----------------------------------------------------------------------------

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

