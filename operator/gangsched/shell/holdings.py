"""What the operator sees held: per node (over-commit) and per gang (partial spans).

Both are derived from the pods and nodes the watches show, never from the core's plans,
so that they check the core instead of repeating it.

* **Held per node**: the requests of every pod bound to the node that has not
  terminated: running pods, pods being deleted (a terminating pod holds its room until
  the kubelet confirms), placeholders, other schedulers' pods. A node is *over-committed*
  when that sum exceeds its ``allocatable`` in any resource the node lists (a resource it
  does not list counts as 0 there, as in kube-scheduler's fit check). Must stay 0.
* **Partial gangs**: for each gang (an Application or a PodGroup) the members that hold
  their room: real members bound (of any phase) and placeholders bound that are not
  being deleted. The gang is partial while at least one real member is bound and fewer
  than its minimum hold their room (placeholders alone are a reservation under way, not
  a gang running). A placeholder being deleted for its real pod leaves the count until
  that pod is bound: that is the swap, and it is meant to be short. The minimum is the sum of
  the Application's task groups' ``minMember`` (or the PodGroup's ``minMember``), read
  from the objects the runtime keeps; a gang whose object is not known yet is not
  measured until it is. Once a member has terminated (``Succeeded``/``Failed``) the gang
  is winding down and is no longer measured (members leaving at the end are no partial
  start). Spans are kept by :func:`gangsched.core.gangs.partialgang.step`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from gangsched.core.gangs import partialgang
from gangsched.core.values import resources
from gangsched.core.values.model import Node, Pod, PodUID

JSON = Mapping[str, Any]
Ended = Callable[[str, float], None]
"""Called with (gang kind, seconds) when a partial span ends."""
Violated = Callable[[str], None]
"""Called with the gang kind when a span crosses the threshold."""


@dataclasses.dataclass(slots=True)
class _Gang:
    kind: str
    holding: set[PodUID] = dataclasses.field(default_factory=set)
    real: set[PodUID] = dataclasses.field(default_factory=set)
    """The real (not placeholder) members among ``holding``."""
    span: partialgang.PartialSpan = dataclasses.field(default_factory=partialgang.PartialSpan)
    winding_down: bool = False


class Holdings:
    """Node sums and gang spans, fed pod by pod and node by node."""

    def __init__(self, *, objects: Mapping[str, Mapping[str, JSON]] | None = None,
                 threshold: float = partialgang.DEFAULT_THRESHOLD,
                 on_ended: Ended | None = None, on_violation: Violated | None = None) -> None:
        self._objects = objects or {}
        self.threshold = threshold
        self._on_ended = on_ended
        self._on_violation = on_violation
        self.allocatable: dict[str, resources.Resources] = {}
        self.held: dict[str, resources.Resources] = {}
        self._bound: dict[PodUID, tuple[str, resources.Resources]] = {}
        self._member_of: dict[PodUID, str] = {}
        self.gangs: dict[str, _Gang] = {}
        self._open: set[str] = set()
        """Gangs in a partial span, or of a minimum not known yet: looked at every cycle."""

    # --- nodes ---------------------------------------------------------------------------

    def node_observed(self, node: Node) -> None:
        self.allocatable[node.name] = node.allocatable

    def node_gone(self, name: str) -> None:
        self.allocatable.pop(name, None)

    def overcommitted(self) -> list[str]:
        """Nodes that hold more than their allocatable, by name. Pods bound to a node not
        seen (deleted, say, before the pod garbage collector removes its pods) are not
        judged: there is no allocatable to compare with."""
        return sorted(name for name, held in self.held.items()
                      if name in self.allocatable and not held.is_zero()
                      and not held.fits_in(self.allocatable[name]))

    # --- pods ----------------------------------------------------------------------------

    def pod_observed(self, pod: Pod, now: float) -> None:
        self._hold(pod.uid, pod.node_name if pod.active else None, pod.requests)
        gang = self._gang_of(pod)
        if gang is None:
            return
        key, kind = gang
        entry = self.gangs.get(key)
        if entry is None:
            entry = self.gangs[key] = _Gang(kind)
        self._member_of[pod.uid] = key
        if pod.phase.terminal and not pod.placeholder:
            entry.winding_down = True
        holds = pod.node_name is not None and not (pod.placeholder and pod.terminating)
        if holds:
            entry.holding.add(pod.uid)
            if not pod.placeholder:
                entry.real.add(pod.uid)
        else:
            entry.holding.discard(pod.uid)
            entry.real.discard(pod.uid)
        self._update(key, entry, now)

    def pod_gone(self, uid: PodUID, now: float) -> None:
        self._hold(uid, None, resources.Resources.ZERO)
        key = self._member_of.pop(uid, None)
        entry = None if key is None else self.gangs.get(key)
        if key is None or entry is None:
            return
        entry.holding.discard(uid)
        entry.real.discard(uid)
        if not entry.holding and entry.span.since is None:
            self.gangs.pop(key, None)
            self._open.discard(key)
            return
        self._update(key, entry, now)

    def gang_gone(self, key: str, now: float) -> None:
        """The gang's object was deleted: its open span (if any) ends now."""
        entry = self.gangs.pop(key, None)
        self._open.discard(key)
        if entry is not None:
            self._record(entry, partialgang.step(entry.span, partial=False, now=now,
                                                 threshold=self.threshold))

    def tick(self, now: float) -> None:
        """Once per cycle: spans crossing the threshold, minimums now known."""
        for key in sorted(self._open):
            entry = self.gangs.get(key)
            if entry is None:
                self._open.discard(key)
                continue
            self._update(key, entry, now)

    def partial_seconds(self, key: str, now: float) -> float:
        """The longest partial span of a gang so far (the current one included)."""
        entry = self.gangs.get(key)
        return 0.0 if entry is None else entry.span.worst(now)

    # --- internals -----------------------------------------------------------------------

    def _hold(self, uid: PodUID, node: str | None, requests: resources.Resources) -> None:
        before = self._bound.pop(uid, None)
        if before is not None:
            left = self.held.get(before[0], resources.Resources.ZERO) - before[1]
            if left.is_zero():
                self.held.pop(before[0], None)
            else:
                self.held[before[0]] = left
        if node is not None:
            self._bound[uid] = (node, requests)
            self.held[node] = self.held.get(node, resources.Resources.ZERO) + requests

    @staticmethod
    def _gang_of(pod: Pod) -> tuple[str, str] | None:
        if not pod.ours:
            return None
        if pod.app is not None:
            return str(pod.app), "Application"
        if pod.pod_group is not None:
            return str(pod.pod_group), "PodGroup"
        return None

    def _minimum(self, key: str, kind: str) -> int:
        plural = "applications" if kind == "Application" else "podgroups"
        obj = self._objects.get(plural, {}).get(key)
        spec = (obj or {}).get("spec") or {}
        try:
            if kind == "Application":
                return sum(int(g.get("minMember") or 0) for g in spec.get("taskGroups") or ()
                           if isinstance(g, Mapping))
            return int(spec.get("minMember") or 0)
        except (TypeError, ValueError):
            return 0

    def _update(self, key: str, entry: _Gang, now: float) -> None:
        minimum = self._minimum(key, entry.kind)
        partial = (not entry.winding_down and bool(entry.real)
                   and partialgang.is_partial(len(entry.holding), minimum))
        self._record(entry, partialgang.step(entry.span, partial=partial, now=now,
                                             threshold=self.threshold))
        if entry.span.since is not None or (minimum <= 0 and entry.holding
                                            and not entry.winding_down):
            self._open.add(key)
        else:
            self._open.discard(key)

    def _record(self, entry: _Gang, result: partialgang.Step) -> None:
        entry.span = result.span
        if result.violation and self._on_violation is not None:
            self._on_violation(entry.kind)
        if result.ended is not None and self._on_ended is not None:
            self._on_ended(entry.kind, result.ended)
