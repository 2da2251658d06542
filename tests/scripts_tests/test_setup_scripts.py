"""scripts/venv.sh, scripts/main and scripts/test: the set-up a newcomer runs first.

The interpreter is a stub (a shell script) that logs what it is asked to do: creating a
virtual environment, running pip. So these tests check the decisions of ``venv.sh`` (create
or reuse, install or not, which pip, what message) in milliseconds, without installing
anything. That a real install works on an externally managed Python (PEP 668) is checked by
hand, as the README's *Set-up* section says.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

STUB = """#!/bin/sh
# A stub python: -c runs the real one; -m venv and -m pip are only logged.
echo "$0 $*" >> "$STUB_LOG"
if [ "$1" = "-c" ]; then exec "{python}" "$@"; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  if [ -n "$STUB_NO_VENV" ]; then
    echo "The virtual environment was not created successfully because ensurepip is not" >&2
    echo "available." >&2
    mkdir -p "$3"
    exit 1
  fi
  mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0
fi
if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then
  echo "pip PIP_REQUIRE_VIRTUALENV=$PIP_REQUIRE_VIRTUALENV" >> "$STUB_LOG"
  exit 0
fi
exit 3
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "venv.sh", tmp_path / "scripts" / "venv.sh")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    stub = tmp_path / "python-stub"
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    return tmp_path


def venv(project: Path, extras: str, **env: str) -> tuple[int, str, list[str]]:
    """Source venv.sh and make the environment current; (exit code, stderr, new log)."""
    log = project / "log"
    before = log.read_text().splitlines() if log.exists() else []
    done = subprocess.run(
        [BASH or "bash", "-c", '. scripts/venv.sh && gangsched_venv "$1" && echo "$VENV_PY"',
         "venv", extras],
        cwd=project, capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ["PATH"], "PYTHON": str(project / "python-stub"),
             "STUB_LOG": str(log), "PIP_REQUIRE_VIRTUALENV": "true", **env})
    after = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stderr, after[len(before):]


def pips(log: list[str]) -> list[str]:
    return [line for line in log if " -m pip " in line]


def test_the_first_run_creates_the_environment_and_installs_into_it(project: Path) -> None:
    code, err, log = venv(project, "")
    assert code == 0, err
    assert any(line.endswith(f"-m venv {'.venv'}") for line in log)
    (install,) = pips(log)
    assert install.startswith(".venv/bin/python -m pip install ")
    assert install.endswith("-e .")
    assert "pip PIP_REQUIRE_VIRTUALENV=true" in log  # pip ran, and only in the venv
    assert (project / ".venv" / ".gangsched-installed").read_text().endswith(" \n")


@pytest.mark.parametrize(
    ("first", "then", "change", "installs"),
    [
        pytest.param("", "", False, [], id="current-is-reused"),
        pytest.param("dev", "dev", False, [], id="current-dev-is-reused"),
        pytest.param("dev", "", False, [], id="dev-serves-the-package-alone"),
        pytest.param("", "dev", False, ["-e .[dev]"], id="dev-extras-are-added"),
        pytest.param("", "", True, ["-e ."], id="a-changed-pyproject-reinstalls"),
        pytest.param("dev", "dev", True, ["-e .[dev]"], id="a-changed-pyproject-dev"),
    ],
)
def test_the_environment_is_reused_while_current(project: Path, first: str, then: str,
                                                 change: bool, installs: list[str]) -> None:
    assert venv(project, first)[0] == 0
    if change:
        with (project / "pyproject.toml").open("a") as handle:
            handle.write("# a new dependency\n")
    code, err, log = venv(project, then)
    assert code == 0, err
    assert not any(" -m venv " in line for line in log)  # never created twice
    assert [line.rsplit(" -q ", 1)[1] for line in pips(log)] == installs
    if installs:
        assert "Installing gangsched" in err


def test_a_python_without_venv_or_ensurepip_gets_a_clear_message(project: Path) -> None:
    code, err, log = venv(project, "", STUB_NO_VENV="1")
    assert code == 2
    assert "this Python lacks the venv" in err and "module or ensurepip" in err
    assert "apt-get install python3-venv" in err
    assert f"python{sys.version_info[0]}.{sys.version_info[1]}-venv" in err
    assert not pips(log)  # nothing installed anywhere
    assert not (project / ".venv").exists()  # the half-made environment is removed


def test_a_python_older_than_3_11_is_refused(project: Path, tmp_path: Path) -> None:
    old = tmp_path / "old-python"
    old.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'Python 3.9.2'\nexit 1\n")
    old.chmod(0o755)
    code, err, _ = venv(project, "", PYTHON=str(old))
    assert code == 2 and "needs Python 3.11 or later" in err and "Python 3.9.2" in err


def test_the_scripts_install_only_through_the_environment() -> None:
    """No script runs pip with anything but the environment's python."""
    for name in ("main", "test", "venv.sh"):
        for line in (ROOT / "scripts" / name).read_text().splitlines():
            if "pip install" in line and not line.lstrip().startswith(("#", "echo")):
                assert '"$VENV_PY" -m pip install' in line, (name, line)


def test_the_main_job_prints_the_verdict_in_its_first_25_lines(tmp_path: Path) -> None:
    """scripts/main with an environment that is current (so nothing is installed)."""
    env_dir = tmp_path / "env"
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    shim = env_dir / "bin" / "gangsched"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gangsched "$@"\n')
    shim.chmod(0o755)
    digest = subprocess.run(
        [sys.executable, "-c", "import hashlib; print(hashlib.sha256(open('pyproject.toml', "
         "'rb').read()).hexdigest())"], cwd=ROOT, capture_output=True, text=True,
        check=True).stdout.strip()
    (env_dir / ".gangsched-installed").write_text(f"{digest} dev\n")
    done = subprocess.run(
        [BASH or "bash", str(ROOT / "scripts" / "main"), "--no-plot"],
        capture_output=True, text=True, timeout=300,
        env={**{k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
             "GANGSCHED_VENV": str(env_dir), "PIP_REQUIRE_VIRTUALENV": "true",
             "GANGSCHED_HTML": str(tmp_path / "html")})
    assert done.returncode == 0, done.stderr
    assert "Installing" not in done.stderr
    assert 'data-key="Application/default/spark-1"' in (tmp_path / "html" / "apps.html").read_text()
    head = done.stdout.splitlines()[:25]
    assert "16/16 jobs completed" in head[1] and "0/16 jobs completed" in head[2]
    assert any(line.startswith("Comparison") for line in head)
    assert any("idle cpu·s" in line for line in head)
