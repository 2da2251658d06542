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

from collections.abc import Iterable, Mapping, Sequence, Set
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
    every node as pods bind and leave, and asked at each instant which gangs wait.

    The free cpu of the nodes that are up is kept summed, for the cluster and per domain
    of each key a waiting gang asked for, and brought up to date by each bind and each
    node that went down or came back: an instant costs the gangs that wait, not the
    nodes (a 20,000-node day has an instant every few simulated seconds).
    :func:`stranded_now` is the same measure worked out from every node; a test compares
    the two."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.labels = {n.name: n.labels for n in nodes}
        self.free = {n.name: n.allocatable.get("cpu") for n in nodes}
        self.down: set[str] = set()
        """The nodes that are down (the engine's own set: it changes without a call)."""
        self.now = 0.0
        self.current = 0
        """Millicores stranded since ``now``."""
        self.cpu_seconds = 0.0
        self._down: frozenset[str] = frozenset()
        """``down`` as the sums below count it."""
        self._total = sum(max(0, f) for f in self.free.values())
        """The free cpu of the nodes up (a node's own below 0 counts as 0)."""
        self._domains: dict[str, dict[str, int]] = {}
        """Per key asked for: the free cpu of the nodes up, per value of the key."""

    def bind(self, node: str | None, cpu: int, sign: int = 1) -> None:
        if node is not None and node in self.free:
            before = self._up_free(node)
            self.free[node] -= sign * cpu
            self._shift(node, self._up_free(node) - before)

    def advance(self, now: float, waiting: Iterable[JobRun]) -> None:
        """Add what was stranded up to ``now``, then look again with ``waiting``."""
        if now > self.now:
            self.cpu_seconds += self.current / 1000 * (now - self.now)
            self.now = now
        self._sync_down()
        self.current = 0
        total = self._total
        for run in waiting:
            key = job_topology(run.job).required
            need = gang_cpu(run.job)
            if key is None or need == 0 or total < need:
                continue
            per_domain = self._domains.get(key)
            if per_domain is None:
                per_domain = self._domains[key] = _per_domain(
                    self.free, self.labels, self._down, key)
            if max(per_domain.values(), default=0) < need:
                self.current = max(self.current, total)

    def _up_free(self, node: str) -> int:
        return 0 if node in self._down else max(0, self.free[node])

    def _shift(self, node: str, delta: int) -> None:
        if not delta:
            return
        self._total += delta
        labels = self.labels[node]
        for key, per_domain in self._domains.items():
            value = labels.get(key)
            if value is not None:
                per_domain[value] = per_domain.get(value, 0) + delta

    def _sync_down(self) -> None:
        if self.down == self._down:
            return
        changed = [n for n in self._down.symmetric_difference(self.down) if n in self.free]
        before = [self._up_free(n) for n in changed]
        self._down = frozenset(self.down)
        for node, was in zip(changed, before, strict=True):
            self._shift(node, self._up_free(node) - was)


def _per_domain(free: Mapping[str, int], labels: Mapping[str, Mapping[str, str]],
                down: Set[str], key: str) -> dict[str, int]:
    """The free cpu of the nodes up, per value of ``key`` (nodes without it left out)."""
    sums: dict[str, int] = {}
    for node, cpu in free.items():
        value = labels[node].get(key)
        if value is not None and node not in down:
            sums[value] = sums.get(value, 0) + max(0, cpu)
    return sums


def stranded_now(free: Mapping[str, int], labels: Mapping[str, Mapping[str, str]],
                 down: Set[str], waiting: Iterable[JobRun]) -> int:
    """Millicores stranded at one instant, worked out from every node (what
    :class:`Stranded` keeps summed)."""
    up = {n: max(0, f) for n, f in free.items() if n not in down}
    total = sum(up.values())
    current = 0
    for run in waiting:
        key = job_topology(run.job).required
        need = gang_cpu(run.job)
        if key is None or need == 0 or total < need:
            continue
        per_domain: dict[str, int] = {}
        for node, cpu in up.items():
            value = labels[node].get(key)
            if value is not None:
                per_domain[value] = per_domain.get(value, 0) + cpu
        if max(per_domain.values(), default=0) < need:
            current = max(current, total)
    return current
