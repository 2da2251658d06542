"""Why a pod fits no node, worded as kube-scheduler words it (``FitError``).

The message is ``0/N nodes are available: <count> <reason>, ....`` with the reasons of
every node's first failing filter counted and sorted by their text, e.g.
``0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules.`` A PreFilter
that rejects the pod outright gives ``0/N nodes are available: <its reason>.`` instead.
gangsched adds two things kube-scheduler does not have: nodes that would fit but are
reserved for a starving gang (``node(s) were reserved for starving gang ns/name``), and,
when capacity is short, the smallest shortfall among the nodes passing every other filter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.core.devices.allocator import CANNOT_ALLOCATE
from gangsched.core.values.resources import Resources

RESERVED = "Reserved"
FIT_PLUGIN = "NodeResourcesFit"
FITS = "Fits"
"""The verdict of a node that passes every filter (counted in ``by_filter``)."""


def reserved_reason(gang: str) -> str:
    return f"node(s) were reserved for starving gang {gang}"


@dataclass(frozen=True, slots=True)
class Diagnosis:
    """Counts of nodes per failing plugin and per reason, and the best shortfall."""

    nodes: int
    by_filter: Mapping[str, int]
    """Nodes by the plugin that rejected them (``Reserved``, ``Fits`` included)."""
    best_shortfall: Resources = Resources.ZERO
    reserved_for: str = ""
    """The gang the ``Reserved`` nodes are held for."""
    reasons: Mapping[str, int] = field(default_factory=dict)
    """Nodes by kube-scheduler reason text (a node may give several, e.g. two
    ``Insufficient`` resources)."""
    pre_filter: str = ""
    """A PreFilter's rejection of the pod as a whole, if any."""
    _text: str = field(default="", init=False, repr=False, compare=False)
    """:meth:`message`, once worded (a kept diagnosis answers many pods)."""

    def message(self, request: Resources | None = None) -> str:
        """The FitError text (``request`` is accepted for compatibility, unused)."""
        if not self._text:
            object.__setattr__(self, "_text", self._word())
        return self._text

    def _word(self) -> str:
        if self.nodes == 0:
            return "0/0 nodes are available: no nodes in the cluster."
        text = f"0/{self.nodes} nodes are available:"
        if self.pre_filter:
            text += f" {self.pre_filter}."
        elif self.reasons:
            # kube-scheduler's FitError: the "<count> <reason>" strings, sorted as strings.
            parts = sorted(f"{count} {reason}" for reason, count in self.reasons.items())
            text += " " + ", ".join(parts) + "."
        if self.best_shortfall:
            text += f" The closest node is short of {self.best_shortfall.format_short()}."
        return text

    def details(self) -> dict[str, str]:
        """Reason counts (and the closest shortfall) for a status ``blockingReason``."""
        found = {reason: str(count) for reason, count in sorted(self.reasons.items())}
        if self.pre_filter:
            found[self.pre_filter] = str(self.nodes)
        if self.best_shortfall:
            found["bestNodeShortfall"] = self.best_shortfall.format_short()
        return found

    @property
    def reason(self) -> str:
        """``Reservation`` when a node would fit but is reserved for another gang; else
        ``Constraints`` or ``Capacity`` (see :attr:`constraint_bound`)."""
        if self.by_filter.get(RESERVED):
            return "Reservation"
        return "Constraints" if self.constraint_bound else "Capacity"

    @property
    def constraint_bound(self) -> bool:
        """True when constraints, not capacity, exclude every node. Devices that cannot be
        allocated (``cannot allocate all claims``) are capacity: victims may free them."""
        return self.by_filter.get(FIT_PLUGIN, 0) == 0 and not self.reasons.get(CANNOT_ALLOCATE)
