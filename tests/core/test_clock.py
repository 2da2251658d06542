"""The core asks the clock one way only: ``Session.reached``.

A skipped cycle (``Scheduler.cycle``) is only sound if every decision that depends on
the time has told the scheduler the instant at which it flips. A comparison with
``now`` written out directly would not: this test reads the core's source and finds
none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gangsched.core

CORE = Path(gangsched.core.__file__).parent
ALLOWED = {("scheduler.py", "reached"), ("scheduler.py", "_came"), ("instants.py", "pop_until")}
"""Where the instants themselves are compared: the clock's own methods."""


def _mentions_now(node: ast.AST) -> bool:
    return any((isinstance(n, ast.Name) and n.id == "now")
               or (isinstance(n, ast.Attribute) and n.attr == "now") for n in ast.walk(node))


def _comparisons(path: Path, root: Path = CORE) -> list[str]:
    tree = ast.parse(path.read_text())
    found: list[str] = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        name = getattr(function, "name", "<lambda>")
        if (path.name, name) in ALLOWED:
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Compare) and _mentions_now(node):
                found.append(f"{path.relative_to(root)}:{node.lineno} in {name}: "
                             f"{ast.unparse(node)}")
    return found


def test_no_decision_of_the_core_compares_now_directly() -> None:
    found = [hit for path in sorted(CORE.rglob("*.py")) for hit in _comparisons(path)]
    assert not found, "compare through s.reached(at) instead:\n" + "\n".join(found)


def test_the_scan_finds_a_direct_comparison(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def late(s, ps, now):\n    return ps.backoff_until > now\n")
    assert _comparisons(sample, tmp_path) == ["sample.py:2 in late: ps.backoff_until > now"]
