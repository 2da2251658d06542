#!/usr/bin/env python3
"""Spark-style gangs on a slow cluster: does any job run part of its executors?

Usage::

    python3 bench/spark_gangs.py                        # every dialect and variant
    python3 bench/spark_gangs.py --dialect yunikorn --variant kill --jobs 12
    python3 bench/spark_gangs.py --stop 0.5,2 --runtime 8 --json out.json

Each run starts a fresh fake API server (``tests/fakeapi``) in this process, with a
kubelet as slow as a real node's (graceful deletion ``--stop`` seconds, a bound pod
Running ``--start`` seconds later, watch events ``--watch-lag`` late), 4 nodes of
4 cpu / 8Gi, and the operator in a process of its own (``gangsched run
--no-leader-election``, answering to ``gangsched`` and ``yunikorn``). This process
plays spark-submit, the Spark driver and the kubelet's "containers exited":

1. all ``--jobs`` drivers (2 cpu / 2Gi) are created at once; each declares the gang:
   the driver task group (1 x 2 cpu) and the executor group (4 x 1 cpu / 1Gi);
2. a driver that runs creates its 4 executors (owned by the driver, as Spark's are);
3. once all 4 executors run, the job runs ``--runtime`` seconds, then its executors and
   its driver succeed.

16 cpu hold two whole jobs (6 cpu each) at a time. Dialects (how the gang is declared):

* ``gangsched``: label ``gangsched.io/app``, annotation ``gangsched.io/task-group``, and
  on the driver ``gangsched.io/task-groups`` (the operator creates the Application);
* ``gangsched-crd``: an Application object created with the driver, the same labels;
* ``yunikorn``: ``schedulerName: yunikorn``, label ``yunikorn.apache.org/app-id``,
  annotation ``yunikorn.apache.org/task-group-name``, and on the driver
  ``yunikorn.apache.org/task-groups``.

(Koordinator, coscheduling, Volcano and Kueue declare a minimum member count but no task
groups, so no placeholder holds the executors' room while the driver runs alone: a
Spark job cannot be a gang of theirs, with any scheduler.)

Variants: ``calm``; ``kill``: the operator's process is SIGKILLed every ``--kill-every``
seconds and started again at once; ``faults``: ``--fault-rate`` of the API requests fail
(500, 429, connection reset, the answer lost after the write, a watch cut with 410;
shares in :data:`FAULT_MIX`).

The bench samples the cluster every ``--sample`` seconds from the server's own store (no
API request) and reports per run:

* **partial**: the longest span any job had some but not all of its executors Running
  (what the gang guarantee forbids; the issue's bar is 3 s), the job, and the share of
  samples with a partial job; **partial bound**: the same for executors bound;
* **over-commit**: samples in which some node held more cpu or memory than allocatable
  (every pod bound to it that has not terminated, terminating ones included, placeholders
  included): must be 0;
* **completion**: seconds from the first driver to the last job's success, and jobs done;
* **metrics**: what the operator's own ``/metrics`` say at the end (partial spans, their
  seconds, violations, over-committed nodes; since its last start, so a killed operator
  reports its last life only), to check them against the truth above;
* **leaks** once every job is done (placeholders are given ``--settle`` seconds to go,
  as an Application completes after its waiting timeout): placeholders left, and pods
  neither terminated nor being deleted (the operator's logs are kept in ``--logs``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
import signal
import socket
import sys
import tempfile
import time
from typing import Any

import aiohttp

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "operator")]

from fakeapi import FakeApiServer  # noqa: E402
from fakeapi.builders import untaint_ready  # noqa: E402
from fakeapi.kubelet import Timing  # noqa: E402
from gangsched.core.values.resources import parse_quantity  # noqa: E402

NS = "default"
DIALECTS = ("gangsched", "gangsched-crd", "yunikorn")
VARIANTS = ("calm", "kill", "faults")
EXECUTORS = 4
DRIVER = {"cpu": "2", "memory": "2Gi"}
EXECUTOR = {"cpu": "1", "memory": "1Gi"}
NODE = {"cpu": "4", "memory": "8Gi", "pods": "110"}
PLACEHOLDER = "gangsched.io/placeholder"
FAULT_MIX = (  # (share of the fault rate, rule options)
    (0.3, {"status": 500}),
    (0.2, {"status": 429, "retry_after": 1}),
    (0.2, {"drop_connection": True}),
    (0.2, {"lose_answer": True}),
    (0.1, {"status": 410, "in_stream": True, "path_regex": r"watch=(true|1)"}),
)
Obj = dict[str, Any]


# --- the workload -----------------------------------------------------------------------

def task_groups() -> list[Obj]:
    return [{"name": "driver", "minMember": 1, "minResource": dict(DRIVER)},
            {"name": "executor", "minMember": EXECUTORS, "minResource": dict(EXECUTOR)}]


def pod_body(name: str, job: str, role: str, dialect: str, owner: Obj | None) -> Obj:
    """A driver (``owner`` None) or an executor of ``job``, declared in ``dialect``."""
    requests = DRIVER if role == "driver" else EXECUTOR
    labels: dict[str, str] = {"spark-role": role, "bench-job": job}
    annotations: dict[str, str] = {}
    scheduler = "gangsched"
    if dialect in ("gangsched", "gangsched-crd"):
        labels["gangsched.io/app"] = job
        annotations["gangsched.io/task-group"] = role
        if role == "driver" and dialect == "gangsched":
            annotations["gangsched.io/task-groups"] = json.dumps(task_groups())
    elif dialect == "yunikorn":
        scheduler = "yunikorn"
        labels["yunikorn.apache.org/app-id"] = job
        annotations["yunikorn.apache.org/task-group-name"] = role
        if role == "driver":
            annotations["yunikorn.apache.org/task-groups"] = json.dumps(task_groups())
    else:
        raise ValueError(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    md: Obj = {"name": name, "namespace": NS, "labels": labels, "annotations": annotations}
    if owner is not None:
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Pod", "name": owner["metadata"][
            "name"], "uid": owner["metadata"]["uid"], "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": {
        "schedulerName": scheduler, "restartPolicy": "Never",
        "containers": [{"name": "spark", "image": "spark:3.5.1",
                        "resources": {"requests": dict(requests)}}]}}


def application(job: str) -> Obj:
    return {"apiVersion": "gangsched.io/v1alpha1", "kind": "Application",
            "metadata": {"name": job, "namespace": NS},
            "spec": {"queue": "default", "taskGroups": task_groups()}}


@dataclasses.dataclass
class Job:
    name: str
    executors_created: bool = False
    finish_at: float | None = None
    done_at: float | None = None
    partial_since: float | None = None
    longest_partial: float = 0.0
    bound_since: float | None = None
    longest_partial_bound: float = 0.0

    @property
    def driver(self) -> str:
        return f"{self.name}-driver"

    @property
    def executors(self) -> list[str]:
        return [f"{self.name}-exec-{i}" for i in range(1, EXECUTORS + 1)]


def _span(since: float | None, partial: bool, now: float) -> tuple[float | None, float]:
    """(new start of the partial span, length of a span that just ended or 0)."""
    if partial:
        return (now if since is None else since), (0.0 if since is None else now - since)
    return None, (0.0 if since is None else now - since)


# --- one run ----------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    dialect: str
    variant: str
    jobs: int
    done: int
    completion: float | None
    longest_partial: float
    partial_job: str
    partial_share: float
    longest_partial_bound: float
    overcommitted_samples: int
    samples: int
    kills: int
    faulted: int
    requests: int
    placeholders_left: int
    stray_pods: int
    operator_exit: str
    operator_metrics: dict[str, float]
    """The operator's own figures at the end (since its last start)."""


class Operator:
    """The operator in a process of its own, killed and started again on demand."""

    def __init__(self, kubeconfig: pathlib.Path, log: pathlib.Path) -> None:
        self.kubeconfig = kubeconfig
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.kills = 0
        self.metrics_port = free_port()

    async def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "operator"),
               "NAMESPACE": "gangsched-system", "POD_NAME": f"bench-{self.kills}"}
        with open(self.log, "ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gangsched", "run", "--kubeconfig", str(self.kubeconfig),
                "--no-leader-election", "--metrics-port", str(self.metrics_port),
                "--scheduler-name", "gangsched", "--scheduler-name", "yunikorn",
                stdout=out, stderr=out, env=env, start_new_session=True)

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
            self.kills += 1

    async def scrape(self) -> dict[str, float]:
        """The operator's own partial-gang and over-commit figures (since its last start;
        empty if it does not answer)."""
        from prometheus_client.parser import text_string_to_metric_families

        wanted = {"gangsched_gang_partial_violations_total": "violations",
                  "gangsched_gang_partial_seconds_count": "spans",
                  "gangsched_gang_partial_seconds_sum": "partial_seconds",
                  "gangsched_overcommitted_nodes": "overcommitted"}
        found: dict[str, float] = {}
        try:
            async with aiohttp.ClientSession() as session, session.get(
                    f"http://127.0.0.1:{self.metrics_port}/metrics",
                    timeout=aiohttp.ClientTimeout(total=5)) as resp:
                text = await resp.text()
        except (aiohttp.ClientError, TimeoutError):
            return found
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                key = wanted.get(sample.name)
                if key is not None:
                    found[key] = found.get(key, 0.0) + sample.value
        return found

    async def stop(self) -> str:
        """Stop gracefully; what went wrong, if anything ("" if nothing)."""
        if self.proc is None:
            return "never started"
        if self.proc.returncode is not None:
            return f"exited on its own ({self.proc.returncode})"
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            await self.kill()
            return "did not stop on SIGTERM"
        return ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def held_over(nodes: dict[str, dict[str, int]], pods: list[Obj]) -> bool:
    """Whether any node holds more cpu or memory than allocatable: every pod bound to it
    that has not terminated counts, terminating ones and placeholders included."""
    held: dict[str, dict[str, int]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        sums = held.setdefault(node, {"cpu": 0, "memory": 0})
        for c in pod["spec"].get("containers") or ():
            req = (c.get("resources") or {}).get("requests") or {}
            sums["cpu"] += int(parse_quantity(str(req.get("cpu", "0"))) * 1000)
            sums["memory"] += int(parse_quantity(str(req.get("memory", "0"))))
    return any(sums[k] > nodes.get(node, {}).get(k, 0) for node, sums in held.items()
               for k in ("cpu", "memory"))


async def run_one(args: argparse.Namespace, dialect: str, variant: str,
                  workdir: pathlib.Path) -> Result:
    timing = Timing(start=args.start, stop=args.stop, watch_lag=args.watch_lag)
    api = FakeApiServer(auto_run=True, timing=timing, seed=args.seed)
    await api.start()
    api.install_crds_from_dir(ROOT / "crds")
    api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gangsched-system"}})
    nodes: dict[str, dict[str, int]] = {}
    for i in range(args.nodes):
        name = f"node-{i}"
        created = api.create({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {"kubernetes.io/hostname": name}}, "spec": {},
            "status": {"allocatable": dict(NODE), "capacity": dict(NODE),
                       "conditions": [{"type": "Ready", "status": "True"}]}})
        patch = untaint_ready(created)
        if patch is not None:
            api.patch("nodes", None, name, patch)
        nodes[name] = {"cpu": int(parse_quantity(NODE["cpu"]) * 1000),
                       "memory": int(parse_quantity(NODE["memory"]))}
    kubeconfig = api.write_kubeconfig(workdir / f"kubeconfig-{dialect}-{variant}")
    operator = Operator(kubeconfig, workdir / f"operator-{dialect}-{variant}.log")
    rules = []
    if variant == "faults":
        for share, options in FAULT_MIX:
            rules.append(api.faults.add(probability=share * args.fault_rate, **options))
    counted_before = sum(api.requests.values())
    await operator.start()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    next_kill = t0 + args.kill_every
    jobs = [Job(f"spark-{i:02d}") for i in range(args.jobs)]
    for job in jobs:
        if dialect == "gangsched-crd":
            api.create(application(job.name))
        api.create(pod_body(job.driver, job.name, "driver", dialect, None))
    samples = partial_samples = over_samples = 0
    bucket = api.store.buckets[("", "pods")]
    while True:
        now = loop.time()
        if now - t0 > args.timeout:
            break
        if variant == "kill" and now >= next_kill:
            await operator.kill()
            await operator.start()
            next_kill = now + args.kill_every
        pods = list(bucket.iterate(NS))
        by_name = {p["metadata"]["name"]: p for p in pods}
        any_partial = False
        for job in jobs:
            if job.done_at is not None:
                continue
            driver = by_name.get(job.driver)
            phase = (driver or {}).get("status", {}).get("phase")
            if not job.executors_created and phase == "Running" and driver is not None:
                for name in job.executors:
                    api.create(pod_body(name, job.name, "executor", dialect, driver))
                job.executors_created = True
                continue
            execs = [by_name.get(n) for n in job.executors]
            alive = [e for e in execs if e is not None
                     and not e["metadata"].get("deletionTimestamp")]
            running = sum(1 for e in alive if e["status"].get("phase") == "Running")
            bound = sum(1 for e in alive if e["spec"].get("nodeName"))
            at = now - t0
            partial = 0 < running < EXECUTORS
            any_partial |= partial
            job.partial_since, ended = _span(job.partial_since, partial, at)
            job.longest_partial = max(job.longest_partial, ended)
            job.bound_since, ended = _span(job.bound_since, 0 < bound < EXECUTORS, at)
            job.longest_partial_bound = max(job.longest_partial_bound, ended)
            if running == EXECUTORS and job.finish_at is None:
                job.finish_at = now + args.runtime
            if job.finish_at is not None and now >= job.finish_at:
                for name in [*job.executors, job.driver]:
                    with contextlib.suppress(Exception):
                        api.finish_pod(NS, name)
                job.done_at = at
        samples += 1
        partial_samples += any_partial
        over_samples += held_over(nodes, pods)
        if all(job.done_at is not None for job in jobs):
            break
        await asyncio.sleep(args.sample)
    settled = loop.time() + args.settle
    while loop.time() < settled and any(
            (p["metadata"].get("labels") or {}).get(PLACEHOLDER) == "true"
            for p in bucket.iterate(NS)):
        await asyncio.sleep(0.2)
    pods = list(bucket.iterate(NS))
    left = [p for p in pods if (p["metadata"].get("labels") or {}).get(PLACEHOLDER) == "true"]
    placeholders_left = len(left)
    for p in left:
        print(f"  left: placeholder {p['metadata']['name']} node="
              f"{p['spec'].get('nodeName')} terminating="
              f"{bool(p['metadata'].get('deletionTimestamp'))}", file=sys.stderr)
    stray = sum(1 for p in pods
                if (p["metadata"].get("labels") or {}).get(PLACEHOLDER) != "true"
                and p["status"].get("phase") not in ("Succeeded", "Failed")
                and not p["metadata"].get("deletionTimestamp"))
    seen_by_operator = await operator.scrape()
    exit_problem = await operator.stop()
    requests = sum(api.requests.values()) - counted_before
    await api.stop()
    done = [j for j in jobs if j.done_at is not None]
    worst = max(jobs, key=lambda j: j.longest_partial)
    return Result(
        dialect=dialect, variant=variant, jobs=len(jobs), done=len(done),
        completion=max(j.done_at for j in done) if len(done) == len(jobs) and done else None,
        longest_partial=worst.longest_partial, partial_job=worst.name,
        partial_share=partial_samples / max(1, samples),
        longest_partial_bound=max(j.longest_partial_bound for j in jobs),
        overcommitted_samples=over_samples, samples=samples, kills=operator.kills,
        faulted=sum(r.hits for r in rules), requests=requests,
        placeholders_left=placeholders_left, stray_pods=stray, operator_exit=exit_problem,
        operator_metrics=seen_by_operator)


# --- the command ------------------------------------------------------------------------

def _span_arg(text: str) -> float | tuple[float, float]:
    parts = [float(p) for p in text.split(",")]
    if len(parts) == 1:
        return parts[0]
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"expected SECONDS or LOW,HIGH, got {text!r}")
    return parts[0], parts[1]


def _choices(known: tuple[str, ...]) -> Any:
    def parse(text: str) -> list[str]:
        chosen = [t.strip() for t in text.split(",") if t.strip()]
        unknown = [c for c in chosen if c not in known]
        if unknown or not chosen:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(known)}; got {text!r}")
        return chosen
    return parse


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dialect", type=_choices(DIALECTS), default=list(DIALECTS))
    p.add_argument("--variant", type=_choices(VARIANTS), default=list(VARIANTS))
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--nodes", type=int, default=4)
    p.add_argument("--runtime", type=float, default=8.0,
                   help="seconds a job runs once all its executors run")
    p.add_argument("--stop", type=_span_arg, default=(0.5, 2.0),
                   help="graceful deletion, seconds (or LOW,HIGH)")
    p.add_argument("--start", type=_span_arg, default=(0.2, 0.8),
                   help="binding to Running, seconds (or LOW,HIGH)")
    p.add_argument("--watch-lag", type=float, default=0.05)
    p.add_argument("--kill-every", type=float, default=10.0)
    p.add_argument("--fault-rate", type=float, default=0.10)
    p.add_argument("--sample", type=float, default=0.05)
    p.add_argument("--settle", type=float, default=40.0,
                   help="seconds to wait, once every job is done, for placeholders to go")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--threshold", type=float, default=3.0,
                   help="the longest partial span allowed, for the verdict")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--logs", metavar="DIR", help="where the operator's logs go (kept)")
    return p.parse_args(argv)


def line(r: Result, threshold: float) -> str:
    completion = f"{r.completion:6.1f}" if r.completion is not None else "   n/a"
    verdict = "ok" if r.longest_partial <= threshold and not r.overcommitted_samples and \
        r.done == r.jobs and not r.placeholders_left and not r.stray_pods else "FAIL"
    extra = f"kills {r.kills}" if r.variant == "kill" else (
        f"faults {r.faulted}/{r.requests}" if r.variant == "faults" else "")
    return (f"{r.dialect:14} {r.variant:7} {r.done:2}/{r.jobs:<2} {completion} s  "
            f"partial {r.longest_partial:5.1f} s ({r.partial_job}, {r.partial_share:4.0%} of "
            f"samples)  bound-partial {r.longest_partial_bound:5.1f} s  over-commit "
            f"{r.overcommitted_samples}/{r.samples}  leaks {r.placeholders_left}+"
            f"{r.stray_pods}  {extra:16} {verdict}"
            + (f"  operator: {r.operator_exit}" if r.operator_exit else "")
            + ("  metrics: " + " ".join(f"{k}={v:g}" for k, v in sorted(
                r.operator_metrics.items())) if r.operator_metrics else ""))


async def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(f"{args.jobs} jobs of 2 + {EXECUTORS} x 1 cpu on {args.nodes} nodes of "
          f"{NODE['cpu']} cpu; deletion {args.stop} s, start {args.start} s, watch lag "
          f"{args.watch_lag} s; runtime {args.runtime} s", flush=True)
    results = []
    logs = pathlib.Path(args.logs or tempfile.mkdtemp(prefix="spark-gangs-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"operator logs in {logs}", flush=True)
    for variant in args.variant:
        for dialect in args.dialect:
            started = time.monotonic()
            result = await run_one(args, dialect, variant, logs)
            results.append(result)
            print(line(result, args.threshold),
                  f" [{time.monotonic() - started:.0f} s]", flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps([dataclasses.asdict(r) for r in results],
                                                      indent=2))
    return 0 if all(r.longest_partial <= args.threshold for r in results) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
