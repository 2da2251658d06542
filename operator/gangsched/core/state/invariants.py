"""Reservations never exceed capacity: the check, as a pure function of the core's state.

What a node holds, as the core counts it, is every charge on it: pods bound there
(ours and other schedulers'), placeholders, terminating pods until their deletion is
observed (kube-scheduler keeps them in its NodeInfo until then), pods assumed on it
but not yet seen bound, room held for a preemptor whose victims are leaving
(:mod:`~gangsched.core.preemption.evictions`), and room held for the real pod of a swap
(:mod:`~gangsched.core.gangs.swap`). The sum is taken afresh from those charges, not from
the running total the placement reads, so a drift of that total is caught as well.

A node over-committed is one where that sum exceeds its allocatable in some resource.
Only the core's own placements can make one: a node whose allocatable shrank under its
pods, or pods bound by another scheduler beyond it, count too (the check cannot tell
who is to blame), so a caller that wants the core's own faults compares before and
after a cycle.

Cost: O(charges on the nodes checked). ``nodes`` limits the check to some nodes (those
touched since the last check, say); a name that is not a node is skipped.
:class:`Watch` checks after every cycle only the nodes whose usage changed since the
last check (all of them when that is not known): what a long simulation can afford.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gangsched.core.values.resources import Resources

if TYPE_CHECKING:
    from gangsched.core.state.session import Session


@dataclass(frozen=True, slots=True)
class OverCommit:
    """One node whose charges exceed its allocatable."""

    node: str
    held: Resources
    allocatable: Resources

    def describe(self) -> str:
        excess = (self.held - self.allocatable).clamp_non_negative()
        return (f"node {self.node} holds {self.held} of {self.allocatable} allocatable "
                f"({excess} over)")


class Watch:
    """Checks the invariant incrementally, cycle after cycle, on one scheduler: the
    running total of each node touched since the last check against its allocatable
    (a drift of that total from the charges is what :func:`over_committed` and the
    property tests catch)."""

    def __init__(self) -> None:
        self._mark: tuple[int, int, int] | None = None
        self.checks = 0
        """Nodes checked so far (a measure of the cost)."""

    def check(self, s: Session) -> list[OverCommit]:
        """The over-committed nodes among those whose usage changed since the last check
        (every node at the first check, or when the changes are no longer known)."""
        cluster = s.cluster
        touched = cluster.touched_since(self._mark) if self._mark is not None else None
        self._mark = cluster.touch_mark()
        names = cluster.nodes.keys() if touched is None else touched
        self.checks += len(names)
        nodes = cluster.nodes
        # The running total first (O(resources) a node); a node it flags is summed
        # afresh from its charges, which says what it holds.
        flagged = [name for name in names if name in nodes
                   and not nodes[name].used.fits_in(nodes[name].node.allocatable)]
        return over_committed(s, flagged) if flagged else []


def held_on(s: Session, node: str) -> Resources:
    """The sum of every charge on ``node``; zero for a node the core does not know."""
    state = s.cluster.nodes.get(node)
    if state is None:
        return Resources.ZERO
    total = Resources.ZERO
    for request in state.pods.values():
        total = total + request
    return total


def over_committed(s: Session, nodes: Iterable[str] | None = None) -> list[OverCommit]:
    """The nodes (all of them, or those named in ``nodes``) whose charges exceed their
    allocatable, by name. Empty when the invariant holds."""
    known = s.cluster.nodes
    names = sorted(known) if nodes is None else sorted(set(nodes) & known.keys())
    found: list[OverCommit] = []
    for name in names:
        state = known[name]
        if not state.pods:
            continue
        held = held_on(s, name)
        if not held.fits_in(state.node.allocatable):
            found.append(OverCommit(name, held, state.node.allocatable))
    return found
