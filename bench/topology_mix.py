"""How fast the core places gangs on a cluster of racks and blocks, 30% asking for one.

    python3 bench/core.py --topology                 # 5,000 nodes, 20,000 pods
    python3 bench/topology_mix.py --nodes 1000 --pods 4000 --repeat 1

Not a test: it prints a table. One thread.

Workload: :func:`core.build`'s gangs (1 to 64 pods, Applications, PodGroups and plain
pods, sized to at most 60% of the cluster) on ``--nodes`` nodes of 32 cpu / 128Gi / 110
pods, dealt out in order into 20 blocks of 10 racks (5,000 nodes: 25 per rack), each node
labelled ``topology.gangsched.io/block``, ``topology.gangsched.io/rack``,
``topology.kubernetes.io/zone`` (one zone per 5 blocks) and its hostname. 30% of the gangs
of two pods or more ask for a topology: half of them ``required`` one rack, half
``required`` one block and ``preferred`` one rack (every task group of an Application, a
PodGroup's spec). The rest ask nothing.

Measured as :mod:`core` measures (the same loop, CPU seconds of the cycles until every real
pod is bound): *placements/s* (real pods bound per second), and *per gang decision*: the
cycle time divided by the gangs of two pods or more that were placed whole, the average
cost of deciding where one gang goes. Also shown: how many topology gangs landed within
their required domain. Until the core places topology gangs, that share is what a
member-by-member placement gives by chance, and the costs are those of ignoring the
request.

*One gang at a time* (``--one-by-one N``, default 200): the first 70% of the gangs are
placed untimed (the cluster about 40% full), then each of the next N gangs (in their
order, plain pods skipped) is added alone and the cycles until its last real pod is bound
are timed: the latency of one gang's placement, its whole round trip (placeholders,
swaps) included; p50, p95 and max, for the topology gangs and the others apart.

*Training gangs* (``--large N``, with ``--large-size M``, default 1,024): on the same
cluster about 40% full, N PodGroups of M members (1 cpu, 4Gi each; Strict), each asking
for one block and preferring one rack, added one at a time: the CPU time of the core's
cycle that decides where the whole gang goes (every member assumed, the gang's binds
asked); of that step of the simulated world (the cycle, then the binds carried out by
the simulated API server and the bound pods observed again); and of the cycles until
its last member is bound (the binds' round trips included).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import platform
import sys
import time

import core
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.decisions import BindPod, Decision
from gangsched.core.values.model import (
    AppKey,
    AppSpec,
    GangMode,
    GroupKey,
    Node,
    Pod,
    PodGroupSpec,
    PodUID,
    QueueSpec,
    SchedulerConfig,
    SortPolicy,
    TopologyRequest,
)
from gangsched.core.values.resources import Resources
from gangsched.sim.world import World
from gangsched.translate.topology import BLOCK, RACK, ZONE

BLOCKS = 20
RACKS_PER_BLOCK = 10
BLOCKS_PER_ZONE = 5
SHARE = 0.3
"""The share of gangs (two pods or more) that ask for a topology."""
RACK_ONLY = TopologyRequest(required=RACK)
BLOCK_PREFERRING_RACK = TopologyRequest(required=BLOCK, preferred=(RACK,))


def racked(nodes: list[Node]) -> list[Node]:
    """``nodes`` dealt out in order into :data:`BLOCKS` x :data:`RACKS_PER_BLOCK` racks."""
    racks = BLOCKS * RACKS_PER_BLOCK
    per_rack = max(1, len(nodes) // racks)
    result = []
    for index, node in enumerate(nodes):
        rack = min(index // per_rack, racks - 1)
        block = rack // RACKS_PER_BLOCK
        labels = {**node.labels, RACK: f"b{block}-r{rack % RACKS_PER_BLOCK}",
                  BLOCK: f"b{block}", ZONE: f"zone-{block // BLOCKS_PER_ZONE}"}
        result.append(dataclasses.replace(node, labels=labels))
    return result


def build(nodes: int, pods: int, seed: int = 7) -> tuple[core.Workload, dict[str, TopologyRequest]]:
    """:func:`core.build`'s workload on racked nodes, 30% of its gangs asking for a rack or
    a block; also each topology gang's request by gang key."""
    base = core.build(nodes, pods, seed)
    counter = 0
    asked: dict[str, TopologyRequest] = {}

    def pick(key: str, size: int) -> TopologyRequest | None:
        nonlocal counter
        if size < 2:
            return None
        counter += 1
        # Every gang whose running count crosses a multiple of SHARE asks: 30%, spread evenly.
        if int(counter * SHARE) == int((counter - 1) * SHARE):
            return None
        request = RACK_ONLY if len(asked) % 2 == 0 else BLOCK_PREFERRING_RACK
        asked[key] = request
        return request

    groups = []
    for group in base.groups:
        request = pick(group.key, group.min_member)
        groups.append(group if request is None else dataclasses.replace(group, topology=request))
    apps = []
    for app in base.apps:
        request = pick(app.key, sum(g.min_member for g in app.task_groups))
        if request is not None:
            app = dataclasses.replace(app, task_groups=tuple(
                dataclasses.replace(g, topology=request) for g in app.task_groups))
        apps.append(app)
    workload = dataclasses.replace(base, nodes=racked(base.nodes), apps=apps, groups=groups)
    return workload, asked


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    result: core.Result
    gangs: int
    """Gangs of two pods or more placed whole."""
    topology_gangs: int
    within: int
    """Topology gangs whose members all landed in one domain of their required key (each
    task group of an Application in one domain: each asks on its own)."""

    @property
    def micros_per_gang(self) -> float:
        return 1e6 * self.result.cycle_seconds / self.gangs if self.gangs else float("inf")


def measure(nodes: int, pods: int) -> Outcome:
    workload, asked = build(nodes, pods)
    placed: dict[str, str] = {}

    def record(bind: BindPod) -> None:
        placed[bind.uid] = bind.node

    result = core.run_workload(workload, pods, on_bind=record)
    labels = {node.name: node.labels for node in workload.nodes}
    members: dict[str, list[str]] = {}
    task_group = {pod.uid: pod.task_group for pod in workload.pods}
    for pod in workload.pods:
        key: AppKey | GroupKey | None = pod.app or pod.pod_group
        if key is not None:
            members.setdefault(key, []).append(pod.uid)
    gangs = within = 0
    for key, uids in members.items():
        if len(uids) < 2 or not all(uid in placed for uid in uids):
            continue
        gangs += 1
        request = asked.get(key)
        if request is not None and request.required is not None:
            # Each task group (and PodGroup) asks on its own: one domain per task group.
            groups: dict[str | None, set[str | None]] = {}
            for uid in uids:
                groups.setdefault(task_group.get(uid), set()).add(
                    labels[placed[uid]].get(request.required))
            within += all(len(domains) == 1 for domains in groups.values())
    return Outcome(result, gangs, len(asked), within)


def _warm(nodes: int, pods: int) -> tuple[World, float, list[tuple[str, AppSpec | PodGroupSpec,
                                                                   list[Pod]]], int, set[str]]:
    """The world with the first 70% of the gangs placed (the cluster about 40% full), the
    clock, the gangs in order, how many are placed, and the keys of the topology gangs.

    The cyclic garbage collector runs as in the operator (``gangsched.shell.main``): off
    while the cluster is built and filled, then what that left is frozen (``gc.freeze``)
    and it runs again. Left on, its full collections walk the whole cluster's objects in
    the timed cycles: about 60 ms of a training gang's deciding cycle at 65,000 nodes, a
    cost of this benchmark that the operator does not have."""
    gc.collect()
    gc.disable()
    workload, asked = build(nodes, pods)
    world = World(Scheduler(SchedulerConfig()), keep_decisions=False)
    world.add_queue(QueueSpec("batch", sort_policy=SortPolicy.FIFO))
    for node in workload.nodes:
        world.add_node(node)
    gangs: list[tuple[str, AppSpec | PodGroupSpec, list[Pod]]] = []
    by_key: dict[str, list[Pod]] = {}
    for pod in workload.pods:
        key = pod.app or pod.pod_group
        if key is not None:
            by_key.setdefault(key, []).append(pod)
    for spec in sorted([*workload.apps, *workload.groups], key=lambda g: g.creation):
        members = by_key.get(spec.key, [])
        if len(members) >= 2:
            gangs.append((spec.key, spec, members))
    now = 1.0
    warm = int(len(gangs) * 0.7)
    for _, spec, members in gangs[:warm]:
        _add(world, spec, members)
    for _ in range(20):
        world.step(now)
        now += 0.01
    gc.freeze()
    gc.enable()
    return world, now, gangs, warm, set(asked)


def _add(world: World, spec: AppSpec | PodGroupSpec, members: list[Pod]) -> None:
    if isinstance(spec, AppSpec):
        world.add_app(spec)
    else:
        world.add_group(spec)
    for pod in members:
        world.add_pod(pod)


def _until_bound(world: World, now: float, wanted: set[PodUID],
                 clock: _CoreClock | None = None) -> tuple[float, float, float]:
    """Cycles until every pod of ``wanted`` is bound (at most 20): the CPU seconds of the
    first step, of them all, and the clock after. ``clock``: its ``first`` is set to
    what its count of core cycles was after the first step."""
    started = time.process_time()
    first = 0.0
    for cycle in range(20):
        for bind in core._binds(world.step(now)):
            wanted.discard(bind.uid)
        if cycle == 0:
            first = time.process_time() - started
            if clock is not None:
                clock.first = clock.spent
        now += 0.01
        if not wanted:
            break
    return first, time.process_time() - started if not wanted else float("inf"), now


def one_by_one(nodes: int, pods: int, count: int) -> dict[bool, list[float]]:
    """CPU seconds to place each of ``count`` gangs added one at a time (see the module
    docstring), keyed by whether the gang asks for a topology."""
    world, now, gangs, warm, asked = _warm(nodes, pods)
    times: dict[bool, list[float]] = {True: [], False: []}
    for key, spec, members in gangs[warm:warm + count]:
        _add(world, spec, members)
        _, total, now = _until_bound(world, now, {pod.uid for pod in members})
        if total != float("inf"):
            times[key in asked].append(total)
    return times


class _CoreClock:
    """The CPU seconds spent in the core's cycles (``Scheduler.cycle``) of a world, apart
    from the simulated API server's work around them (the binds carried out, the pods
    observed again)."""

    def __init__(self, world: World) -> None:
        self.spent = 0.0
        self.first = 0.0
        self._cycle = world.scheduler.cycle
        world.scheduler.cycle = self._timed  # type: ignore[method-assign]

    def _timed(self, now: float) -> list[Decision]:
        started = time.process_time()
        try:
            return self._cycle(now)
        finally:
            self.spent += time.process_time() - started


@dataclasses.dataclass(frozen=True)
class Large:
    """One training gang (see the module docstring)."""

    decided: float
    """CPU seconds of the core's cycle that decides where the whole gang goes."""
    step: float
    """CPU seconds of that step of the simulated world: the cycle, then its binds
    carried out by the simulated API server and the bound pods observed again."""
    total: float
    """CPU seconds until its last member is bound."""
    blocks: str


def large(nodes: int, pods: int, count: int, size: int) -> list[Large]:
    """Per training gang (see the module docstring and :class:`Large`)."""
    world, now, _, _, _ = _warm(nodes, pods)
    clock = _CoreClock(world)
    request = Resources.from_k8s({"cpu": 1, "memory": "4Gi"})
    found: list[Large] = []
    for index in range(count):
        key = GroupKey(f"bench/llm-{index}")
        spec = PodGroupSpec(key, uid=f"llm-{index}", min_member=size, queue="batch",
                            mode=GangMode.STRICT, creation=1e6 + index,
                            topology=BLOCK_PREFERRING_RACK)
        members = [Pod(PodUID(f"llm-{index}-{i}"), "bench", f"llm-{index}-{i}", request,
                       creation=1e6 + index, pod_group=key) for i in range(size)]
        _add(world, spec, members)
        before = clock.spent
        step, total, now = _until_bound(world, now, {pod.uid for pod in members},
                                        clock=clock)
        blocks = {world.nodes[str(world.pods[p.uid].node_name)].labels[BLOCK]
                  for p in members if world.pods[p.uid].node_name is not None}
        found.append(Large(clock.first - before, step, total, ",".join(sorted(blocks))))
    return found


def _quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return (f"p50 {at(0.5):6.1f} ms, p95 {at(0.95):6.1f} ms, max {ordered[-1] * 1000:6.1f} ms "
            f"({len(values)} gangs)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes (5000)")
    parser.add_argument("--pods", type=int, default=20_000, help="pending pods (20000)")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs, the fastest is kept (default 2)")
    parser.add_argument("--one-by-one", type=int, default=200,
                        help="gangs placed one at a time, each timed (200; 0: none)")
    parser.add_argument("--large", type=int, default=0, metavar="N",
                        help="training gangs asking for a block, placed one at a time (0)")
    parser.add_argument("--large-size", type=int, default=1024, metavar="M",
                        help="members of each training gang (1024)")
    args = parser.parse_args(argv)
    workload, asked = build(args.nodes, args.pods)
    racks = len({n.labels[RACK] for n in workload.nodes})
    rack_gangs = sum(1 for r in asked.values() if r == RACK_ONLY)
    print(f"gangsched core benchmark, topology mix: Python {platform.python_version()} on "
          f"{platform.machine()}, one thread")
    print(f"{args.nodes} nodes in {BLOCKS} blocks x {RACKS_PER_BLOCK} racks ({racks} racks), "
          f"{args.pods} pending pods: {workload.gangs}")
    print(f"  {len(asked)} gangs ask for a topology: {rack_gangs} a rack, "
          f"{len(asked) - rack_gangs} a block (preferring a rack)")
    started = time.perf_counter()
    best = min((measure(args.nodes, args.pods) for _ in range(max(1, args.repeat))),
               key=lambda o: o.result.cycle_seconds)
    result = best.result
    verdict = "meets" if result.placements_per_second >= core.TARGET else "MISSES"
    print(f"Times are CPU seconds; the fastest of {max(1, args.repeat)} run(s) "
          f"({time.perf_counter() - started:.1f} s in all).")
    print(f"  cycles until every pod is bound          {result.cycle_seconds:8.2f} s cpu "
          f"({result.cycles} cycles)")
    print(f"  pods placed                              {result.placed:8d}")
    print(f"  placements/s                             {result.placements_per_second:8.0f} "
          f"({verdict} the target of {core.TARGET:.0f}/s)")
    print(f"  gangs placed whole (2 pods or more)      {best.gangs:8d}")
    print(f"  per gang placement decision              {best.micros_per_gang:8.0f} µs")
    print(f"  topology gangs within their domain       {best.within:8d} of "
          f"{best.topology_gangs}")
    if args.one_by_one:
        times = one_by_one(args.nodes, args.pods, args.one_by_one)
        print("One gang at a time, on a cluster about 40% full (CPU time until its last pod "
              "is bound):")
        print(f"  asking for a rack or a block             {_quantiles(times[True])}")
        print(f"  asking for nothing                       {_quantiles(times[False])}")
    if args.large:
        print(f"Training gangs of {args.large_size} asking for a block, one at a time, on a "
              "cluster about 40% full (CPU):")
        for index, gang in enumerate(large(args.nodes, args.pods, args.large,
                                           args.large_size)):
            print(f"  gang {index}: decided in {gang.decided * 1000:7.1f} ms (the core's "
                  f"cycle; {gang.step * 1000:7.1f} ms with its binds carried out), every "
                  f"member bound after {gang.total * 1000:7.1f} ms, in block "
                  f"{gang.blocks or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
