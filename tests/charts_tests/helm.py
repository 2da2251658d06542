"""Running the real ``helm`` (and ``kubectl kustomize``) for the chart tests.

``scripts/install-helm.sh`` puts pinned builds of both into ``.tools/bin``; a ``helm`` or
``kubectl`` on PATH is used when that is empty. Without helm the tests that need it skip,
saying so, except in CI (``CI=true``), where a missing helm is a failure: CI must render
the chart.
"""

from __future__ import annotations

import copy
import functools
import os
import pathlib
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "gangsched"
TOOLS = pathlib.Path(os.environ.get("GANGSCHED_TOOLS", ROOT / ".tools")) / "bin"
RELEASE = "gangsched"
NAMESPACE = "gangsched-system"
VALUES_FILES = sorted(p.name for p in (CHART / "ci").glob("*.yaml"))
"""The non-default values files shipped with the chart (its ci/ folder)."""


def tool(name: str) -> str | None:
    """The path of ``name``: .tools/bin first, then PATH; None when neither has it."""
    local = TOOLS / name
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(name)


def need_helm() -> str:
    """helm's path; skips the calling test without one (fails it when CI=true)."""
    helm = tool("helm")
    if helm is None:
        reason = ("helm not found in .tools/bin or on PATH (bash scripts/install-helm.sh "
                  "installs it)")
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; CI=true, so the chart must be tested", pytrace=False)
        pytest.skip(reason)
    return helm


@dataclass(frozen=True)
class Result:
    returncode: int
    stdout: str
    stderr: str


def run(*args: str) -> Result:
    """Run helm with ``args`` against no cluster (an empty kubeconfig), never raising."""
    env = {**os.environ, "KUBECONFIG": os.devnull, "HELM_CACHE_HOME": "/tmp/gangsched-helm/cache",
           "HELM_CONFIG_HOME": "/tmp/gangsched-helm/config",
           "HELM_DATA_HOME": "/tmp/gangsched-helm/data"}
    done = subprocess.run([need_helm(), *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    return Result(done.returncode, done.stdout, done.stderr)


def values_args(values_file: str | None, sets: tuple[str, ...]) -> list[str]:
    out = [] if values_file is None else ["-f", str(CHART / "ci" / values_file)]
    for s in sets:
        out += ["--set", s]
    return out


def render(values_file: str | None = None, *sets: str, release: str = RELEASE,
           namespace: str = NAMESPACE) -> tuple[dict[str, Any], ...]:
    """The objects ``helm template`` renders (values file from ci/, ``--set``s), or the
    test fails with helm's message. Each call gets its own copies."""
    return copy.deepcopy(_render(values_file, sets, release, namespace))


@functools.cache
def _render(values_file: str | None, sets: tuple[str, ...], release: str,
            namespace: str) -> tuple[dict[str, Any], ...]:
    done = run("template", release, str(CHART), "--namespace", namespace,
               *values_args(values_file, sets))
    assert done.returncode == 0, done.stderr
    return tuple(d for d in yaml.safe_load_all(done.stdout) if d)


def notes(values_file: str | None = None, *sets: str) -> str:
    """NOTES.txt as ``helm install --dry-run=client`` prints it (no cluster is asked)."""
    done = run("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
               *values_args(values_file, sets))
    assert done.returncode == 0, done.stderr
    _, sep, text = done.stdout.partition("\nNOTES:\n")
    assert sep, "helm printed no NOTES"
    return text


def kustomize() -> list[dict[str, Any]]:
    """``kubectl kustomize manifests/``; without kubectl, the files the kustomization lists,
    with its image override applied as kustomize does."""
    kubectl = tool("kubectl")
    if kubectl is not None:
        done = subprocess.run([kubectl, "kustomize", str(ROOT / "manifests")],
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        return [d for d in yaml.safe_load_all(done.stdout) if d]
    kustomization = yaml.safe_load((ROOT / "manifests" / "kustomization.yaml").read_text())
    objects = []
    for name in kustomization["resources"]:
        objects += [d for d in yaml.safe_load_all((ROOT / "manifests" / name).read_text()) if d]
    images = {i["name"]: f"{i['newName']}:{i['newTag']}" for i in kustomization["images"]}
    for obj in objects:
        if obj["kind"] == "Deployment":
            for c in obj["spec"]["template"]["spec"]["containers"]:
                c["image"] = images.get(c["image"].rsplit(":", 1)[0], c["image"])
    return objects


def by_kind(objects: tuple[dict[str, Any], ...], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def one(objects: tuple[dict[str, Any], ...], kind: str) -> dict[str, Any]:
    found = by_kind(objects, kind)
    assert len(found) == 1, f"{len(found)} {kind} objects rendered"
    return found[0]
