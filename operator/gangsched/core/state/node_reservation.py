"""The nodes held for one starving gang: the ledger that ``elect`` and ``reserve`` keep.

:mod:`~gangsched.core.actions.elect` picks the gang and the nodes and ends the hold; the
session keeps the one current hold (``Session.node_reservation``), which placement
consults so that only the gang's own pods take the held nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class NodeReservation:
    """Nodes held for one starving gang."""

    kind: str
    """``Application`` or ``PodGroup``."""
    key: str
    """The Application's key, or the first PodGroup key of the GangGroup."""
    owners: frozenset[str]
    """Keys whose pods may use the nodes: the Application, or every PodGroup of the
    GangGroup."""
    since: float
    expiry: float
    waited: float = 0.0
    nodes: tuple[str, ...] = ()
    annotated: tuple[str, ...] = field(default=())
