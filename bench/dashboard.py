"""How long the web dashboard takes to build its view and render its pages, by cluster size.

The operator builds a view at most every two seconds (``gangsched.shell.dashboard``):

* on the event loop: the board's tables and the objects' specs are copied;
* on the core's thread, between cycles (a cycle waits for it): the nodes are copied
  (``copy_nodes``: a dict copy per node);
* on a worker thread: the nodes' placeholder-held room is summed (``node_uses``), the
  view model is built (``model.build``), the gangs a page shows are filtered and
  explained (``model.select``) and the page rendered.

This measures each part on a synthetic cluster: nodes of 64 cpu in racks of 16 and
blocks of 8 racks, half of them holding placeholders; gangs (Applications of two task
groups) with statuses as the core writes them, a third blocked with a Capacity reason and
its numbers, ten Events each; 20 queues. Times are the best of ``--repeat`` runs, in
milliseconds of CPU time of this process (others' load on the machine does not count).

    python3 bench/dashboard.py                 # 5,000 nodes / 2,000 gangs and 65,000 / 10,000
    python3 bench/dashboard.py --nodes 1000 --gangs 500
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable
from typing import Any

from gangsched.core.values.decisions import (
    BlockingReason,
    EventType,
    ObjectRef,
    PlaceholderCounts,
    RecordEvent,
    SetAppStatus,
    SetQueueStatus,
    TaskGroupStatus,
)
from gangsched.core.values.model import AppKey, Node
from gangsched.core.values.resources import Resources
from gangsched.shell.explain import format_explanation
from gangsched.translate.topology import BLOCK, RACK
from gangsched.view import model, render
from gangsched.view.board import APPLICATION, Board

GIB = 1 << 30


@dataclasses.dataclass
class NodeState:
    """The part of the core's node state the dashboard reads."""

    node: Node
    used: Resources
    pods: dict[str, Resources]


def cluster(nodes: int) -> list[NodeState]:
    states = []
    for i in range(nodes):
        rack = i // 16
        labels = {RACK: f"r{rack}", BLOCK: f"b{rack // 8}", "kubernetes.io/hostname": f"n{i}"}
        alloc = Resources({"cpu": 64_000, "memory": 256 * GIB, "pods": 110})
        pods = {f"p{i}-{k}": Resources({"cpu": 4000, "memory": 16 * GIB, "pods": 1})
                for k in range(i % 12)}
        used = Resources({"cpu": 4000 * len(pods), "memory": 16 * GIB * len(pods),
                          "pods": len(pods)})
        states.append(NodeState(Node(f"n{i}", alloc, labels), used, pods))
    return states


def board(gangs: int) -> Board:
    b = Board()
    decisions: list[Any] = []
    for i in range(gangs):
        blocked = i % 3 == 0
        reason = BlockingReason(
            "Capacity", "0/5000 nodes are available: 4980 Insufficient cpu, 20 node(s) "
            "didn't match Pod's node affinity/selector.",
            {"Insufficient cpu": "4980", "needed": "cpu=32, memory=128Gi", "short": "cpu=12"},
        ) if blocked else BlockingReason()
        groups = (TaskGroupStatus("driver", 1, PlaceholderCounts(1, 1), 0, 1),
                  TaskGroupStatus("workers", 8, PlaceholderCounts(8, 0 if blocked else 8, 0, 0,
                                                                  8 if blocked else 0),
                                  0, 8, reason))
        key = AppKey(f"team-{i % 40}/job-{i}")
        decisions.append(SetAppStatus(key, "Accepted", "", "", f"q{i % 20}",
                                      "1/9" if blocked else "9/9", 0, groups, 100.0, 100.0,
                                      None, None))
        for k in range(10):
            decisions.append(RecordEvent(ObjectRef(APPLICATION, f"team-{i % 40}", f"job-{i}"),
                                         EventType.NORMAL, f"Reason{k}", "a message " * 6))
    for q in range(20):
        decisions.append(SetQueueStatus(f"q{q}", Resources({"cpu": 400_000}),
                                        Resources({"cpu": 100_000}), Resources({"cpu": 50_000}),
                                        Resources({"cpu": 800_000}), Resources({"cpu": 200_000}),
                                        {"Accepted": 40}))
    b.take(decisions, 200.0)
    return b


def best(repeat: int, work: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``repeat`` runs of ``work``, in CPU milliseconds, and its result."""
    fastest, result = float("inf"), None
    for _ in range(repeat):
        started = time.process_time()
        result = work()
        fastest = min(fastest, time.process_time() - started)
    return fastest * 1000, result


def measure(nodes: int, gangs: int, repeat: int) -> dict[str, float]:
    states, b = cluster(nodes), board(gangs)

    def placeholder(uid: str) -> bool:
        return uid.endswith(("-0", "-1", "-2"))

    out: dict[str, float] = {}
    out["copy (core thread)"], copies = best(repeat, lambda: model.copy_nodes(states))
    out["node uses (worker)"], uses = best(repeat, lambda: model.node_uses(copies, placeholder))
    out["board copy (event loop)"], contents = best(repeat, b.contents)
    sources = model.Sources(nodes=uses, explain=format_explanation)
    out["build (worker)"], view = best(repeat, lambda: model.build(contents, sources))
    out["select+explain (worker)"], view = best(
        repeat, lambda: model.select(view, contents, sources))
    for name, _ in render.PAGES:
        out[f"{name} (worker)"], text = best(repeat, lambda n=name: render.page(view, n))
        out[f"{name} KiB"] = len(text.encode()) / 1024
    out["view.json (worker)"], _ = best(repeat, lambda: render.to_json(view))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--gangs", type=int)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    sizes = [(args.nodes, args.gangs or 2000)] if args.nodes else [(5000, 2000), (65000, 10000)]
    results = [(n, g, measure(n, g, args.repeat)) for n, g in sizes]
    keys = list(results[0][2])
    print(f"{'':28}" + "".join(f"{f'{n} nodes/{g} gangs':>24}" for n, g, _ in results))
    for key in keys:
        unit = "" if key.endswith("KiB") else " ms"
        print(f"{key:28}" + "".join(f"{r[key]:>21.1f}{unit or '   '}" for _, _, r in results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
