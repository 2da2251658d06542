"""SchedulingGates (PreEnqueue): a pod with ``spec.schedulingGates`` never enters a cycle.

kube-scheduler keeps such a pod out of the active queue and sets ``PodScheduled=False``
with reason ``SchedulingGated`` and the message below; nothing else happens to it.
"""

from __future__ import annotations

from gangsched.core.framework import interface as fw
from gangsched.core.framework.podinfo import PodInfo

NAME = "SchedulingGates"


def gated_message(gates: tuple[str, ...]) -> str:
    """kube-scheduler's words: ``waiting for scheduling gates: [a b]``."""
    return f"waiting for scheduling gates: [{' '.join(gates)}]"


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: PodInfo) -> fw.Status:
        gates = pod.placement.gates
        if not gates:
            return fw.SUCCESS
        return fw.unresolvable(gated_message(gates))


def factory(args: object | None) -> SchedulingGates:
    return SchedulingGates()
