"""Without Chromium the browser tests are skipped, with the reason; under CI they fail."""

from __future__ import annotations

import pathlib

import pytest
from dashboard_browser import chromium, missing

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("ci", "outcome"), [
    pytest.param("true", pytest.fail.Exception, id="ci-fails"),
    pytest.param("", pytest.skip.Exception, id="elsewhere-skips"),
])
def test_no_chromium(monkeypatch: pytest.MonkeyPatch, ci: str, outcome: type[BaseException],
                     tmp_path: pathlib.Path) -> None:
    monkeypatch.setenv("CI", ci)
    monkeypatch.setenv("GANGSCHED_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert chromium() is None
    with pytest.raises(outcome, match=r"scripts/install-chromium\.sh"):
        missing("no Chromium found")


def test_a_named_chromium_is_used(monkeypatch: pytest.MonkeyPatch,
                                  tmp_path: pathlib.Path) -> None:
    browser = tmp_path / "chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    monkeypatch.setenv("GANGSCHED_CHROMIUM", str(browser))
    assert chromium() == str(browser)


def test_ci_installs_chromium_before_the_tests() -> None:
    lines = (ROOT / "scripts" / "test").read_text().splitlines()
    install = lines.index("bash scripts/install-chromium.sh")
    assert install < next(i for i, line in enumerate(lines) if "-m pytest" in line)
