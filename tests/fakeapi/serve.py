"""Run the fake API server in its own process, for benchmarks and manual use.

``cd tests && python3 -m fakeapi.serve --kubeconfig /tmp/kc`` starts a server with the
CRDs of ``crds/`` installed and the namespaces ``default`` and ``gangsched-system``,
writes a kubeconfig for it, prints its URL on one line of stdout, and serves until
SIGINT/SIGTERM.

Besides the API, it answers ``GET /debug/requests``: the request counters (by verb,
resource and subresource, and by client ``User-Agent`` product, e.g. ``gangsched``,
``kopf``, ``kube-scheduler``), the open watches, and the server's own CPU seconds.
``POST /debug/pods?count=N&namespace=NS&prefix=P&rate=R&bind=1`` creates N pods
in-process (R per second; 0: as fast as the store goes), binds each one after the next
is created, and answers the commit times: a source of watch events that costs no HTTP
client. ``nodes=K&node_prefix=X`` binds pod i to node ``X{i % K:05d}`` instead of
``node-0``; ``scheduler=S``, ``cpu=C`` and ``memory=M`` set the pods' schedulerName and
requests; ``times=0`` answers counts instead of the commit times (for large N).
``clone=1`` (with ``bind=1``, ``rate=0``) makes a large cluster quickly: the first pod
is created and bound as above, and every other pod is committed as a copy of it,
created already bound (``spec.nodeName`` set at creation, which the API server accepts),
with its own name, uid and creation time: one ADDED event per pod, no admission or
bind per pod (the copies share the first's nested spec, which no write changes in
place). ``POST /debug/nodes?count=N&prefix=P`` with a Node manifest as the body makes N
nodes named ``P{i:05d}`` (``kubernetes.io/hostname`` labelled alike) in the same way:
the first through admission, its ``not-ready`` taint then removed as the node lifecycle
controller removes it from a Ready node, the others copies of it. The
answer also carries the first time each client (``User-Agent`` product) made each
kind of request (``first`` in ``/debug/requests``: e.g. its first binding). These
debug requests are not counted.

``--write-cost SECONDS`` models a real API server where writes dominate: on a real
control plane each write (create, update, patch, delete) is committed to etcd, and the
apiserver and etcd, not the clients, bound the rate at which writes go through. Here
every write waits for one shared lane, which it then holds for SECONDS: writes are
served in arrival order at most ``1 / SECONDS`` per second, whoever sends them, each
answered no sooner than SECONDS after its turn came; reads (get, list, watch) are not
charged. 0 (the default): writes cost only the fake's own CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import json
import pathlib
import resource
import signal
import time
from typing import Any

from aiohttp import web

from fakeapi import meta
from fakeapi.nodes import NOT_READY
from fakeapi.server import FakeApiServer

ROOT = pathlib.Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True)
class PodTemplate:
    """The pods ``/debug/pods`` makes: on ``node-0`` with no requests by default."""

    nodes: int = 0
    node_prefix: str = "node-"
    scheduler: str = ""
    cpu: str = ""
    memory: str = ""

    def node(self, i: int) -> str:
        return f"{self.node_prefix}{i % self.nodes:05d}" if self.nodes else "node-0"

    def pod(self, name: str, namespace: str) -> dict[str, object]:
        container: dict[str, object] = {"name": "main", "image": "pause:3.10"}
        requests = {k: v for k, v in (("cpu", self.cpu), ("memory", self.memory)) if v}
        if requests:
            container["resources"] = {"requests": requests}
        spec: dict[str, object] = {"containers": [container]}
        if self.scheduler:
            spec["schedulerName"] = self.scheduler
        return {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class ServedFakeApi(FakeApiServer):
    """The fake, plus per-client counters and a ``/debug/requests`` endpoint."""

    def __init__(self, *, history_limit: int, auto_run: bool, seed: int | None,
                 write_cost: float = 0.0) -> None:
        super().__init__(history_limit=history_limit, auto_run=auto_run, seed=seed)
        self.write_cost = write_cost
        """Seconds each write holds the one write lane (see the module docstring)."""
        self._lane_free = 0.0
        """Event-loop time at which the write lane is free again."""
        self.by_agent: collections.Counter[str] = collections.Counter()
        self.by_agent_verb: collections.Counter[str] = collections.Counter()
        self.first: dict[str, float] = {}
        """When each ``by_agent_verb`` key was first counted (epoch seconds)."""
        self._agent = ""

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path == "/debug/requests":
            return web.Response(body=json.dumps(self.debug_counters()).encode(),
                                content_type="application/json")
        if request.path == "/debug/pods" and request.method == "POST":
            q = request.query
            template = PodTemplate(int(q.get("nodes", "0")), q.get("node_prefix", "node-"),
                                   q.get("scheduler", ""), q.get("cpu", ""), q.get("memory", ""))
            made = await self.make_pods(int(q.get("count", "1")), q.get("namespace", "default"),
                                        q.get("prefix", "pod-"), float(q.get("rate", "0")),
                                        q.get("bind", "") in ("1", "true"), template,
                                        clone=q.get("clone", "") in ("1", "true"))
            answer: object = made
            if q.get("times", "1") in ("0", "false"):
                answer = {key: len(value) for key, value in made.items()}
            return web.Response(body=json.dumps(answer).encode(),
                                content_type="application/json")
        if request.path == "/debug/nodes" and request.method == "POST":
            q = request.query
            made = await self.make_nodes(json.loads(await request.read()),
                                         int(q.get("count", "1")), q.get("prefix", "node-"))
            return web.Response(body=json.dumps({"created": made}).encode(),
                                content_type="application/json")
        if self.write_cost > 0 and request.method in ("POST", "PUT", "PATCH", "DELETE"):
            await self._write_turn()  # (before ``_agent`` is set: see ``count``)
        agent = request.headers.get("User-Agent", "")
        self._agent = agent.split("/", 1)[0].split(" ", 1)[0] or "unknown"
        self.by_agent[self._agent] += 1
        return await super()._handle(request)

    async def _write_turn(self) -> None:
        """Wait for this write's turn on the lane, and hold it for ``write_cost``."""
        now = asyncio.get_running_loop().time()
        self._lane_free = max(now, self._lane_free) + self.write_cost
        await asyncio.sleep(self._lane_free - now)

    def count(self, verb: str, resource: str, subresource: str = "") -> None:
        # Called by the dispatcher before its first await, so ``_agent`` is this request's.
        super().count(verb, resource, subresource)
        key = " ".join(filter(None, (self._agent, verb, resource, subresource)))
        self.by_agent_verb[key] += 1
        if key not in self.first:
            self.first[key] = time.time()

    async def make_pods(self, count: int, namespace: str, prefix: str, rate: float,
                        bind: bool, template: PodTemplate | None = None, *,
                        clone: bool = False) -> dict[str, dict[str, float]]:
        """Create ``count`` pods in-process, ``rate`` per second (0: at once, yielding to
        the watches every 100); with ``bind``, each pod is bound to a node right after
        the next one is created (two events per pod, as a scheduler makes). The commit
        times of both, by pod name. ``clone``: see the module docstring."""
        created: dict[str, float] = {}
        bound: dict[str, float] = {}
        loop = asyncio.get_running_loop()
        start = loop.time()
        names = [f"{prefix}{i:06d}" for i in range(count)]
        template = template or PodTemplate()
        if clone and bind and rate <= 0 and names:
            self.create(template.pod(names[0], namespace))
            created[names[0]] = time.time()
            self.bind(namespace, names[0], template.node(0))
            bound[names[0]] = time.time()
            first = self.store.get(self.resolve("pods"), namespace, names[0])
            for i in range(1, count):
                if i % 1000 == 0:
                    await asyncio.sleep(0)
                self._commit_copy(first, names[i], {"nodeName": template.node(i)})
                created[names[i]] = bound[names[i]] = time.time()
            return {"created": created, "bound": bound}
        for i, name in enumerate(names):
            if rate > 0:
                delay = start + i / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
            elif i % 100 == 0:
                await asyncio.sleep(0)
            self.create(template.pod(name, namespace))
            created[name] = time.time()
            if bind and i > 0:
                self.bind(namespace, names[i - 1], template.node(i - 1))
                bound[names[i - 1]] = time.time()
        if bind and names:
            self.bind(namespace, names[-1], template.node(len(names) - 1))
            bound[names[-1]] = time.time()
        return {"created": created, "bound": bound}

    def _commit_copy(self, first: dict[str, Any], name: str, spec: dict[str, Any],
                     labels: dict[str, str] | None = None) -> None:
        """Commit a copy of the stored ``first`` as a new object ``name`` (see ``clone``)."""
        md = {**first["metadata"], "name": name, "uid": meta.new_uid(self.store.rng),
              "creationTimestamp": meta.rfc3339(self.store.clock())}
        if labels is not None:
            md["labels"] = labels
        obj = {**first, "metadata": md, "spec": {**first.get("spec", {}), **spec}}
        kind = self.resolve(first["kind"], first["apiVersion"])
        self.store.commit(kind, "ADDED", obj, None)

    async def make_nodes(self, body: dict[str, Any], count: int, prefix: str) -> int:
        """``count`` Ready, schedulable nodes like ``body`` (see the module docstring)."""
        nodes = self.resolve("nodes")
        for i in range(count):
            name = f"{prefix}{i:05d}"
            labels = {**(body.get("metadata") or {}).get("labels", {}),
                      "kubernetes.io/hostname": name}
            if i == 0:
                made = self.create({**body, "metadata": {
                    **(body.get("metadata") or {}), "name": name, "labels": labels}})
                taints = [t for t in made["spec"].get("taints") or ()
                          if t.get("key") != NOT_READY]
                self.store.patch(nodes, None, name, "application/merge-patch+json",
                                 {"spec": {"taints": taints or None}})
                first = self.store.get(nodes, None, name)
                continue
            if i % 1000 == 0:
                await asyncio.sleep(0)
            self._commit_copy(first, name, {}, labels)
        return count

    def debug_counters(self) -> dict[str, object]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "total": sum(self.requests.values()),
            "by_agent": dict(self.by_agent),
            "by_agent_verb": dict(self.by_agent_verb),
            "by_verb": {"/".join(k).rstrip("/"): v for k, v in sorted(self.requests.items())},
            "first": dict(self.first),
            "active_watches": self.active_watches,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "internal_errors": len(self.internal_errors),
        }


async def serve(args: argparse.Namespace) -> None:
    server = ServedFakeApi(history_limit=args.history_limit, auto_run=args.auto_run,
                           seed=args.seed, write_cost=args.write_cost)
    server.install_crds_from_dir(pathlib.Path(args.crds))
    for ns in ("default", "gangsched-system", *args.namespace):
        with contextlib.suppress(Exception):
            server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await server.start(args.host, args.port)
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(server.url, flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        await server.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m fakeapi.serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--kubeconfig", help="write a kubeconfig for the server here")
    parser.add_argument("--crds", default=str(ROOT / "crds"), help="folder of CRD YAML files")
    parser.add_argument("--namespace", action="append", default=[],
                        help="another namespace to create (repeatable)")
    parser.add_argument("--history-limit", type=int, default=500_000,
                        help="watch events kept per resource")
    parser.add_argument("--auto-run", action="store_true",
                        help="the fake kubelet marks bound pods Running at once")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--write-cost", type=float, default=0.0, metavar="SECONDS",
                        help="each write holds the one write lane this long (see above)")
    asyncio.run(serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
