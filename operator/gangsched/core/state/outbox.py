"""The outbox: the decisions of the cycle under way, in the order they are made.

Every decision goes through one :class:`Outbox` (``Session.out``): the actions and the
logic :meth:`~Outbox.append` to it, and at the cycle's end the scheduler
:meth:`~Outbox.take`\\ s the cycle's decisions and hands them to the caller. Only two
kinds are ever changed once appended, both in this cycle and before they leave the core:
a placeholder creation is :meth:`~Outbox.retract`\\ ed when its gang is released in the
same cycle (``placeholders``), and an application's move is :meth:`~Outbox.rewrite`\\ n
in its event's place when it moves again (``apps.move``).

The *committed prefix* is the decisions from the first up to the first of those two
kinds: nothing in it is ever removed, moved or changed. The shell reads it from another
thread while the cycle still runs (``gangsched.shell.early``) through
:meth:`~Outbox.committed_since`: the count is advanced only after the decision is in the
list, and a slice of the list below it is taken in one step of the interpreter, so the
reader sees whole decisions that stay where they are. Retracting or rewriting a
committed decision is a bug and raises ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from gangsched.core.values.decisions import CreatePlaceholder, Decision, RecordEvent

_CHANGEABLE = (CreatePlaceholder, RecordEvent)
"""The kinds of decision that may be retracted or rewritten: they end the committed
prefix."""


class Outbox:
    """The cycle's decisions (see the module docstring)."""

    __slots__ = ("_committed", "_items", "_open")

    def __init__(self) -> None:
        self._items: list[Decision] = []
        self._committed = 0
        """How many decisions, from the first, can no longer change."""
        self._open = True
        """No changeable decision was appended yet: the committed prefix still grows."""

    def append(self, decision: Decision) -> None:
        """Add ``decision`` after the others."""
        self._items.append(decision)
        if self._open:
            if isinstance(decision, _CHANGEABLE):
                self._open = False
            else:
                self._committed += 1

    def extend(self, decisions: Iterable[Decision]) -> None:
        """Add ``decisions`` after the others, in order."""
        for decision in decisions:
            self.append(decision)

    def retract(self, taken: Callable[[Decision], bool]) -> list[Decision]:
        """Remove the decisions ``taken`` says yes to (the others keep their order) and
        return them. ValueError if one of them is committed."""
        items = self._items
        for index in range(self._committed):
            if taken(items[index]):
                raise ValueError(f"a committed decision cannot be retracted: {items[index]}")
        gone = [d for d in items if taken(d)]
        if gone:
            items[:] = [d for d in items if not taken(d)]
        return gone

    def rewrite(self, index: int, decision: RecordEvent) -> None:
        """Put ``decision`` in the place of the event at ``index``. IndexError if there is
        none; ValueError if that decision is committed or not an event."""
        old = self._items[index]
        if index < self._committed or not isinstance(old, RecordEvent):
            raise ValueError(f"only an uncommitted event can be rewritten, not {old}")
        self._items[index] = decision

    def committed_since(self, start: int) -> list[Decision]:
        """The committed decisions from index ``start`` on (none if ``start`` is past
        them). Safe to call from another thread while the cycle appends."""
        end = self._committed
        return self._items[start:end] if start < end else []

    def take(self) -> list[Decision]:
        """The decisions so far, in order; the outbox starts empty again."""
        items = self._items
        self._items = []
        self._committed = 0
        self._open = True
        return items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: int) -> Decision:
        return self._items[index]

    def __iter__(self) -> Iterator[Decision]:
        return iter(self._items)
