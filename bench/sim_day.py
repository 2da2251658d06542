"""The simulated day, timed, with a digest of every bind it made.

``gangsched simulate --generate day`` does the same work; this prints what a speed-up must
keep and what it costs:

* the verdict line and the invariants (over-committed nodes, gangs run partially);
* a digest of the binds in the order they were made (simulated time, pod, node): two runs
  with the same digest decided the same;
* wall time, CPU time, peak RSS and the load average before and after.

    python3 bench/sim_day.py --nodes 20000 --pods 200000 --until 1200
    python3 bench/sim_day.py --workload examples/simulations/racks.yaml
    python3 bench/sim_day.py --nodes 20000 --pods 200000 --until 1200 --profile 30
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import os
import pstats
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "operator"))

from gangsched.core.values.model import Pod
from gangsched.sim import generate, parse, report, results, runner
from gangsched.sim.engine import Engine
from gangsched.sim.source import Document


class _Digest:
    """Hashes each bind as the simulated cluster carries it out."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()
        self.binds = 0
        self.engine: Engine | None = None

    def wrap(self, engine: Engine) -> None:
        self.engine = engine
        changed = engine.pod_changed

        def pod_changed(old: Pod | None, new: Pod | None) -> None:
            if new is not None and new.node_name is not None and (
                    old is None or old.node_name is None):
                self.binds += 1
                self.hash.update(f"{engine.now:.3f} {new.namespace}/{new.name} "
                                 f"{new.node_name}\n".encode())
            changed(old, new)

        engine.pod_changed = pod_changed  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", help="a workload file instead of a generated day")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--until", type=float, help="stop the clock here (seconds)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile the run and print the top N by own time")
    parser.add_argument("--profile-out", help="also save the profile here")
    args = parser.parse_args()
    if args.workload:
        workload, name = parse.load(args.workload), args.workload
    else:
        name = f"generated day ({args.nodes} nodes, {args.pods} pods, seed {args.seed})"
        workload = parse.build(Document(name, generate.day(args.nodes, args.pods,
                                                           seed=args.seed)))
    workload = runner.with_until(workload, args.until)
    digest = _Digest()
    load_before = os.getloadavg()
    started, cpu = time.perf_counter(), time.process_time()
    engine = Engine(workload, runner.factory("gangsched", workload), keep_samples=False)
    digest.wrap(engine)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    output = engine.run()
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    load_after = os.getloadavg()
    summary = results.summarise(output)
    print(report.verdict([output], name))
    print()
    print(f"binds         {digest.binds} (digest {digest.hash.hexdigest()[:16]})")
    print(f"jobs          {summary.jobs}, simulated until {output.end:.0f} s, "
          f"{output.cycles} cycles")
    print(f"over-committed nodes {output.counters.get('overCommittedNodes', 0)}, "
          f"partial gangs {summary.partial_gangs.violations} (longest "
          f"{summary.partial_gangs.max_seconds:.1f} s)")
    print(f"wall          {wall:.1f} s   cpu {cpu:.1f} s   peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print(f"load          {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    if profiler is not None:
        stats = pstats.Stats(profiler)
        if args.profile_out:
            stats.dump_stats(args.profile_out)
        stats.sort_stats("tottime").print_stats(args.profile)
        stats.sort_stats("cumulative").print_stats(args.profile)


if __name__ == "__main__":
    main()
