"""The simulator commands the docs show name files and jobs that exist."""

from __future__ import annotations

import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "examples").rglob("README.md"))]
EXPLAIN = re.compile(r"gangsched simulate (\S+\.yaml)[^\n`]*--explain (\S+)")


def _jobs(workload: pathlib.Path) -> set[str]:
    found = yaml.safe_load(workload.read_text())
    return {entry["name"] for kind in ("applications", "podGroups", "pods")
            for entry in found.get(kind) or [] if isinstance(entry, dict) and "name" in entry}


SHOWN = [(doc, file, job) for doc in DOCS for file, job in EXPLAIN.findall(doc.read_text())]


def test_the_docs_show_explain() -> None:
    assert SHOWN  # the pattern still finds the commands


@pytest.mark.parametrize(("doc", "file", "job"), SHOWN,
                         ids=[f"{d.relative_to(ROOT)}:{j}" for d, _, j in SHOWN])
def test_an_explained_job_is_in_its_workload(doc: pathlib.Path, file: str, job: str) -> None:
    assert job in _jobs(ROOT / file), f"{doc.relative_to(ROOT)}: {file} has no job {job}"
