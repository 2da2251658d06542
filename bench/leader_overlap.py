"""Overlap of binds during a leader change, with a delayed renewal (fault injection).

Two operator replicas (kopf and the runtime, in process, real clocks) run against the
fake API server of ``tests/fakeapi``; plain pods arrive every ``--every`` seconds. Once
``op-1`` leads and has bound some pods, the fake holds every Lease request of ``op-1``
back by ``delay`` seconds (a fault rule matched on its ``User-Agent``), while ``op-2``'s
go through: ``op-1``'s renewal hangs, and ``op-2`` takes over once the Lease has not
changed for ``lease`` seconds on its clock. Each bind is recorded on the client side:
(replica, sent, answered or abandoned). Printed per scenario, over ``--repeat`` runs:

* **overlap**: how long both replicas had binds out at once: ``op-1``'s last bind
  answer (or cancellation) after ``op-2``'s first bind was sent (0: none);
* **gap**: from ``op-1``'s last bind answer to ``op-2``'s first bind;
* **stopped**: from the fault's injection until ``op-1`` stopped leading (its renew
  deadline passed while the renewal was still held back);
* **takeover**: from the fault's injection to ``op-2``'s first bind;
* **cancelled**: binds of ``op-1`` cancelled in flight when it stopped.

Before the renew deadline bounded the whole renewal, a renewal held up for 8 s with a
3 s lease left both replicas binding for about 6 s (the issue's figure, measured on a
real control plane).

    python3 bench/leader_overlap.py                  # three scenarios, 3 runs each
    python3 bench/leader_overlap.py --repeat 1 --quick
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "shell"))

from fakeapi import FakeApiServer  # noqa: E402
from shellkit import (  # noqa: E402
    BindRecord,
    OperatorUnderTest,
    new_cluster,
    pod,
    record_binds,
    wait_for,
)


@dataclass(frozen=True)
class Scenario:
    name: str
    lease: float
    deadline: float
    interval: float
    delay: float


SCENARIOS = (
    Scenario("fast lease", 1.5, 1.0, 0.1, 5.0),
    Scenario("3 s lease, renewal held 8 s", 3.0, 2.0, 0.5, 8.0),
    Scenario("defaults (15 s / 10 s / 2 s)", 15.0, 10.0, 2.0, 30.0),
)


async def _factory(**options: Any) -> FakeApiServer:
    api = FakeApiServer(**options)
    await api.start()
    return api



async def run_once(s: Scenario, every: float) -> dict[str, float]:
    api, kubeconfig = await new_cluster(
        _factory, pathlib.Path(tempfile.mkdtemp()), nodes=10, cpu="64", memory="256Gi")
    timing = {"lease_duration": s.lease, "renew_deadline": s.deadline,
              "renew_interval": s.interval}
    ops = [OperatorUnderTest(api, kubeconfig, time.time, monotonic=time.monotonic,
                             identity=f"op-{i}", **timing) for i in (1, 2)]
    binds: list[BindRecord] = []
    producing = True

    async def produce() -> None:
        made = 0
        while producing:
            api.create(pod(f"p-{made}", cpu="100m", memory="64Mi"))
            made += 1
            await asyncio.sleep(every)

    producer = asyncio.create_task(produce())
    stopped = [0.0]
    try:
        await ops[0].start()
        await ops[1].start(wait_ready=False)
        for op in ops:
            record_binds(op, binds)
        await wait_for(lambda: sum(b[0] == "op-1" for b in binds) >= 5, what="op-1 binds",
                       timeout=30)
        api.faults.add(path_regex="/leases", delay=s.delay, agent="op-1")
        injected = time.monotonic()

        async def watch_op1() -> None:
            await wait_for(lambda: not ops[0].leading, what="op-1 stops",
                           timeout=s.lease * 4 + 10)
            stopped[0] = time.monotonic() - injected

        watcher = asyncio.create_task(watch_op1())
        await wait_for(lambda: any(b[0] == "op-2" for b in binds), what="op-2 binds",
                       timeout=s.lease * 4 + 10)
        await watcher
        await wait_for(lambda: sum(b[0] == "op-2" for b in binds) >= 5, what="op-2 binds")
    finally:
        producing = False
        await asyncio.gather(producer, return_exceptions=True)
        api.faults.clear()
        for op in ops:
            await op.crash()
        await api.stop()
    last_of_one = max(end for who, _, end, _ in binds if who == "op-1")
    first_of_two = min(sent for who, sent, _, _ in binds if who == "op-2")
    return {"overlap": max(0.0, last_of_one - first_of_two) * 1000,
            "gap": (first_of_two - last_of_one) * 1000,
            "stopped": stopped[0],
            "takeover": first_of_two - injected,
            "cancelled": sum(c for who, _, _, c in binds if who == "op-1")}


async def main(args: argparse.Namespace) -> None:
    scenarios = SCENARIOS[:2] if args.quick else SCENARIOS
    print(f"two replicas, pods every {args.every * 1000:.0f} ms, {args.repeat} run(s) per "
          "scenario; op-1's Lease requests held back by the fake from the injection on")
    print(f"{'scenario (lease / deadline / interval, delay)':<52} {'overlap ms':>10} "
          f"{'gap ms':>8} {'stopped s':>9} {'takeover s':>10} {'cancelled':>9}")
    for s in scenarios:
        runs = [await run_once(s, args.every) for _ in range(args.repeat)]
        label = (f"{s.name} ({s.lease:g} / {s.deadline:g} / {s.interval:g} s, "
                 f"{s.delay:g} s)")
        overlap = max(r["overlap"] for r in runs)
        print(f"{label:<52} {overlap:>10.0f} "
              f"{statistics.median(r['gap'] for r in runs):>8.0f} "
              f"{statistics.median(r['stopped'] for r in runs):>9.2f} "
              f"{statistics.median(r['takeover'] for r in runs):>10.2f} "
              f"{sum(r['cancelled'] for r in runs):>9.0f}")
    print("overlap: the largest of the runs; gap, stopped, takeover: medians; "
          "cancelled: in all runs")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--every", type=float, default=0.02,
                        help="seconds between two pods created")
    parser.add_argument("--quick", action="store_true", help="skip the default-lease scenario")
    logging.basicConfig(level=logging.CRITICAL)
    asyncio.run(main(parser.parse_args()))
