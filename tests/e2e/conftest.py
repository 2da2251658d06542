"""``--e2e-operator``: run the operator from this checkout for the end-to-end session.

With the flag, the CRDs are applied and ``python -m gangsched run`` is started against
``$KUBECONFIG`` (no leader election, metrics off, a liveness endpoint on a free local
port) before the first test; the session waits until it answers, and stops it at the end
(its log is in the pytest temporary folder, and its last lines are printed if it died).
Without the flag the operator must already run in the cluster
(``kubectl apply -k manifests/``).
"""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
START_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session", autouse=True)
def operator_from_checkout(request: pytest.FixtureRequest,
                           tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    if not (request.config.getoption("--e2e-operator") and os.environ.get("KUBECONFIG")):
        yield
        return
    subprocess.run(["kubectl", "apply", "-f", str(ROOT / "crds")], check=True,
                   capture_output=True, text=True)
    log_path = tmp_path_factory.mktemp("operator") / "operator.log"
    url = f"http://127.0.0.1:{_free_port()}/healthz"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gangsched", "run", "--no-leader-election",
             "--metrics-port", "0", "--liveness", url],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(ROOT / "operator")})
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _alive(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = "\n".join(log_path.read_text().splitlines()[-20:])
                pytest.exit(f"the operator did not start ({url}):\n{tail}", returncode=1)
            time.sleep(0.5)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
