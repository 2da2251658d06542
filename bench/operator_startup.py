"""Operator memory and start-up: RSS, first list, event-loop stalls, time to first bind.

Run as ``python3 bench/operator.py`` (this module is its implementation).

Usage::

    python3 bench/operator.py                    # 5,000 nodes / 100,000 pods, then 500 / 3,000
    python3 bench/operator.py --quick            # 1,000 nodes / 20,000 pods, then 500 / 3,000
    python3 bench/operator.py --nodes 5000 --pods 50000 --pending 1000 --startup-repeat 0

Each scale runs on a fresh fake API server (``tests/fakeapi``) in a process of its own,
started as ``bench/cluster.py`` starts it (its helpers are reused). The cluster:
``--nodes`` nodes (4 cpu, 32Gi, 110 pods, Ready), ``--pods`` pods of 100m cpu / 256Mi
for ``gangsched``, of which all but ``--pending`` are already bound, spread over the
nodes (made in-process by the fake: ``POST /debug/pods``), and ``--pending`` pending
ones (created over HTTP). Then the operator starts, in a process of its own, as
``gangsched run --no-leader-election`` runs it, plus a monitor task that measures the
event loop's lag (a 5 ms timer, how late it fires) from the first moment the loop runs.

Printed per scale:

* **first list**: from the operator's launch (``exec``, imports included) and from the
  start of its sync, until every kind is listed and observed (the runtime is ready);
* **longest event-loop stall** while listing, and until the operator is idle after it
  (the first cycles included);
* **RSS** of the operator once idle (``VmRSS``) and its peak (``VmHWM``);
* **time to first bind**: from the launch to the fake API server serving the
  operator's first ``pods/binding`` (the server's clock; same machine);
* **from launch**: when the imports were done, the sync started, the runtime was
  ready, the first cycle was done and the first bind served (every start-up run).

The operator's modules are compiled to bytecode first (``compileall``, as the image's
Dockerfile does): where ``PYTHONDONTWRITEBYTECODE`` is set, as on the development
machines, every launch would otherwise compile them from source, which a deployed
operator never does. ``--from-source`` skips that.

``GANGSCHED_BENCH_PROFILE=FILE`` writes a cProfile of the operator's process (imports
excluded) to ``FILE`` (each run overwrites it).

The start-up run (``--startup-nodes`` / ``--startup-pods``, all pending; ``--startup-repeat``
times, median and range) repeats the last figure at 500 nodes / 3,000 pods, where the
target is one second. Targets at 5,000 nodes / 100,000 pods: RSS ≤ 1 GiB, first list
≤ 10 s with no stall over 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import pathlib
import statistics
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

import aiohttp
import cluster  # bench/cluster.py: the fake API server's process, nodes and pods
from gangsched.shell.client import load_connection
from gangsched.shell.settings import OperatorSettings

log = logging.getLogger("bench.operator")
SCRIPT = str(pathlib.Path(__file__).with_name("operator.py"))
"""The command (this module is its implementation)."""
JSON = dict[str, Any]
SCHEDULER = "gangsched"
BIND_KEY = "gangsched create pods binding"


# --- the operator's process ---------------------------------------------------------------


class LoopLag:
    """How late a periodic timer fires: the longest time the loop could not run.

    Each lag is also counted in the process's own CPU time over the same interval
    (``min(lag, cpu)``): on a loaded machine a process that is runnable but not running
    is late too, through no work of its own. ``own`` is the stall the operator's own
    work caused (either thread: the loop's, or the core's holding the interpreter's
    lock); ``lag`` includes waiting for a core; ``loop`` counts the event loop's
    thread's CPU only (what the loop itself did while its timer was late).
    """

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.worst = (0.0, 0.0, 0.0)
        self.phase_worst = (0.0, 0.0, 0.0)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            start, cpu, mine = loop.time(), time.process_time(), time.thread_time()
            await asyncio.sleep(self.interval)
            lag = max(0.0, loop.time() - start - self.interval)
            sample = (lag, min(lag, time.process_time() - cpu),
                      min(lag, time.thread_time() - mine))
            self.worst = tuple(map(max, self.worst, sample))  # type: ignore[assignment]
            self.phase_worst = tuple(map(max, self.phase_worst, sample))  # type: ignore[assignment]

    def next_phase(self) -> tuple[float, float, float]:
        """The worst (lag, own, loop) since the last call; starts a new phase."""
        worst, self.phase_worst = self.phase_worst, (0.0, 0.0, 0.0)
        return worst


def _trace_stalls(threshold: float) -> None:
    """A thread that prints the main thread's stack to stderr (the log) whenever the
    event loop has not ticked for ``threshold`` seconds: where a stall comes from."""
    import threading
    import traceback

    main = threading.main_thread().ident
    ticks = [time.monotonic()]

    def tick() -> None:
        ticks[0] = time.monotonic()
        asyncio.get_running_loop().call_later(0.005, tick)

    def watch() -> None:
        reported = 0.0
        while True:
            time.sleep(threshold / 4)
            if time.monotonic() - ticks[0] > threshold and ticks[0] != reported:
                reported = ticks[0]
                frame = sys._current_frames().get(main or 0)
                if frame is not None:
                    print("STALL\n" + "".join(traceback.format_stack(frame)[-12:]),
                          file=sys.stderr, flush=True)

    threading.Thread(target=watch, daemon=True).start()
    _trace_stalls.tick = tick  # type: ignore[attr-defined]


def role_operator(args: argparse.Namespace) -> None:
    """The operator as ``gangsched run --no-leader-election`` runs it, plus the monitor."""
    from gangsched.shell.main import operate

    if TYPE_CHECKING:  # imported by ``operate``, in a thread, while the first lists start
        from gangsched.shell.runtime import Runtime

    imported = time.time()

    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = OperatorSettings(scheduler_names=frozenset({SCHEDULER}), leader_election=False,
                                metrics_port=0)
    if args.qps is not None:
        settings = dataclasses.replace(settings, qps=args.qps)
    if args.scheduler_profile:
        from gangsched.shell.main import read_profile

        settings = dataclasses.replace(settings, core=dataclasses.replace(
            settings.core, profile=read_profile(args.scheduler_profile)))

    runtimes: list[Runtime] = []
    later: list[float] = []
    """The core's CPU seconds in each cycle after the first."""
    cpu: dict[str, float] = {}
    at: dict[str, float] = {"imported": imported}
    """Wall-clock moments (``time.time()``; the parent subtracts its launch time)."""

    if os.environ.get("GANGSCHED_BENCH_STALL_TRACE"):
        _trace_stalls(float(os.environ["GANGSCHED_BENCH_STALL_TRACE"]))

    async def body(stop: asyncio.Event) -> None:
        lag = LoopLag()
        monitor = asyncio.create_task(lag.run())
        if hasattr(_trace_stalls, "tick"):
            _trace_stalls.tick()

        def started(runtime: Runtime) -> None:
            runtimes.append(runtime)
            lag.next_phase()
            cluster._announce("STARTED", at=time.time(), cpu=time.process_time())
            decide = runtime.decide

            def first_cycle(batch: Any, now: float) -> Any:
                before = time.thread_time()  # the core's thread: its own CPU only
                if os.environ.get("GANGSCHED_BENCH_PROFILE_CYCLE"):
                    import cProfile

                    with cProfile.Profile() as profiler:
                        decisions = decide(batch, now)
                    profiler.dump_stats(os.environ["GANGSCHED_BENCH_PROFILE_CYCLE"])
                else:
                    decisions = decide(batch, now)
                cpu["first_cycle"] = time.thread_time() - before
                cpu["after_first_cycle"] = time.process_time()
                at["first_cycle_done"] = time.time()
                runtime.decide = later_cycle  # type: ignore[method-assign]
                return decisions

            def later_cycle(batch: Any, now: float) -> Any:
                """The cycles after the first: the core's CPU each (on its thread)."""
                before = time.thread_time()
                decisions = decide(batch, now)
                spent = time.thread_time() - before
                later.append(spent)
                return decisions
            runtime.decide = first_cycle  # type: ignore[method-assign]

            async def ready() -> None:
                await runtime.ready.wait()
                cluster._announce("READY", at=time.time(), stall=lag.next_phase(),
                                  pods=len(runtime.scheduler.pods), cpu=time.process_time())
            asyncio.get_running_loop().create_task(ready())

        try:
            await operate(settings, stop, kubeconfig=args.kubeconfig, started=started)
        finally:
            monitor.cancel()
            extra = {}
            if runtimes:
                rt = runtimes[0]
                extra = {"cycles": rt.cycles, "translations_full": rt.pod_translations.full,
                         "translations_fast": rt.pod_translations.fast,
                         "binds": rt.binds.done,
                         "later_cycle_ms_mean": round(1000 * statistics.fmean(later), 2)
                         if later else None,
                         "later_cycle_ms_max": round(1000 * max(later), 2) if later else None,
                         **{f"cpu_{k}": round(v, 3) for k, v in cpu.items()}}
            cluster._announce("DONE", stall=lag.next_phase(), worst=lag.worst, at=at, **extra)

    profile = os.environ.get("GANGSCHED_BENCH_PROFILE")
    if not profile:
        asyncio.run(cluster._serve_until_signal(body))
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(cluster._serve_until_signal(body))
    finally:
        profiler.disable()
        profiler.dump_stats(profile)


# --- the run ------------------------------------------------------------------------------


def _rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in bytes."""
    found = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found.get("VmRSS", 0), found.get("VmHWM", 0)


async def _debug(url: str) -> JSON:
    async with aiohttp.ClientSession() as session, \
            session.get(url + "/debug/requests") as resp:
        result: JSON = await resp.json()
        return result


async def _bind_rate(url: str, pending: int, deadline: float) -> float | None:
    """Binds per second from the first bind until every pending pod is bound (the
    fake's count of the operator's bindings; None if not all are by ``deadline``)."""
    while time.monotonic() < deadline:
        counters = await _debug(url)
        if counters.get("by_agent_verb", {}).get(BIND_KEY, 0) >= pending:
            first = counters["first"][BIND_KEY]
            return (pending - 1) / (time.time() - first) if pending > 1 else None
        await asyncio.sleep(0.05)
    return None


async def _populate(fake: cluster.FakeCluster, nodes: int, pods: int, pending: int) -> None:
    """The nodes and the bound pods are made in the fake's process (``/debug/nodes``,
    ``/debug/pods?clone=1``: copies of one admitted object each, so that 65,000 nodes
    and 650,000 pods take a minute or two, not half an hour); the pending pods over HTTP,
    as any client creates them."""
    w = cluster.Workload(nodes=nodes, pods=pending, gang_size=0, cpu="100m", memory="256Mi",
                         scheduler_name=SCHEDULER)
    timeout = aiohttp.ClientTimeout(total=None)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        async with session.post(fake.url + "/debug/nodes",
                                params={"count": str(nodes), "prefix": "bench-node-"},
                                json=cluster.node_body(0)) as resp:
            resp.raise_for_status()
        bound = pods - pending
        if bound > 0:
            async with session.post(fake.url + "/debug/pods", params={
                    "count": str(bound), "namespace": fake.namespace, "prefix": "run-",
                    "bind": "1", "clone": "1", "nodes": str(nodes),
                    "node_prefix": "bench-node-", "scheduler": SCHEDULER, "cpu": w.cpu,
                    "memory": w.memory, "times": "0"}) as resp:
                resp.raise_for_status()
    if pending:
        async with cluster.BenchClient(await load_connection(fake.kubeconfig)) as client:
            await cluster.create_pods(client, w, fake.namespace, 64)


async def run_scale(nodes: int, pods: int, pending: int, log_dir: pathlib.Path,
                    args: argparse.Namespace, tag: str) -> JSON:
    fake = cluster.FakeCluster(log_dir)
    await fake.open(tag)
    try:
        t = time.monotonic()
        await _populate(fake, nodes, pods, pending)
        log.info("%s: %d nodes, %d pods (%d pending) made in %.1fs", tag, nodes, pods,
                 pending, time.monotonic() - t)
        launch = time.time()
        server_cpu = fake.server_cpu() or 0.0
        child = await cluster.Child.start(
            f"operator-{tag}", [sys.executable, SCRIPT, "_operator", "--kubeconfig",
                                fake.kubeconfig, "--log-level", args.log_level,
                                *(["--scheduler-profile", args.scheduler_profile]
                                  if args.scheduler_profile else []),
                                *(["--qps", str(args.qps)] if args.qps is not None else [])],
            log_dir)
        try:
            started = json.loads((await child.expect("STARTED", 120)).split(" ", 1)[1])
            # 300 s at 5,000 nodes / 100,000 pods, longer for larger clusters.
            patience = max(300.0, (nodes + pods) / 1000)
            ready = json.loads((await child.expect("READY", patience)).split(" ", 1)[1])
            server_cpu = (fake.server_cpu() or 0.0) - server_cpu
            first_bind = binds_per_second = None
            if pending:
                deadline = time.monotonic() + patience
                while time.monotonic() < deadline:
                    first = (await _debug(fake.url)).get("first", {})
                    if BIND_KEY in first:
                        first_bind = first[BIND_KEY] - launch
                        break
                    await asyncio.sleep(0.05)
                binds_per_second = await _bind_rate(fake.url, pending, deadline)
            await child.wait_idle(at_least=2.0, quiet=1.0, timeout=patience)
            rss, peak = _rss(child.proc.pid)
        finally:
            await child.stop()
        done = next((json.loads(line.split(" ", 1)[1]) for line in child.output
                     if line.startswith("DONE")), {})
        return {"nodes": nodes, "pods": pods, "pending": pending,
                "observed_pods": ready["pods"],
                "ready_from_launch": ready["at"] - launch,
                "list_seconds": ready["at"] - started["at"],
                "stall_list": ready["stall"], "stall_after": done.get("stall"),
                "rss": rss, "rss_peak": peak, "first_bind": first_bind,
                "binds_per_second": binds_per_second,
                "cpu_started": started["cpu"], "cpu_ready": ready["cpu"],
                "server_cpu_ready": server_cpu,
                "timeline": {"imports done": done.get("at", {}).get("imported", launch) - launch,
                             "sync start": started["at"] - launch,
                             "ready": ready["at"] - launch,
                             "first cycle done": done.get("at", {}).get(
                                 "first_cycle_done", launch) - launch,
                             **({"first bind": first_bind} if first_bind is not None else {})},
                "counters": {k: v for k, v in done.items()
                             if k not in ("stall", "worst", "at")}}
    finally:
        await fake.close()


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def report(result: JSON) -> None:
    def ms(v: list[float] | None) -> str:
        if v is None:
            return "-"
        loop = f", {v[2] * 1000:.0f} ms the loop's thread" if len(v) > 2 else ""
        return (f"{v[1] * 1000:.0f} ms own ({v[0] * 1000:.0f} ms with waiting for a core"
                f"{loop})")

    print(f"\n{result['nodes']} nodes, {result['pods']} pods ({result['pending']} pending); "
          f"{result['observed_pods']} pods observed")
    rows = [
        ("first list, from launch / from sync start",
         f"{result['ready_from_launch']:.2f} s / {result['list_seconds']:.2f} s"),
        ("longest event-loop stall while listing", ms(result["stall_list"])),
        ("longest event-loop stall after, until idle", ms(result["stall_after"])),
        ("RSS once idle / peak", f"{_mib(result['rss'])} / {_mib(result['rss_peak'])}"),
        ("operator CPU s: to sync start / to ready",
         f"{result['cpu_started']:.2f} / {result['cpu_ready']:.2f}"),
        ("fake API server CPU s, launch to ready", f"{result['server_cpu_ready']:.2f}"),
        ("time to first bind from launch",
         "-" if result["first_bind"] is None else f"{result['first_bind']:.2f} s"),
        ("binds/s, first to last pending pod",
         "-" if result.get("binds_per_second") is None
         else f"{result['binds_per_second']:.0f}"),
    ]
    for label, value in rows:
        print(f"  {label:<46} {value}")
    print("  from launch: " + ", ".join(f"{k} {v:.2f} s" for k, v in result["timeline"].items()))
    print("  operator: " + ", ".join(f"{k} {v}" for k, v in result["counters"].items()))


def compile_bytecode() -> None:
    """Compile the operator's modules (and this folder's) to bytecode, as the image does
    (the Dockerfile's ``compileall``). Where ``PYTHONDONTWRITEBYTECODE`` is set and
    nothing compiled them, every launch would compile them from source first: a quarter
    of a second of CPU that a deployed operator never spends."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("gangsched")
    package = list(spec.submodule_search_locations or []) if spec is not None else []
    folders = [*package, str(pathlib.Path(__file__).parent)]
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)


async def main_async(args: argparse.Namespace) -> None:
    log_dir = pathlib.Path(tempfile.mkdtemp(prefix="gangsched-bench-operator-"))
    print(f"logs in {log_dir}; load average {os.getloadavg()[0]:.1f}")
    if not args.from_source:
        compile_bytecode()
    if args.pods:
        report(await run_scale(args.nodes, args.pods, args.pending, log_dir, args, "scale"))
    firsts: list[float] = []
    for k in range(args.startup_repeat):
        result = await run_scale(args.startup_nodes, args.startup_pods, args.startup_pods,
                                 log_dir, args, f"startup-{k}")
        if k == 0:
            report(result)
        if result["first_bind"] is not None:
            firsts.append(result["first_bind"])
        if k:
            print("  start-up " + str(k) + ", from launch: " + ", ".join(
                f"{name} {v:.2f} s" for name, v in result["timeline"].items()), flush=True)
    if firsts:
        print(f"\nTime to first bind at {args.startup_nodes} nodes / {args.startup_pods} "
              f"pending pods, {len(firsts)} runs: median {statistics.median(firsts):.2f} s "
              f"(min {min(firsts):.2f}, max {max(firsts):.2f})")


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=100_000, help="0: skip the large run")
    p.add_argument("--pending", type=int, default=1000,
                   help="of --pods, how many are pending (the rest are bound)")
    p.add_argument("--startup-nodes", type=int, default=500)
    p.add_argument("--startup-pods", type=int, default=3000)
    p.add_argument("--startup-repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true",
                   help="1,000 nodes / 20,000 pods, one start-up run")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--from-source", action="store_true",
                   help="do not compile the operator's modules to bytecode first (where "
                        "PYTHONDONTWRITEBYTECODE is set, each launch then compiles them)")
    p.add_argument("--qps", type=float, default=None,
                   help="the operator's client-side limit (as `gangsched run --kube-api-qps`; "
                        "default 50 with a burst of 100, kube-scheduler's; 0: no limit). "
                        "Binds/s over a burst of pending pods is bounded by it")
    p.add_argument("--scheduler-profile", metavar="FILE",
                   help="the operator's scheduler profile (as `gangsched run --profile`)")
    args = p.parse_args(argv)
    if args.quick:
        args.nodes, args.pods, args.pending, args.startup_repeat = 1000, 20_000, 500, 1
    return args


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_operator"]:
        p = argparse.ArgumentParser()
        p.add_argument("_role")
        p.add_argument("--kubeconfig", required=True)
        p.add_argument("--scheduler-profile")
        p.add_argument("--qps", type=float, default=None)
        p.add_argument("--log-level", default="WARNING")
        role_operator(p.parse_args(argv))
        return
    args = parse(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    asyncio.run(main_async(args))

