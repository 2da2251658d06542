#!/usr/bin/env python3
"""Cluster benchmark: how fast does a scheduler bind pods on a real (or fake) API server?

Usage::

    python3 bench/cluster.py --nodes 500 --pods 3000 [--gang-size 8] [--null]
                             [--kube-writes] [--scheduled-event on|off|both]
                             [--write-cost SECONDS] [--scheduler CMD]
                             [--mode backlog|live] [--repeat 3] [--json FILE] [-v]
    python3 bench/cluster.py --nodes 50 --backlog 2 --runtime 3 --gang-size 0,8,64

Against the cluster named by ``KUBECONFIG``, or, when none is set, against the fake API
server of ``tests/fakeapi`` started in its own process (``python3 -m fakeapi.serve``),
which models a server where writes dominate: each write holds one shared write lane for
``--write-cost`` seconds (default 1.8 ms: 556 writes per second, what a real v1.36
control plane bound plain pods at, one write each), reads are free (see
``fakeapi/serve.py``).
For each scheduler (the operator; with ``--null`` the null binder; with ``--scheduler``
any command) the run is the same, on a fresh server (or a fresh namespace):

1. create ``--nodes`` Node objects (4 cpu, 32Gi, 110 pods, Ready; no kubelet needed),
   and remove the ``node.kubernetes.io/not-ready:NoSchedule`` taint the API server's
   admission puts on every new Node (the node lifecycle controller's part; on a real
   cluster it is taken off again if that controller puts it back during the run). If
   the taint cannot be removed, the run stops at once and says why;
2. ``backlog`` mode (the default): create ``--pods`` pending pods (plain, or gangs of
   ``--gang-size``: one Application with one task group per gang), then start the
   scheduler. ``live`` mode: start the scheduler, wait until it is idle, then create
   the pods while it runs (``--rate`` pods per second, or as fast as can be);
3. a separate watcher process records when it *receives* each pod's ADDED event and its
   first event with ``spec.nodeName`` (receive timestamps: ``creationTimestamp`` has
   one-second resolution), and each Application's ADDED event. It reports progress every
   ``--progress`` seconds, and stops the run early, saying so, when nothing was bound
   for ``--stall`` seconds. With ``--runtime`` it plays the kubelet: a bound pod
   succeeds that many seconds later, so that a backlog larger than the cluster
   (``--backlog FACTOR``: that many times what the nodes hold) drains;
4. when every real pod is bound and the scheduler is idle again (what the binds left
   to do, such as Events and status patches, belongs to the run): the scheduler's CPU
   time (``/proc``, its process tree) and the API requests it made (the fake counts
   them per ``User-Agent``; on a real cluster our own schedulers report their client's
   count at exit).

Every scheduler runs in its own process, as do the watcher and the fake API server, so
none of them shares an event loop with another. The schedulers:

* ``operator``: the real operator (kopf handlers, reflectors, runtime, core), started
  like ``gangsched run --no-leader-election``; with ``--scheduled-event off`` or
  ``both``, ``operator-no-event`` is the same with ``--no-scheduled-events``;
* ``null``: the operator's client stack (``KubeClient``, ``Reflector``, a ``WorkPool``
  of ``bind_workers``) binding each pending pod round-robin, with no scheduling logic:
  the most this client stack can do against this API server (with gangs it binds the
  real pods and ignores the Applications);
* ``kube-writes`` (``--kube-writes``): the null binder that also writes each pod's
  ``Scheduled`` Event after its Binding, off the bind path: kube-scheduler's writes (one
  Binding and one Event per pod) with no scheduling behind them. There is no
  kube-scheduler on a machine without a Go toolchain; this is what a comparison with it
  must count the same writes against;
* ``--scheduler CMD``: any command, e.g. ``kube-scheduler --config {config}``.
  ``{kubeconfig}``, ``{config}`` (a KubeSchedulerConfiguration written for the run:
  this kubeconfig, QPS/burst ``--qps``, no leader election, one profile for the pods'
  ``schedulerName``) and ``{scheduler_name}`` are substituted; ``KUBECONFIG`` is set.
  The operator gets the same client-side limit (its ``qps`` and ``burst`` settings,
  whose defaults are kube-scheduler's 50/s and 100): ``--qps`` defaults to 5000, which
  does not limit at these rates, the same budget for both.

Metrics (real pods only: placeholders are counted apart): bind throughput (average
over the makespan, and p50/p90/max of one-second samples), makespan (first to last
bind; and from the scheduler's launch in backlog mode), pod latency p50/p90/p99 (from
the pod's ADDED; in backlog mode from the scheduler's launch, since every pod waited
for it), gang-complete latency (all real pods of an Application bound, from its ADDED
or the launch), API requests per bound pod (everything the scheduler sent, lists and
watches included; ``-v`` shows them by verb), requests per bound pod by kind (Bindings,
Events, status patches, pod creates and deletes, other writes, reads: on the fake API
server, which counts them per client), CPU seconds per 1,000 pods (the
scheduler's and the fake server's), and how many cores each kept busy between the
first and the last bind. In backlog mode the scheduler's start-up CPU (interpreter,
imports, connecting, with no pods) is the median of ``--startup-samples`` launches
before the pods exist, and is subtracted. API requests per bound pod are printed by verb
after each run. ``--gang-size 0,8,64`` runs each workload in turn (plain pods, gangs of
8, gangs of 64: the same pods) and ends with a table comparing the operator on them, and
one with every scheduler on every workload side by side (binds per second, against plain
pods and against each other, and requests per bound pod by kind).

The machine is shared by every process of the run, so other load skews the figures:
``--repeat N`` runs each scheduler N times, interleaved, and reports medians (ratios
are of the medians); the load average is printed.

On a real cluster, nodes carry the label ``gangsched-bench=true`` and heartbeat Leases
(``--heartbeat``) so that the node lifecycle controller keeps them Ready; they and the
run's namespace are deleted at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import json
import logging
import os
import pathlib
import shlex
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from gangsched.shell.client import ApiError, KubeClient, load_connection
from gangsched.shell.executors import WorkPool
from gangsched.shell.settings import OperatorSettings
from gangsched.shell.watch import Reflector

ROOT = pathlib.Path(__file__).resolve().parents[1]
AGENT = "gangsched-bench"
LABEL = "gangsched-bench"
LABEL_APP = "gangsched.io/app"
ANN_TASK_GROUP = "gangsched.io/task-group"
LABEL_PLACEHOLDER = "gangsched.io/placeholder"
GROUP, VERSION = "gangsched.io", "v1alpha1"
NO_EVENT = "operator-no-event"
"""The operator with ``--no-scheduled-events``."""
KUBE_WRITES = "kube-writes"
"""The null binder that also writes each pod's Scheduled Event: kube-scheduler's writes
(one Binding and one Event per pod), not kube-scheduler."""
WRITE_COST = 0.0018
"""The fake's default write cost (``--write-cost``): 1 / 556 s, the plain pods' binds per
second, one write each, on a real v1.36 control plane (``--nodes 500 --pods 3000``)."""
CLK_TCK = os.sysconf("SC_CLK_TCK")
JSON = dict[str, Any]

log = logging.getLogger("bench.cluster")


# --- the client -------------------------------------------------------------------------


class BenchClient(KubeClient):
    """The operator's client, under another User-Agent so that the fake can tell apart
    the benchmark's own requests from the scheduler's.

    Tasks that use it are started with :meth:`companion`: closing the client cancels and
    awaits them first, so that none of them opens a new session after the close (a
    session opened then is never closed: aiohttp's ``Unclosed client session``). Once
    closing, no companion starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._companions: set[asyncio.Task[Any]] = set()
        self.closing = False

    def _open(self) -> aiohttp.ClientSession:
        session = super()._open()
        session.headers["User-Agent"] = AGENT
        return session

    def companion(self, work: Awaitable[Any]) -> asyncio.Task[Any] | None:
        """Run ``work`` as a task the client awaits before it closes (None, and ``work``
        is closed unstarted, once the client is closing)."""
        if self.closing:
            close = getattr(work, "close", None)
            if close is not None:
                close()
            return None
        task = asyncio.ensure_future(work)
        self._companions.add(task)
        task.add_done_callback(self._companions.discard)
        return task

    async def close(self) -> None:
        self.closing = True
        for task in list(self._companions):
            task.cancel()
        await asyncio.gather(*self._companions, return_exceptions=True)
        await super().close()


async def pool(jobs: Iterable[Callable[[], Awaitable[None]]], concurrency: int) -> None:
    iterator = iter(jobs)

    async def worker() -> None:
        for job in iterator:
            await job()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


# --- process helpers --------------------------------------------------------------------


def _proc_stats() -> dict[int, tuple[int, float]]:
    """pid -> (ppid, CPU seconds of the process and its waited-for children)."""
    out: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
        out[int(entry)] = (int(fields[1]), ticks / CLK_TCK)
    return out


class ThreadCPU:
    """This process's CPU seconds by thread name (the core's thread, the event loop's,
    the executors'; threads of one name, but for a number at its end, summed), read from
    ``/proc/self/task`` by :meth:`sample`: a thread that ends counts with what it had
    used at the last sample before (sample often)."""

    def __init__(self) -> None:
        self.seen: dict[int, tuple[str, float]] = {}

    def sample(self) -> None:
        import threading

        names = {t.native_id: t.name for t in threading.enumerate()}
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/stat") as f:
                    raw = f.read()
            except OSError:
                continue
            tid = int(task)
            fields = raw[raw.rindex(")") + 2:].split()
            name = names.get(tid) or self.seen.get(tid, ("?", 0.0))[0]
            self.seen[tid] = (name, (int(fields[11]) + int(fields[12])) / CLK_TCK)

    async def run(self, every: float = 0.2) -> None:
        while True:
            self.sample()
            await asyncio.sleep(every)

    def by_name(self) -> dict[str, float]:
        self.sample()
        out: dict[str, float] = {}
        for name, seconds in self.seen.values():
            key = name.rstrip("_0123456789") or name
            out[key] = out.get(key, 0.0) + seconds
        return out


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by ``pid`` and all its descendants."""
    stats = _proc_stats()
    children: dict[int, list[int]] = {}
    for p, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(p)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        if p in stats:
            total += stats[p][1]
        todo.extend(children.get(p, ()))
    return total


class Child:
    """A subprocess whose stdout lines are read as they come; stderr goes to a file."""

    def __init__(self, name: str, proc: asyncio.subprocess.Process, log_path: pathlib.Path
                 ) -> None:
        self.name = name
        self.proc = proc
        self.log_path = log_path
        self.lines: asyncio.Queue[str] = asyncio.Queue()
        self.output: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, name: str, argv: list[str], log_dir: pathlib.Path, *,
                    cwd: pathlib.Path | None = None, env: Mapping[str, str] | None = None
                    ) -> Child:
        log_path = log_dir / f"{name}.log"
        with open(log_path, "ab") as err:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdout=asyncio.subprocess.PIPE, stderr=err, cwd=cwd,
                env={**os.environ, **(env or {})}, start_new_session=True)
        return cls(name, proc, log_path)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip("\n")
            self.output.append(line)
            self.lines.put_nowait(line)
        self.lines.put_nowait("")  # EOF

    async def expect(self, prefix: str, timeout: float) -> str:
        """The next stdout line starting with ``prefix``; fails on EOF or timeout."""
        async with asyncio.timeout(timeout):
            while True:
                line = await self.lines.get()
                if line.startswith(prefix):
                    return line
                if line == "":  # EOF: the process is gone
                    code = await self.proc.wait()
                    raise RuntimeError(f"{self.name} exited ({code}); see {self.log_path}")

    def cpu(self) -> float:
        return tree_cpu(self.proc.pid)

    async def stop(self, timeout: float = 15.0) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                await self.proc.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader

    async def wait_idle(self, *, at_least: float = 1.0, quiet: float = 1.0,
                        threshold: float = 0.05, timeout: float = 120.0) -> float:
        """Wait until the process tree used < ``threshold`` CPU seconds over ``quiet``
        seconds (and ``at_least`` seconds passed); its CPU seconds then."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        samples: list[tuple[float, float]] = []
        while True:
            now, cpu = loop.time(), self.cpu()
            samples.append((now, cpu))
            if self.proc.returncode is not None:
                raise RuntimeError(f"{self.name} exited ({self.proc.returncode}); "
                                   f"see {self.log_path}")
            old = [s for s in samples if s[0] <= now - quiet]
            if now - start >= at_least and old and cpu - old[-1][1] < threshold:
                return cpu
            if now - start > timeout:
                log.warning("%s never went idle; going on", self.name)
                return cpu
            await asyncio.sleep(0.1)


# --- clusters ---------------------------------------------------------------------------


class Cluster:
    """Where a run happens: a fresh fake API server, or a namespace of a real cluster."""

    kubeconfig: str
    namespace: str
    fake: bool
    url: str = ""

    async def open(self, run: str) -> None: ...
    async def close(self) -> None: ...

    async def counters(self) -> JSON | None:
        """The fake's request counters and CPU; None on a real cluster."""
        if not self.fake:
            return None
        async with aiohttp.ClientSession() as session, \
                session.get(self.url + "/debug/requests") as resp:
            result: JSON = await resp.json()
            return result

    def server_cpu(self) -> float | None:
        return None


class FakeCluster(Cluster):
    fake = True

    def __init__(self, log_dir: pathlib.Path, write_cost: float = 0.0) -> None:
        self.log_dir = log_dir
        self.write_cost = write_cost
        """Seconds each write holds the fake's one write lane (``--write-cost``)."""
        self.server: Child | None = None
        self.namespace = "default"

    async def open(self, run: str) -> None:
        self.kubeconfig = str(self.log_dir / f"kubeconfig-{run}")
        self.server = await Child.start(
            f"fakeapi-{run}", [sys.executable, "-m", "fakeapi.serve", "--kubeconfig",
                               self.kubeconfig, "--namespace", "bench",
                               "--write-cost", str(self.write_cost)],
            self.log_dir, cwd=ROOT / "tests")
        self.url = (await self.server.expect("http", 60)).strip()
        self.namespace = "bench"

    async def close(self) -> None:
        if self.server is not None:
            await self.server.stop()
            self.server = None

    def server_cpu(self) -> float | None:
        return self.server.cpu() if self.server is not None else None

    async def make_nodes(self, count: int) -> None:
        """``count`` Ready, schedulable nodes like :func:`node_body`'s, made in the fake's
        own process (``POST /debug/nodes``: the first through admission, its ``not-ready``
        taint removed, the others copies of it): what :func:`create_nodes` makes over
        HTTP, three requests a node, in a fraction of the time at 65,000 nodes."""
        timeout = aiohttp.ClientTimeout(total=None)
        async with aiohttp.ClientSession(timeout=timeout) as session, session.post(
                self.url + "/debug/nodes", params={"count": str(count), "prefix": "bench-node-"},
                json=node_body(0)) as resp:
            resp.raise_for_status()


class RealCluster(Cluster):
    fake = False

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = ""

    async def open(self, run: str) -> None:
        self.namespace = f"gangsched-bench-{run}-{os.getpid()}"
        async with BenchClient(await load_connection(self.kubeconfig)) as client:
            await client.create("", "v1", "namespaces", None, {
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": self.namespace, "labels": {LABEL: "true"}}})

    async def close(self) -> None:
        async with BenchClient(await load_connection(self.kubeconfig)) as client:
            options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
            with contextlib.suppress(ApiError):  # no kubelet: pods go at once with grace 0
                await client.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods",
                                     body=options)
            for path in (f"/api/v1/nodes?labelSelector={LABEL}%3Dtrue",
                         f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
                         f"?labelSelector={LABEL}%3Dtrue",
                         f"/api/v1/namespaces/{self.namespace}"):
                try:
                    await client.request("DELETE", path)
                except ApiError as err:
                    log.warning("cleanup %s: %s", path, err)


# --- the workload -----------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    nodes: int
    pods: int
    gang_size: int
    cpu: str
    memory: str
    scheduler_name: str

    @property
    def gangs(self) -> int:
        return -(-self.pods // self.gang_size) if self.gang_size else 0


def node_body(i: int) -> JSON:
    name = f"bench-node-{i:05d}"
    capacity = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {LABEL: "true", "kubernetes.io/hostname": name,
                                              "kubernetes.io/os": "linux"}},
        "spec": {},
        "status": {
            "capacity": capacity, "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "fake node", "lastHeartbeatTime": now,
                            "lastTransitionTime": now}],
        },
    }


def pod_body(w: Workload, ns: str, i: int) -> JSON:
    labels = {LABEL: "true"}
    annotations: dict[str, str] = {}
    if w.gang_size:
        labels[LABEL_APP] = f"app-{i // w.gang_size:05d}"
        annotations[ANN_TASK_GROUP] = "worker"
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"pod-{i:05d}", "namespace": ns, "labels": labels,
                     "annotations": annotations},
        "spec": {"schedulerName": w.scheduler_name, "terminationGracePeriodSeconds": 0,
                 "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": w.cpu,
                                                            "memory": w.memory}}}]},
    }


def app_body(w: Workload, ns: str, j: int) -> JSON:
    members = min(w.gang_size, w.pods - j * w.gang_size)
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "Application",
        "metadata": {"name": f"app-{j:05d}", "namespace": ns},
        "spec": {"queue": "default", "taskGroups": [{
            "name": "worker", "minMember": members,
            "minResource": {"cpu": w.cpu, "memory": w.memory}}]},
    }


NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"


async def create_nodes(client: KubeClient, w: Workload, concurrency: int) -> None:
    """Create the nodes, Ready, and schedulable: the API server's admission
    (TaintNodesAtCreation) gives every new Node the ``not-ready:NoSchedule`` taint, which
    the node lifecycle controller removes once the node is Ready. Without a kubelet it may
    not (or not soon), so the benchmark removes it, as that controller would. Raises
    SystemExit saying why when it cannot (no right to patch nodes)."""
    async def one(i: int) -> None:
        body = node_body(i)
        name = body["metadata"]["name"]
        try:
            created = await client.create("", "v1", "nodes", None, body)
        except ApiError as err:
            if err.code != 409:
                raise
            created = await client.get("", "v1", "nodes", None, name)
        if not (created.get("status") or {}).get("allocatable"):
            await client.patch("", "v1", "nodes", None, name,
                               {"status": body["status"]}, subresource="status")
        await untaint(client, created)

    await pool((functools.partial(one, i) for i in range(w.nodes)), concurrency)


async def untaint(client: KubeClient, node: Mapping[str, Any]) -> bool:
    """Remove the not-ready/unreachable taints of a benchmark node; True if it had any."""
    spec = node.get("spec") or {}
    taints = spec.get("taints") or []
    kept = [t for t in taints if t.get("key") not in (NOT_READY, UNREACHABLE)]
    if len(kept) == len(taints) and not spec.get("unschedulable"):
        return False
    name = (node.get("metadata") or {}).get("name")
    try:
        await client.patch("", "v1", "nodes", None, str(name),
                           {"spec": {"taints": kept or None, "unschedulable": None}})
    except ApiError as err:
        raise SystemExit(
            f"cannot make node {name} schedulable: removing its {NOT_READY} taint was "
            f"refused ({err.code}: {err.message or err.reason}); no pod would ever be "
            "bound. The benchmark needs the right to patch nodes.") from err
    return True


async def keep_schedulable(client: KubeClient, stop: asyncio.Event) -> None:
    """Real clusters: the node lifecycle controller taints nodes again whose heartbeat it
    finds stale; take such taints off while the run lasts, and say so."""
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 5.0)
        found, _ = await client.list("/api/v1/nodes", params={"labelSelector": f"{LABEL}=true"})
        again = [n for n in found if await untaint(client, n)]
        if again:
            print(f"  nodes tainted again by the cluster, made schedulable: {len(again)}",
                  flush=True)


async def create_pods(client: KubeClient, w: Workload, ns: str, concurrency: int,
                      rate: float = 0.0) -> None:
    """Gang by gang: the Application, then its pods (the order a job controller uses).
    With ``rate``, pods are created at that many per second (a gang's Application with
    its first pod), else as fast as ``concurrency`` requests in flight go."""
    loop = asyncio.get_running_loop()
    start = loop.time()

    def paced(i: int, job: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            if rate > 0:
                await asyncio.sleep(max(0.0, start + i / rate - loop.time()))
            await job()
        return run

    def jobs() -> Iterable[Callable[[], Awaitable[None]]]:
        per = w.gang_size or w.pods
        for j in range(-(-w.pods // per)):
            if w.gang_size:
                yield paced(j * per, functools.partial(
                    client.create, GROUP, VERSION, "applications", ns, app_body(w, ns, j)))
            for i in range(j * per, min(w.pods, (j + 1) * per)):
                yield paced(i, functools.partial(client.create, "", "v1", "pods", ns,
                                                 pod_body(w, ns, i)))

    await pool(jobs(), concurrency)


async def heartbeat(client: KubeClient, nodes: int, interval: float) -> None:
    """Keep fake nodes Ready on a real cluster: renew a Lease per node, spread over time."""
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    names = [f"bench-node-{i:05d}" for i in range(nodes)]
    while True:
        started = time.monotonic()
        for k, name in enumerate(names):
            now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": name, "namespace": "kube-node-lease",
                                 "labels": {LABEL: "true"}},
                    "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                             "renewTime": now}}
            try:
                await client.request("PATCH", f"{path}/{name}", body=body,
                                     content_type="application/merge-patch+json")
            except ApiError as err:
                if err.code == 404:
                    with contextlib.suppress(ApiError):
                        await client.request("POST", path, body=body)
            delay = started + interval * (k + 1) / len(names) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)


# --- the schedulers (run as subprocesses) -----------------------------------------------


def _announce(word: str, **extra: Any) -> None:
    print(word, json.dumps(extra), flush=True)


async def _serve_until_signal(body: Callable[[asyncio.Event], Awaitable[None]]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await body(stop)


def role_operator(args: argparse.Namespace) -> None:
    """The operator as ``gangsched run --no-leader-election`` runs it, plus READY and
    the client's request count on stdout."""
    from gangsched.shell.main import operate
    from gangsched.shell.runtime import Runtime

    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The client-side limit as ``{config}`` sets kube-scheduler's (``--qps``, burst the
    # same): the default (50/s, as kube-scheduler's) would measure the limit, not the
    # scheduler.
    settings = OperatorSettings(scheduler_names=frozenset({args.scheduler_name}),
                                leader_election=False, qps=args.qps,
                                burst=max(1, int(args.qps)),
                                scheduled_events=not args.no_scheduled_events)
    if args.scheduler_profile:
        from gangsched.shell.main import read_profile

        settings = dataclasses.replace(settings, core=dataclasses.replace(
            settings.core, profile=read_profile(args.scheduler_profile)))
    runtimes: list[Runtime] = []

    async def body(stop: asyncio.Event) -> None:
        threads = ThreadCPU()
        sampler = asyncio.create_task(threads.run())

        def started(runtime: Runtime) -> None:
            runtimes.append(runtime)

            async def ready() -> None:
                await runtime.ready.wait()
                _announce("READY")
            asyncio.get_running_loop().create_task(ready())

        await operate(settings, stop, kubeconfig=args.kubeconfig, started=started)
        sampler.cancel()
        if runtimes:
            rt = runtimes[0]
            _announce("COUNTERS", requests=rt.client.requests, cycles=rt.cycles,
                      decisions=rt.decisions, binds=rt.binds.done, api=rt.api.done,
                      threads=threads.by_name())

    _run_maybe_profiled(args, lambda: asyncio.run(_serve_until_signal(body)))


def role_null(args: argparse.Namespace) -> None:
    """The null binder: the operator's client stack, binding round-robin, no scheduling.

    With ``--events`` it also writes, after each Binding, the ``Scheduled`` Event that
    kube-scheduler writes (the operator's own body for it: ``Successfully assigned
    NS/POD to NODE``, reportingController the pods' schedulerName), off the bind path,
    as kube-scheduler's event broadcaster does: kube-scheduler's writes, one Binding and
    one Event per pod, with no scheduling behind them.

    Per pod it does what kube-scheduler must do whatever it decides, and no more: decode
    the watch events (its informer's), keep the pod and its resource request (the
    informer's store and the scheduling queue's pod info: the request worked out from the
    containers, init containers and overhead, as ``computePodResourceRequest``), assume
    it on its node once bound (the scheduler cache's ``AssumePod``: the node's requested
    resources grow by it), and take the bound pod the watch then shows (the cache's
    ``AddPod`` of an assumed pod). It chooses no node (round-robin) and filters and
    scores nothing."""
    from gangsched.core.values.resources import Resources
    from gangsched.shell.scheduled import Bound, event_body
    from gangsched.translate.fields import Problems
    from gangsched.translate.pods import pod_requests

    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = OperatorSettings(scheduler_names=frozenset({args.scheduler_name}),
                                leader_election=False)

    async def body(stop: asyncio.Event) -> None:
        connection = await load_connection(args.kubeconfig)
        async with KubeClient(connection, max_connections=settings.max_connections) as client:
            nodes: dict[str, None] = {}
            ring: list[str] = []
            submitted: set[str] = set()
            store: dict[str, Mapping[str, Any]] = {}
            """Pod uid -> the pod as last seen (the informer's store)."""
            requests: dict[str, Resources] = {}
            """Pod uid -> its resource request (the scheduling queue's pod info)."""
            assumed: dict[str, str] = {}
            """Pod uid -> the node it was bound to."""
            requested: dict[str, Resources] = {}
            """Node -> what the pods bound to it request (the cache's node info)."""
            binds = WorkPool("bind", settings.bind_workers)
            reports = WorkPool("events", settings.report_workers)
            turn = 0
            identity = f"bench-{os.getpid()}"

            async def event(ns: str, name: str, uid: str, node: str) -> None:
                body = event_body(Bound(ns, name, uid, node, args.scheduler_name, time.time()),
                                  identity=identity)
                try:
                    await client.create("events.k8s.io", "v1", "events", ns, body)
                except ApiError as err:
                    log.warning("event %s/%s: %s", ns, name, err)

            def on_node(kind: str, obj: Mapping[str, Any]) -> None:
                name = str(obj["metadata"]["name"])
                if kind == "DELETED":
                    nodes.pop(name, None)
                else:
                    nodes[name] = None
                ring[:] = list(nodes)

            def assume(uid: str, node: str | None) -> None:
                before = assumed.pop(uid, None)
                request = requests.get(uid, Resources.ZERO)
                if before is not None:
                    requested[before] = requested.get(before, Resources.ZERO) - request
                if node is not None:
                    assumed[uid] = node
                    requested[node] = requested.get(node, Resources.ZERO) + request

            async def bind(ns: str, name: str, uid: str, node: str) -> None:
                try:
                    await client.bind(ns, name, uid, node)
                except ApiError as err:
                    if err.code != 409:
                        submitted.discard(uid)
                        log.warning("bind %s/%s: %s", ns, name, err)
                    return
                assume(uid, node)
                if args.events:
                    reports.submit(functools.partial(event, ns, name, uid, node))

            def on_pod(kind: str, obj: Mapping[str, Any]) -> None:
                nonlocal turn
                meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
                uid = str(meta.get("uid", ""))
                if kind == "DELETED":
                    submitted.discard(uid)
                    store.pop(uid, None)
                    assume(uid, None)
                    requests.pop(uid, None)
                    return
                store[uid] = obj
                if uid not in requests:
                    requests[uid] = pod_requests(spec, Problems())
                node = spec.get("nodeName")
                if node:
                    if assumed.get(uid) != node:  # bound by another, or seen before ours
                        assume(uid, str(node))
                    return
                if (uid in submitted or not ring
                        or spec.get("schedulerName") not in settings.scheduler_names
                        or meta.get("deletionTimestamp")):
                    return
                submitted.add(uid)
                node = ring[turn % len(ring)]
                turn += 1
                binds.submit(functools.partial(bind, str(meta.get("namespace", "")),
                                               str(meta.get("name", "")), uid, node))

            pods = Reflector(client, "/api/v1/pods", on_pod, name="pods")
            node_watch = Reflector(client, "/api/v1/nodes", on_node, name="nodes")
            binds.start()
            reports.start()
            await node_watch.list()
            await pods.list()
            tasks = [asyncio.create_task(pods.run(stop)), asyncio.create_task(node_watch.run(stop))]
            _announce("READY")
            await stop.wait()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await binds.stop()
            await reports.stop()
            _announce("COUNTERS", requests=client.requests, binds=binds.done,
                      threads=ThreadCPU().by_name())

    _run_maybe_profiled(args, lambda: asyncio.run(_serve_until_signal(body)))


def _run_maybe_profiled(args: argparse.Namespace, main: Callable[[], None]) -> None:
    if not args.profile:
        main()
        return
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        main()
    finally:
        profiler.disable()
        profiler.dump_stats(args.profile)


def role_watch(args: argparse.Namespace) -> None:
    """The watcher: receive timestamps of pod ADDED / bound and Application ADDED."""
    async def body(stop: asyncio.Event) -> None:
        async with BenchClient(await load_connection(args.kubeconfig)) as client:
            added: dict[str, float] = {}
            bound: dict[str, float] = {}
            app_of: dict[str, str] = {}
            apps: dict[str, float] = {}
            placeholders: dict[str, float] = {}
            done = asyncio.Event()
            loop = asyncio.get_running_loop()
            timers: list[asyncio.TimerHandle] = []
            ns = args.namespace

            async def finish(name: str) -> None:
                """The kubelet's part: the pod ran for ``--runtime`` seconds and succeeded."""
                with contextlib.suppress(ApiError):
                    await client.patch("", "v1", "pods", ns, name,
                                       {"status": {"phase": "Succeeded"}}, subresource="status")

            def later(name: str) -> None:
                client.companion(finish(name))

            def on_pod(kind: str, obj: Mapping[str, Any]) -> None:
                now = time.time()
                meta = obj.get("metadata") or {}
                name = str(meta.get("name"))
                labels = meta.get("labels") or {}
                if labels.get(LABEL) != "true":
                    if (labels.get(LABEL_PLACEHOLDER) == "true" and kind != "DELETED"
                            and (obj.get("spec") or {}).get("nodeName")):
                        placeholders.setdefault(str(meta.get("uid")), now)
                    return
                added.setdefault(name, now)
                if LABEL_APP in labels:
                    app_of[name] = str(labels[LABEL_APP])
                if (kind != "DELETED" and name not in bound
                        and (obj.get("spec") or {}).get("nodeName")):
                    bound[name] = now
                    if args.runtime > 0:
                        timers.append(loop.call_later(args.runtime, later, name))
                    if len(bound) >= args.expect:
                        done.set()

            def on_app(kind: str, obj: Mapping[str, Any]) -> None:
                apps.setdefault(str((obj.get("metadata") or {}).get("name")), time.time())

            watches = [Reflector(client, f"/api/v1/namespaces/{ns}/pods", on_pod)]
            if args.gangs:
                watches.append(Reflector(
                    client, f"/apis/{GROUP}/{VERSION}/namespaces/{ns}/applications", on_app))
            for w in watches:
                await w.list()
            tasks = [asyncio.create_task(w.run(stop)) for w in watches]
            _announce("READY")

            async def progress() -> None:
                """Every ``--progress`` seconds: how many are bound; STALLED when none
                was for ``--stall`` seconds while pods wait."""
                start = last_change = time.time()
                seen = -1
                while not done.is_set():
                    await asyncio.sleep(args.progress)
                    now = time.time()
                    if len(bound) != seen:
                        seen, last_change = len(bound), now
                    since = now - max(bound.values(), default=start)
                    _announce("PROGRESS", bound=len(bound), expect=args.expect,
                              placeholders_bound=len(placeholders),
                              seconds=round(now - start, 1), idle=round(since, 1))
                    if added and now - last_change >= args.stall:
                        _announce("STALLED", bound=len(bound), idle=round(since, 1))
                        done.set()

            reporter = asyncio.create_task(progress())
            waiter = asyncio.create_task(done.wait())
            stopper = asyncio.create_task(stop.wait())
            await asyncio.wait({waiter, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if done.is_set():
                _announce("DONE", bound=len(bound))
            pathlib.Path(args.out).write_text(json.dumps({
                "added": added, "bound": bound, "app_of": app_of, "apps": apps,
                "placeholders_bound": len(placeholders)}))
            _announce("WRITTEN")
            await stop.wait()
            for timer in timers:
                timer.cancel()
            pending = (*tasks, waiter, stopper, reporter)
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    asyncio.run(_serve_until_signal(body))


# --- one run ----------------------------------------------------------------------------


@dataclass
class Scheduler:
    name: str
    template: list[str]
    """The command; ``{kubeconfig}``, ``{config}`` and ``{scheduler_name}`` are filled in."""
    ours: bool
    """Prints READY and COUNTERS."""

    def argv(self, cluster: Cluster, log_dir: pathlib.Path, args: argparse.Namespace
             ) -> list[str]:
        config = log_dir / f"kube-scheduler-{cluster.namespace}.json"
        kube_scheduler_config(config, cluster.kubeconfig, args.qps, args.scheduler_name)
        return [a.replace("{kubeconfig}", cluster.kubeconfig).replace("{config}", str(config))
                .replace("{scheduler_name}", args.scheduler_name) for a in self.template]


@dataclass
class RunResult:
    scheduler: str
    pods: int
    bound: int = 0
    first_bind: float = 0.0
    last_bind: float = 0.0
    launched: float = 0.0
    throughput_samples: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    gang_latencies: list[float] = field(default_factory=list)
    placeholders_bound: int = 0
    cpu: float | None = None
    startup_cpu: float | None = None
    server_cpu: float | None = None
    requests: int | None = None
    requests_detail: dict[str, int] = field(default_factory=dict)
    requests_by_verb: dict[str, int] = field(default_factory=dict)
    cpu_samples: list[tuple[float, float, float]] = field(default_factory=list)
    """(time, scheduler CPU s, server CPU s) every 0.2 s while the pods are bound."""
    notes: list[str] = field(default_factory=list)
    threads: dict[str, float] = field(default_factory=dict)
    """Our schedulers: CPU seconds by thread name at exit (start-up included)."""

    @property
    def makespan(self) -> float:
        return self.last_bind - self.first_bind

    def busy(self, which: int) -> float | None:
        """CPU seconds per second of the scheduler (1) or the server (2) between the
        first and the last bind: 1.0 is one core fully busy."""
        window = [s for s in self.cpu_samples if self.first_bind <= s[0] <= self.last_bind]
        if len(window) < 2 or window[-1][0] <= window[0][0]:
            return None
        return (window[-1][which] - window[0][which]) / (window[-1][0] - window[0][0])

    def metrics(self, mode: str) -> dict[str, float | None]:
        lat, gang = sorted(self.latencies), sorted(self.gang_latencies)
        samples = sorted(self.throughput_samples)
        per_k = 1000 / self.bound if self.bound else None
        return {
            "bound": self.bound,
            "placeholders bound": self.placeholders_bound,
            "makespan s (first to last bind)": self.makespan,
            "makespan s (from launch)": self.last_bind - self.launched if mode == "backlog"
            else None,
            "binds/s average": self.bound / self.makespan if self.makespan > 0 else None,
            "binds/s p50 (1 s samples)": _pct(samples, 50),
            "binds/s p90 (1 s samples)": _pct(samples, 90),
            "binds/s max (1 s samples)": float(samples[-1]) if samples else None,
            "pod latency p50 s": _pct(lat, 50),
            "pod latency p90 s": _pct(lat, 90),
            "pod latency p99 s": _pct(lat, 99),
            "gang complete p50 s": _pct(gang, 50),
            "gang complete p90 s": _pct(gang, 90),
            "gang complete p99 s": _pct(gang, 99),
            "gang complete max s": gang[-1] if gang else None,
            "API requests / bound pod": self.requests / self.bound
            if self.requests is not None and self.bound else None,
            **{f"{kind} / bound pod": count / self.bound if self.bound else None
               for kind, count in request_kinds(self.requests_by_verb).items()},
            "scheduler CPU s / 1000 pods": self.cpu * per_k
            if self.cpu is not None and per_k else None,
            "API server CPU s / 1000 pods": self.server_cpu * per_k
            if self.server_cpu is not None and per_k else None,
            "scheduler cores busy while binding": self.busy(1),
            "API server cores busy while binding": self.busy(2),
        }


KINDS = ("Binding", "Event", "status patch", "pod create or delete", "other write", "read")
"""The kinds of request counted per bound pod (see :func:`request_kinds`)."""


def request_kinds(by_verb: Mapping[str, int]) -> dict[str, int]:
    """Requests by kind, from the fake's counts by ``client verb resource [subresource]``:
    Bindings (``create pods/binding``), Events (create, patch or update of
    ``events``), status patches (patch or update of any ``.../status``: Applications,
    PodGroups, Queues, pods' conditions), pod creates and deletes (placeholders), other
    writes (evictions, Leases, Applications made pods-first...), and reads (get, list,
    watch). Every kind is in the answer, 0 when none was counted."""
    found = dict.fromkeys(KINDS, 0)
    for key, count in by_verb.items():
        parts = key.split(" ")
        verb, resource = parts[1], parts[2] if len(parts) > 2 else ""
        sub = parts[3] if len(parts) > 3 else ""
        write = verb in ("create", "update", "patch", "delete", "deletecollection")
        if resource == "pods" and sub == "binding":
            kind = "Binding"
        elif resource == "events" and write:
            kind = "Event"
        elif sub == "status" and write:
            kind = "status patch"
        elif resource == "pods" and not sub and verb in ("create", "delete"):
            kind = "pod create or delete"
        else:
            kind = "other write" if write else "read"
        found[kind] += count
    return found


def _pct(values: list[float] | list[int], p: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1])


def analyse(result: RunResult, data: JSON, mode: str) -> None:
    added: dict[str, float] = data["added"]
    bound: dict[str, float] = data["bound"]
    result.bound = len(bound)
    result.placeholders_bound = int(data.get("placeholders_bound", 0))
    if not bound:
        return
    times = sorted(bound.values())
    result.first_bind, result.last_bind = times[0], times[-1]
    seconds = int(result.last_bind - result.first_bind)
    bins = [0] * (seconds + 1)
    for t in times:
        bins[int(t - result.first_bind)] += 1
    if len(bins) > 1:  # the last bin is partial
        bins.pop()
    result.throughput_samples = bins

    def since(t: float) -> float:
        return max(t, result.launched) if mode == "backlog" else t

    result.latencies = [t - since(added.get(name, t)) for name, t in bound.items()]
    if data.get("apps"):
        members: dict[str, list[str]] = {}
        for pod, app in data["app_of"].items():
            members.setdefault(app, []).append(pod)
        for app, t_app in data["apps"].items():
            pods = members.get(app, [])
            if pods and all(p in bound for p in pods):
                result.gang_latencies.append(max(bound[p] for p in pods) - since(t_app))


async def run_one(sched: Scheduler, cluster: Cluster, w: Workload, args: argparse.Namespace,
                  log_dir: pathlib.Path, run: str) -> RunResult:
    result = RunResult(sched.name, w.pods)
    await cluster.open(run)
    argv = sched.argv(cluster, log_dir, args)
    children: list[Child] = []
    heart: asyncio.Task[None] | None = None
    env = {"KUBECONFIG": cluster.kubeconfig}
    try:
        async with BenchClient(await load_connection(cluster.kubeconfig),
                               max_connections=args.concurrency) as client:
            t0 = time.monotonic()
            if isinstance(cluster, FakeCluster):
                await cluster.make_nodes(w.nodes)  # in the fake's process: 65,000 in seconds
            else:
                await create_nodes(client, w, args.concurrency)
            print(f"  [{run}] {w.nodes} nodes in {time.monotonic() - t0:.1f}s",
                  flush=True)
            if not cluster.fake and args.heartbeat > 0:
                heart = client.companion(heartbeat(client, w.nodes, args.heartbeat))

            if args.mode == "backlog":  # the start-up cost, with no pods yet
                startups = []
                for k in range(args.startup_samples):
                    warm = await Child.start(f"{run}-startup-{k}", argv, log_dir, env=env)
                    if sched.ours:
                        await warm.expect("READY", args.timeout)
                    startups.append(await warm.wait_idle())
                    await warm.stop()
                result.startup_cpu = statistics.median(startups)

            watcher = await Child.start(
                f"watcher-{run}",
                [sys.executable, __file__, "_watch", "--kubeconfig", cluster.kubeconfig,
                 "--namespace", cluster.namespace, "--expect", str(w.pods),
                 "--out", str(log_dir / f"watch-{run}.json"),
                 "--runtime", str(args.runtime), "--progress", str(args.progress),
                 "--stall", str(args.stall),
                 *(["--gangs"] if w.gang_size else [])], log_dir)
            children.append(watcher)
            await watcher.expect("READY", 60)

            async def launch() -> Child:
                child = await Child.start(run, argv, log_dir, env=env)
                children.append(child)
                result.launched = time.time()
                return child

            if args.mode == "backlog":
                t0 = time.monotonic()
                await create_pods(client, w, cluster.namespace, args.concurrency)
                print(f"  [{run}] {w.pods} pods ({w.gangs} gangs) in "
                      f"{time.monotonic() - t0:.1f}s", flush=True)
                await asyncio.sleep(1.0)  # let the watcher receive every ADDED
                before = await cluster.counters()
                server_before = cluster.server_cpu()
                child = await launch()
                cpu_before = result.startup_cpu or 0.0
            else:
                child = await launch()
                if sched.ours:
                    await child.expect("READY", args.timeout)
                cpu_before = await child.wait_idle()
                before = await cluster.counters()
                server_before = cluster.server_cpu()
                t0 = time.monotonic()
                await create_pods(client, w, cluster.namespace, args.concurrency, args.rate)
                print(f"  [{run}] {w.pods} pods ({w.gangs} gangs) in "
                      f"{time.monotonic() - t0:.1f}s", flush=True)
            sampler = asyncio.create_task(sample_cpu(child, cluster, result.cpu_samples))
            done = asyncio.create_task(wait_for_binds(watcher, run, args.timeout))
            exited = asyncio.create_task(child.proc.wait())
            stop_untaint = asyncio.Event()
            guard = (client.companion(keep_schedulable(client, stop_untaint))
                     if not cluster.fake else None)
            try:
                await asyncio.wait({done, exited}, return_when=asyncio.FIRST_COMPLETED)
                if not done.done():
                    result.notes.append(f"the scheduler exited ({child.proc.returncode}) "
                                        f"before every pod was bound: see {child.log_path}")
                elif isinstance(done.exception(), TimeoutError):
                    result.notes.append(f"timed out after {args.timeout}s")
                elif done.exception() is None and done.result():
                    result.notes.append(done.result())
            finally:
                stop_untaint.set()
                sampler.cancel()
                done.cancel()
                exited.cancel()
                if guard is not None:
                    guard.cancel()
            if child.proc.returncode is None:
                # What the binds left to do (Events, status patches, the watch events
                # they cause) is the run's too: CPU and requests are read once the
                # scheduler is idle again, not at the last bind.
                with contextlib.suppress(RuntimeError):
                    await child.wait_idle(at_least=0.5, quiet=1.0, timeout=30.0)
            result.cpu = child.cpu() - cpu_before
            after = await cluster.counters()
            server_after = cluster.server_cpu()
            if server_before is not None and server_after is not None:
                result.server_cpu = server_after - server_before
            if before is not None and after is not None:
                delta = {k: v - before["by_agent"].get(k, 0)
                         for k, v in after["by_agent"].items()}
                result.requests_detail = {k: v for k, v in delta.items() if v and k != AGENT}
                result.requests = sum(result.requests_detail.values())
                result.requests_by_verb = {
                    k: d for k, v in after["by_agent_verb"].items()
                    if not k.startswith(AGENT + " ")
                    and (d := v - before["by_agent_verb"].get(k, 0))}
            await child.stop()
            for line in child.output if sched.ours else ():
                if line.startswith("COUNTERS"):
                    counters = json.loads(line.split(" ", 1)[1])
                    result.threads = counters.get("threads") or {}
                    if after is None:
                        result.requests = int(counters["requests"])
                        result.notes.append("requests: the scheduler's own client only")
            with contextlib.suppress(TimeoutError, RuntimeError):
                watcher.proc.send_signal(signal.SIGTERM)
                await watcher.expect("WRITTEN", 30)
            data = json.loads((log_dir / f"watch-{run}.json").read_text())
            analyse(result, data, args.mode)
    finally:
        if heart is not None:
            heart.cancel()
        for c in children:
            await c.stop()
        await cluster.close()
    return result


async def wait_for_binds(watcher: Child, run: str, timeout: float) -> str:
    """Until the watcher says every pod is bound (""), or that none was bound for a while
    (the reason); prints its progress reports meanwhile."""
    async with asyncio.timeout(timeout):
        while True:
            line = await watcher.lines.get()
            if line == "":
                raise RuntimeError(f"the watcher exited; see {watcher.log_path}")
            word, _, rest = line.partition(" ")
            if word == "DONE":
                return ""
            if word == "PROGRESS":
                p = json.loads(rest)
                print(f"  [{run}] {p['seconds']:.0f}s: {p['bound']}/{p['expect']} pods bound"
                      f" ({p['placeholders_bound']} placeholders); last bind "
                      f"{p['idle']:.0f}s ago", flush=True)
            elif word == "STALLED":
                p = json.loads(rest)
                return (f"stopped early: nothing bound for {p['idle']:.0f}s with "
                        f"{p['bound']} pods bound (see the scheduler's log; are the nodes "
                        "schedulable, is the scheduler running?)")


async def sample_cpu(child: Child, cluster: Cluster,
                     out: list[tuple[float, float, float]]) -> None:
    while True:
        out.append((time.time(), child.cpu(), cluster.server_cpu() or 0.0))
        await asyncio.sleep(0.2)


# --- output -----------------------------------------------------------------------------


def summarise(results: list[RunResult], mode: str) -> dict[str, dict[str, float | None]]:
    """Per scheduler, the median of each metric over its repetitions."""
    by_name: dict[str, list[dict[str, float | None]]] = {}
    for r in results:
        by_name.setdefault(r.scheduler, []).append(r.metrics(mode))
    summary: dict[str, dict[str, float | None]] = {}
    for name, runs in by_name.items():
        summary[name] = {}
        for key in runs[0]:
            values = [v for run in runs if (v := run[key]) is not None]
            summary[name][key] = statistics.median(values) if values else None
    return summary


def table(summary: dict[str, dict[str, float | None]]) -> str:
    rows = list(summary.values())
    names = list(summary)
    base = rows[0]
    ratio_cols = [f"{names[0]}/{n}" for n in names[1:]]
    header = ["metric", *names, *ratio_cols]
    lines = []
    for key in base:
        values = [row[key] for row in rows]
        if all(v is None for v in values) or (key == "placeholders bound"
                                              and not any(values)):
            continue
        cells = [key, *(_fmt(v) for v in values)]
        for v in values[1:]:
            b = base[key]
            cells.append(f"{b / v:.2f}" if b is not None and v else "")
        lines.append(cells)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines, strict=True)]
    out = ["| " + " | ".join(h.ljust(wd) for h, wd in zip(header, widths, strict=True)) + " |",
           "|" + "|".join("-" * (wd + 2) for wd in widths) + "|"]
    for cells in lines:
        out.append("| " + " | ".join(
            (c.ljust(wd) if i == 0 else c.rjust(wd))
            for i, (c, wd) in enumerate(zip(cells, widths, strict=True))) + " |")
    return "\n".join(out)


def _fmt(v: float | None) -> str:
    if v is None:
        return ""
    if v == int(v) and abs(v) >= 100:
        return f"{int(v)}"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}" if abs(v) < 1 else f"{v:.2f}"


def kube_scheduler_config(path: pathlib.Path, kubeconfig: str, qps: float,
                          scheduler_name: str) -> None:
    path.write_text(json.dumps({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": qps, "burst": int(qps)},
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": scheduler_name}],
    }, indent=2))


def _self(role: str, args: argparse.Namespace, extra: list[str]) -> list[str]:
    argv = [sys.executable, __file__, role, "--scheduler-name", args.scheduler_name,
            "--log-level", args.log_level, "--qps", str(args.qps)]
    return argv + extra


def capacity(nodes: int, cpu: str) -> int:
    """How many pods of ``cpu`` the benchmark's nodes (4 cpu, 110 pods) hold."""
    milli = int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
    return nodes * min(110, 4000 // max(1, milli))


def gang_sizes(text: str) -> list[int]:
    """``--gang-size``: one size, or a comma-separated list run one after the other."""
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise SystemExit(f"--gang-size: integers separated by commas, not {text!r}") from None
    if not sizes or any(size < 0 for size in sizes):
        raise SystemExit(f"--gang-size: sizes of 0 (plain pods) or more, not {text!r}")
    return sizes


async def main_async(args: argparse.Namespace) -> list[RunResult]:
    main_task = asyncio.current_task()
    if main_task is not None:  # SIGTERM: stop the processes we started, then exit
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main_task.cancel)
    pods = args.pods
    if args.backlog:
        pods = int(args.backlog * capacity(args.nodes, args.cpu))
        if args.runtime <= 0:
            raise SystemExit("--backlog needs --runtime: pods must finish for the backlog "
                             "to drain")
    sizes = gang_sizes(args.gang_size)
    results: list[RunResult] = []
    compared: list[tuple[int, dict[str, float | None], dict[str, float]]] = []
    every: list[tuple[int, dict[str, dict[str, float | None]]]] = []
    for size in sizes:
        w = Workload(args.nodes, pods, size, args.cpu, args.memory, args.scheduler_name)
        found = await run_workload(args, w)
        results.extend(found)
        every.append((size, summarise(found, args.mode)))
        ours = [r for r in found if r.scheduler == "operator"]
        if ours:
            compared.append((size, summarise(ours, args.mode)["operator"], _verbs(ours)))
    if len(compared) > 1:
        print()
        print(comparison(compared))
    if len(every) > 1 or len(every[0][1]) > 1:
        print()
        print(side_by_side(every))
    return results


def side_by_side(rows: list[tuple[int, dict[str, dict[str, float | None]]]]) -> str:
    """Every scheduler on every workload: binds per second, against the same scheduler
    on plain pods and against the other schedulers on the same workload, and the
    requests per bound pod by kind (medians over the runs)."""
    plain = next((summary for size, summary in rows if size == 0), {})
    names = list(rows[0][1])
    header = ["workload", "scheduler", "binds/s", "x plain", *(f"/ {n}" for n in names),
              *(f"{k} / pod" for k in KINDS)]
    lines = []
    for size, summary in rows:
        for name, m in summary.items():
            rate = m["binds/s average"]
            base = (plain.get(name) or {}).get("binds/s average")
            others = [summary[n]["binds/s average"] if n in summary else None for n in names]
            lines.append([
                "plain pods" if size == 0 else f"gangs of {size}", name, _fmt(rate),
                f"{rate / base:.2f}" if rate and base else "",
                *(f"{rate / o:.2f}" if rate and o and n != name else ""
                  for n, o in zip(names, others, strict=True)),
                *(f"{v:.3f}" if (v := m.get(f"{k} / bound pod")) is not None else ""
                  for k in KINDS)])
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines, strict=True)]
    out = ["| " + " | ".join(h.ljust(wd) for h, wd in zip(header, widths, strict=True)) + " |",
           "|" + "|".join("-" * (wd + 2) for wd in widths) + "|"]
    out.extend("| " + " | ".join(c.ljust(wd) for c, wd in zip(cells, widths, strict=True))
               + " |" for cells in lines)
    return "\n".join(out)


def _verbs(results: list[RunResult]) -> dict[str, float]:
    """Requests per bound pod by verb (medians over the runs)."""
    found: dict[str, list[float]] = {}
    for r in results:
        if not r.bound:
            continue
        per: dict[str, float] = {}
        for key, count in r.requests_by_verb.items():
            verb = key.split(" ")[1] if " " in key else key
            per[verb] = per.get(verb, 0.0) + count / r.bound
        for verb, value in per.items():
            found.setdefault(verb, []).append(value)
    return {verb: statistics.median(values) for verb, values in sorted(found.items())}


def comparison(rows: list[tuple[int, dict[str, float | None], dict[str, float]]]) -> str:
    """The operator on each workload of the run, against the plain pods (gang size 0)."""
    plain = next((m for size, m, _ in rows if size == 0), None)
    base = plain["binds/s average"] if plain else None
    header = ["workload", "real binds/s", "x plain", "gang complete p50 / p99 s",
              "API requests / bound pod", "by verb", "CPU s / 1000 pods"]
    lines = []
    for size, m, verbs in rows:
        rate = m["binds/s average"]
        p50, p99 = m["gang complete p50 s"], m["gang complete p99 s"]
        lines.append([
            "plain pods" if size == 0 else f"gangs of {size}", _fmt(rate),
            f"{rate / base:.2f}" if rate and base else "",
            f"{_fmt(p50)} / {_fmt(p99)}" if p50 is not None else "",
            _fmt(m["API requests / bound pod"]),
            ", ".join(f"{verb} {value:.2f}" for verb, value in verbs.items()),
            _fmt(m["scheduler CPU s / 1000 pods"])])
    widths = [max(len(str(c)) for c in col) for col in zip(header, *lines, strict=True)]
    out = ["| " + " | ".join(h.ljust(wd) for h, wd in zip(header, widths, strict=True)) + " |",
           "|" + "|".join("-" * (wd + 2) for wd in widths) + "|"]
    out.extend("| " + " | ".join(c.ljust(wd) for c, wd in zip(cells, widths, strict=True))
               + " |" for cells in lines)
    return "\n".join(out)


async def run_workload(args: argparse.Namespace, w: Workload) -> list[RunResult]:
    """Every scheduler on one workload (``--repeat`` times, interleaved); prints its table."""
    keep = args.log_dir is not None
    log_dir = pathlib.Path(args.log_dir or tempfile.mkdtemp(prefix="gangsched-bench-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    kubeconfig = os.environ.get("KUBECONFIG")
    cluster: Cluster = (RealCluster(kubeconfig) if kubeconfig
                        else FakeCluster(log_dir, args.write_cost))
    kc = "{kubeconfig}"
    schedulers: list[Scheduler] = []
    if not args.no_operator:
        profile = ["--profile", args.profile] if args.profile else []
        if args.scheduler_profile:
            profile += ["--scheduler-profile", args.scheduler_profile]
        if args.scheduled_event in ("on", "both"):
            schedulers.append(Scheduler("operator", _self(
                "_operator", args, ["--kubeconfig", kc, *profile]), True))
        if args.scheduled_event in ("off", "both"):
            schedulers.append(Scheduler(NO_EVENT, _self(
                "_operator", args, ["--kubeconfig", kc, *profile, "--no-scheduled-events"]),
                True))
    if args.null:
        schedulers.append(Scheduler("null", _self("_null", args, ["--kubeconfig", kc]), True))
    if args.kube_writes:
        schedulers.append(Scheduler(KUBE_WRITES, _self(
            "_null", args, ["--kubeconfig", kc, "--events"]), True))
    for k, cmd in enumerate(args.scheduler):
        name = "scheduler" if len(args.scheduler) == 1 else f"scheduler{k + 1}"
        schedulers.append(Scheduler(name, shlex.split(cmd), False))
    if not schedulers:
        raise SystemExit("nothing to run")
    where = f"KUBECONFIG={kubeconfig}" if kubeconfig else "the fake API server"
    print(f"{w.nodes} nodes, {w.pods} pods"
          + (f" in gangs of {w.gang_size}" if w.gang_size else " (plain)")
          + f", {args.mode} mode, on {where}; {os.cpu_count()} cores; logs in {log_dir}",
          flush=True)
    results = []
    load = [os.getloadavg()[0]]
    for k in range(args.repeat):
        for sched in schedulers:
            run = sched.name if args.repeat == 1 else f"{sched.name}-{k + 1}"
            result = await run_one(sched, cluster, w, args, log_dir, run)
            results.append(result)
            load.append(os.getloadavg()[0])
            m = result.metrics(args.mode)
            print(f"  [{run}] {result.bound} bound, {_fmt(m['binds/s average'])} binds/s, "
                  f"requests by client: {result.requests_detail or result.requests}"
                  + "".join(f"; {note}" for note in result.notes), flush=True)
            if result.requests_by_verb and result.bound:
                verbs = _verbs([result])
                print(f"  [{run}] requests per bound pod by verb: "
                      + ", ".join(f"{verb} {value:.3f}" for verb, value in verbs.items()),
                      flush=True)
            if args.verbose and result.requests_by_verb:
                print(f"  [{run}] requests: {result.requests_by_verb}", flush=True)
            if args.verbose and result.threads and result.bound:
                print(f"  [{run}] CPU ms per bound pod by thread (start-up included): "
                      + ", ".join(f"{name} {seconds * 1000 / result.bound:.3f}"
                                  for name, seconds in sorted(result.threads.items(),
                                                              key=lambda kv: -kv[1])),
                      flush=True)
    summary = summarise(results, args.mode)
    print()
    if args.repeat > 1:
        print(f"medians of {args.repeat} runs each, interleaved")
    print(table(summary))
    print(f"1-minute load average during the runs: {min(load):.1f} to {max(load):.1f}")
    if args.json:
        path = pathlib.Path(args.json)
        if len(gang_sizes(args.gang_size)) > 1:
            path = path.with_name(f"{path.stem}-gang{w.gang_size}{path.suffix}")
        path.write_text(json.dumps(
            {"nodes": w.nodes, "pods": w.pods, "gang_size": w.gang_size, "mode": args.mode,
             "repeat": args.repeat, "cores": os.cpu_count(),
             "where": "real" if kubeconfig else "fake", "load": load, "results": summary,
             "runs": [{"scheduler": r.scheduler, **r.metrics(args.mode)} for r in results]},
            indent=2))
    if not keep:
        print(f"(logs and raw data in {log_dir})")
    return results


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/cluster.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--gang-size", default="0",
                   help="0: plain pods; a comma-separated list (0,8,64) runs each workload "
                        "in turn and compares them")
    p.add_argument("--backlog", type=float, default=0.0, metavar="FACTOR",
                   help="pods: this many times what the nodes hold (instead of --pods); "
                        "needs --runtime")
    p.add_argument("--mode", choices=("backlog", "live"), default="backlog")
    p.add_argument("--null", action="store_true", help="also run the null binder")
    p.add_argument("--kube-writes", action="store_true",
                   help="also run the null binder that writes kube-scheduler's writes: one "
                        "Binding and one Scheduled Event per pod (no kube-scheduler here)")
    p.add_argument("--scheduled-event", choices=("on", "off", "both"), default="on",
                   help="the operator writes each pod's Scheduled Event (on), not (off), or "
                        f"runs both ways (both: 'operator' and '{NO_EVENT}')")
    p.add_argument("--write-cost", type=float, default=WRITE_COST, metavar="SECONDS",
                   help="the fake API server: each write holds its one write lane this long "
                        "(default %(default)s: a real control plane's writes per second; 0: "
                        "writes cost the fake's CPU only)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run each scheduler this many times, interleaved; report medians")
    p.add_argument("--no-operator", action="store_true", help="do not run the operator")
    p.add_argument("--scheduler", action="append", default=[], metavar="CMD",
                   help="also run this scheduler command (repeatable)")
    p.add_argument("--scheduler-name", default="gangsched", help="the pods' schedulerName")
    p.add_argument("--qps", type=float, default=5000,
                   help="client QPS (and burst) of the operator and of {config}; 0: no limit")
    p.add_argument("--cpu", default="100m", help="each pod's cpu request")
    p.add_argument("--memory", default="256Mi", help="each pod's memory request")
    p.add_argument("--concurrency", type=int, default=64, help="creates in flight")
    p.add_argument("--rate", type=float, default=0,
                   help="live mode: create this many pods per second (0: as fast as can be)")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for binds")
    p.add_argument("--runtime", type=float, default=0.0,
                   help="a bound pod succeeds this many seconds later (the benchmark plays "
                        "the kubelet), so that a backlog larger than the cluster drains")
    p.add_argument("--progress", type=float, default=5.0,
                   help="seconds between progress reports while waiting for binds")
    p.add_argument("--stall", type=float, default=60.0,
                   help="stop early when no pod was bound for this many seconds")
    p.add_argument("--heartbeat", type=float, default=20,
                   help="real clusters: node Lease renewal period (0: none)")
    p.add_argument("--startup-samples", type=int, default=3,
                   help="backlog mode: launches with no pods whose median CPU is start-up")
    p.add_argument("--profile", help="cProfile the operator into this file")
    p.add_argument("--scheduler-profile", metavar="FILE",
                   help="the operator's scheduler profile (as `gangsched run --profile`)")
    p.add_argument("--log-level", default="WARNING", help="of the schedulers we start")
    p.add_argument("--log-dir", help="keep logs and raw data here")
    p.add_argument("--json", help="write the metrics here")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the schedulers' requests by verb and resource")
    return p.parse_args(argv)


def parse_role(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--kubeconfig")
    p.add_argument("--scheduler-name", default="gangsched")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--profile")
    p.add_argument("--scheduler-profile")
    p.add_argument("--namespace")
    p.add_argument("--expect", type=int, default=0)
    p.add_argument("--out")
    p.add_argument("--gangs", action="store_true")
    p.add_argument("--runtime", type=float, default=0.0)
    p.add_argument("--progress", type=float, default=5.0)
    p.add_argument("--stall", type=float, default=60.0)
    p.add_argument("--qps", type=float, default=5000)
    p.add_argument("--events", action="store_true")
    p.add_argument("--no-scheduled-events", action="store_true")
    return p.parse_args(argv)


ROLES: dict[str, Callable[[argparse.Namespace], None]] = {
    "_operator": role_operator, "_null": role_null, "_watch": role_watch}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ROLES:
        ROLES[argv[0]](parse_role(argv[1:]))
        return
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main_async(parse(argv)))


if __name__ == "__main__":
    main()
