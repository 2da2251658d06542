"""429s under load: the operator with and without its client-side rate limit.

The fake API server of ``tests/fakeapi`` is given an APF-like limit per client
(``FlowLimiter``: ``--server-qps`` per second, ``--server-burst`` at once, 429 beyond,
as a full priority level answers). The real operator (kopf and the runtime, in process)
then schedules ``--pods`` plain pods that arrive at once, and gangs of ``--gang`` pods
with placeholders; this is run once without a client-side limit (``qps`` 0) and once with
``--qps``/``--burst``. Printed: the 429s the operator received, its requests, and the
seconds until every pod was bound, and the Scheduled Events written and dropped (a 429
drops them; Bindings are tried again).

    python3 bench/write_budget.py                 # 300 pods + 10 gangs of 8
    python3 bench/write_budget.py --pods 1000 --server-qps 100
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

from fakeapi import FakeApiServer  # noqa: E402
from fakeapi.builders import untaint_ready  # noqa: E402
from fakeapi.flowcontrol import FlowLimiter  # noqa: E402
from gangsched.shell.main import operate  # noqa: E402
from gangsched.shell.runtime import Runtime  # noqa: E402
from gangsched.shell.settings import OperatorSettings  # noqa: E402


def _pod(name: str, **labels: str) -> dict[str, Any]:
    annotations = {"gangsched.io/task-group": "w"} if labels else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels,
                         "annotations": annotations},
            "spec": {"schedulerName": "gangsched", "containers": [
                {"name": "main", "image": "busybox",
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


async def run_once(args: argparse.Namespace, qps: float, burst: int) -> dict[str, float]:
    api = FakeApiServer(auto_run=True)
    await api.start()
    try:
        api.install_crds_from_dir(ROOT / "crds")
        api.create({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "gangsched-system"}})
        for i in range(args.nodes):
            node = api.create({
                "apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n-{i}"},
                "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"},
                           "conditions": [{"type": "Ready", "status": "True"}]}})
            # The API server taints a new node not-ready; the node lifecycle controller
            # removes the taint once the node is Ready.
            ready = untaint_ready(node)
            if ready is not None:
                api.patch("nodes", None, f"n-{i}", ready)
        api.flow = FlowLimiter(args.server_qps, args.server_burst)
        kubeconfig = api.write_kubeconfig(pathlib.Path(tempfile.mkdtemp()) / "kubeconfig")
        settings = OperatorSettings(identity="bench", namespace="gangsched-system",
                                    metrics_port=0, qps=qps, burst=burst, tick=0.05,
                                    batch_window=0.0, status_interval=0.05,
                                    shutdown_timeout=0.5, api_retry_initial=0.1)
        stop = asyncio.Event()
        runtimes: list[Runtime] = []
        task = asyncio.create_task(operate(settings, stop, kubeconfig=str(kubeconfig),
                                           started=runtimes.append))
        while not (runtimes and runtimes[0].ready.is_set()):
            await asyncio.sleep(0.05)
        started = time.perf_counter()
        names = []
        for g in range(args.gangs):
            app = f"gang-{g}"
            api.create({"apiVersion": "gangsched.io/v1alpha1", "kind": "Application",
                        "metadata": {"name": app, "namespace": "default"},
                        "spec": {"queue": "default", "taskGroups": [
                            {"name": "w", "minMember": args.gang,
                             "minResource": {"cpu": "100m", "memory": "64Mi"}}]}})
            for i in range(args.gang):
                names.append(api.create(_pod(f"{app}-{i}", **{"gangsched.io/app": app}))
                             ["metadata"]["name"])
        for i in range(args.pods):
            names.append(api.create(_pod(f"p-{i}"))["metadata"]["name"])
        deadline = started + args.timeout
        while time.perf_counter() < deadline:
            if all(api.get("pods", "default", n)["spec"].get("nodeName") for n in names):
                break
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - started
        unbound = [n for n in names if not api.get("pods", "default", n)["spec"].get("nodeName")]
        if unbound:
            print(f"  not bound after {args.timeout:g} s: {len(unbound)} of {len(names)}, "
                  f"e.g. {', '.join(unbound[:5])}")
        events = runtimes[0].scheduled
        await events.drain(30)  # the Scheduled Events of the last binds
        stop.set()
        await asyncio.wait_for(task, timeout=30)
        rejected = sum(n for client, n in api.flow.rejected.items() if "gangsched" in client)
        admitted = sum(n for client, n in api.flow.admitted.items() if "gangsched" in client)
        return {"429s": rejected, "requests": admitted + rejected, "seconds": elapsed,
                "written": events.written, "dropped": sum(events.dropped.values())}
    finally:
        await api.stop()


async def main(args: argparse.Namespace) -> None:
    print(f"server limit per client: {args.server_qps:g}/s, burst {args.server_burst}; "
          f"{args.pods} pods + {args.gangs} gangs of {args.gang}")
    print(f"{'client limit':<22} {'429s':>6} {'requests':>9} {'seconds':>8} "
          f"{'Scheduled Events written / dropped':>35}")
    for label, qps, burst in (("none (before)", 0.0, 1),
                              (f"qps {args.qps:g} burst {args.burst}", args.qps, args.burst)):
        found = await run_once(args, qps, burst)
        print(f"{label:<22} {found['429s']:>6.0f} {found['requests']:>9.0f} "
              f"{found['seconds']:>8.1f} {found['written']:>27.0f} / {found['dropped']:.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--gangs", type=int, default=10)
    parser.add_argument("--gang", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--server-qps", type=float, default=50)
    parser.add_argument("--server-burst", type=int, default=50)
    parser.add_argument("--qps", type=float, default=40)
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--timeout", type=float, default=120)
    logging.basicConfig(level=logging.ERROR)
    asyncio.run(main(parser.parse_args()))
