"""The ledger of unsatisfiable gangs: the verdicts, and the node facts they rest on.

:mod:`~gangsched.core.gangs.unsatisfiable` judges whether a gang could fit the nodes as
they are; the verdicts are kept here, on the session, and judged again only when a
gang's spec or the node facts change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gangsched.core.placement.cluster import Constraints
from gangsched.core.values.decisions import BlockingReason
from gangsched.core.values.model import AppKey, GroupKey
from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.values.model import PodGroupSpec

GANG = ""
"""The key of a verdict on the whole gang rather than one task group."""


@dataclass(frozen=True, slots=True)
class Fit:
    """What the nodes a member may use offer it."""

    allowed: int
    """Ready, schedulable nodes passing the member's static filters."""
    fits: bool
    """One of them is large enough for one member."""
    largest: Resources
    """The allocatable of the largest allowed node (by the member's resources)."""
    total: Resources
    """The allocatable of all allowed nodes together."""


@dataclass(slots=True)
class Verdicts:
    """The current verdicts, and the node facts they were computed on."""

    apps: dict[AppKey, dict[str, BlockingReason]] = field(default_factory=dict)
    """By Application key: by task group (``GANG`` for the whole gang)."""
    groups: dict[GroupKey, BlockingReason] = field(default_factory=dict)
    signature: tuple[object, ...] = ()
    capacity: Resources = Resources.ZERO
    fits: dict[tuple[Constraints, Resources], Fit] = field(default_factory=dict)
    judged_apps: dict[AppKey, tuple[tuple[object, ...], dict[str, BlockingReason]]] = field(
        default_factory=dict)
    """Per Application, what its verdict was computed from (its spec) and the verdict:
    judged again only when the spec is replaced or the node facts change."""
    judged_groups: dict[GroupKey, tuple[tuple[PodGroupSpec, int], BlockingReason | None]] = (
        field(default_factory=dict))
    """(its spec, its members' version) and the verdict: the members are walked again
    only when either moved."""

    def app_blocking(self, key: AppKey, group: str) -> BlockingReason | None:
        """The verdict on a task group of an Application (the gang's, else the group's)."""
        found = self.apps.get(key)
        if not found:
            return None
        return found.get(group) or found.get(GANG)
