"""The event-driven simulation: a clock that jumps from one thing that happens to the next.

Nothing here schedules. The engine plays everything around the scheduler: users submitting
jobs, the software in the pods (a driver creating executors once it runs, pods finishing
after their duration, a driver giving up, a job retried), the scripted failures (nodes
going away and coming back, pods failing), and the kubelet (a bound pod runs at once, or
once the backend says it is ``Running`` when the cluster is slow: see
:mod:`gangsched.sim.latency`). A pod holds capacity from its bind until its deletion
is complete, also while it terminates.

It also measures, per gang, the time spent with some but not all of its minimum members
bound (:mod:`gangsched.sim.partial`).
The scheduler is a :class:`~gangsched.sim.backends.Backend`: the real core, or the naive
pod-by-pod binder it is compared with.

The clock never ticks. A heap holds every future instant at which something is known to
happen (arrivals, pod creations, pod finishes, job timeouts, retries, garbage collection,
scripted events); the backend adds the instants at which one of its timers is due. The
loop jumps to the earliest one, applies what happens there, and runs scheduler cycles at
that instant only if something changed or a timer is due, repeating while the cycles
themselves change something (a bind, a placeholder created or deleted). So an idle hour
costs nothing, and a simulated day of a thousand nodes runs in seconds.

The same job model (:mod:`gangsched.sim.workload`) applies under every backend, so the
results differ only by what the scheduler did.
"""

from __future__ import annotations

import dataclasses
import functools
import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass

from gangsched.core.values import devices as dv
from gangsched.core.values.model import AppKey, GroupKey, Pod, PodPhase, PodUID
from gangsched.core.values.resources import Resources
from gangsched.core.values.volume_specs import PodVolumes
from gangsched.sim import devices, racks
from gangsched.sim.backends import Backend
from gangsched.sim.jobs import JobRun, Outcome, PodRun, PodStatus
from gangsched.sim.latency import NO_LATENCY, Latency
from gangsched.sim.partial import PartialGangs
from gangsched.sim.timeline import Timeline
from gangsched.sim.usage import Usage
from gangsched.sim.workload import EventKind, FailurePolicy, Job, JobKind, PodTemplate, Workload
from gangsched.sim.world import PodListener

MAX_CYCLES_PER_INSTANT = 50
"""A guard against a scheduler that keeps changing things at one instant."""

SOURCE = "sim"
KIND_NAMES = {JobKind.APPLICATION: "app", JobKind.POD_GROUP: "podgroup", JobKind.PODS: "pods"}

Progress = Callable[[float, int, int], None]
"""Called now and then with (simulated time, jobs ended, jobs in total)."""

BackendFactory = Callable[[PodListener, Timeline], Backend]


@dataclass(slots=True)
class _Bound:
    """A pod holding capacity, as accounted for."""

    job: JobRun | None
    attempt: int
    category: str
    request: Resources


@dataclass(slots=True)
class RunOutput:
    """Everything one run produced; :mod:`gangsched.sim.results` summarises it."""

    scheduler: str
    workload: Workload
    jobs: list[JobRun]
    timeline: Timeline
    usage: Usage
    end: float
    cycles: int
    wall_seconds: float
    until_reached: bool
    counters: dict[str, int]
    backend: Backend | None = None
    """The scheduler and its cluster as the run left them (for ``--explain``)."""
    partial: PartialGangs | None = None
    """How long each gang had some but not all of its minimum members bound."""
    latency: Latency = NO_LATENCY
    """How slow the cluster was (the backend's)."""
    stranded_cpu_seconds: float = 0.0
    """See :mod:`gangsched.sim.racks`."""


def simulate(workload: Workload, make_backend: BackendFactory, *,
             progress: Progress | None = None, keep_samples: bool = True) -> RunOutput:
    """Run ``workload`` against the backend ``make_backend`` builds, to the end."""
    return Engine(workload, make_backend, progress=progress, keep_samples=keep_samples).run()


class Engine:
    """One run of one workload against one backend. Also the backend's pod listener."""

    def __init__(self, workload: Workload, make_backend: BackendFactory, *,
                 progress: Progress | None = None, keep_samples: bool = True) -> None:
        self.workload = workload
        self.timeline = Timeline()
        self.backend = make_backend(self, self.timeline)
        self.usage = Usage(keep_samples=keep_samples)
        self.stranded: racks.Stranded | None = None
        if any(not racks.job_topology(job).empty for job in workload.jobs):
            self.stranded = racks.Stranded(workload.nodes)
        self.progress = progress
        self.now = 0.0
        self.dirty = True
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._serial = itertools.count()
        self.jobs = [JobRun(job, f"{job.namespace}/{job.name}") for job in workload.jobs]
        self.by_key = {run.key: run for run in self.jobs}
        self.by_name = {run.job.name: run for run in self.jobs}
        self._asking = [run for run in self.jobs
                        if racks.job_topology(run.job).required is not None]
        """The jobs whose gang asks for one domain: the only ones stranded cpu is for."""
        self.pods: dict[PodUID, PodRun] = {}
        self.bound: dict[PodUID, _Bound] = {}
        self.nodes = {node.name: node for node in workload.nodes}
        self.down: set[str] = set()
        self.ended = 0
        self._in_cycle = False
        self._removed: list[tuple[PodRun, str]] = []
        self.last = 0.0
        """The last instant at which some job had not ended: the run's end."""
        self.partial = PartialGangs()

    # --- the loop ------------------------------------------------------------------------

    def at(self, t: float, action: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(t, self.now), next(self._seq), action))

    def run(self) -> RunOutput:
        started = time.perf_counter()
        for queue in self.workload.queues:
            self.backend.add_queue(queue)
        if self.workload.uses_devices:
            self.backend.add_devices(self.workload.device_classes, self.workload.slices)
        for node in self.workload.nodes:
            self.backend.add_node(node)
            self.usage.capacity(node.allocatable, 1)
        for run in self.jobs:
            self.at(run.job.submit_at, functools.partial(self._start_attempt, run))
        for event in self.workload.events:
            self.at(event.at, functools.partial(self._script, event.kind, event.target))
        until = self.workload.settings.until
        until_reached = False
        steps = 0
        while True:
            upcoming = [t for t in (self._heap[0][0] if self._heap else None,
                                    self.backend.next_deadline()) if t is not None]
            if not upcoming or (self.ended == len(self.jobs) and not self._heap):
                break
            t = min(upcoming)
            if until is not None and t > until:
                until_reached = True
                self.now = until
                self.usage.advance(until)
                break
            self.now = t
            if self.ended < len(self.jobs):
                self.usage.advance(t)  # utilisation is measured until the last job ends
                if self.stranded is not None:
                    self.stranded.down = self.down
                    self.stranded.advance(t, self._waiting())
                self.last = t
            if self.backend.advance(t):
                self.dirty = True
            while self._heap and self._heap[0][0] <= t:
                heapq.heappop(self._heap)[2]()
            due = self.backend.pop_deadlines(t)
            if self.dirty or due:
                self._settle(t)
            steps += 1
            if self.progress is not None and steps % 64 == 0:
                self.progress(t, self.ended, len(self.jobs))
        self._finish(until_reached)
        if self.progress is not None:
            self.progress(self.now, self.ended, len(self.jobs))
        end = self.now if until_reached else self.last
        return RunOutput(self.backend.name, self.workload, self.jobs, self.timeline,
                         self.usage, end, self.backend.cycles,
                         time.perf_counter() - started, until_reached,
                         dict(self.backend.counters), self.backend, self.partial,
                         self.backend.latency,
                         self.stranded.cpu_seconds if self.stranded is not None else 0.0)

    def _settle(self, t: float) -> None:
        for _ in range(MAX_CYCLES_PER_INSTANT):
            self.dirty = False
            self._in_cycle = True
            try:
                self.backend.cycle(t)
            finally:
                self._in_cycle = False
            self._explain_removals()
            verdicts, self.backend.verdicts = self.backend.verdicts, []
            for key, outcome, reason in verdicts:
                run = self.by_key.get(key)
                if run is not None and not run.done:
                    self._end(run, outcome, reason)
            if not self.dirty:
                return

    def _finish(self, until_reached: bool) -> None:
        for run in self.jobs:
            run.core_state = self.backend.state_of(run.key)
            self.partial.end_attempt(run.key, self.now)
            if run.done:
                continue
            if until_reached:
                run.outcome, run.reason = Outcome.UNFINISHED, "the clock reached settings.until"
            else:
                run.outcome, run.reason = Outcome.STALLED, _stall_reason(run)
                self._note(run, f"stalled: {run.reason}")
            run.close_segments(self.now)

    # --- the pod listener ----------------------------------------------------------------

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        self.dirty = True
        was = old is not None and old.node_name is not None and old.active
        now_bound = new is not None and new.node_name is not None and new.active
        was_running = was and old is not None and old.phase is PodPhase.RUNNING
        running = now_bound and new is not None and new.phase is PodPhase.RUNNING
        if now_bound and not was and new is not None:
            self._bound_pod(new)
        elif was and not now_bound and old is not None:
            self._unbound_pod(old)
        if running and not was_running and new is not None:
            self._started(new)

    def _bound_pod(self, pod: Pod) -> None:
        run = self.pods.get(pod.uid)
        if pod.placeholder:
            job = self.by_key.get(pod.app) if pod.app is not None else None
            self._hold(pod, job, "placeholder")
            return
        if run is None:
            self._hold(pod, None, "busy")
            return
        job = run.job
        self._hold(pod, job, "busy" if job.gang_running else "idle")
        self._member(run, 1)

    def _member(self, run: PodRun, delta: int) -> None:
        """A real member of a gang was bound (+1) or unbound (-1): the partial measure."""
        need = run.job.job.gang.get(run.gang_key)
        if need is not None:
            self.partial.changed((run.job.key, run.attempt, run.gang_key), need, delta,
                                 self.now)

    def _started(self, pod: Pod) -> None:
        """A bound pod of a job runs (at its bind, or once the kubelet started it)."""
        run = self.pods.get(pod.uid)
        if pod.placeholder or run is None or run.status is not PodStatus.PENDING:
            return
        job = run.job
        run.status, run.started, run.node = PodStatus.RUNNING, self.now, pod.node_name
        job.running[run.gang_key] = job.running.get(run.gang_key, 0) + 1
        if job.first_start is None:
            job.first_start = self.now
            timeout = job.job.behaviour.job_timeout
            if timeout is not None:
                self.at(self.now + timeout,
                        functools.partial(self._job_timeout, job, job.attempt))
        prefix = run.template.prefix
        if prefix not in job.triggered:
            job.triggered.add(prefix)
            for template in job.job.pods:
                if template.after == prefix:
                    self.at(self.now + template.delay,
                            functools.partial(self._create, job, job.attempt, template))
        if job.gang_running:
            self._work(run)
        elif job.gang_complete():
            self._gang_started(job)

    def _waiting(self) -> list[JobRun]:
        """Submitted jobs whose gang does not run and asks for one domain (for the
        stranded-capacity measure, which passes over the others)."""
        return [run for run in self._asking if run.attempt > 0 and not run.done
                and not run.gang_running]

    def _hold(self, pod: Pod, job: JobRun | None, category: str) -> None:
        self.bound[pod.uid] = _Bound(job, job.attempt if job else 0, category, pod.requests)
        if self.stranded is not None:
            self.stranded.bind(pod.node_name, pod.requests.get("cpu"))
        self.usage.add(category, pod.requests)
        if job is not None:
            job.held += 1
            if job.hold_start is None:
                job.hold_start = self.now

    def _unbound_pod(self, pod: Pod) -> None:
        record = self.bound.pop(pod.uid, None)
        if record is not None:
            self.usage.add(record.category, record.request, -1)
            if self.stranded is not None:
                self.stranded.bind(pod.node_name, record.request.get("cpu"), -1)
            if record.job is not None and record.job.attempt == record.attempt:
                record.job.held -= 1
        run = self.pods.get(pod.uid)
        if run is not None and not pod.placeholder:
            self._member(run, -1)
        if run is not None and run.status is PodStatus.RUNNING:
            cause = None if self._in_cycle else self.backend.removal_cause(run.uid)
            if self._in_cycle:  # the scheduler removed it: it says why once the cycle ends
                self._removed.append((run, pod.node_name or "?"))
            elif cause is not None:  # evicted, gone once its graceful deletion ended
                self._lost(run, f"pod {run.member} on {pod.node_name or '?'} was {cause}")
            else:
                self._lost(run, f"pod {run.member} was lost with node {pod.node_name or '?'}")

    def _explain_removals(self) -> None:
        """Running pods the scheduler removed in the last cycle: preempted or reclaimed
        (with by whom and why), else lost with their node."""
        removed, self._removed = self._removed, []
        for run, node in removed:
            cause = self.backend.removal_cause(run.uid)
            if cause is None:
                self._lost(run, f"pod {run.member} was lost with node {node}")
            else:
                self._lost(run, f"pod {run.member} on {node} was {cause}")

    # --- the job model -------------------------------------------------------------------

    def _start_attempt(self, run: JobRun) -> None:
        run.new_attempt(self.now)
        job = run.job
        if run.attempt == 1:
            self._note(run, f"submitted: {job.pod_count} pods, gang {_gang_text(job)}")
        else:
            self._note(run, f"resubmitted (attempt {run.attempt})")
        # A retry is a new object (a new uid), created now, as a job controller would make.
        suffix = "" if run.attempt == 1 else f"-a{run.attempt}"
        if job.app is not None:
            self.backend.add_app(dataclasses.replace(
                job.app, uid=f"{job.app.uid}{suffix}", creation=self.now))
        if job.group is not None:
            self.backend.add_group(dataclasses.replace(
                job.group, uid=f"{job.group.uid}{suffix}", creation=self.now))
        for template in job.pods:
            if template.after is None:
                if template.delay:
                    self.at(self.now + template.delay,
                            functools.partial(self._create, run, run.attempt, template))
                else:
                    self._create(run, run.attempt, template)

    def _create(self, run: JobRun, attempt: int, template: PodTemplate) -> None:
        if run.done or run.attempt != attempt:
            return
        for member in template.member_names():
            self._create_pod(run, template, member, member)

    def _create_pod(self, run: JobRun, template: PodTemplate, member: str, name: str) -> None:
        job = run.job
        uid = PodUID(f"{job.namespace}/{job.name}-{name}#{run.attempt}.{next(self._serial)}")
        pod = Pod(
            uid=uid,
            namespace=job.namespace,
            name=f"{job.name}-{name}",
            requests=template.requests,
            priority=template.priority,
            creation=self.now,
            node_selector=template.node_selector,
            tolerations=template.tolerations,
            affinity=template.affinity,
            app=AppKey(run.key) if job.app is not None else None,
            task_group=template.task_group if job.app is not None else None,
            pod_group=GroupKey(run.key) if job.group is not None else None,
            queue=job.queue if job.kind is JobKind.PODS else None,
        )
        if template.claims:
            claims = tuple(dv.ResourceClaim(
                job.namespace, devices.claim_name(pod.name, entry),
                spec=self.workload.claim_templates.get(claim_template, dv.ClaimSpec()),
                owner_pod=uid) for entry, claim_template in template.claims)
            self.backend.add_claims(claims)
            pod = dataclasses.replace(pod, volumes=PodVolumes(
                resource_claims=tuple(c.name for c in claims)))
        pod_run = PodRun(run, uid, pod.name, member, template)
        pod_run.created = self.now
        self.pods[uid] = pod_run
        run.pods[uid] = pod_run
        run.history.append(pod_run)
        self.backend.add_pod(pod)

    def _gang_started(self, run: JobRun) -> None:
        run.gang_start = self.now
        waited = self.now - run.attempt_start
        if run.first_gang_start is None:
            run.first_gang_start = self.now
            run.first_gang_nodes = tuple(sorted({
                p.node for p in run.pods.values()
                if p.status is PodStatus.RUNNING and p.node is not None}))
        if _gang_text(run.job) != "none":
            self._note(run, f"gang running, {waited:g}s after submission")
        for pod_run in run.pods.values():
            if pod_run.status is PodStatus.RUNNING:
                record = self.bound.get(pod_run.uid)
                if record is not None and record.category == "idle":
                    self.usage.move(record.request, "idle", "busy")
                    record.category = "busy"
                self._work(pod_run)

    def _work(self, run: PodRun) -> None:
        """The pod makes progress from now on: it finishes after its duration."""
        run.token += 1
        self.at(self.now + run.template.duration,
                functools.partial(self._pod_finished, run, run.token))

    def _pod_finished(self, run: PodRun, token: int) -> None:
        if run.token != token or run.status is not PodStatus.RUNNING:
            return
        job = run.job
        run.status, run.ended = PodStatus.SUCCEEDED, self.now
        job.running[run.gang_key] -= 1
        job.succeeded.add(run.member)
        self.backend.set_phase(run.uid, PodPhase.SUCCEEDED)
        if len(job.succeeded) == job.job.pod_count:
            took = self.now - job.job.submit_at
            self._end(job, Outcome.COMPLETED, f"all {job.job.pod_count} pods finished; "
                      f"{took:g}s after submission")

    def _lost(self, run: PodRun, why: str) -> None:
        job = run.job
        run.status, run.ended = PodStatus.FAILED, self.now
        run.token += 1
        job.running[run.gang_key] -= 1
        job.pod_failures += 1
        behaviour = job.job.behaviour
        if behaviour.on_pod_failure is FailurePolicy.FAIL:
            self._note(job, why)
            self._end(job, Outcome.FAILED, f"{why}; onPodFailure is fail")
            return
        self._note(job, f"{why}; replaced in {behaviour.restart_delay:g}s")
        self.at(self.now + behaviour.restart_delay,
                functools.partial(self._replace, job, job.attempt, run))

    def _replace(self, job: JobRun, attempt: int, lost: PodRun) -> None:
        if job.done or job.attempt != attempt:
            return
        job.replacements += 1
        self._create_pod(job, lost.template, lost.member, f"{lost.member}-r{job.replacements}")

    def _job_timeout(self, run: JobRun, attempt: int) -> None:
        if run.done or run.attempt != attempt or run.gang_running:
            return
        behaviour = run.job.behaviour
        run.job_timeouts += 1
        running = sum(run.running.values())
        needed = sum(run.job.gang.values())
        text = (f"gave up (driverTimeoutSeconds): {running}/{needed} gang pods running "
                f"{behaviour.job_timeout:g}s after the first pod started")
        if run.attempt <= behaviour.max_retries:
            self._note(run, f"{text}; retrying in {behaviour.retry_delay:g}s")
            run.close_segments(self.now)
            self.partial.end_attempt(run.key, self.now)
            self._delete_attempt(run)
            self._remove_object(run)
            self.at(self.now + behaviour.retry_delay,
                    functools.partial(self._start_attempt, run))
            return
        tries = "" if run.attempt == 1 else f", on all {run.attempt} attempts"
        self._end(run, Outcome.TIMED_OUT, text + tries)

    def _end(self, run: JobRun, outcome: Outcome, reason: str) -> None:
        """The job is over: delete what still waits or runs, garbage-collect the rest later."""
        if run.done:
            return
        run.outcome, run.reason, run.finished_at = outcome, reason, self.now
        self.ended += 1
        self._note(run, f"{outcome.value}: {reason}")
        run.close_segments(self.now)
        self.partial.end_attempt(run.key, self.now)
        for pod_run in list(run.pods.values()):
            if pod_run.status in (PodStatus.PENDING, PodStatus.RUNNING):
                self._delete(pod_run)
        self.at(self.now + self.workload.settings.gc_after,
                functools.partial(self._collect, run, run.attempt))

    def _collect(self, run: JobRun, attempt: int) -> None:
        if run.attempt != attempt:
            return
        self._delete_attempt(run)
        self._remove_object(run)

    def _delete(self, pod_run: PodRun) -> None:
        if pod_run.status is PodStatus.RUNNING:
            pod_run.job.running[pod_run.gang_key] -= 1
        if pod_run.status in (PodStatus.PENDING, PodStatus.RUNNING):
            pod_run.status, pod_run.ended = PodStatus.GONE, self.now
        pod_run.token += 1
        if self.backend.has_pod(pod_run.uid):
            self.backend.delete_pod(pod_run.uid)

    def _delete_attempt(self, run: JobRun) -> None:
        for pod_run in list(run.pods.values()):
            self._delete(pod_run)
            self.pods.pop(pod_run.uid, None)
        run.pods.clear()

    def _remove_object(self, run: JobRun) -> None:
        if run.job.app is not None:
            self.backend.remove_app(run.job.app.key)
        if run.job.group is not None:
            self.backend.remove_group(run.job.group.key)

    # --- the event script ----------------------------------------------------------------

    def _script(self, kind: EventKind, target: str) -> None:
        self.dirty = True
        if kind is EventKind.POD_FAILS:
            job_name, _, member = target.partition("/")
            run = self.by_name[job_name]
            victim = next((p for p in run.pods.values()
                           if p.member == member and p.status is PodStatus.RUNNING), None)
            if victim is None:
                self._note(run, f"podFails {member}: not running, nothing happens")
                return
            self._lost(victim, f"pod {member} failed")
            self.backend.set_phase(victim.uid, PodPhase.FAILED)
            return
        node = self.nodes[target]
        if kind is EventKind.NODE_DOWN:
            if target in self.down:
                return
            self.down.add(target)
            self.timeline.add(self.now, f"node {target}", SOURCE, "went down")
            self.usage.capacity(node.allocatable, -1)
            self.backend.remove_node(target)
        elif target in self.down:
            self.down.discard(target)
            self.timeline.add(self.now, f"node {target}", SOURCE, "came back")
            self.usage.capacity(node.allocatable, 1)
            self.backend.add_node(node)

    def _note(self, run: JobRun, text: str) -> None:
        self.timeline.add(self.now, f"{KIND_NAMES[run.job.kind]} {run.job.name}", SOURCE, text)


def _gang_text(job: Job) -> str:
    if job.gang.keys() == {None}:
        need = job.gang[None]
        return "none" if need == 1 and job.kind is not JobKind.POD_GROUP else f"{need} pods"
    return " + ".join(f"{need} {key}" for key, need in job.gang.items())


def _stall_reason(run: JobRun) -> str:
    if run.first_start is None:
        return "no pod of the job ever started"
    if not run.gang_running:
        running = sum(run.running.values())
        return (f"{running}/{sum(run.job.gang.values())} gang pods running; "
                "the rest never got a node")
    return f"{len(run.succeeded)}/{run.job.pod_count} pods finished; the rest never ran"
