"""Writes per pending pod per minute under churn: the PodScheduled condition and Events.

The operator (kopf and the runtime, in process, real clocks) runs against the fake API
server of ``tests/fakeapi``, with ``--pods`` plain pods that fit no node (8 cpu against
nodes of 4), in a Queue of their own. Then, for ``--seconds``:

* every second one node is replaced by another: short of cpu, then short of cpu and
  memory, in turn, so the message of every pending pod changes (``0/11 nodes are
  available: 11 Insufficient cpu.`` against ``... 11 Insufficient cpu, 1 Insufficient
  memory.``): the churn of a real cluster, where counts change with every pod and node
  that comes and goes;
* every ``--flip`` seconds the Queue's ``max`` goes below the pods' request and back, so
  their *reason* flips between ``QueueQuota`` and ``Capacity``.

Counted on the server, from the first pod's first write on: ``PATCH pods/status`` (the
condition) and Event writes (``events.k8s.io`` create or patch), per pending pod per
minute. Run twice: ``before`` is the operator set to write on every change of the
message (``pending_refresh`` and the per-pod backoff 0, no client-side rate limit: how
it behaved before, except that an Event was then recorded with every condition too);
``after`` is the operator as shipped (a new reason at once within the pod's backoff of
1 s doubling to 10 s, the same reason with a new message at most every 5 minutes,
Events only when the reason changes).

    python3 bench/pending_writes.py                     # 100 pods, 60 s each run
    python3 bench/pending_writes.py --pods 200 --seconds 120 --flip 30
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import sys
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "shell"))

from fakeapi import FakeApiServer  # noqa: E402
from shellkit import OperatorUnderTest, add_node, new_cluster, node, wait_for  # noqa: E402

QUEUE = "churn"


async def _factory(**options: Any) -> FakeApiServer:
    api = FakeApiServer(**options)
    await api.start()
    return api


def _queue(cpu: str) -> dict[str, Any]:
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "Queue",
            "metadata": {"name": QUEUE}, "spec": {"max": {"cpu": cpu}}}


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "annotations": {"gangsched.io/queue": QUEUE}},
            "spec": {"schedulerName": "gangsched", "containers": [
                {"name": "main", "image": "busybox",
                 "resources": {"requests": {"cpu": "8", "memory": "64Mi"}}}]}}


def _writes(api: FakeApiServer, start: int) -> tuple[int, int]:
    """(condition patches, Event writes) in the request log from entry ``start`` on."""
    conditions = events = 0
    for i, entry in enumerate(api.request_log):
        if i < start:
            continue
        path = entry.path_qs.split("?")[0]
        if entry.method == "PATCH" and "/pods/" in path and path.endswith("/status"):
            conditions += 1
        elif "/apis/events.k8s.io/" in path and entry.method in ("POST", "PATCH"):
            events += 1
    return conditions, events


async def run_once(args: argparse.Namespace, **settings: Any) -> dict[str, float]:
    api, kubeconfig = await new_cluster(
        _factory, pathlib.Path(tempfile.mkdtemp()), nodes=args.nodes, cpu="4",
        memory="16Gi", request_log_limit=1_000_000)
    api.create(_queue("1000"))
    op = OperatorUnderTest(api, kubeconfig, time.time, monotonic=time.monotonic,
                           identity="bench", tick=1.0, status_interval=1.0, **settings)
    try:
        await op.start()
        for i in range(args.pods):
            api.create(_pod(f"p-{i}"))

        def written() -> bool:
            patched = {e.path_qs.split("/")[-2] for e in api.request_log
                       if e.method == "PATCH" and e.path_qs.split("?")[0].endswith("/status")
                       and "/pods/" in e.path_qs}
            return bool(len(patched) >= args.pods)

        await wait_for(written, what="every pod's first condition", timeout=60)
        start = len(api.request_log)
        began = time.monotonic()
        second = 0
        while time.monotonic() - began < args.seconds:
            second += 1
            if second > 1:
                api.delete("nodes", None, f"extra-{second - 1}")
            add_node(api, node(f"extra-{second}", cpu="4",
                               memory="32Mi" if second % 2 else "16Gi"))
            if second % args.flip == 0:
                cpu = "1" if (second // args.flip) % 2 else "1000"
                api.patch("queues", None, QUEUE, {"spec": {"max": {"cpu": cpu}}},
                          api_version="gangsched.io/v1alpha1")
            await asyncio.sleep(max(0.0, began + second - time.monotonic()))
        elapsed = time.monotonic() - began
        conditions, events = _writes(api, start)
    finally:
        await op.crash()
        await api.stop()
    minutes = elapsed / 60
    return {"conditions": conditions / args.pods / minutes,
            "events": events / args.pods / minutes, "seconds": elapsed}


async def main(args: argparse.Namespace) -> None:
    print(f"{args.pods} pending pods, {args.nodes} nodes and one more; every second that "
          f"one is replaced (the message changes), every {args.flip} s the reason flips; "
          f"{args.seconds:g} s per run")
    print(f"{'operator':<40} {'conditions':>10} {'events':>7} {'writes':>7}  "
          "(per pending pod per minute)")
    runs: tuple[tuple[str, dict[str, Any]], ...] = (("before: every new message written", {
                "pending_refresh": 0.0, "pending_backoff_initial": 0.0,
                "pending_backoff_max": 0.0, "qps": 0.0}),
            ("after: reason changes, per-pod backoff", {}))
    for label, settings in runs:
        found = await run_once(args, **settings)
        print(f"{label:<40} {found['conditions']:>10.2f} {found['events']:>7.2f} "
              f"{found['conditions'] + found['events']:>7.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--flip", type=int, default=20,
                        help="seconds between two flips of the pods' reason")
    logging.basicConfig(level=logging.CRITICAL)
    asyncio.run(main(parser.parse_args()))
