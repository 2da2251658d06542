"""Positioned YAML: values keep their line and column, syntax errors say where."""

from __future__ import annotations

import pytest
from gangsched.sim.source import Mark, WorkloadError, parse, read, render_path


def test_values_and_positions() -> None:
    doc = parse("a: 1\nb:\n  - x\n  - {c: 2}\n", "w.yaml")
    assert doc.data == {"a": 1, "b": ["x", {"c": 2}]}
    assert doc.marks[("b", 1, "c")] == Mark(4, 9)
    assert doc.key_marks[("b",)] == Mark(2, 1)
    # A missing field is reported at the closest enclosing value.
    assert str(doc.error(("b", 1, "d"), "is required")) == "w.yaml:4:5: b[1].d: is required"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("a: [1", "w.yaml:2:1: (top level): YAML syntax:", id="unclosed-flow"),
        pytest.param("a: 1\na: 2\n", "w.yaml:2:1: a: duplicate key", id="duplicate-key"),
        pytest.param("{1: 2}\n", "w.yaml:1:2: (top level): keys must be strings", id="int-key"),
        pytest.param("x: &a [*a]\n", "w.yaml:1:4: x[0]: recursive alias", id="recursion"),
        pytest.param("a: 1\n---\nb: 2\n", "w.yaml:2:1: (top level): YAML syntax:",
                     id="two-documents"),
    ],
)
def test_structure_errors(text: str, expected: str) -> None:
    with pytest.raises(WorkloadError) as error:
        parse(text, "w.yaml")
    assert str(error.value.errors[0]).startswith(expected)


def test_empty_document_is_none() -> None:
    assert parse("", "w.yaml").data is None


def test_unreadable_file(tmp_path: object) -> None:
    with pytest.raises(WorkloadError, match="cannot read the file"):
        read("/nonexistent/workload.yaml")


def test_render_path() -> None:
    assert render_path(("applications", 2, "taskGroups", 0, "minMember")) == (
        "applications[2].taskGroups[0].minMember")
    assert render_path(()) == "(top level)"
