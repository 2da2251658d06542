"""Random workloads for the property tests: operations drawn by hypothesis, run on a world.

A workload is a cluster (nodes, a queue tree) and a list of operations: applications
(gang or not) and their real pods arriving, PodGroups and their members, ordinary pods,
pods finishing or deleted by someone else, nodes going away, binds failing, apps
deleted, and time passing. Operations pick their target by index among what exists when
they run, so any list of operations is valid and hypothesis can shrink it freely.

:func:`check_invariants` states what must hold after every cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from builders import make_app, make_group, make_node, make_pod, make_podgroup, make_queue, res
from gangsched.core.gangs import swap
from gangsched.core.scheduler import Scheduler
from gangsched.core.state import invariants
from gangsched.core.values.constraints import Taint, TaintEffect, Toleration, TolerationOperator
from gangsched.core.values.decisions import (
    BindPod,
    Decision,
    DeletePod,
    DeleteReason,
    EvictPod,
    RecordEvent,
)
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    Pod,
    PodGroupSpec,
    PodPhase,
    PodUID,
    SortPolicy,
    Style,
)
from gangsched.core.values.resources import Resources
from hypothesis import strategies as st
from simworld import SimWorld

QUEUES = ("default", "qa", "qb", "qc", "nowhere")
SIZES = ("500m", "1", "2", "3")
TAINT = Taint("dedicated", "batch", TaintEffect.NO_SCHEDULE)
TOLERATE = Toleration("dedicated", TolerationOperator.EQUAL, "batch", TaintEffect.NO_SCHEDULE)


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[tuple[int, int, bool, bool], ...]
    """(cpu, pod slots, tainted, ready) per node."""
    root_cpu: int | None
    qa_cpu: int | None
    qb_cpu: int | None
    qa_policy: SortPolicy


Op = tuple[str, int, int, int]


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    nodes = draw(st.lists(
        st.tuples(st.integers(2, 8), st.sampled_from((4, 110)),
                  st.sampled_from((False, False, True)),
                  st.sampled_from((True, True, True, False))),
        min_size=1, max_size=5,
    ))
    return Cluster(
        nodes=tuple(nodes),
        root_cpu=draw(st.one_of(st.none(), st.integers(4, 16))),
        qa_cpu=draw(st.one_of(st.none(), st.integers(2, 10))),
        qb_cpu=draw(st.one_of(st.none(), st.integers(2, 10))),
        qa_policy=draw(st.sampled_from((SortPolicy.FIFO, SortPolicy.PRIORITY))),
    )


OP_KINDS = (
    "gang", "gang", "real", "real", "real", "plain", "podgroup", "member", "member",
    "ordinary", "finish", "delete", "node_gone", "node_add", "fail_bind", "app_gone",
    "restart", "hold", "quota", "respec", "tick", "tick", "tick", "tick",
)

ops = st.lists(
    st.tuples(st.sampled_from(OP_KINDS), st.integers(0, 1000), st.integers(0, 1000),
              st.integers(0, 1000)),
    min_size=1, max_size=50,
)


@dataclass
class Runner:
    """Interprets operations against a world, checking invariants after every cycle."""

    world: SimWorld
    now: float = 0.0
    counter: int = 0
    reserved: set[AppKey] = field(default_factory=set)
    """Gang apps whose current run has reserved its gang (a GangReserved event)."""
    gang_bound: set[GroupKey] = field(default_factory=set)
    """PodGroups that have had their gang bound."""
    check: bool = True
    log: list[Decision] = field(default_factory=list)
    seen: dict[PodUID, Pod] = field(default_factory=dict)
    """Every pod seen in the world, so a decision about a pod deleted since can be read."""
    held_ever: set[str] = field(default_factory=set)
    """Placeholders whose deletion was held up at some point."""
    cluster: Cluster | None = None

    def setup(self, cluster: Cluster) -> None:
        self.cluster = cluster
        w = self.world
        w.add_queue(make_queue("root", max=_cpu(cluster.root_cpu)))
        w.add_queue(make_queue("qa", parent="root", max=_cpu(cluster.qa_cpu),
                               policy=cluster.qa_policy))
        w.add_queue(make_queue("qb", parent="root", max=_cpu(cluster.qb_cpu),
                               policy=SortPolicy.STATE_AWARE, state_aware_timeout=30))
        w.add_queue(make_queue("qc", policy=SortPolicy.FIFO))
        for i, (cpu, slots, tainted, ready) in enumerate(cluster.nodes):
            w.add_node(make_node(f"n{i}", cpu=cpu, memory="16Gi", pods=slots,
                                 taints=(TAINT,) if tainted else (), ready=ready))
        # Another scheduler's pod on the first node: it takes capacity, never queue quota.
        w.add_pod(make_pod("foreign", cpu="500m", ours=False, node="n0",
                           phase=PodPhase.RUNNING))
        self.step()

    def _name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def run(self, operations: Iterable[Op]) -> None:
        for op in operations:
            self.apply(op)
            self.step()

    def apply(self, op: Op) -> None:
        kind, a, b, c = op
        getattr(self, f"_{kind}")(a, b, c)

    def _gangs(self) -> list[AppSpec]:
        return [spec for spec in self.world.apps.values() if spec.gang]

    def _gang(self, a: int, b: int, c: int) -> None:
        w = self.world
        n = self._name("app")
        groups = [make_group("g", 1 + a % 3, cpu=SIZES[b % 3])]
        if c % 3 == 0:
            groups.append(make_group("h", 1 + c % 2, cpu="500m", tolerations=(TOLERATE,)))
        app = make_app(n, *groups, queue=QUEUES[(a // 3) % 4 if c % 11 else 4],
                       style=Style.HARD if b % 2 else Style.SOFT,
                       placeholder_timeout=float(5 + b % 40),
                       waiting_timeout=float(5 + c % 20), creation=self.now)
        w.add_app(app)
        for group in app.task_groups:
            # Its pods come with it (all of them, about half: a mixed gang whose other
            # members come later, or none), held in memory rather than placeholders.
            present = (0, group.min_member, (group.min_member + 1) // 2, group.min_member)
            for _ in range(present[c % 4]):
                w.add_pod(make_pod(self._name("r"), cpu=SIZES[b % 3], app=n,
                                   task_group=group.name, creation=self.now,
                                   tolerations=group.tolerations))

    def _real(self, a: int, b: int, c: int) -> None:
        gangs = self._gangs()
        if gangs:
            app = gangs[a % len(gangs)]
            group = app.task_groups[b % len(app.task_groups)]
            size = SIZES[c % 4]  # sometimes larger than the task group's minResource
            self.world.add_pod(make_pod(self._name("r"), cpu=size, app=app.name,
                                        task_group=group.name, tolerations=group.tolerations,
                                        creation=self.now, priority=c % 3))

    def _plain(self, a: int, b: int, c: int) -> None:
        w = self.world
        n = f"plain{a % 3}"
        if AppKey(f"default/{n}") not in w.apps:
            w.add_app(make_app(n, queue=QUEUES[b % 4], creation=self.now))
        w.add_pod(make_pod(self._name("p"), cpu=SIZES[c % 3], app=n, creation=self.now))

    def _podgroup(self, a: int, b: int, c: int) -> None:
        w = self.world
        n = self._name("pg")
        key = GroupKey(f"default/{n}")
        partner = list(w.groups)[-1:] if c % 2 else []
        mode = GangMode.STRICT if a % 2 else GangMode.NON_STRICT
        w.add_group(make_podgroup(n, 1 + a % 3, mode=mode, timeout=float(5 + b % 30),
                                  gang_group=(*partner, key) if partner else (),
                                  queue=QUEUES[c % 4], creation=self.now))
        if partner:  # the partner names this group too
            w.add_group(_with_partner(w.groups[partner[0]], key))
        if b % 2:  # its members come with it
            for _ in range(1 + a % 3):
                w.add_pod(make_pod(self._name("m"), cpu=SIZES[c % 3], pod_group=n,
                                   creation=self.now))

    def _member(self, a: int, b: int, c: int) -> None:
        w = self.world
        if w.groups:
            keys = sorted(w.groups)
            spec = w.groups[keys[a % len(keys)]]
            w.add_pod(make_pod(self._name("m"), cpu=SIZES[b % 3], pod_group=spec.name,
                               creation=self.now, priority=c % 2))

    def _ordinary(self, a: int, b: int, c: int) -> None:
        self.world.add_pod(make_pod(self._name("o"), cpu=SIZES[a % 4], queue=QUEUES[b % 4],
                                    priority=c % 3, creation=self.now,
                                    tolerations=(TOLERATE,) if c % 2 else ()))

    def _finish(self, a: int, b: int, c: int) -> None:
        w = self.world
        bound = sorted(p.name for p in w.pods.values()
                       if p.node_name and p.ours and not p.placeholder and p.active)
        if bound:
            w.finish(bound[a % len(bound)], PodPhase.SUCCEEDED if b % 3 else PodPhase.FAILED)

    def _delete(self, a: int, b: int, c: int) -> None:
        names = sorted(p.name for p in self.world.pods.values() if p.ours)
        if names:  # by someone else: a user, the garbage collector, an eviction
            self.world.delete(names[a % len(names)])

    def _node_gone(self, a: int, b: int, c: int) -> None:
        names = sorted(self.world.nodes)
        if len(names) > 1:
            self.world.remove_node(names[a % len(names)])

    def _node_add(self, a: int, b: int, c: int) -> None:
        if self.cluster is None:
            return
        index = a % len(self.cluster.nodes)
        if f"n{index}" not in self.world.nodes:
            cpu, slots, tainted, ready = self.cluster.nodes[index]
            self.world.add_node(make_node(f"n{index}", cpu=cpu, memory="16Gi", pods=slots,
                                          taints=(TAINT,) if tainted else (), ready=ready))

    def _fail_bind(self, a: int, b: int, c: int) -> None:
        self.world.fail_next_binds.append((409, 404, 500, 500)[b % 4])

    def _app_gone(self, a: int, b: int, c: int) -> None:
        keys = sorted(self.world.apps)
        if keys and a % 4 == 0:
            self.world.remove_app(keys[b % len(keys)])

    def _restart(self, a: int, b: int, c: int) -> None:
        self.world.restart(pods_first=bool(a % 2))

    def _hold(self, a: int, b: int, c: int) -> None:
        names = sorted(p.name for p in self.world.placeholders())
        if names:  # its deletion is not carried out until the next long tick
            name = names[a % len(names)]
            self.world.hold_deletes.add(name)
            self.held_ever.add(name)

    def _quota(self, a: int, b: int, c: int) -> None:
        queue = self.world.queues[("qa", "qb", "root")[a % 3]]
        if queue.max is not None:  # only ever raised: lowering it is not a violation
            self.world.add_queue(dataclasses.replace(queue, max=queue.max + res(1 + b % 4)))

    def _respec(self, a: int, b: int, c: int) -> None:
        gangs = self._gangs()
        if gangs:
            app = gangs[a % len(gangs)]
            first, *rest = app.task_groups
            size = max(1, first.min_member + (1 if b % 2 else -1))
            self.world.add_app(dataclasses.replace(
                app, task_groups=(dataclasses.replace(first, min_member=size), *rest)))

    def _tick(self, a: int, b: int, c: int) -> None:
        self.now += (0.0, 1.0, 3.0, 10.0, 40.0)[a % 5]
        if a % 5 == 4:
            self.world.hold_deletes.clear()

    def step(self) -> list[Decision]:
        w = self.world
        bound_before = _bound_members(w)
        self.seen.update(w.pods)
        decisions = w.step(self.now)
        self.seen.update(w.pods)
        self.log.extend(decisions)
        if self.check:
            self._check_gangs(decisions, bound_before)
            check_invariants(w, self.held_ever)
        return decisions

    def _check_gangs(self, decisions: list[Decision], bound_before: dict[GroupKey, int]) -> None:
        """Hard gangs and PodGroups: no real member bound before the gang is reserved; a
        member bound directly (held in memory) only when every task group of its gang has
        ``minMember`` members bound or being bound, or allocated placeholders."""
        w = self.world
        self._check_direct_binds(decisions)
        binds: dict[GroupKey, int] = {}
        for d in decisions:
            if isinstance(d, RecordEvent) and d.target.kind == "Application":
                app_key = AppKey(f"{d.target.namespace}/{d.target.name}")
                if d.reason == "GangReserved":
                    self.reserved.add(app_key)
                elif d.reason in ("Resubmitted", "SpecChanged"):
                    self.reserved.discard(app_key)
            if not isinstance(d, BindPod):
                continue
            pod = self.seen.get(d.uid)
            if pod is None:
                assert d.reason == "PlaceholderAllocated", d
                continue  # a placeholder created, bound and replaced within this cycle
            if pod.app is not None and not pod.placeholder:
                app = w.apps.get(pod.app)
                if app is not None and app.gang and app.policy.style is Style.HARD:
                    assert pod.app in self.reserved, f"{pod.name} bound before its gang reserved"
            if pod.pod_group is not None and pod.app is None:
                binds[pod.pod_group] = binds.get(pod.pod_group, 0) + 1
        for key in sorted(binds):
            if key in self.gang_bound or key not in w.groups:
                continue
            for member in w.groups[key].members_of_gang_group:
                group = w.groups.get(member)
                assert group is not None, f"{key} bound while GangGroup member {member} is gone"
                placed = bound_before.get(member, 0) + binds.get(member, 0)
                assert placed >= group.min_member, (
                    f"{key} bound with {member} at {placed}/{group.min_member}")
                self.gang_bound.add(member)


    def _check_direct_binds(self, decisions: list[Decision]) -> None:
        w = self.world
        for d in decisions:  # an eviction is for a bound pod: a pending one would be lost
            if isinstance(d, EvictPod) and d.uid in self.seen:
                assert self.seen[d.uid].node_name is not None, f"{d.name} evicted unbound"
        asked = {d.uid for d in decisions if isinstance(d, BindPod)}
        apps = {self.seen[d.uid].app for d in decisions
                if isinstance(d, BindPod) and d.reason == "GangReserved" and d.uid in self.seen}
        for key in sorted(k for k in apps if k is not None and k in w.apps):
            spec = w.apps[key]
            for group in spec.task_groups:
                # Bound, or asked to be bound in this cycle (a failed bind may have made
                # the world delete it since).
                held = {p.uid for p in w.pods.values()
                        if p.app == key and p.task_group == group.name and p.active
                        and not p.terminating and p.node_name}
                held.update(uid for uid in asked if (pod := self.seen.get(uid)) is not None
                            and pod.app == key and pod.task_group == group.name)
                # A placeholder given up in this cycle for a real member that takes its
                # node (the swap binds that member once the deletion is seen).
                held.update(d.uid for d in decisions if isinstance(d, DeletePod)
                            and d.reason is DeleteReason.PLACEHOLDER_REPLACED
                            and (pod := self.seen.get(d.uid)) is not None
                            and pod.app == key and pod.task_group == group.name
                            and pod.node_name is not None)
                assert len(held) >= group.min_member, (
                    f"{key} bound directly with task group {group.name} at "
                    f"{len(held)}/{group.min_member}")


def _cpu(cpu: int | None) -> Resources | None:
    return None if cpu is None else res(cpu)


def _with_partner(spec: PodGroupSpec, partner: GroupKey) -> PodGroupSpec:
    return dataclasses.replace(spec, gang_group=tuple(sorted({*spec.gang_group, spec.key,
                                                              partner})))


def _bound_members(w: SimWorld) -> dict[GroupKey, int]:
    found: dict[GroupKey, int] = {}
    for pod in w.pods.values():
        if pod.pod_group is not None and pod.node_name is not None:
            found[pod.pod_group] = found.get(pod.pod_group, 0) + 1
    return found


def _queue_of(w: SimWorld, pod: Pod) -> str:
    if pod.app is not None and pod.app in w.apps:
        return w.apps[pod.app].queue
    if pod.pod_group is not None and pod.pod_group in w.groups:
        return w.groups[pod.pod_group].queue
    return pod.queue or "default"


def _path(w: SimWorld, queue: str) -> list[str]:
    chain: list[str] = []
    current: str | None = queue
    while current is not None and current not in chain:
        chain.append(current)
        spec = w.queues.get(current)
        current = spec.parent if spec is not None else None
    return chain


PendingCounts = dict[tuple[str, Resources, bool], int]


def pending_counts(s: Scheduler) -> tuple[PendingCounts, PendingCounts]:
    """The pending pods by (queue, request, invalid): as the scheduler keeps them by shape,
    and walked one by one."""
    walked: PendingCounts = {}
    for uid in s.pending:
        ps = s.pods[uid]
        queue = s.queue_of(ps)
        assert queue is not None
        key = (queue, ps.request, bool(ps.pod.invalid))
        walked[key] = walked.get(key, 0) + 1
    kept: PendingCounts = {}
    for shape, count in s.pending_shapes.counts.items():
        key = (s.queue_for(shape.app, shape.group, shape.queue), shape.request, shape.invalid)
        kept[key] = kept.get(key, 0) + count
    return kept, walked


def pending_kinds(s: Scheduler) -> dict[str, set[PodUID]]:
    """The pending pods by kind, as the scheduler keeps them."""
    kinds = s.pending_shapes
    return {"app": set(kinds.of_apps), "group": set(kinds.of_groups), "plain": set(kinds.plain),
            "requestless": set(kinds.requestless)}


def walked_kinds(s: Scheduler) -> dict[str, set[PodUID]]:
    """The pending pods by kind, walked one by one: an Application's members, a PodGroup's
    members of no Application, and pods of neither; and those in no PodGroup that request
    nothing."""
    found: dict[str, set[PodUID]] = {"app": set(), "group": set(), "plain": set(),
                                     "requestless": set()}
    for uid in s.pending:
        pod = s.pods[uid].pod
        kind = "app" if pod.app is not None else "group" if pod.pod_group is not None else "plain"
        found[kind].add(uid)
        if pod.pod_group is None and not pod.requests:
            found["requestless"].add(uid)
    return found


def check_invariants(w: SimWorld, held: set[str] | frozenset[str] = frozenset()) -> None:
    """What must hold after every cycle, computed from the world, not the core's books.

    Placeholders in ``held`` had their deletion held up: they may linger until the core
    asks again.
    """
    s = w.scheduler
    node_used: dict[str, Resources] = {}
    queue_used: dict[str, Resources] = {}
    one = res(pods=1)
    for pod in w.pods.values():
        assert w.bind_count.get(pod.uid, 0) <= 1, f"{pod.name} bound twice"
        ps = s.pods.get(pod.uid)
        where = pod.node_name or (ps.node if ps is not None else None)
        if where is None or not pod.active:
            continue
        request = pod.requests + one
        node_used[where] = node_used.get(where, Resources.ZERO) + request
        if pod.ours:
            for level in _path(w, _queue_of(w, pod)):
                queue_used[level] = queue_used.get(level, Resources.ZERO) + request
    for name, node in w.nodes.items():
        used = node_used.get(name, Resources.ZERO)
        assert used.fits_in(node.allocatable), f"node {name} over allocatable: {used}"
        nominated = s.evictions.held_on(name)  # room held for a preemptor counts as used
        swapping = swap.held_on(s, name)  # and room held for a swap's real pod
        assert s.cluster.nodes[name].used == used + nominated + swapping, (
            f"node {name}: counts differ")
        assert (used + nominated + swapping).fits_in(node.allocatable), (
            f"node {name} over allocatable with the room held in memory")
    assert invariants.over_committed(s) == [], "the core's books over-commit a node"
    for name, spec in w.queues.items():
        used = queue_used.get(name, Resources.ZERO)
        assert spec.within_max(used), f"queue {name} over max: {used} > {spec.max}"
    kept, walked = pending_counts(s)
    assert kept == walked, f"pending pods kept by shape {kept}, walked {walked}"
    assert pending_kinds(s) == walked_kinds(s)
    for pod in w.placeholders():
        assert pod.app in w.apps or pod.name in held, f"{pod.name} outlived its application"
    for key, rt in s.apps.items():
        if rt.state.value in ("Killed", "Completed", "Resuming") or rt.placeholders_expired:
            left = [p.name for p in w.placeholders(key) if p.name not in held]
            assert not left, f"{key} is {rt.state.value} but placeholders remain: {left}"


def gang_specs(w: SimWorld) -> list[AppSpec]:
    return [spec for spec in w.apps.values() if spec.gang]
