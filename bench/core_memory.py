"""What the core keeps per node and per pod, at 5,000, 20,000 and 65,000 nodes.

    python3 bench/core_memory.py                     # 5,000, 20,000 and 65,000 nodes
    python3 bench/core_memory.py --nodes 5000 20000 --pods-per-node 2
    python3 bench/core_memory.py --mix               # the placement mix's pods

Not a test: it prints a table. For each cluster size, in a fresh interpreter (so that
one size's heap does not count in the next), with :mod:`tracemalloc` counting every
allocation that is still held:

* *per node*: the nodes of ``bench/core.py`` (32 cpu, 128Gi, 110 pods, three labels)
  built and observed by a simulated world (:class:`gangsched.sim.world.World`, which
  keeps a reference to each object, as the operator's caches do) around the core: the
  node values and everything the core keeps for them, divided by the nodes;
* *per pending pod*: the reference workload's gangs (``bench/core.py``'s
  :func:`core.build`, ``--pods-per-node`` pods per node) built and observed, divided by
  the pods (their Applications and PodGroups included);
* *per placed pod*: the same after the cycles that bind every pod (placeholders come and
  go; what is held at the end), divided by the pods.

Flat is the goal: a byte count per node or per pod that grows with the cluster is a
structure that grows with nodes times pods. Traced bytes are Python's own allocations
(not the allocator's slack nor the interpreter), so the process's RSS is higher.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import gc
import multiprocessing
import sys
import time
import tracemalloc
from dataclasses import dataclass

import core
from gangsched.core.scheduler import Scheduler
from gangsched.core.values.model import QueueSpec, SchedulerConfig, SortPolicy
from gangsched.core.values.volume_specs import NO_VOLUMES
from gangsched.sim.world import World

SIZES = (5000, 20_000, 65_000)


@dataclass(frozen=True, slots=True)
class Footprint:
    nodes: int
    pods: int
    per_node: float
    per_pending_pod: float
    per_placed_pod: float
    placed: int
    seconds: float


def _held() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def measure(nodes: int, pods: int, mix: bool = False) -> Footprint:
    """One size, in this interpreter (see the module docstring); ``mix``: the placement
    mix of ``bench/core.py`` (labels, anti-affinity, spread, default spread; its volumes
    and claims are left out)."""
    started = time.perf_counter()
    tracemalloc.start()
    base = _held()
    world = World(Scheduler(SchedulerConfig()), keep_decisions=False)
    world.add_queue(QueueSpec("batch", sort_policy=SortPolicy.FIFO))
    for node in core.cluster(nodes):
        world.add_node(node)
    with_nodes = _held()
    workload = core.build(nodes, pods, mix=mix)
    workload.nodes.clear()  # built again by build(): the world holds the first ones
    for app in workload.apps:
        world.add_app(app)
    for group in workload.groups:
        world.add_group(group)
    for pod in workload.pods:
        world.add_pod(dataclasses.replace(pod, volumes=NO_VOLUMES) if pod.volumes.any else pod)
    real = {pod.uid for pod in workload.pods}
    del workload
    pending = _held()
    placed, now = 0, 1.0
    for _ in range(10_000):
        decisions = world.step(now)
        binds = core._binds(decisions)
        placed += sum(bind.uid in real for bind in binds)
        if placed >= len(real) or not decisions:
            break
        now += 0.01
    del decisions, binds
    done = _held()
    tracemalloc.stop()
    return Footprint(nodes, pods, (with_nodes - base) / nodes, (pending - with_nodes) / pods,
                     (done - with_nodes) / pods, placed, time.perf_counter() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=list(SIZES),
                        help="cluster sizes (5000 20000 65000)")
    parser.add_argument("--pods-per-node", type=float, default=1.0,
                        help="pending pods per node (1)")
    parser.add_argument("--mix", action="store_true",
                        help="the placement mix's pods (bench/core.py), without volumes")
    args = parser.parse_args(argv)
    print("Bytes held (tracemalloc) per node and per pod, each size in a fresh interpreter:")
    print(f"{'nodes':>8} {'pods':>8} {'per node':>10} {'per pending pod':>16} "
          f"{'per placed pod':>15} {'placed':>8} {'wall':>7}")
    context = multiprocessing.get_context("spawn")
    rows: list[Footprint] = []
    for nodes in args.nodes:
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            row = pool.submit(measure, nodes, int(nodes * args.pods_per_node),
                              args.mix).result()
        rows.append(row)
        print(f"{row.nodes:>8} {row.pods:>8} {row.per_node:>10,.0f} "
              f"{row.per_pending_pod:>16,.0f} {row.per_placed_pod:>15,.0f} "
              f"{row.placed:>8} {row.seconds:>6.0f}s", flush=True)
    if len(rows) > 1:
        low, high = rows[0], rows[-1]
        print(f"\nFrom {low.nodes:,} to {high.nodes:,} nodes (x{high.nodes / low.nodes:.1f}): "
              f"per node x{high.per_node / low.per_node:.2f}, per pending pod "
              f"x{high.per_pending_pod / low.per_pending_pod:.2f}, per placed pod "
              f"x{high.per_placed_pod / low.per_placed_pod:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
