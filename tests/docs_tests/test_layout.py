"""The source tree's layout rules: ``operator/`` is a source folder, not a package (a package
named ``operator`` would shadow the standard library's), and no module of ``operator/`` is
longer than :data:`MAX_LINES` lines (a module that grows past it is split where it reads
best)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "operator"
MAX_LINES = 600


def test_operator_is_a_source_folder_not_a_package() -> None:
    assert not (SOURCE / "__init__.py").exists()
    assert (SOURCE / "gangsched" / "__init__.py").is_file()


def test_no_module_is_longer_than_the_bar() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(SOURCE.rglob("*.py"))
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}, f"split these modules (at most {MAX_LINES} lines each): {too_long}"
