"""``gangsched simulate ... --html DIR``: the dashboard's pages of a simulated run, as files."""

from __future__ import annotations

import json
import pathlib

import pytest
from gangsched import cli

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORKLOAD = str(ROOT / "examples" / "simulations" / "spark-deadlock.yaml")


def simulate(tmp_path: pathlib.Path, *extra: str) -> dict[str, object]:
    folder = tmp_path / "html"
    assert cli.main(["simulate", WORKLOAD, "--no-plot", "--html", str(folder), *extra]) == 0
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert written == ["apps.html", "index.html", "nodes.html", "static/dashboard.css",
                       "static/dashboard.js", "view.json"]
    for name in ("index.html", "apps.html", "nodes.html"):
        page = (folder / name).read_text()
        assert 'data-live="false"' in page and 'href="static/dashboard.css"' in page
    view: dict[str, object] = json.loads((folder / "view.json").read_text())
    return view


def states(view: dict[str, object]) -> set[str]:
    return {g["state"] for g in view["gangs"]}  # type: ignore[attr-defined, index]


def test_the_pages_show_the_run_as_it_ended(tmp_path: pathlib.Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    view = simulate(tmp_path)
    assert states(view) == {"Completed"}
    assert len(view["gangs"]) == 16  # type: ignore[arg-type]
    assert f"wrote {tmp_path / 'html' / 'index.html'}" in capsys.readouterr().err


def test_the_pages_show_the_run_as_it_was_at_a_time(tmp_path: pathlib.Path) -> None:
    view = simulate(tmp_path, "--html-at", "60")
    assert 60 <= float(view["now"]) < 3600  # type: ignore[arg-type]
    gangs = view["gangs"]
    assert "Accepted" in states(view) and "Completed" not in states(view)
    blocked = [g for g in gangs if g["blocked"]]  # type: ignore[attr-defined, index]
    assert blocked and all("blocked by Capacity" in g["explanation"] for g in blocked)
    assert view["queues"][0]["name"] == "analytics"  # type: ignore[index]
