"""A long cycle's first decisions, carried out before it ends.

The core appends its decisions to one list as a cycle goes (``Scheduler.out``) and hands
the whole list over at the end. On a large first cycle (thousands of pods on hundreds of
nodes) that end comes a few tenths of a second after the first bind was decided, and
every bind waited for it. kube-scheduler binds each pod as soon as it is placed.

:class:`Early` reads the list while the core's thread still appends to it, and gives the
shell the decisions that are safe to carry out at once: binds that write no volumes and
pending reports, as long as nothing else came before them in the list. From the first
decision of any other kind on, it gives nothing more until the cycle ends; the rest are
carried out then, in order, as before.

Why that prefix is safe:

* Nothing in it changes later. The core only ever takes back placeholder creations from
  the list (``placeholders._take_back_creations``, which keeps the others in order) and
  rewrites events in place (``apps.move``, merging an application's moves), as
  ``Scheduler.out`` promises: neither kind is in the prefix, and what comes before the
  first of them keeps its place.
* Nothing in it needs a decision that comes after it. A bind whose volumes must be
  written first carries them (``BindPod.volumes``) or is preceded by other decisions
  (PreBind's, a gang's ``BindGang``): such binds end the prefix.
* The shell reads the list only between the core thread's bytecodes (the interpreter's
  lock): a length read, then items below it.

A replica that lost the Lease carries out nothing more (the caller checks before each
read), as it carries out nothing of a cycle that ends after the loss.
"""

from __future__ import annotations

from collections.abc import Sequence

from gangsched.core.values.decisions import BindPod, Decision, PodPending

STREAM_EVERY = 0.02
"""Seconds between two reads of the list while the core works."""


class Early:
    """Reads one cycle's decision list (``out``) as the core appends to it."""

    def __init__(self, out: Sequence[Decision]) -> None:
        self.out = out
        self.given = 0
        """How many decisions of ``out``, from the first, were given out."""
        self.stopped = False
        """A decision that must wait for the cycle's end was met."""

    def ready(self) -> list[Decision]:
        """The decisions appended since the last call that may be carried out now."""
        if self.stopped:
            return []
        out = self.out
        end = len(out)
        found: list[Decision] = []
        index = self.given
        while index < end:
            decision = out[index]
            if not (isinstance(decision, PodPending)
                    or (isinstance(decision, BindPod) and not decision.volumes)):
                self.stopped = True
                break
            found.append(decision)
            index += 1
        self.given = index
        return found

    def rest(self, decisions: list[Decision]) -> list[Decision]:
        """The cycle's decisions not given out yet, in order: ``decisions`` is the list
        the cycle returned, which is ``out`` itself (``Scheduler.out``)."""
        return decisions[self.given:]
