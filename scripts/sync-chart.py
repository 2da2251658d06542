#!/usr/bin/env python3
"""Copy what the Helm chart shares with the kustomize install into charts/gangsched/.

manifests/ and crds/ are the source; the chart takes from them the parts that change with
the operator's code:

* crds/*.yaml, copied as they are into charts/gangsched/crds/ (Helm installs a chart's
  crds/ before its templates and never upgrades or deletes them);
* the ClusterRole's rules (manifests/clusterrole.yaml, from shell/permissions.py), written
  into charts/gangsched/templates/clusterrole.yaml with the chart's name and labels.

Everything else in the chart is written by hand; tests/charts_tests compare the whole
default render with `kubectl kustomize manifests/`, and fail, pointing here, when these
copies are stale. Usage: python3 scripts/sync-chart.py [--check] (--check changes nothing
and exits 1 when a copy differs).
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHART = ROOT / "charts" / "gangsched"

CLUSTERROLE_HEAD = """\
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "gangsched.fullname" . }}
  labels:
    {{- include "gangsched.labels" . | nindent 4 }}
rules:
"""


def clusterrole_template(manifest: str) -> str:
    """The chart's ClusterRole template: the manifest's comment and rules, the chart's
    metadata. A manifest without a top-level ``rules:`` is a ValueError."""
    head, sep, rules = manifest.partition("\nrules:\n")
    if not sep:
        raise ValueError("manifests/clusterrole.yaml: no top-level 'rules:'")
    comment = head.split("apiVersion:", 1)[0]
    return ("{{- if .Values.rbac.create }}\n"
            "# Written by scripts/sync-chart.py from manifests/clusterrole.yaml: edit that.\n"
            "#\n" + comment + CLUSTERROLE_HEAD + rules.rstrip("\n") + "\n{{- end }}\n")


def wanted() -> dict[pathlib.Path, str]:
    """Every file the chart copies, and the text it must have."""
    out = {CHART / "crds" / crd.name: crd.read_text(encoding="utf-8")
           for crd in sorted((ROOT / "crds").glob("*.yaml"))}
    manifest = (ROOT / "manifests" / "clusterrole.yaml").read_text(encoding="utf-8")
    out[CHART / "templates" / "clusterrole.yaml"] = clusterrole_template(manifest)
    return out


def stale() -> list[str]:
    """The chart's copies that differ from their source, or that have no source left."""
    want = wanted()
    out = [str(path.relative_to(ROOT)) for path, text in want.items()
           if not path.is_file() or path.read_text(encoding="utf-8") != text]
    out += [str(path.relative_to(ROOT)) for path in sorted((CHART / "crds").glob("*"))
            if path not in want]
    return out


def main(argv: list[str]) -> int:
    if argv[1:] == ["--check"]:
        differ = stale()
        for name in differ:
            print(f"{name} differs from its source: run python3 scripts/sync-chart.py",
                  file=sys.stderr)
        return 1 if differ else 0
    if argv[1:]:
        print("usage: python3 scripts/sync-chart.py [--check]", file=sys.stderr)
        return 2
    want = wanted()
    for path in sorted((CHART / "crds").glob("*")):
        if path not in want:
            path.unlink()
    for path, text in want.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
