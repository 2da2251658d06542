"""A long cycle's first decisions, carried out before it ends.

The core appends its decisions to its outbox as a cycle goes (``Scheduler.out``, a
:class:`~gangsched.core.state.outbox.Outbox`) and hands them over at the end. On a large
first cycle (thousands of pods on hundreds of nodes) that end comes a few tenths of a
second after the first bind was decided, and every bind waited for it. kube-scheduler
binds each pod as soon as it is placed.

:class:`Early` reads the outbox's committed prefix while the core's thread still
appends to it, and gives the shell the decisions that are safe to carry out at once:
binds that write no volumes and pending reports, as long as nothing else came before
them. From the first decision of any other kind on, it gives nothing more until the
cycle ends; the rest are carried out then, in order, as before.

Why that prefix is safe:

* Nothing in it changes later: the outbox's committed prefix is never retracted nor
  rewritten (only placeholder creations and events may be, and they end it).
* Nothing in it needs a decision that comes after it. A bind whose volumes must be
  written first carries them (``BindPod.volumes``) or is preceded by other decisions
  (PreBind's, a gang's ``BindGang``): such binds end the prefix.
* The outbox gives the committed prefix to another thread safely
  (:meth:`~gangsched.core.state.outbox.Outbox.committed_since`).

A replica that lost the Lease carries out nothing more (the caller checks before each
read), as it carries out nothing of a cycle that ends after the loss.
"""

from __future__ import annotations

from gangsched.core.state.outbox import Outbox
from gangsched.core.values.decisions import BindPod, Decision, PodPending

STREAM_EVERY = 0.02
"""Seconds between two reads of the outbox while the core works."""


class Early:
    """Reads one cycle's committed decisions (``out``) as the core appends them."""

    def __init__(self, out: Outbox) -> None:
        self.out = out
        self.given = 0
        """How many decisions of ``out``, from the first, were given out."""
        self.stopped = False
        """A decision that must wait for the cycle's end was met."""

    def ready(self) -> list[Decision]:
        """The decisions committed since the last call that may be carried out now."""
        if self.stopped:
            return []
        found: list[Decision] = []
        for decision in self.out.committed_since(self.given):
            if not (isinstance(decision, PodPending)
                    or (isinstance(decision, BindPod) and not decision.volumes)):
                self.stopped = True
                break
            found.append(decision)
        self.given += len(found)
        return found

    def rest(self, decisions: list[Decision]) -> list[Decision]:
        """The cycle's decisions not given out yet, in order: ``decisions`` is the list
        the cycle returned (taken from ``out``, whose first decisions were given)."""
        return decisions[self.given:]
