#!/usr/bin/env python3
"""Watching pods: our own list+watch (``Reflector``) against kopf's ``on.event``.

Usage::

    python3 bench/watch_paths.py [--events 10000] [--rate 100] [--paced-events 1000]

Why the operator watches pods and nodes with :class:`gangsched.shell.watch.Reflector`
rather than with kopf handlers, measured. Each path runs as a consumer in its own
process against a fresh fake API server (``tests/fakeapi``, also its own process), with
a callback that only records the time it was called for each pod. The fake then
creates pods in-process (``POST /debug/pods``: no HTTP client in the way), so the only
work measured is delivering watch events to a Python callback. Each pod makes two
events, as under a scheduler: ADDED, then MODIFIED when it is bound (right after the
next pod is created).

* flood: ``--events`` pods as fast as the store goes; the consumer's throughput
  (events/s from the first commit to the last delivery), the latency of each event
  (commit to callback; here it is mostly queueing) and its CPU per event;
* paced: ``--paced-events`` pods at ``--rate`` per second, well below either path's
  limit: the latency an event pays when nothing is queued.

An event that a path coalesces into a later one of the same pod (kopf keeps only the
newest event of a batch) counts as delivered with that later one; ``callbacks/event``
shows how many calls each commit got.

The paths: ``reflector`` (``KubeClient.watch`` + ``Reflector``, the operator's),
``kopf`` (``@kopf.on.event("v1", "pods")``, an async handler, kopf's defaults: one
worker task per object, events batched for ``batch_window`` = 0.1 s), and
``kopf-batch-1ms`` (the same with a 1 ms window, kopf's cost without the batching
delay).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import pathlib
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import aiohttp
import cluster
import kopf
from gangsched.shell.client import KubeClient, load_connection
from gangsched.shell.watch import Reflector

PATHS = {"reflector": ("gangsched", None), "kopf": ("kopf", 0.1),
         "kopf-batch-1ms": ("kopf", 0.001)}


# --- consumers (subprocesses) -----------------------------------------------------------


class Recorder:
    def __init__(self, expect: int, out: str) -> None:
        self.expect = expect
        self.out = out
        self.received: dict[str, float] = {}
        self.calls = 0
        self.done = False

    def __call__(self, obj: Mapping[str, Any]) -> None:
        self.calls += 1
        name = str(obj["metadata"]["name"])
        now = time.time()
        self.received.setdefault(name, now)  # an ADDED coalesced into a later event counts
        if obj["spec"].get("nodeName"):
            self.received.setdefault(name + "/bound", now)
        if len(self.received) >= self.expect and not self.done:
            self.done = True
            pathlib.Path(self.out).write_text(json.dumps(
                {"received": self.received, "calls": self.calls}))
            print("DONE", flush=True)


def role_reflector(args: argparse.Namespace) -> None:
    record = Recorder(args.expect, args.out)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        async with KubeClient(await load_connection(args.kubeconfig)) as client:
            def on_event(kind: str, obj: Mapping[str, Any]) -> None:
                record(obj)

            reflector = Reflector(client, "/api/v1/pods", on_event, name="pods")
            await reflector.run(stop)

    asyncio.run(main())


def role_kopf(args: argparse.Namespace) -> None:
    record = Recorder(args.expect, args.out)
    registry = kopf.OperatorRegistry()
    logging.basicConfig(level=logging.WARNING)

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.batching.batch_window = args.batch_window
        settings.watching.server_timeout = 300

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server=args.server)

    @kopf.on.event("v1", "pods", registry=registry)
    async def on_event(body: kopf.Body, **_: Any) -> None:
        record(body)

    asyncio.run(kopf.operator(registry=registry, clusterwide=True, standalone=True))


# --- the driver -------------------------------------------------------------------------


async def counters(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session, \
            session.get(url + "/debug/requests") as resp:
        result: dict[str, Any] = await resp.json()
        return result


async def make_pods(url: str, count: int, rate: float) -> dict[str, float]:
    """Commit times by event: ``name`` (created) and ``name/bound``."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as session, \
            session.post(url + "/debug/pods", params={
                "count": str(count), "namespace": "bench", "rate": str(rate),
                "bind": "1"}) as resp:
        made: dict[str, dict[str, float]] = await resp.json()
    return {**made["created"], **{f"{k}/bound": t for k, t in made["bound"].items()}}


def _pct(values: list[float], p: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1]


async def measure(path: str, count: int, rate: float, log_dir: pathlib.Path,
                  tag: str) -> dict[str, float]:
    agent, window = PATHS[path]
    server = cluster.FakeCluster(log_dir)
    await server.open(f"{path}-{tag}")
    out = log_dir / f"received-{path}-{tag}.json"
    common = ["--expect", str(2 * count), "--out", str(out)]
    if window is None:
        argv = [sys.executable, __file__, "_reflector", "--kubeconfig", server.kubeconfig,
                *common]
    else:
        argv = [sys.executable, __file__, "_kopf", "--server", server.url,
                "--batch-window", str(window), *common]
    child = await cluster.Child.start(f"{path}-{tag}", argv, log_dir)
    try:
        async with asyncio.timeout(120):
            while (await counters(server.url))["by_agent_verb"].get(f"{agent} watch pods", 0) < 1:
                await asyncio.sleep(0.1)
        await child.wait_idle(at_least=0.5, quiet=0.5)
        cpu0 = child.cpu()
        made = await make_pods(server.url, count, rate)
        await child.expect("DONE", 600)
        cpu1 = child.cpu()
        data = json.loads(out.read_text())
    finally:
        await child.stop()
        await server.close()
    received: dict[str, float] = data["received"]
    latencies = [received[name] - t for name, t in made.items()]
    span = max(received.values()) - min(made.values())
    return {"events/s": len(made) / span, "p50": _pct(latencies, 50), "p90": _pct(latencies, 90),
            "p99": _pct(latencies, 99), "cpu_ms": 1000 * (cpu1 - cpu0) / len(made),
            "calls": data["calls"] / len(made)}


async def main_async(args: argparse.Namespace) -> None:
    log_dir = pathlib.Path(args.log_dir or tempfile.mkdtemp(prefix="gangsched-watch-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.events} pod events (flood), {args.paced_events} at {args.rate:g}/s (paced); "
          f"fake API server; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f}",
          flush=True)
    rows = []
    for path in args.paths:
        flood = await measure(path, args.events, 0, log_dir, "flood")
        paced = await measure(path, args.paced_events, args.rate, log_dir, "paced")
        rows.append((path, flood, paced))
        print(f"  {path}: {flood['events/s']:.0f} events/s", flush=True)
    print()
    print("| path | flood events/s | flood latency p50 / p99 s | flood CPU ms/event "
          f"| paced ({args.rate:g}/s) latency p50 / p90 / p99 ms | paced CPU ms/event "
          "| callbacks/event |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for path, flood, paced in rows:
        print(f"| {path} | {flood['events/s']:.0f} | {flood['p50']:.2f} / {flood['p99']:.2f} "
              f"| {flood['cpu_ms']:.3f} | {1000 * paced['p50']:.1f} / {1000 * paced['p90']:.1f}"
              f" / {1000 * paced['p99']:.1f} | {paced['cpu_ms']:.3f} "
              f"| {flood['calls']:.2f} / {paced['calls']:.2f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {p: {"flood": f, "paced": pc} for p, f, pc in rows}, indent=2))


def main() -> None:
    argv = sys.argv[1:]
    if argv and argv[0] in ("_reflector", "_kopf"):
        p = argparse.ArgumentParser()
        p.add_argument("--kubeconfig")
        p.add_argument("--server")
        p.add_argument("--batch-window", type=float, default=0.1)
        p.add_argument("--expect", type=int, required=True)
        p.add_argument("--out", required=True)
        role = p.parse_args(argv[1:])
        with contextlib.suppress(KeyboardInterrupt):
            (role_reflector if argv[0] == "_reflector" else role_kopf)(role)
        return
    p = argparse.ArgumentParser(prog="bench/watch_paths.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--events", type=int, default=10000, help="pods created in the flood")
    p.add_argument("--paced-events", type=int, default=1000, help="pods created paced")
    p.add_argument("--rate", type=float, default=100, help="pods/s when paced")
    p.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS))
    p.add_argument("--log-dir")
    p.add_argument("--json")
    asyncio.run(main_async(p.parse_args(argv)))


if __name__ == "__main__":
    main()
