"""A load test of the fake: create nodes and pods over HTTP, then bind every pod.

Run as a module for the big figures: ``cd tests && python3 -m fakeapi.loadtest NODES PODS
CONCURRENCY WATCHERS`` (defaults: 5000 10000 32 0);
the test suite runs :func:`run` with small numbers. Traffic goes to 127.0.0.1 only,
through one pooled aiohttp session with ``concurrency`` requests in flight.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Awaitable, Callable, Iterable

import aiohttp

from fakeapi.server import FakeApiServer


@dataclasses.dataclass(frozen=True, slots=True)
class Phase:
    name: str
    requests: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else float("inf")


async def _pool(jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    queue: asyncio.Queue[Callable[[], Awaitable[None]]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        while not queue.empty():
            await (queue.get_nowait())()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def _count_pod_events(url: str, rv: str, expected: int) -> int:
    """A cluster-wide pod watch from ``rv`` that reads ``expected`` events (5 min at most)."""
    seen = 0
    async with aiohttp.ClientSession(url) as session, asyncio.timeout(300):
        params = {"watch": "true", "resourceVersion": rv}
        async with session.get("/api/v1/pods", params=params) as resp:
            async for line in resp.content:
                seen += bool(line.strip())
                if seen >= expected:
                    break
    return seen


async def run(server: FakeApiServer, *, nodes: int, pods: int, concurrency: int = 32,
              namespace: str = "default", watchers: int = 0) -> list[Phase]:
    """Create ``nodes`` nodes and ``pods`` pods, bind all pods; returns per-phase timings.

    With ``watchers``, that many cluster-wide pod watches run meanwhile and must each
    receive every event (one ADDED and one MODIFIED per pod).
    """
    connector = aiohttp.TCPConnector(limit=concurrency)
    phases: list[Phase] = []
    rv = str(server.store.rv)
    watches = [asyncio.create_task(_count_pod_events(server.url, rv, 2 * pods))
               for _ in range(watchers)]
    async with aiohttp.ClientSession(server.url, connector=connector) as session:

        async def call(method: str, path: str, body: object, expect: int) -> None:
            async with session.request(method, path, json=body) as resp:
                await resp.read()
                if resp.status != expect:
                    raise AssertionError(f"{method} {path}: {resp.status} {await resp.text()}")

        def node(i: int) -> Callable[[], Awaitable[None]]:
            body = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": f"node-{i:05d}", "labels": {"zone": f"z{i % 4}"}},
                    "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}}
            return lambda: call("POST", "/api/v1/nodes", body, 201)

        def pod(i: int) -> Callable[[], Awaitable[None]]:
            body = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"pod-{i:05d}", "labels": {"gang": f"g{i // 8}"}},
                    "spec": {"schedulerName": "gangsched", "containers": [{
                        "name": "main", "image": "busybox:1.36",
                        "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}]}}
            return lambda: call("POST", f"/api/v1/namespaces/{namespace}/pods", body, 201)

        def bind(i: int) -> Callable[[], Awaitable[None]]:
            name = f"pod-{i:05d}"
            body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                    "target": {"apiVersion": "v1", "kind": "Node",
                               "name": f"node-{i % max(nodes, 1):05d}"}}
            path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
            return lambda: call("POST", path, body, 201)

        for name, count, make in (("create nodes", nodes, node), ("create pods", pods, pod),
                                  ("bind pods", pods, bind)):
            started = time.perf_counter()
            await _pool((make(i) for i in range(count)), concurrency)
            phases.append(Phase(name, count, time.perf_counter() - started))
    counts = await asyncio.gather(*watches)
    if any(c != 2 * pods for c in counts):
        raise AssertionError(f"watchers saw {counts} events, expected {2 * pods} each")
    return phases


async def _main(nodes: int, pods: int, concurrency: int, watchers: int) -> None:
    async with FakeApiServer() as server:
        total = 0.0
        phases = await run(server, nodes=nodes, pods=pods, concurrency=concurrency,
                           watchers=watchers)
        for phase in phases:
            total += phase.seconds
            print(f"{phase.name:>13}: {phase.requests:6d} requests in {phase.seconds:6.2f}s "
                  f"= {phase.rate:7.0f} req/s")
        print(f"{'total':>13}: {nodes + 2 * pods:6d} requests in {total:6.2f}s "
              f"= {(nodes + 2 * pods) / total:7.0f} req/s")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    asyncio.run(_main(*(args + [5000, 10000, 32, 0][len(args):])))
