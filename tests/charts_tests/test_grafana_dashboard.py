"""The Grafana dashboard shipped with the chart (charts/gangsched/dashboards/gangsched.json).

Every metric it queries must be one the operator exposes (``shell/metrics.py``'s registry,
with the series names Prometheus gives counters and histograms), and every label it groups
or filters by must be one of that metric's labels (as docs/metrics.md lists them, which
tests/shell checks against the registry's names). So a renamed metric or label breaks this
test instead of leaving an empty panel. No helm is needed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from charts_tests import helm
from gangsched.shell.metrics import Metrics

DASHBOARD = json.loads((helm.CHART / "dashboards" / "gangsched.json").read_text())
METRIC = re.compile(r"\bgangsched_[a-z_]+\b")
SELECTOR = re.compile(r"\b(gangsched_[a-z_]+)\{([^}]*)\}")
MATCHER = re.compile(r"([a-z_]+)\s*(?:=~|!~|!=|=)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
TARGET_LABELS = {"job", "instance", "namespace", "pod", "service", "container", "endpoint"}
"""Labels Prometheus adds to every scraped series."""

WANTED = {
    "binds per second": "gangsched_binds_total",
    "failed binds": "gangsched_bind_errors_total",
    "API errors": "gangsched_api_requests_total",
    "API retries": "gangsched_api_retries_total",
    "pending pods by reason": "gangsched_pending_pods_by_reason",
    "pending pods by queue": "gangsched_pending_pods",
    "gangs by state": "gangsched_applications",
    "PodGroups by phase": "gangsched_podgroups",
    "time to full gang": "gangsched_time_to_full_gang_seconds_bucket",
    "partial-gang seconds": "gangsched_gang_partial_seconds_bucket",
    "partial-gang violations": "gangsched_gang_partial_violations_total",
    "over-committed nodes": "gangsched_overcommitted_nodes",
}
"""What the dashboard is for: each topic and the series that shows it."""


def exposed() -> dict[str, str]:
    """Series name -> metric family name, for every series the operator can expose."""
    out = {}
    for family in Metrics().registry.collect():
        if family.type == "counter":
            out[f"{family.name}_total"] = family.name
        elif family.type == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                out[family.name + suffix] = family.name
        else:
            out[family.name] = family.name
    return out


def documented_labels() -> dict[str, set[str]]:
    """Metric -> its labels, from the tables of docs/metrics.md."""
    out = {}
    for line in (helm.ROOT / "docs" / "metrics.md").read_text().splitlines():
        if line.startswith("| `gangsched_"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            out[cells[0].strip("`")] = set(re.findall(r"`([a-z_]+)`", cells[2]))
    return out


def labels_of(series: str, family: str) -> set[str]:
    """The labels a series has: its metric's, ``le`` for buckets, the scrape's."""
    labels = documented_labels()
    name = series if series in labels else (family if family in labels else f"{family}_total")
    extra = {"le"} if series.endswith("_bucket") else set()
    return labels[name] | extra | TARGET_LABELS


def panels() -> list[dict[str, Any]]:
    return [p for p in DASHBOARD["panels"] if p["type"] != "row"]


def exprs() -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in panels() for t in p["targets"]] + [
        (f"variable {v['name']}", v["definition"]) for v in DASHBOARD["templating"]["list"]
        if v["type"] == "query"]


def test_the_documented_labels_are_the_registrys() -> None:
    """The label table read below is right for every metric with a fixed label set."""
    labels = documented_labels()
    metrics = Metrics()
    for attribute in vars(metrics).values():
        names = getattr(attribute, "_labelnames", None)
        name = getattr(attribute, "_name", None)
        if names is None or name is None:
            continue
        documented = labels.get(name, labels.get(f"{name}_total"))
        assert documented == set(names), name


@pytest.mark.parametrize(("title", "expr"), exprs(), ids=lambda v: v[:60])
def test_every_queried_metric_and_label_exists(title: str, expr: str) -> None:
    series = exposed()
    used = METRIC.findall(expr)
    assert used, f"{title}: queries no gangsched metric"
    for name in used:
        assert name in series, f"{title}: {name} is not a metric of the operator"
    for name, body in SELECTOR.findall(expr):
        for label in MATCHER.findall(body):
            assert label in labels_of(name, series[name]), f"{title}: {name} has no {label}"
    for group in GROUPING.findall(expr):
        for label in filter(None, (x.strip() for x in group.split(","))):
            assert any(label in labels_of(n, series[n]) for n in used), \
                f"{title}: no metric of {used} has the label {label}"


def test_the_check_catches_a_renamed_metric() -> None:
    assert "gangsched_binds_per_second" not in exposed()
    assert "gangsched_binds_total" in exposed()
    assert "gangsched_time_to_full_gang_seconds_bucket" in exposed()


@pytest.mark.parametrize("topic", sorted(WANTED))
def test_the_dashboard_shows(topic: str) -> None:
    queried = {m for _, e in exprs() for m in METRIC.findall(e)}
    assert WANTED[topic] in queried


def test_panels_use_the_datasource_variable_and_unique_ids() -> None:
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    names = {v["name"] for v in DASHBOARD["templating"]["list"]}
    assert {"datasource", "job", "queue"} <= names
    for p in panels():
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["description"], p["title"]
        for t in p["targets"]:
            assert 'job=~"$job"' in t["expr"], p["title"]


def test_panels_do_not_overlap() -> None:
    taken: set[tuple[int, int]] = set()
    for p in DASHBOARD["panels"]:
        g = p["gridPos"]
        assert g["x"] + g["w"] <= 24, p["title"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                 for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & taken, p["title"]
        taken |= cells
