"""The docs' state diagram is rendered from the transition table itself."""

from __future__ import annotations

import pathlib

from gangsched.core.values.states import TRANSITIONS, render_mermaid

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_state_diagram_in_docs_matches_the_table() -> None:
    doc = (ROOT / "docs" / "application-states.md").read_text()
    assert render_mermaid() in doc


def test_every_transition_is_drawn() -> None:
    drawn = render_mermaid()
    for (source, event), target in TRANSITIONS.items():
        assert f"{source.value} --> {target.value}: {event.value}" in drawn
