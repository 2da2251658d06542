"""How fast the scheduling core places pods, and how the cost grows with nodes and pods.

    python3 bench/core.py                      # reference run plus the sweep
    python3 bench/core.py --quick              # smaller sweep, for a quick look
    python3 bench/core.py --nodes 2000 --pods 8000 --no-sweep
    python3 bench/core.py --profile            # where the reference run spends its time
    python3 bench/core.py --repeat 3           # keep the fastest of 3 runs per cell
    python3 bench/core.py --backlog            # only the backlog sweep
    python3 bench/core.py --topology           # racks and blocks (see bench/topology_mix.py)
    python3 bench/core.py --dra                # devices through DRA (see bench/dra_mix.py)

Not a test: it prints a table. Everything runs in this one thread ("one core").

Workload: ``--nodes`` nodes of 32 cpu / 128Gi / 110 pods, and ``--pods`` pending pods in
gangs of 1 to 64: Applications with two task groups (the core creates placeholders, the
world creates them, the core binds them, then swaps each real pod into its placeholder's
place), PodGroups (members assumed, then bound all together), and plain pods. Pod sizes
are scaled down when needed so that the pods use at most 60% of the cluster, so every
pod can be placed and every cell of the sweep measures the same thing.

The reference run is made twice (``--mix``): plain, and with the *placement mix*: nodes
labelled with hostname and one of 10 zones, every pod labelled with its gang, about a
fifth of the gangs one pod per node (required pod anti-affinity on hostname) and a fifth
spread over zones (DoNotSchedule, maxSkew 1), so that well over 30% of the pods carry
anti-affinity or spread; the pods outside gangs (``--default-spread all``: every pod)
count as a ReplicaSet's, scored by the cluster's default spread constraints; and
volumes: one local PersistentVolume per node (class ``local``, WaitForFirstConsumer, no
provisioner) and, for about a tenth of the gangs, one claim per pod, on ``local`` (a
static PV to match, bound before the pod) or on a provisioned WaitForFirstConsumer class
(the claim annotated with the pod's node). Every volume write is fed back as the API
would show it (see ``bench/volumes.py``).

Measured: the scheduler cycles (through :class:`gangsched.sim.world.World`, so that every
placeholder creation, bind and deletion makes the round trip as observations) from the
first cycle until every real pod is bound. Observing the initial objects is timed apart.
*Placements/s* counts real pods bound per second of cycle time; *binds/s* counts every
bind the core asked for (placeholders and real pods). Times are CPU seconds of this
process (``time.process_time``), so that other work on the machine does not count; the
wall-clock total is shown too.

Backlog sweep (``--backlog``): the cost of a cycle must follow what changed, not the
depth of the queue. ``--backlog-nodes`` nodes and pending gangs (the same mix, unscaled)
asking 1, 2, 5 and 10 times the cluster's cpu, under the default actions (enqueue,
allocate, backfill, preempt, reclaim); pods finish :data:`LIFETIME` seconds after they
are bound, so the queue keeps moving. It prints the CPU cost per cycle and per placement
and the ratio to the 1x point; the target is at most 2x at 10x. Each point is the
fastest of ``--repeat`` runs, the points taken in turn (1x, 2x, 5x, 10x, then again),
each run in an interpreter of its own, after an untimed run of the same point: run one
after the other in one process, a point came out up to a third slower or faster
depending on what the runs before it left in the heap, and a point run cold paid for
warming the interpreter (the 1x point about 0.2 s, nearly half of its cost).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import cProfile
import dataclasses
import gc
import hashlib
import io
import multiprocessing
import platform
import pstats
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from gangsched.core.scheduler import Scheduler
from gangsched.core.values.constraints import (
    NodeAffinity,
    NodeSelectorTerm,
    SelectorOperator,
    SelectorRequirement,
)
from gangsched.core.values.decisions import AnnotateClaim, BindGang, BindPod, BindVolume, Decision
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    Node,
    Pod,
    PodGroupSpec,
    PodPhase,
    PodUID,
    QueueSpec,
    SchedulerConfig,
    SchedulingPolicy,
    SortPolicy,
    TaskGroup,
)
from gangsched.core.values.observations import Observation, VolumeObserved
from gangsched.core.values.placement_terms import (
    NO_PLACEMENT,
    AffinityTerm,
    Placement,
    SpreadConstraint,
    WhenUnsatisfiable,
)
from gangsched.core.values.resources import Resources
from gangsched.core.values.selectors import LabelSelector
from gangsched.core.values.volume_specs import (
    AccessMode,
    BindingMode,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
    PodClaim,
    PodVolumes,
    StorageClass,
)
from gangsched.sim.world import World

NODE = Resources.from_k8s({"cpu": 32, "memory": "128Gi", "pods": 110})
GANG_SIZES = (1, 2, 4, 8, 8, 16, 16, 32, 64)
TARGET = 5000.0
"""Placements per second the core should reach on the reference workload."""


@dataclass(frozen=True, slots=True)
class Workload:
    nodes: list[Node]
    apps: list[AppSpec]
    groups: list[PodGroupSpec]
    pods: list[Pod]
    plain: int
    volumes: list[StorageClass | PersistentVolume] = dataclasses.field(default_factory=list)
    """Storage classes and PersistentVolumes (the mix's local volumes)."""
    claims: dict[str, PersistentVolumeClaim] = dataclasses.field(default_factory=dict)
    """The pods' claims, by name."""

    @property
    def gangs(self) -> str:
        return f"{len(self.apps)} apps, {len(self.groups)} PodGroups, {self.plain} plain pods"

    @property
    def constrained(self) -> str:
        """The share of pods with anti-affinity or spread, in words."""
        anti = sum(1 for p in self.pods if p.placement.anti_affinity)
        spread = sum(1 for p in self.pods if p.placement.spread)
        share = 100 * (anti + spread) / max(1, len(self.pods))
        local = sum(1 for c in self.claims.values() if c.storage_class == LOCAL.name)
        return (f"{anti} pods with required anti-affinity, {spread} with topology spread "
                f"({share:.0f}%); {len(self.claims)} with a claim ({local} on local "
                f"volumes, {len(self.claims) - local} provisioned)")


HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
ZONES = 10
VOLUME_GANGS = 0.1
"""The share of gangs of the mix whose pods each have a claim."""
LOCAL = StorageClass("local", "kubernetes.io/no-provisioner", BindingMode.WAIT_FOR_FIRST_CONSUMER)
FAST = StorageClass("fast", "csi.example.com", BindingMode.WAIT_FOR_FIRST_CONSUMER)
RWO = frozenset({AccessMode.READ_WRITE_ONCE})
GI = 2**30


def local_volume(node: str) -> PersistentVolume:
    """A 100Gi local volume that only ``node`` reaches."""
    reach = NodeAffinity((NodeSelectorTerm((SelectorRequirement(
        HOST, SelectorOperator.IN, (node,)),)),))
    return PersistentVolume(f"local-{node}", resource_version="1", capacity=100 * GI,
                            access_modes=RWO, storage_class=LOCAL.name, node_affinity=reach)


DEFAULT_SPREAD = "plain"
PERCENTAGE_OF_NODES_TO_SCORE = 0
"""kube-scheduler's ``percentageOfNodesToScore`` for the runs (0: its adaptive default)."""
"""Which pods of the mix count as a ReplicaSet's, so that the cluster's default spread
constraints score them (kube-scheduler gives them to no Job's or gang's pod): ``plain``
(the pods outside gangs) or ``all`` (``--default-spread``)."""


def _placement(rng: random.Random, name: str, size: int, mix: bool,
               kind: str = "pods") -> Placement:
    """With ``mix``: every pod labelled with its gang; about a fifth of the gangs one per
    node (required anti-affinity on hostname), about a fifth spread over zones
    (DoNotSchedule, maxSkew 1); the rest labelled only. The pods outside gangs (or every
    pod, see :data:`DEFAULT_SPREAD`) count as a ReplicaSet's (``default_spread``): the
    cluster's default spread constraints score those without constraints of their own, as
    kube-scheduler scores such pods."""
    if not mix:
        return NO_PLACEMENT
    default_spread = DEFAULT_SPREAD == "all" or kind == "pods"
    labels = (("job", name),)
    selector = LabelSelector.build(dict(labels))
    draw = rng.random()
    if draw < 0.2 and size > 1:
        return Placement(labels=labels, anti_affinity=(AffinityTerm(HOST, selector),),
                         default_spread=default_spread)
    if draw < 0.4 and size > 1:
        return Placement(labels=labels, spread=(SpreadConstraint(
            1, ZONE, WhenUnsatisfiable.DO_NOT_SCHEDULE, selector),),
            default_spread=default_spread)
    return Placement(labels=labels, default_spread=default_spread)


def cluster(nodes: int) -> list[Node]:
    """The benchmark's nodes: 32 cpu, 128Gi, 110 pods; a pool, a hostname and a zone."""
    return [Node(f"node-{i:05d}", NODE, {"pool": "a" if i % 2 else "b", HOST: f"node-{i:05d}",
                                         ZONE: f"zone-{i % ZONES}"})
            for i in range(nodes)]


def build(nodes: int, pods: int, seed: int = 7, *, mix: bool = False) -> Workload:
    """A deterministic workload of ``pods`` pending pods in gangs, on ``nodes`` nodes;
    ``mix`` adds pod labels, anti-affinity and spread (see :func:`_placement`), local
    volumes and claims for about a tenth of the gangs (drawn apart, so that the rest of
    the mix is the same with or without them)."""
    rng = random.Random(seed)
    volume_rng = random.Random(seed + 1)
    node_list = cluster(nodes)
    shapes: list[tuple[str, int]] = []
    left = pods
    while left > 0:
        size = min(left, rng.choice(GANG_SIZES))
        draw = rng.random()
        shapes.append(("pods" if size == 1 or draw < 0.3 else
                       "group" if draw < 0.6 else "app", size))
        left -= size
    sizes = [(rng.choice((1, 2, 4)), rng.choice((2, 4, 8))) for _ in shapes]
    demand_cpu = sum(c * n for (c, _), (_, n) in zip(sizes, shapes, strict=True))
    demand_mem = sum(m * n for (_, m), (_, n) in zip(sizes, shapes, strict=True))
    scale = min(1.0, 0.6 * nodes * 32 / demand_cpu, 0.6 * nodes * 128 / demand_mem)
    apps: list[AppSpec] = []
    groups: list[PodGroupSpec] = []
    pod_list: list[Pod] = []
    plain = 0
    claims: dict[str, PersistentVolumeClaim] = {}
    for index, ((kind, size), (cpu, mem)) in enumerate(zip(shapes, sizes, strict=True)):
        request = Resources.from_k8s({"cpu": f"{max(1, int(cpu * scale * 1000))}m",
                                      "memory": f"{max(64, int(mem * scale * 1024))}Mi"})
        creation = float(index)
        name = f"{kind}-{index}"
        placement = _placement(rng, name, size, mix, kind)
        if kind == "pods":
            plain += size
            pod_list += [Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                             creation=creation, queue="default", placement=placement)
                         for i in range(size)]
        elif kind == "group":
            group_key = GroupKey(f"bench/{name}")
            groups.append(PodGroupSpec(group_key, uid=name, min_member=size, queue="batch",
                                       mode=GangMode.STRICT, creation=creation))
            pod_list += [Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                             creation=creation, pod_group=group_key, placement=placement)
                         for i in range(size)]
        else:
            key = AppKey(f"bench/{name}")
            groups_ = (TaskGroup("driver", 1, request, placement=placement),
                       TaskGroup("executor", size - 1, request, placement=placement)
                       ) if size > 1 else (TaskGroup("driver", 1, request, placement=placement),)
            apps.append(AppSpec(key, uid=name, queue="batch", task_groups=groups_,
                                policy=SchedulingPolicy(), creation=creation))
            for i in range(size):
                group = "driver" if i == 0 else "executor"
                pod_list.append(Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                                    creation=creation, app=key, task_group=group,
                                    placement=placement))
        if mix and volume_rng.random() < VOLUME_GANGS:
            cls = LOCAL if volume_rng.random() < 0.5 else FAST
            for at in range(len(pod_list) - size, len(pod_list)):
                pod = pod_list[at]
                claim = PersistentVolumeClaim("bench", f"data-{pod.name}", f"uid-data-{pod.name}",
                                              "1", cls.name, 10 * GI, RWO)
                claims[claim.name] = claim
                pod_list[at] = dataclasses.replace(pod, volumes=PodVolumes((PodClaim(claim.name),)))
    volumes: list[StorageClass | PersistentVolume] = []
    if mix:
        volumes = [LOCAL, FAST, *(local_volume(n.name) for n in node_list)]
    return Workload(node_list, apps, groups, pod_list, plain, volumes, claims)


@dataclass(frozen=True, slots=True)
class Result:
    nodes: int
    pods: int
    observe_seconds: float
    cycle_seconds: float
    cycles: int
    binds: int
    placed: int
    wall_seconds: float
    """Observing and cycling, by the wall clock (other processes on the machine count)."""
    binds_hash: str = ""
    """A digest of every bind in order (pod and node): equal digests, equal decisions."""

    @property
    def placements_per_second(self) -> float:
        return self.placed / self.cycle_seconds if self.cycle_seconds else 0.0

    @property
    def binds_per_second(self) -> float:
        return self.binds / self.cycle_seconds if self.cycle_seconds else 0.0

    @property
    def micros_per_placement(self) -> float:
        return 1e6 * self.cycle_seconds / self.placed if self.placed else float("inf")


def best(nodes: int, pods: int, repeat: int, *, mix: bool = False) -> Result:
    """The fastest of ``repeat`` runs (the least disturbed by the rest of the machine)."""
    return min((run(nodes, pods, mix=mix) for _ in range(max(1, repeat))),
               key=lambda r: r.cycle_seconds)


def run(nodes: int, pods: int, *, max_cycles: int = 10_000, mix: bool = False) -> Result:
    """Observe the workload, then cycle until every real pod is bound (or nothing moves)."""
    return run_workload(build(nodes, pods, mix=mix), pods, max_cycles=max_cycles)


def run_workload(workload: Workload, pods: int, *, max_cycles: int = 10_000,
                 on_bind: Callable[[BindPod], None] | None = None) -> Result:
    """:func:`run` of a workload already built (``pods``: its size, for the result);
    ``on_bind`` sees every bind (untimed work of its own counts in the cycle time)."""
    nodes = len(workload.nodes)
    gc.collect()
    started = time.process_time()
    wall = time.perf_counter()
    scheduler = Scheduler(SchedulerConfig(
        percentage_of_nodes_to_score=PERCENTAGE_OF_NODES_TO_SCORE))
    world = World(scheduler, keep_decisions=False)
    world.add_queue(QueueSpec("batch", sort_policy=SortPolicy.FIFO))
    for node in workload.nodes:
        world.add_node(node)
    for app in workload.apps:
        world.add_app(app)
    for group in workload.groups:
        world.add_group(group)
    volumes = {v.name: v for v in workload.volumes if isinstance(v, PersistentVolume)}
    claims = dict(workload.claims)
    for obj in [*workload.volumes, *claims.values()]:
        world.observe(VolumeObserved(obj))
    for pod in workload.pods:
        world.add_pod(pod)
    observed = time.process_time()
    real = {pod.uid for pod in workload.pods}
    binds = placed = cycles = 0
    bound: list[tuple[str, str]] = []
    now = 1.0
    while placed < len(real) and cycles < max_cycles:
        decisions = world.step(now)
        cycles += 1
        moved = 0
        for bind in _binds(decisions):
            if on_bind is not None:
                on_bind(bind)
            bound.append((bind.uid, bind.node))
            binds += 1
            moved += 1
            placed += bind.uid in real
            if bind.volumes:
                volumes_written(world, bind, volumes, claims)
        if not moved and not any(not isinstance(d, BindPod | BindGang) for d in decisions):
            break
        now += 0.01
    finished = time.process_time()
    digest = hashlib.blake2b(repr(bound).encode(), digest_size=8).hexdigest()
    return Result(nodes, pods, observed - started, finished - observed, cycles, binds, placed,
                  time.perf_counter() - wall, digest)


def _binds(decisions: list[Decision]) -> list[BindPod]:
    found: list[BindPod] = []
    for d in decisions:
        if isinstance(d, BindPod):
            found.append(d)
        elif isinstance(d, BindGang):
            found += d.binds
    return found


class Observer(Protocol):
    """A scheduler or a simulated world: what takes observations."""

    def observe(self, observation: Observation, /) -> object: ...


def volumes_written(world: Observer, bind: BindPod, volumes: dict[str, PersistentVolume],
                    claims: dict[str, PersistentVolumeClaim]) -> None:
    """Show the core what the API shows once ``bind``'s volume writes are done: the PV's
    claimRef and the claim bound (a static volume), or the claim annotated (provisioned)."""
    for w in bind.volumes:
        if isinstance(w, BindVolume):
            pv = volumes[w.volume] = dataclasses.replace(
                volumes[w.volume], phase="Bound",
                claim_ref=ClaimRef(w.namespace, w.claim, w.claim_uid))
            claim = claims[w.claim] = dataclasses.replace(claims[w.claim], volume_name=w.volume,
                                                          phase="Bound")
            world.observe(VolumeObserved(pv))
            world.observe(VolumeObserved(claim))
        elif isinstance(w, AnnotateClaim):
            claim = claims[w.claim] = dataclasses.replace(claims[w.claim], selected_node=w.node)
            world.observe(VolumeObserved(claim))


def _reference(nodes: int, pods: int, repeat: int, *, mix: bool = False) -> Result:
    workload = build(nodes, pods, mix=mix)
    print(f"{'With the placement mix' if mix else 'Reference'}: {nodes} nodes (32 cpu, 128Gi, "
          f"110 pods, {ZONES} zones), {pods} pending pods in gangs of 1 to 64: "
          f"{workload.gangs}")
    if mix:
        spread_by_default = sum(1 for p in workload.pods if p.placement.default_spread)
        print(f"  every pod labelled; {workload.constrained}; {spread_by_default} with the "
              "default spread constraints")
    result = best(nodes, pods, repeat, mix=mix)
    verdict = "meets" if result.placements_per_second >= TARGET else "MISSES"
    print(f"  observe nodes, apps, PodGroups and pods  {result.observe_seconds:8.2f} s cpu")
    print(f"  cycles until every pod is bound          {result.cycle_seconds:8.2f} s cpu "
          f"({result.cycles} cycles)")
    print(f"  both, by the wall clock                  {result.wall_seconds:8.2f} s")
    print(f"  pods placed                              {result.placed:8d}")
    print(f"  binds (placeholders and real pods)       {result.binds:8d}")
    print(f"  binds in order, hashed                   {result.binds_hash:>8}")
    print(f"  placements/s                             {result.placements_per_second:8.0f} "
          f"({verdict} the target of {TARGET:.0f}/s)")
    print(f"  binds/s                                  {result.binds_per_second:8.0f}")
    print(f"  cost per placement                       {result.micros_per_placement:8.1f} µs")
    return result


def _sweep(node_counts: list[int], pod_counts: list[int], repeat: int) -> None:
    results = {(n, p): best(n, p, repeat) for n in node_counts for p in pod_counts}
    print("\nSweep: µs of cycle time per pod placed (placements/s in brackets)")
    corner = "nodes / pods"
    print(f"{corner:>12}" + "".join(f"{p:>18}" for p in pod_counts))
    for n in node_counts:
        cells = ""
        for p in pod_counts:
            cell = results[(n, p)]
            cells += f"{cell.micros_per_placement:>9.1f} ({cell.placements_per_second:>6.0f})"
        print(f"{n:>12}" + cells)
    low, high = node_counts[0], node_counts[-1]
    print(f"\nGrowth with nodes ({low} -> {high}, x{high / low:g}), per pod count:")
    for p in pod_counts:
        ratio = results[(high, p)].micros_per_placement / results[(low, p)].micros_per_placement
        shape = "sub-linear" if ratio < high / low else "linear or worse"
        print(f"  {p:>6} pods: cost x{ratio:.2f} ({shape})")


# --- backlog sweep --------------------------------------------------------------------

BACKLOGS = (1, 2, 5, 10)
"""Pending work, in multiples of the cluster's cpu, for the backlog sweep."""
LIFETIME = 30.0
"""Seconds (one cycle each) a real pod of the backlog sweep runs before it finishes."""


def backlog(nodes: int, factor: int, seed: int = 11) -> Workload:
    """``nodes`` nodes and pending gangs asking ``factor`` times the cluster's cpu: the
    same mix of Applications, Strict PodGroups and plain pods as :func:`build`, unscaled,
    all created at once (a deep queue)."""
    rng = random.Random(seed)
    node_list = [Node(f"node-{i:05d}", NODE, {}) for i in range(nodes)]
    wanted = factor * nodes * NODE.get("cpu")
    apps: list[AppSpec] = []
    groups: list[PodGroupSpec] = []
    pod_list: list[Pod] = []
    plain = asked = index = 0
    while asked < wanted:
        size = rng.choice(GANG_SIZES)
        draw = rng.random()
        kind = "pods" if size == 1 or draw < 0.3 else "group" if draw < 0.6 else "app"
        cpu, mem = rng.choice((1, 2, 4)), rng.choice((2, 4, 8))
        request = Resources.from_k8s({"cpu": cpu, "memory": f"{mem}Gi"})
        asked += size * request.get("cpu")
        creation, name = float(index), f"{kind}-{index}"
        index += 1
        if kind == "pods":
            plain += size
            pod_list += [Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                             creation=creation, queue="default") for i in range(size)]
        elif kind == "group":
            key = GroupKey(f"bench/{name}")
            groups.append(PodGroupSpec(key, uid=name, min_member=size, queue="batch",
                                       mode=GangMode.STRICT, creation=creation))
            pod_list += [Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                             creation=creation, pod_group=key) for i in range(size)]
        else:
            app = AppKey(f"bench/{name}")
            apps.append(AppSpec(app, uid=name, queue="batch", task_groups=(
                TaskGroup("driver", 1, request), TaskGroup("executor", size - 1, request)),
                policy=SchedulingPolicy(), creation=creation))
            pod_list += [Pod(PodUID(f"{name}-{i}"), "bench", f"{name}-{i}", request,
                             creation=creation, app=app,
                             task_group="driver" if i == 0 else "executor")
                         for i in range(size)]
    return Workload(node_list, apps, groups, pod_list, plain)


@dataclass(frozen=True, slots=True)
class BacklogResult:
    factor: int
    pods: int
    cycles: int
    placed: int
    cycle_seconds: float

    @property
    def ms_per_cycle(self) -> float:
        return 1e3 * self.cycle_seconds / self.cycles

    @property
    def micros_per_placement(self) -> float:
        return 1e6 * self.cycle_seconds / self.placed if self.placed else float("inf")


def run_backlog(nodes: int, factor: int, cycles: int) -> BacklogResult:
    """Observe the backlog, then run ``cycles`` cycles one second apart with the default
    actions; each real pod finishes (and is deleted) :data:`LIFETIME` seconds after its
    bind, so the backlog keeps flowing. Only the cycles are timed.

    The cyclic garbage collector runs as in the operator (``gangsched.shell.main``): off
    while the backlog is observed and the first cycle runs, then what they left is frozen
    (``gc.freeze``) and it runs again. Left on throughout, its full collections walked
    the whole backlog's objects again and again: about 0.7 s of the 10x run's 4.5 s,
    against 17 ms at 1x, a cost of this benchmark that the operator does not have."""
    workload = backlog(nodes, factor)
    gc.collect()
    gc.disable()  # as the operator starts: no collection until the first cycle is out
    world = World(Scheduler(SchedulerConfig()), keep_decisions=False)
    world.add_queue(QueueSpec("batch", sort_policy=SortPolicy.FIFO))
    for node in workload.nodes:
        world.add_node(node)
    for spec in workload.apps:
        world.add_app(spec)
    for group in workload.groups:
        world.add_group(group)
    for pod in workload.pods:
        world.add_pod(pod)
    real = {pod.uid for pod in workload.pods}
    ends: dict[float, list[PodUID]] = {}
    placed = 0
    spent = 0.0
    for tick in range(1, cycles + 1):
        now = float(tick)
        for uid in ends.pop(now, []):
            if uid in world.pods:
                world.set_phase(uid, PodPhase.SUCCEEDED)
                world.delete_pod(uid)
        started = time.process_time()
        decisions = world.step(now)
        spent += time.process_time() - started
        if tick == 1:  # what start-up left is moved out of the collector's way
            gc.freeze()
            gc.enable()
        for decision in decisions:
            if isinstance(decision, BindPod) and decision.uid in real:
                placed += 1
                ends.setdefault(now + LIFETIME, []).append(decision.uid)
    gc.unfreeze()
    return BacklogResult(factor, len(workload.pods), cycles, placed, spent)


def _fresh(nodes: int, factor: int, cycles: int) -> BacklogResult:
    """:func:`run_backlog` in an interpreter of its own (see :func:`_warm`)."""
    spawn = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=spawn) as pool:
        return pool.submit(_warm, nodes, factor, cycles).result()


def _warm(nodes: int, factor: int, cycles: int) -> BacklogResult:
    """The second of two runs of the point: the first warms the interpreter (its
    specialised bytecode, the name and wording caches) on the same workload, so that
    every point is measured warm, from a heap that held only its own workload."""
    run_backlog(nodes, factor, cycles)
    return run_backlog(nodes, factor, cycles)


def _backlog_sweep(nodes: int, cycles: int, repeat: int = 1) -> list[BacklogResult]:
    print(f"\nBacklog sweep: {nodes} nodes, pending gangs at "
          f"{', '.join(f'{f}x' for f in BACKLOGS)} the cluster's cpu, default actions, "
          f"{cycles} cycles 1 s apart, pods run {LIFETIME:g} s; each point the fastest of "
          f"{repeat} run(s), the points taken in turn")
    print(f"{'backlog':>8} {'pods':>8} {'placed':>8} {'ms/cycle':>10} {'µs/placement':>13}"
          f" {'x of 1x':>8}")
    runs = [[_fresh(nodes, factor, cycles) for factor in BACKLOGS]
            for _ in range(max(1, repeat))]
    results = [min(point, key=lambda r: r.cycle_seconds) for point in zip(*runs, strict=True)]
    base = results[0]
    for r in results:
        ratio = r.micros_per_placement / base.micros_per_placement
        print(f"{r.factor:>7}x {r.pods:>8} {r.placed:>8} {r.ms_per_cycle:>10.1f} "
              f"{r.micros_per_placement:>13.1f} {ratio:>8.2f}")
    worst = results[-1].micros_per_placement / base.micros_per_placement
    verdict = "meets" if worst <= 2.0 else "MISSES"
    print(f"  cost per placement at {BACKLOGS[-1]}x: x{worst:.2f} of 1x ({verdict} the "
          "target of at most x2)")
    return results


def main(argv: list[str] | None = None) -> int:
    global DEFAULT_SPREAD, PERCENTAGE_OF_NODES_TO_SCORE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000, help="reference nodes (5000)")
    parser.add_argument("--pods", type=int, default=20_000, help="reference pods (20000)")
    parser.add_argument("--quick", action="store_true", help="a smaller sweep")
    parser.add_argument("--no-sweep", action="store_true", help="only the reference run")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs per measurement, the fastest is kept (default 2)")
    parser.add_argument("--backlog", action="store_true",
                        help="only the backlog sweep (see --backlog-nodes)")
    parser.add_argument("--no-backlog", action="store_true", help="no backlog sweep")
    parser.add_argument("--backlog-nodes", type=int, default=200,
                        help="nodes of the backlog sweep (200)")
    parser.add_argument("--backlog-cycles", type=int, default=120,
                        help="cycles per backlog run (120)")
    parser.add_argument("--profile", action="store_true",
                        help="profile the reference run and print the top functions")
    parser.add_argument("--default-spread", choices=["plain", "all"], default=DEFAULT_SPREAD,
                        help="which pods of the mix get the default spread constraints: "
                             "those outside gangs (default), or all")
    parser.add_argument("--mix", choices=["both", "plain", "only"], default="both",
                        help="the reference run without the placement mix (plain), with it "
                             "(only), or both (default)")
    parser.add_argument("--topology", action="store_true",
                        help="only the topology mix: 20 blocks x 10 racks, 30%% of the gangs "
                             "asking for a rack or a block (bench/topology_mix.py)")
    parser.add_argument("--dra", action="store_true",
                        help="only the DRA mix: 8 devices per node, a fifth of the gangs "
                             "claiming one each per pod (bench/dra_mix.py)")
    parser.add_argument("--percentage-of-nodes-to-score", type=int, default=0, metavar="N",
                        help="kube-scheduler's percentageOfNodesToScore (default 0: its "
                             "adaptive share, 10%% of 5,000 nodes)")
    args = parser.parse_args(argv)
    DEFAULT_SPREAD = args.default_spread
    PERCENTAGE_OF_NODES_TO_SCORE = args.percentage_of_nodes_to_score
    if args.dra:
        import dra_mix

        return dra_mix.main(["--nodes", str(args.nodes), "--pods", str(args.pods),
                             "--repeat", str(1 if args.quick else args.repeat)])
    if args.topology:
        import topology_mix

        return topology_mix.main(["--nodes", str(args.nodes), "--pods", str(args.pods),
                              "--repeat", str(1 if args.quick else args.repeat)])
    print(f"gangsched core benchmark: Python {platform.python_version()} on "
          f"{platform.machine()}, one thread")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        _reference(args.nodes, args.pods, 1, mix=args.mix != "plain")
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        print(text.getvalue())
        return 0
    repeat = 1 if args.quick else args.repeat
    if args.backlog:
        _backlog_sweep(args.backlog_nodes, args.backlog_cycles, repeat)
        return 0
    print(f"Times are CPU seconds; each is the fastest of {repeat} run(s).")
    if args.mix != "only":
        _reference(args.nodes, args.pods, repeat)
    if args.mix != "plain":
        _reference(args.nodes, args.pods, repeat, mix=True)
    if not args.no_sweep:
        if args.quick:
            _sweep([500, 2000], [2000, 5000], repeat)
        else:
            _sweep([500, 1000, 2000, 5000], [2000, 5000, 20_000], repeat)
    if not args.no_backlog:
        _backlog_sweep(args.backlog_nodes // (4 if args.quick else 1), args.backlog_cycles,
                       repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
