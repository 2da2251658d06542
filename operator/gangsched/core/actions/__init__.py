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

Each action is a plain function of the session (:class:`~gangsched.core.state.session.Session`)
and the cycle's time. The functions are listed by name in
:mod:`~gangsched.core.actions.factory`, outside the scheduler, which is given that table
(``Scheduler(config, actions=...)``) and looks the configured names up in it; no action
module registers itself on import, and no action imports another.

Deadlock breaking between partially reserved gangs runs after the actions, in every cycle
whose actions include ``allocate`` (``allocate.after_actions``, with
:mod:`~gangsched.core.preemption.deadlock`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gangsched.core.state.session import Session

Action = Callable[["Session", float], None]
"""An action: it reads and changes the session; its decisions go to ``Session.out``."""
