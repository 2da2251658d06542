"""The ledger of preemption: every open plan of evictions, and the searches that found none.

A *plan* is made when ``preempt`` or ``reclaim`` asks victims to go for one preemptor: the
victims not gone yet, and the room held for the preemptor meanwhile. The logic that makes,
carries out and ends plans is :mod:`~gangsched.core.preemption.evictions`; this module holds
only the records, so that the session can keep them without importing that logic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gangsched.core.values.decisions import ObjectRef
from gangsched.core.values.model import PodUID
from gangsched.core.values.resources import Resources


@dataclass(slots=True)
class Plan:
    """Victims asked to go for one preemptor, and the room held for it meanwhile."""

    key: str
    action: str
    target: ObjectRef
    queue: str
    started: float
    message: str
    details: dict[str, str]
    owners: frozenset[str] = frozenset()
    """The preemptor's Application or PodGroup keys (see ``Preemptor.owners``)."""
    victims: dict[PodUID, tuple[str, Resources]] = field(default_factory=dict)
    """Victims not gone yet: uid -> the node and the room they hold there."""
    room: dict[str, Resources] = field(default_factory=dict)
    """Where the simulation placed the preemptor's members: their requests, per node."""
    claimed: dict[str, Resources] = field(default_factory=dict)
    """The part of ``room`` that was free when the plan was made, per node."""
    freed: dict[str, Resources] = field(default_factory=dict)
    """Room freed by the plan's own victims gone so far, per node: a plan never holds
    what another plan's victims freed."""
    held: dict[str, Resources] = field(default_factory=dict)
    """Room charged as held on each node now."""


class Evictions:
    """Every open plan, and the preemptors waiting after a failure."""

    def __init__(self) -> None:
        self.plans: dict[str, Plan] = {}
        self.backoff: dict[str, float] = {}
        """Preemptor key -> no new plan before this time."""
        self.refusals: dict[str, int] = {}
        self.tried: dict[tuple[str, str], tuple[float, tuple[object, ...], int]] = {}
        """(action, preemptor key) -> when and in what state no victims were enough, and
        the session's count of changes then (``Session.changes``)."""
        self.refusals_end: list[float] = []
        """When the refused evictions (a PodDisruptionBudget) may be tried again: the
        only instants at which a search reads something else with nothing changed."""
        self.version = 0
        """Bumped whenever a plan starts or ends (victims marked or released)."""

    def owners(self) -> frozenset[str]:
        """The gangs room is held for. ``enqueue`` admits them without its capacity check:
        the room their victims free is theirs, as the nodes ``reserve`` holds are the
        elected gang's."""
        found: set[str] = set()
        for plan in self.plans.values():
            found.update(plan.owners)
        return frozenset(found)

    def held_on(self, node: str) -> Resources:
        """The room held on ``node`` for all plans."""
        total = Resources.ZERO
        for plan in self.plans.values():
            total = total + plan.held.get(node, Resources.ZERO)
        return total
