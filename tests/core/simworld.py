"""A :class:`~gangsched.sim.world.World` with what the core tests need on top.

* queue and pod group objects kept like the world keeps applications;
* ``fail_binds``: the next bind of a named pod fails with an HTTP code (409: someone else
  bound it already, and it is bound; 404: the pod is gone; other codes: nothing happened);
* ``restart``: a fresh core is fed the world as it stands, with the statuses the old core
  last wrote, as the operator does after a restart;
* :func:`actions_run`: which actions a world's cycles in a block ran, and when.

Only the world's public API is used, so the simulator can change underneath.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from gangsched.core.scheduler import Scheduler
from gangsched.core.state.session import Session
from gangsched.core.values.decisions import BindPod, Decision, DeletePod, EvictPod
from gangsched.core.values.model import (
    AppKey,
    GroupKey,
    PersistedAppStatus,
    Pod,
    PodGroupSpec,
    PodPhase,
    QueueSpec,
    SchedulerConfig,
)
from gangsched.core.values.observations import (
    AppGone,
    AppObserved,
    BindFailed,
    NodeObserved,
    PodGroupGone,
    PodGroupObserved,
    PodObserved,
    QueueGone,
    QueueObserved,
)
from gangsched.sim.world import World


class SimWorld(World):
    def __init__(
        self,
        scheduler: Scheduler | None = None,
        *,
        config: SchedulerConfig | None = None,
        auto_run: bool = True,
    ) -> None:
        super().__init__(scheduler or Scheduler(config), auto_run=auto_run)
        self.groups: dict[GroupKey, PodGroupSpec] = {}
        self.queues: dict[str, QueueSpec] = {}
        self.fail_binds: dict[str, int] = {}
        self.fail_next_binds: list[int] = []
        """HTTP codes for the next binds, whatever pod they are for."""
        self.hold_deletes: set[str] = set()
        """Names of pods whose deletion or eviction is not carried out (a stuck finalizer,
        say)."""

    # --- objects -------------------------------------------------------------------------

    def add_queue(self, spec: QueueSpec) -> None:
        self.queues[spec.name] = spec
        self.observe(QueueObserved(spec))

    def remove_queue(self, name: str) -> None:
        self.queues.pop(name, None)
        self.observe(QueueGone(name))

    def add_group(self, spec: PodGroupSpec) -> None:
        self.groups[spec.key] = spec
        self.observe(PodGroupObserved(spec))

    def remove_group(self, key: GroupKey) -> None:
        self.groups.pop(key, None)
        self.observe(PodGroupGone(key))

    def remove_app(self, key: AppKey) -> None:
        self.apps.pop(key, None)
        self.observe(AppGone(key))

    def delete(self, name: str, namespace: str = "default") -> None:
        self.delete_pod(self.uid_of(name, namespace))

    # --- carrying decisions out ----------------------------------------------------------

    def apply(self, decisions: Iterable[Decision]) -> None:
        for d in decisions:
            if isinstance(d, BindPod) and d.name in self.fail_binds:
                self._fail_bind(d, self.fail_binds.pop(d.name))
            elif isinstance(d, BindPod) and self.fail_next_binds:
                self._fail_bind(d, self.fail_next_binds.pop(0))
            elif isinstance(d, DeletePod | EvictPod) and d.name in self.hold_deletes:
                continue
            else:
                super().apply((d,))

    def _fail_bind(self, d: BindPod, code: int) -> None:
        pod = self.pods.get(d.uid)
        if pod is None or pod.node_name is not None:
            raise AssertionError(f"bind of {d.namespace}/{d.name}: pod missing or bound")
        self.observe(BindFailed(d.uid, d.node, code, "injected failure"))
        if code == 404:
            self.delete_pod(d.uid)
        elif code == 409:
            # Someone bound it already (an earlier attempt did succeed): it is bound once.
            self.bind_count[d.uid] = self.bind_count.get(d.uid, 0) + 1
            self.add_pod(dataclasses.replace(pod, node_name=d.node, phase=PodPhase.RUNNING))

    # --- restart -------------------------------------------------------------------------

    def restart(self, scheduler: Scheduler | None = None, *, pods_first: bool = False) -> None:
        """Replace the core and tell the new one everything, as after an operator restart.

        Applications carry the status the old core last wrote; PodGroups their
        ``scheduleStartTime``, phase and node reservation. ``pods_first`` feeds the pods
        before the objects they belong to (the shell's watches may deliver them in any
        order).
        """
        self.scheduler = scheduler or Scheduler(self.scheduler.config)
        self.reconnect()
        pods = sorted(self.pods.values(), key=lambda p: (p.namespace, p.name))
        if pods_first:
            self._feed_pods(pods)
        for name in sorted(self.queues):
            self.observe(QueueObserved(self.queues[name]))
        for node in sorted(self.nodes):
            self.observe(NodeObserved(self.nodes[node]))
        for key in sorted(self.apps):
            spec = self.apps[key]
            status = self.app_status.get(key)
            if status is not None:
                spec = dataclasses.replace(spec, persisted=PersistedAppStatus(
                    state=status.state,
                    reason=status.reason,
                    message=status.message,
                    state_since=status.state_since,
                    placeholder_timer_start=status.placeholder_timer_start,
                    waiting_since=status.waiting_since,
                    starting_since=status.starting_since,
                    reservation_expiry=status.reservation_expiry,
                    reserved_nodes=status.reserved_nodes,
                ))
            self.observe(AppObserved(spec))
        for gkey in sorted(self.groups):
            group = self.groups[gkey]
            gstatus = self.group_status.get(gkey)
            if gstatus is not None:
                group = dataclasses.replace(
                    group, persisted_start=gstatus.schedule_start, persisted_phase=gstatus.phase,
                    persisted_reservation_expiry=gstatus.reservation_expiry,
                    persisted_reserved_nodes=gstatus.reserved_nodes)
            self.observe(PodGroupObserved(group))
        if not pods_first:
            self._feed_pods(pods)

    def _feed_pods(self, pods: list[Pod]) -> None:
        for pod in pods:
            self.observe(PodObserved(pod))

    # --- views ---------------------------------------------------------------------------

    def node_of(self, name: str, namespace: str = "default") -> str | None:
        return self.pod(name, namespace).node_name

    def pending_reason(self, name: str, namespace: str = "default") -> str | None:
        found = self.pending_reasons.get(self.uid_of(name, namespace))
        return None if found is None else found.reason

    def app_state(self, key: str) -> str:
        return self.scheduler.apps[AppKey(key)].state.value

    def bound_names(self) -> set[str]:
        return {p.name for p in self.pods.values() if p.node_name is not None}


@contextmanager
def actions_run(world: SimWorld) -> Iterator[list[tuple[str, float]]]:
    """The actions ``world``'s cycles in the block ran, each with the cycle's instant, in
    order (the scheduler is given spies in place of its actions meanwhile)."""
    calls: list[tuple[str, float]] = []
    scheduler = world.scheduler
    actions = scheduler.actions

    def spy(name: str) -> Callable[[Session, float], None]:
        def run(s: Session, now: float) -> None:
            calls.append((name, now))
            actions[name](s, now)
        return run

    scheduler.actions = {name: spy(name) for name in actions}
    try:
        yield calls
    finally:
        scheduler.actions = actions
