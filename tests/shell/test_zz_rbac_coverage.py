"""Every permission the operator's RBAC grants is used by some shell test's flow.

Runs last in ``tests/shell`` (by name) and reads what ``conftest.py`` recorded from the
tests before it. A grant no flow exercises is either unused (remove it from
``shell/permissions.py`` and the manifests) or untested (add the flow). Skipped when
only part of the shell tests ran, which cannot tell either.
"""

from __future__ import annotations

import pathlib

import pytest
from conftest import RECORDED, TESTS_RUN
from gangsched.shell import permissions

HERE = pathlib.Path(__file__).parent


def test_every_grant_is_exercised_by_a_shell_flow() -> None:
    files = {p.name for p in HERE.glob("test_shell_*.py")}
    ran = {nodeid.split("::")[0].rsplit("/", 1)[-1] for nodeid in TESTS_RUN}
    if not files <= ran:
        pytest.skip(f"only part of the shell tests ran ({len(ran & files)}/{len(files)} files)")
    unused = sorted((p.group, p.resource, p.verb) for p in permissions.NEEDED
                    if (p.group, p.resource, p.verb) not in RECORDED)
    assert not unused, f"granted but used by no flow: {unused}"
