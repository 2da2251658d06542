"""Shared pytest configuration for the whole test suite.

Tests marked ``e2e`` need a real cluster: they run only with ``--e2e`` and ``KUBECONFIG``
set, so a plain ``pytest`` needs no cluster. ``--e2e-operator`` implies ``--e2e`` and also
starts the operator from this checkout for the session (``tests/e2e/conftest.py``).
No test may write into the checkout's source folders (checked at the end of the session).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WATCHED = ("examples", "operator", "crds", "manifests", "docs")
"""Folders of the checkout no test may write into (a chart beside an example...)."""

pytest_plugins = ["fakeapi.fixtures"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e", action="store_true", default=False,
                     help="run end-to-end tests against the cluster named by KUBECONFIG")
    parser.addoption("--e2e-operator", action="store_true", default=False,
                     help="with --e2e implied: also start the operator from this checkout "
                          "(gangsched run) for the session, so nothing needs deploying")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = config.getoption("--e2e") or config.getoption("--e2e-operator")
    if wanted and os.environ.get("KUBECONFIG"):
        return
    skip = pytest.mark.skip(reason="needs --e2e and KUBECONFIG (a real cluster)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)


_BEFORE = pytest.StashKey[set[Path]]()


def _files() -> set[Path]:
    return {path for folder in WATCHED for path in (ROOT / folder).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = _files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    added = sorted(str(path.relative_to(ROOT)) for path in _files() - before)
    if added:
        print(f"\ntests wrote into the checkout: {', '.join(added)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
