"""The application state machine: a transition table plus a pure ``transition()``.

Derived from YuniKorn's gang design (``gang-scheduling-design.txt``), its state-aware
scheduling design (``state-aware-batch-scheduling.txt``) and its later Soft style:

* ``New``: observed, not yet checked against its queue.
* ``Accepted``: admitted by the queue. A gang app stays here while its placeholders are
  created and allocated, and while it is held for quota; it is *reserved* once every
  placeholder is allocated. A non-gang app stays here until its first allocation.
* ``Starting``: the first real pod is bound. The next real allocation, or having nothing
  left to ask for, moves it to ``Running``; so does the queue's state-aware timeout.
  State-aware queues start one app at a time, and there a non-gang app with nothing left
  to ask for stays ``Starting`` (a Spark driver asks for executors only once it runs).
* ``Running``: real pods are bound.
* ``Waiting``: nothing bound and nothing pending; after the waiting timeout it completes.
* ``Resuming``: Soft style after the placeholder timeout: unused placeholders are released
  and the real pods are scheduled as ordinary pods.
* ``Completed``, ``Rejected``, ``Killed``: terminal. A Completed app may be submitted again
  under the same ID (``RESUBMIT``), as the design asks for cron-like reuse of an ID; a
  Rejected app whose spec is changed is checked again (``RESUBMIT`` back to ``New``).

Side effects are never run here: the scheduler turns a transition into decisions.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping


class AppState(enum.StrEnum):
    NEW = "New"
    ACCEPTED = "Accepted"
    STARTING = "Starting"
    RUNNING = "Running"
    WAITING = "Waiting"
    RESUMING = "Resuming"
    COMPLETED = "Completed"
    REJECTED = "Rejected"
    KILLED = "Killed"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @classmethod
    def from_string(cls, text: str) -> AppState:
        for member in cls:
            if member.value == text:
                return member
        accepted = ", ".join(m.value for m in cls)
        raise ValueError(f"unknown application state {text!r} (accepted: {accepted})")


class AppEvent(enum.StrEnum):
    ACCEPT = "accept"
    """The queue admits the application."""
    REJECT = "reject"
    """The application can never run: invalid spec, ask over quota, fair queue."""
    START = "start"
    """The first real allocation."""
    RUN = "run"
    """A further real allocation, or a Starting app with nothing left to ask for or
    starting for longer than its queue's state-aware timeout."""
    WAIT = "wait"
    """Nothing bound and nothing pending."""
    COMPLETE = "complete"
    """The waiting timeout expired."""
    RESUME = "resume"
    """Soft style: the placeholder timeout expired before the gang started."""
    KILL = "kill"
    """Hard style: the placeholder timeout expired before the gang started."""
    RESUBMIT = "resubmit"
    """New pods arrived for a Completed application ID, or a Rejected app's spec changed."""


class IllegalTransition(ValueError):
    """An event that the table does not allow in the current state."""


TERMINAL_STATES = frozenset({AppState.COMPLETED, AppState.REJECTED, AppState.KILLED})

_LIVE = (
    AppState.ACCEPTED,
    AppState.STARTING,
    AppState.RUNNING,
    AppState.WAITING,
    AppState.RESUMING,
)


def _table() -> dict[tuple[AppState, AppEvent], AppState]:
    table: dict[tuple[AppState, AppEvent], AppState] = {
        (AppState.NEW, AppEvent.ACCEPT): AppState.ACCEPTED,
        (AppState.NEW, AppEvent.REJECT): AppState.REJECTED,
        (AppState.ACCEPTED, AppEvent.START): AppState.STARTING,
        (AppState.ACCEPTED, AppEvent.RESUME): AppState.RESUMING,
        (AppState.ACCEPTED, AppEvent.KILL): AppState.KILLED,
        (AppState.ACCEPTED, AppEvent.REJECT): AppState.REJECTED,
        (AppState.STARTING, AppEvent.RUN): AppState.RUNNING,
        (AppState.STARTING, AppEvent.WAIT): AppState.WAITING,
        (AppState.RUNNING, AppEvent.WAIT): AppState.WAITING,
        (AppState.WAITING, AppEvent.RUN): AppState.RUNNING,
        (AppState.WAITING, AppEvent.COMPLETE): AppState.COMPLETED,
        (AppState.RESUMING, AppEvent.RUN): AppState.RUNNING,
        (AppState.RESUMING, AppEvent.WAIT): AppState.WAITING,
        (AppState.COMPLETED, AppEvent.RESUBMIT): AppState.NEW,
        (AppState.REJECTED, AppEvent.RESUBMIT): AppState.NEW,
    }
    for state in _LIVE:
        table.setdefault((state, AppEvent.KILL), AppState.KILLED)
    return table


TRANSITIONS: Mapping[tuple[AppState, AppEvent], AppState] = _table()


def transition(state: AppState, event: AppEvent) -> AppState:
    """The state after ``event`` in ``state``; raises IllegalTransition if not allowed."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalTransition(
            f"event {event.value!r} is not allowed in state {state.value}"
        ) from None


def allowed(state: AppState, event: AppEvent) -> bool:
    return (state, event) in TRANSITIONS


def render_mermaid(
    table: Iterable[tuple[tuple[AppState, AppEvent], AppState]] | None = None,
) -> str:
    """The transition table as a Mermaid state diagram (used to generate the docs)."""
    items = TRANSITIONS.items() if table is None else table
    lines = ["stateDiagram-v2", "    [*] --> New"]
    for (source, event), target in sorted(items, key=lambda i: (i[0][0].value, i[0][1].value)):
        lines.append(f"    {source.value} --> {target.value}: {event.value}")
    for state in sorted(TERMINAL_STATES, key=lambda s: s.value):
        lines.append(f"    {state.value} --> [*]")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - regenerates docs/application-states.md
    print(render_mermaid(), end="")
