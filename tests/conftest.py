"""Shared pytest configuration for the whole test suite.

Tests marked ``e2e`` need a real cluster: they run only with ``--e2e`` and ``KUBECONFIG``
set, so a plain ``pytest`` needs no cluster.
"""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["fakeapi.fixtures"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--e2e", action="store_true", default=False,
                     help="run end-to-end tests against the cluster named by KUBECONFIG")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--e2e") and os.environ.get("KUBECONFIG"):
        return
    skip = pytest.mark.skip(reason="needs --e2e and KUBECONFIG (a real cluster)")
    for item in items:
        if "e2e" in item.keywords:
            item.add_marker(skip)
