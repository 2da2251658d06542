"""Racks, blocks and zones in the simulator: node labels, and what a run did with them.

A node entry may declare a hierarchy in one line; its nodes are dealt out in order, the
same number to every rack::

    nodes:
      - pool: gpu                 # gpu-0 .. gpu-79
        count: 80
        cpu: 32
        memory: 256Gi
        topology: {zones: 1, blocks: 2, racks: 4}   # blocks per zone, racks per block

gives each node ``topology.kubernetes.io/zone: zone-<z>``,
``topology.gangsched.io/block: <pool>-b<b>`` and ``topology.gangsched.io/rack:
<pool>-b<b>-r<r>`` (blocks and racks carry the pool's name, so two pools never share a
rack; zones are cluster-wide). ``count`` must be a multiple of the number of racks.

Measures (:func:`measure`), reported in the summary and in ``--json``:

* *gangs*: gang jobs (two members or more) whose whole gang ran at least once;
* *cross-rack gangs*: of those, the ones whose members, when the gang first ran, sat in
  more than one rack (a node without a rack label counts as a rack of its own);
* *topology broken*: gangs with a ``required`` topology whose members, when the gang
  first ran, were not all in one domain of that key;
* *stranded cpu·s*: while a gang with a ``required`` topology waits (submitted, its gang
  not running) and the free cpu of the nodes that are up could hold its members, but no
  single domain of its key has that much free cpu, all that free cpu is stranded for it.
  :class:`Stranded` integrates it over time (the largest amount when several wait).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gangsched.core.values.model import NO_TOPOLOGY, Node, TopologyRequest
from gangsched.sim.jobs import JobRun
from gangsched.sim.workload import Job
from gangsched.translate.topology import BLOCK, RACK, ZONE

LEVELS = ("zones", "blocks", "racks")


def hierarchy_labels(pool: str, index: int, count: int, zones: int, blocks: int,
                     racks: int) -> dict[str, str]:
    """The labels of node ``index`` of ``count`` in a pool with ``zones`` x ``blocks`` x
    ``racks`` racks (see the module docstring). ``count`` must be a multiple of the racks
    (the reader checks it); the nodes are dealt out in order."""
    per_rack = max(1, count // (zones * blocks * racks))
    rack_index = index // per_rack
    block_index = rack_index // racks
    zone_index = block_index // blocks
    return {
        ZONE: f"zone-{zone_index}",
        BLOCK: f"{pool}-b{block_index}",
        RACK: f"{pool}-b{block_index}-r{rack_index % racks}",
    }


def job_topology(job: Job) -> TopologyRequest:
    """The job's request: its PodGroup's, else the first of its task groups that has one."""
    if job.group is not None:
        return job.group.topology
    if job.app is not None:
        for group in job.app.task_groups:
            if not group.topology.empty:
                return group.topology
    return NO_TOPOLOGY


def gang_cpu(job: Job) -> int:
    """Millicores of the members the gang needs (per gang key, the first ``need`` pods)."""
    total = 0
    for key, need in job.gang.items():
        left = need
        for template in job.pods:
            if template.task_group != key or left <= 0:
                continue
            take = min(left, template.count)
            total += take * template.requests.get("cpu")
            left -= take
    return total


def domains_of(nodes: Iterable[str], labels: Mapping[str, Mapping[str, str]],
               key: str) -> set[str]:
    """The domains of ``key`` the nodes are in; a node without the label is its own."""
    return {labels.get(n, {}).get(key) or f"<{n}>" for n in nodes}


@dataclass(frozen=True, slots=True)
class Measures:
    gangs: int
    cross_rack: int
    topology_gangs: int
    topology_broken: int
    stranded_cpu_seconds: float

    def to_json(self) -> dict[str, object]:
        return {"gangs": self.gangs, "crossRackGangs": self.cross_rack,
                "topologyGangs": self.topology_gangs, "topologyBroken": self.topology_broken,
                "strandedCpuSeconds": round(self.stranded_cpu_seconds, 3)}


def relevant(nodes: Sequence[Node], jobs: Iterable[Job]) -> bool:
    """Whether a run has racks or topology requests to report on."""
    return any(RACK in n.labels for n in nodes) or any(
        not job_topology(j).empty for j in jobs)


def measure(nodes: Sequence[Node], runs: Sequence[JobRun], stranded: float) -> Measures:
    """The measures of the module docstring over ``runs``."""
    labels = {n.name: n.labels for n in nodes}
    gangs = cross = asked = broken = 0
    for run in runs:
        if sum(run.job.gang.values()) < 2:
            continue
        request = job_topology(run.job)
        asked += not request.empty
        if not run.first_gang_nodes:
            continue
        gangs += 1
        cross += len(domains_of(run.first_gang_nodes, labels, RACK)) > 1
        if request.required is not None:
            broken += len(domains_of(run.first_gang_nodes, labels, request.required)) > 1
    return Measures(gangs, cross, asked, broken, stranded)


class Stranded:
    """Integrates stranded cpu over time (see the module docstring): fed the free cpu of
    every node as pods bind and leave, and asked at each instant which gangs wait."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.labels = {n.name: n.labels for n in nodes}
        self.free = {n.name: n.allocatable.get("cpu") for n in nodes}
        self.down: set[str] = set()
        self.now = 0.0
        self.current = 0
        """Millicores stranded since ``now``."""
        self.cpu_seconds = 0.0

    def bind(self, node: str | None, cpu: int, sign: int = 1) -> None:
        if node is not None and node in self.free:
            self.free[node] -= sign * cpu

    def advance(self, now: float, waiting: Iterable[JobRun]) -> None:
        """Add what was stranded up to ``now``, then look again with ``waiting``."""
        if now > self.now:
            self.cpu_seconds += self.current / 1000 * (now - self.now)
            self.now = now
        self.current = 0
        up = {n: max(0, f) for n, f in self.free.items() if n not in self.down}
        total = sum(up.values())
        for run in waiting:
            key = job_topology(run.job).required
            need = gang_cpu(run.job)
            if key is None or need == 0 or total < need:
                continue
            per_domain: dict[str, int] = {}
            for node, free in up.items():
                value = self.labels[node].get(key)
                if value is not None:
                    per_domain[value] = per_domain.get(value, 0) + free
            if max(per_domain.values(), default=0) < need:
                self.current = max(self.current, total)
