"""The application state machine: the table, ``transition()``, and its diagram."""

from __future__ import annotations

import itertools

import pytest
from gangsched.core.values.states import (
    TERMINAL_STATES,
    TRANSITIONS,
    AppEvent,
    AppState,
    IllegalTransition,
    allowed,
    render_mermaid,
    transition,
)

S, E = AppState, AppEvent

LEGAL = [
    pytest.param(S.NEW, E.ACCEPT, S.ACCEPTED, id="new-accept"),
    pytest.param(S.NEW, E.REJECT, S.REJECTED, id="new-reject"),
    pytest.param(S.ACCEPTED, E.START, S.STARTING, id="accepted-start"),
    pytest.param(S.ACCEPTED, E.RESUME, S.RESUMING, id="accepted-resume-soft-timeout"),
    pytest.param(S.ACCEPTED, E.KILL, S.KILLED, id="accepted-kill-hard-timeout"),
    pytest.param(S.ACCEPTED, E.REJECT, S.REJECTED, id="accepted-reject"),
    pytest.param(S.STARTING, E.RUN, S.RUNNING, id="starting-run"),
    pytest.param(S.STARTING, E.WAIT, S.WAITING, id="starting-wait"),
    pytest.param(S.STARTING, E.KILL, S.KILLED, id="starting-kill"),
    pytest.param(S.RUNNING, E.WAIT, S.WAITING, id="running-wait"),
    pytest.param(S.RUNNING, E.KILL, S.KILLED, id="running-kill"),
    pytest.param(S.WAITING, E.RUN, S.RUNNING, id="waiting-run-new-asks"),
    pytest.param(S.WAITING, E.COMPLETE, S.COMPLETED, id="waiting-complete"),
    pytest.param(S.WAITING, E.KILL, S.KILLED, id="waiting-kill"),
    pytest.param(S.RESUMING, E.RUN, S.RUNNING, id="resuming-run"),
    pytest.param(S.RESUMING, E.WAIT, S.WAITING, id="resuming-wait"),
    pytest.param(S.RESUMING, E.KILL, S.KILLED, id="resuming-kill"),
    pytest.param(S.COMPLETED, E.RESUBMIT, S.NEW, id="completed-resubmit-same-id"),
    pytest.param(S.REJECTED, E.RESUBMIT, S.NEW, id="rejected-resubmit-after-spec-change"),
]

ILLEGAL = [
    pytest.param(S.NEW, E.START, id="new-start-before-accept"),
    pytest.param(S.NEW, E.COMPLETE, id="new-complete"),
    pytest.param(S.ACCEPTED, E.COMPLETE, id="accepted-complete-without-waiting"),
    pytest.param(S.ACCEPTED, E.ACCEPT, id="accepted-twice"),
    pytest.param(S.RUNNING, E.START, id="running-start"),
    pytest.param(S.RUNNING, E.COMPLETE, id="running-complete-without-waiting"),
    pytest.param(S.WAITING, E.START, id="waiting-start"),
    pytest.param(S.COMPLETED, E.RUN, id="completed-run"),
    pytest.param(S.KILLED, E.RESUBMIT, id="killed-resubmit"),
    pytest.param(S.KILLED, E.RUN, id="killed-run"),
    pytest.param(S.REJECTED, E.ACCEPT, id="rejected-accept"),
    pytest.param(S.STARTING, E.RESUME, id="starting-resume"),
]


@pytest.mark.parametrize(("state", "event", "target"), LEGAL)
def test_legal_transitions(state: AppState, event: AppEvent, target: AppState) -> None:
    assert transition(state, event) is target
    assert allowed(state, event)


def test_the_table_holds_exactly_the_legal_transitions() -> None:
    legal = {(p.values[0], p.values[1]): p.values[2] for p in LEGAL}
    assert dict(TRANSITIONS) == legal


@pytest.mark.parametrize(("state", "event"), ILLEGAL)
def test_illegal_transitions_raise_and_name_the_state(state: AppState, event: AppEvent) -> None:
    assert not allowed(state, event)
    with pytest.raises(IllegalTransition, match=f"{event.value!r}.*{state.value}"):
        transition(state, event)


@pytest.mark.parametrize(
    ("state", "event"),
    [
        pytest.param(s, e, id=f"{s.value}-{e.value}")
        for s, e in itertools.product(AppState, AppEvent)
        if (s, e) not in TRANSITIONS
    ],
)
def test_every_pair_outside_the_table_is_illegal(state: AppState, event: AppEvent) -> None:
    with pytest.raises(IllegalTransition):
        transition(state, event)


@pytest.mark.parametrize(
    ("state", "terminal"),
    [pytest.param(s, s in (S.COMPLETED, S.REJECTED, S.KILLED), id=s.value) for s in AppState],
)
def test_terminal_states(state: AppState, terminal: bool) -> None:
    assert state.terminal is terminal
    assert (state in TERMINAL_STATES) is terminal


def test_only_resubmission_leaves_a_terminal_state() -> None:
    for (state, event), _ in TRANSITIONS.items():
        if state.terminal:
            assert event is E.RESUBMIT


@pytest.mark.parametrize(
    ("row",), [pytest.param(item, id=f"{item[0][0]}-{item[0][1]}") for item in TRANSITIONS.items()]
)
def test_mermaid_renders_every_row(
    row: tuple[tuple[AppState, AppEvent], AppState],
) -> None:
    (source, event), target = row
    assert f"    {source.value} --> {target.value}: {event.value}\n" in render_mermaid()


def test_mermaid_has_a_start_and_an_end_for_every_terminal_state() -> None:
    text = render_mermaid()
    assert text.startswith("stateDiagram-v2\n    [*] --> New\n")
    for state in TERMINAL_STATES:
        assert f"    {state.value} --> [*]\n" in text
    assert len(text.splitlines()) == 2 + len(TRANSITIONS) + len(TERMINAL_STATES)


def test_mermaid_renders_a_given_table() -> None:
    text = render_mermaid([((S.NEW, E.ACCEPT), S.ACCEPTED)])
    assert "    New --> Accepted: accept\n" in text
    assert "Running" not in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [pytest.param(s.value, s, id=s.value) for s in AppState],
)
def test_state_from_string(text: str, expected: AppState) -> None:
    assert AppState.from_string(text) is expected


def test_state_from_string_names_the_accepted_values() -> None:
    with pytest.raises(ValueError, match=r"unknown application state 'Done'.*New, Accepted"):
        AppState.from_string("Done")
