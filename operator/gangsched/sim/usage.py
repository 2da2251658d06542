"""Cluster usage over simulated time: what holds capacity, and what it is doing.

Every bound, active pod is in one category:

* ``placeholder``: a placeholder pod (reserved for a gang, doing nothing);
* ``idle``: a real pod whose job's gang does not run yet (holding, doing nothing);
* ``busy``: a real pod of a job that makes progress.

:class:`Usage` keeps the current totals per category and integrates them over time
(resource-seconds), so utilisation is exact for the event-driven clock: usage is constant
between events. It also keeps a step-function sample of the curve for plotting.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.values.resources import Resources

CATEGORIES = ("busy", "idle", "placeholder")
GIB = 2**30


@dataclass(slots=True)
class Sample:
    t: float
    capacity_cpu: float
    """Cores."""
    cpu: dict[str, float]
    """Cores in use per category."""


@dataclass(slots=True)
class Usage:
    now: float = 0.0
    capacity_cpu: int = 0
    """Millicores of the nodes that are up."""
    capacity_memory: int = 0
    cpu: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    memory: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    cpu_seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    """Core-seconds per category."""
    memory_seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    """GiB-seconds per category."""
    capacity_cpu_seconds: float = 0.0
    capacity_memory_seconds: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    keep_samples: bool = True

    def advance(self, now: float) -> None:
        """Integrate the current usage up to ``now`` (never backwards)."""
        dt = now - self.now
        if dt <= 0:
            return
        for name in CATEGORIES:
            self.cpu_seconds[name] += self.cpu[name] / 1000 * dt
            self.memory_seconds[name] += self.memory[name] / GIB * dt
        self.capacity_cpu_seconds += self.capacity_cpu / 1000 * dt
        self.capacity_memory_seconds += self.capacity_memory / GIB * dt
        self.now = now

    def capacity(self, delta: Resources, sign: int) -> None:
        self.capacity_cpu += sign * delta.get("cpu")
        self.capacity_memory += sign * delta.get("memory")
        self._sample()

    def add(self, category: str, request: Resources, sign: int = 1) -> None:
        self.cpu[category] += sign * request.get("cpu")
        self.memory[category] += sign * request.get("memory")
        self._sample()

    def move(self, request: Resources, source: str, target: str) -> None:
        self.add(source, request, -1)
        self.add(target, request, 1)

    def _sample(self) -> None:
        if not self.keep_samples:
            return
        sample = Sample(self.now, self.capacity_cpu / 1000,
                        {name: self.cpu[name] / 1000 for name in CATEGORIES})
        if self.samples and self.samples[-1].t == self.now:
            self.samples[-1] = sample
        else:
            self.samples.append(sample)

    def until(self, horizon: float) -> tuple[dict[str, float], float]:
        """Core-seconds per category, and of capacity, from 0 to ``horizon``: what was
        integrated, plus the usage as it stands held from ``now`` on. Two runs that ended
        at different times compare fairly over the later end: a run that stopped with
        pods holding capacity (a deadlock) keeps holding it. A ``horizon`` before ``now``
        gives what was integrated."""
        dt = max(0.0, horizon - self.now)
        cpu = {name: self.cpu_seconds[name] + self.cpu[name] / 1000 * dt
               for name in CATEGORIES}
        return cpu, self.capacity_cpu_seconds + self.capacity_cpu / 1000 * dt

    def fractions(self) -> dict[str, float]:
        """Time-averaged share of capacity per category, for cpu and memory."""
        cpu_cap = self.capacity_cpu_seconds or 1.0
        mem_cap = self.capacity_memory_seconds or 1.0
        result = {f"cpu.{name}": self.cpu_seconds[name] / cpu_cap for name in CATEGORIES}
        result.update({f"memory.{name}": self.memory_seconds[name] / mem_cap
                       for name in CATEGORIES})
        result["cpu"] = sum(self.cpu_seconds.values()) / cpu_cap
        result["memory"] = sum(self.memory_seconds.values()) / mem_cap
        return result
