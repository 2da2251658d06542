"""The scheduling session: an ordered list of actions, configurable per cluster.

As in Volcano's scheduler (``scheduler-actions.zh.txt``), a cycle's allocation work is a
series of actions run in the order ``SchedulerConfig.actions`` gives:

* ``enqueue``: a gang enters scheduling only once its minimum fits the queue's headroom
  and the cluster's free capacity (times the over-commit factor);
* ``allocate``: gang-aware placement, committed only when the gang condition holds;
* ``backfill``: best-effort pods (no requests) on any feasible node;
* ``preempt``: within a queue, higher priority gangs and tasks take from lower ones;
* ``reclaim``: across queues, a queue below its deserved share takes back from
  reclaimable queues above theirs;
* ``elect`` and ``reserve``: pick a starving gang and hold nodes for it (the two go
  together; elect usually before allocate, reserve after it, as in Volcano).

Deadlock breaking between partially reserved gangs runs after the actions, in every cycle
whose actions include ``allocate`` (:mod:`~gangsched.core.deadlock`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gangsched.core.scheduler import Scheduler

Action = Callable[["Scheduler", float], None]

REGISTRY: dict[str, Action] = {}
"""Action name -> function. Modules register themselves with :func:`action`."""


def action(name: str) -> Callable[[Action], Action]:
    def register(fn: Action) -> Action:
        REGISTRY[name] = fn
        return fn
    return register


def validate(names: Iterable[str]) -> tuple[str, ...]:
    """The actions as given, or ValueError naming the unknown one and the accepted ones."""
    result = tuple(names)
    for name in result:
        if name not in REGISTRY:
            accepted = ", ".join(sorted(REGISTRY))
            raise ValueError(f"unknown scheduler action {name!r} (accepted: {accepted})")
    if len(set(result)) != len(result):
        raise ValueError(f"scheduler actions repeat: {', '.join(result)}")
    if ("elect" in result) != ("reserve" in result):
        raise ValueError("scheduler actions elect and reserve go together: elect picks the "
                         "starving gang, reserve holds nodes for it")
    return result


def run(s: Scheduler, now: float) -> None:
    """Run the configured actions in order; unknown names were refused at start-up."""
    for name in s.config.actions:
        fn = REGISTRY.get(name)
        if fn is not None:
            fn(s, now)
