"""The dashboard's pure parts: the board, the view model, the pages and their escaping."""

from __future__ import annotations

import fnmatch
import html.parser
import importlib.resources
import json
import pathlib
import tomllib
from typing import Any

import pytest
from dashboard_builders import (
    GIB,
    FakeNodeState,
    app,
    event,
    node,
    podgroup,
    queue,
    res,
    task_group,
)
from gangsched.core.values.model import Node
from gangsched.shell.explain import format_explanation
from gangsched.translate.topology import BLOCK, RACK
from gangsched.view import board as board_module
from gangsched.view import model, render
from gangsched.view.board import APPLICATION, PODGROUP, Board

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOSTILE = '<script>alert("x")</script>&\'"'
NS = '<img src=x onerror="y">&\''
"""Hostile text; a namespace has no slash (a key is ``namespace/name``)."""


def view_of(b: Board, *, limit: int = model.MAX_GANGS, **given: Any) -> model.View:
    """The view of every gang (up to ``limit``), explained, as a page shows it."""
    contents, sources = b.contents(), model.Sources(**given)
    return model.select(model.build(contents, sources), contents, sources, limit=limit)


# --- the board ---------------------------------------------------------------------------

def test_time_to_full_gang_counts_from_acceptance_for_applications() -> None:
    b = Board()
    b.take([app(state="New", since=None)], now=90.0)
    b.take([app(state="Accepted", since=100.0)], now=100.0)
    b.take([app(state="Accepted", since=100.0),
            event(APPLICATION, "default/train", "GangReserved")], now=130.0)
    b.take([event(APPLICATION, "default/train", "GangReserved")], now=500.0)  # again: kept
    assert b.contents().full_gang == {(APPLICATION, "default/train"): 30.0}


def test_time_to_full_gang_counts_from_creation_for_podgroups() -> None:
    created = {(PODGROUP, "default/pg"): 40.0}
    b = Board(lambda kind, key: created.get((kind, key)))
    b.take([podgroup()], now=50.0)
    b.take([podgroup(phase="Scheduled"), event(PODGROUP, "default/pg", "GangScheduled")],
           now=55.0)
    b.take([podgroup(key="default/other")], now=60.0)  # creation unknown: first seen
    b.take([event(PODGROUP, "default/other", "GangScheduled")], now=62.0)
    assert b.contents().full_gang == {(PODGROUP, "default/pg"): 15.0,
                                      (PODGROUP, "default/other"): 2.0}


def test_the_board_keeps_the_newest_events_of_each_gang_only() -> None:
    b = Board()
    for i in range(board_module.MAX_EVENTS + 5):
        b.take([event(APPLICATION, "default/train", f"R{i}"),
                event("Pod", "default/train-0", "Ignored")], now=float(i))
    kept = b.contents().events
    assert list(kept) == [(APPLICATION, "default/train")]
    reasons = [e.reason for e in kept[(APPLICATION, "default/train")]]
    assert reasons == [f"R{i}" for i in range(5, board_module.MAX_EVENTS + 5)]


def test_an_application_and_a_podgroup_of_one_name_stay_apart() -> None:
    b = Board()
    b.take([app(key="default/x"), podgroup(key="default/x"),
            event(APPLICATION, "default/x", "A"), event(PODGROUP, "default/x", "P")], now=1.0)
    view = view_of(b)
    assert {(g.kind, g.events[0].reason) for g in view.gangs} == {(APPLICATION, "A"),
                                                                   (PODGROUP, "P")}


def test_deleted_objects_are_forgotten() -> None:
    b = Board()
    b.take([app(key="default/a"), app(key="default/b"), podgroup(key="default/pg"),
            queue("q1"), queue("q2"), event(APPLICATION, "default/b", "Accepted")], now=1.0)
    b.keep_only(apps=["default/a"], groups=[], queues=["q2"])
    contents = b.contents()
    assert list(contents.apps) == ["default/a"] and not contents.groups
    assert list(contents.queues) == ["q2"] and not contents.events


# --- the view model ----------------------------------------------------------------------

def test_queue_bars_split_placeholders_from_the_rest_and_mark_quota_and_guarantee() -> None:
    b = Board()
    b.take([queue("team", allocated=res(6, 12), pending=res(2), held=res(4, 8),
                  quota=res(10), guaranteed=res(3), apps={"Accepted": 2})], now=1.0)
    [row] = view_of(b).queues
    cpu, memory = row.bars[0], row.bars[1]
    assert cpu == model.Bar("cpu", 10_000, (("used", 2000), ("placeholders", 4000),
                                            ("pending", 2000)),
                            (("guaranteed", 3000), ("quota", 10_000)))
    # No memory quota: the bar's scale is what is used and asked for.
    assert memory.scale == 12 * GIB and memory.marks == ()
    assert row.applications == {"Accepted": 2}


def test_queue_bars_show_extended_resources_after_cpu_and_memory() -> None:
    b = Board()
    b.take([queue("gpu", allocated=gpus(gpu=2), quota=gpus(gpu=8))],
           now=1.0)
    [row] = view_of(b).queues
    assert [bar.resource for bar in row.bars] == ["cpu", "memory", "nvidia.com/gpu"]
    assert row.bars[2].scale == 8


def gpus(**counts: int) -> Any:
    return res(**{"nvidia.com/" + k: v for k, v in counts.items()})


def test_a_gang_row_has_its_groups_counts_blocking_reason_and_explanation() -> None:
    blocked = task_group("workers", 4, allocated=1, pending=3, bound=0, waiting=2,
                         reason="Capacity", message="0/3 nodes are available",
                         details={"Insufficient cpu": "3", "needed": "cpu=4"})
    b = Board()
    b.take([app(groups=(task_group("driver", 1, allocated=1), blocked), queue="team"),
            event(APPLICATION, "default/train", "Accepted", "accepted into team")], now=200.0)
    specs = {(APPLICATION, "default/train"): {"queue": "team"}}
    view = view_of(b, specs=specs, partial_seconds={(APPLICATION, "default/train"): 1.5},
                   explain=format_explanation)
    [gang] = view.gangs
    assert (gang.namespace, gang.name, gang.queue, gang.state) == ("default", "train", "team",
                                                                   "Accepted")
    assert gang.groups[1] == model.GroupRow("workers", 4, 0, 1, 5,
                                            "Capacity: 0/3 nodes are available")
    assert gang.groups[0].blocking == "" and gang.blocked
    assert gang.partial_seconds == 1.5 and gang.time_to_full is None
    # The explanation is gangsched explain's own text, numbers included.
    assert "blocked by Capacity (no node has room for it):" in gang.explanation
    assert "nodes: 3 Insufficient cpu" in gang.explanation
    assert "Accepted: accepted into team" in gang.explanation


def test_a_reason_outside_the_enum_shows_under_its_real_name() -> None:
    b = Board()
    b.take([app(groups=(task_group(reason="None", message="m",
                                   details={"reason": "Topology"}),))], now=1.0)
    assert view_of(b).gangs[0].groups[0].blocking == "Topology: m"


def test_a_podgroup_is_one_group_of_its_spec_minimum() -> None:
    b = Board()
    b.take([podgroup(members=5, scheduled=2, assumed=1, reason="Capacity", message="short")],
           now=1.0)
    view = view_of(b, specs={(PODGROUP, "default/pg"): {"minMember": 4, "queue": "q"}})
    [gang] = view.gangs
    assert gang.queue == "q" and gang.state == "Pending"
    assert gang.groups == (model.GroupRow("(pod group)", 4, 2, 1, 2, "Capacity: short"),)


def test_gangs_are_listed_blocked_first_then_live_then_over_by_natural_name() -> None:
    b = Board()
    b.take([app(key="default/spark-10", state="Running"),
            app(key="default/spark-2", state="Running"),
            app(key="default/old", state="Completed"),
            app(key="default/zz", groups=(task_group(reason="Capacity"),)),
            app(key="alpha/spark-1", state="Running")], now=1.0)
    assert [f"{g.namespace}/{g.name}" for g in view_of(b).gangs] == [
        "default/zz", "alpha/spark-1", "default/spark-2", "default/spark-10", "default/old"]


@pytest.mark.parametrize(("filters", "shown"), [
    pytest.param({}, {"a/one", "a/two", "b/three"}, id="none"),
    pytest.param({"namespace": "a"}, {"a/one", "a/two"}, id="namespace"),
    pytest.param({"queue": "gpu"}, {"a/two", "b/three"}, id="queue"),
    pytest.param({"state": "Running"}, {"a/one", "b/three"}, id="state"),
    pytest.param({"namespace": "b", "queue": "gpu", "state": "Running"}, {"b/three"},
                 id="all-three"),
    pytest.param({"namespace": "nowhere"}, set(), id="no-match"),
])
def test_filters(filters: dict[str, str], shown: set[str]) -> None:
    b = Board()
    b.take([app(key="a/one", state="Running", queue="cpu"),
            app(key="a/two", state="Accepted", queue="gpu"),
            app(key="b/three", state="Running", queue="gpu")], now=1.0)
    contents, sources = b.contents(), model.Sources()
    view = model.select(model.build(contents, sources), contents, sources, **filters)
    assert {f"{g.namespace}/{g.name}" for g in view.gangs} == shown
    assert view.gang_count == len(shown)
    # The choices stay those of every gang.
    assert view.namespaces == ("a", "b") and view.states == ("Accepted", "Running")


def test_node_uses_read_placeholders_off_copies_of_the_core_node_states() -> None:
    pods = {"ph-1": res(2, 4), "ph-2": res(1, 2), "real": res(2, 4)}
    states = [FakeNodeState(Node("n1", res(8, 32), {RACK: "r1"}), res(5, 10), pods)]
    copies = model.copy_nodes(states)
    pods["ph-3"] = res(1)  # the core goes on: the copy does not change
    [use] = model.node_uses(copies, lambda uid: uid.startswith("ph-"))
    assert use == model.NodeUse("n1", res(8, 32), res(5, 10), res(3, 6), {RACK: "r1"}, True)


def test_only_the_first_gangs_are_listed_and_explained_but_all_are_counted() -> None:
    b = Board()
    b.take([app(key=f"default/job-{i}", state="Running") for i in range(10)]
           + [app(key="default/stuck", groups=(task_group(reason="Capacity"),))], now=1.0)
    view = view_of(b, limit=3, explain=format_explanation)
    assert [g.name for g in view.gangs] == ["stuck", "job-0", "job-1"]
    assert view.gang_count == 11 and all(g.explanation for g in view.gangs)
    page = render.page(view, "apps.html")
    assert "the first 3 of 11 that match" in page


def test_domains_sum_their_nodes_and_tell_the_most_cpu_free_on_one_node() -> None:
    nodes = [node("a", 8, used_cpu=6, held_cpu=2, labels={RACK: "r1", BLOCK: "b1"}),
             node("b", 8, used_cpu=1, labels={RACK: "r1", BLOCK: "b1"}),
             node("c", 8, used_cpu=0, labels={RACK: "r2", BLOCK: "b1"}, schedulable=False),
             node("d", 4)]
    view = view_of(Board(), nodes=nodes)
    rows = {(d.level, d.name): d for d in view.domains}
    assert set(rows) == {("block", "b1"), ("rack", "r1"), ("rack", "r2")}
    r1 = rows[("rack", "r1")]
    assert r1.nodes == 2 and r1.free.get("cpu") == 9000 and r1.largest_free_cpu == 7000
    assert r1.bars[0].segments == (("used", 5000), ("placeholders", 2000))
    assert r1.bars[0].capacity == 16_000
    assert "used 5 · placeholders 2 of 16" in render.bar(r1.bars[0])
    assert rows[("rack", "r2")].largest_free_cpu == 0  # cordoned: no room for a member
    assert rows[("block", "b1")].nodes == 3
    # Nodes: fullest first, with their domains.
    assert [n.name for n in view.nodes] == ["a", "b", "c", "d"]
    assert view.nodes[0].domains == (("block", "b1"), ("rack", "r1"))


def test_only_the_fullest_nodes_are_listed_but_all_are_counted() -> None:
    nodes = [node(f"n{i}", 10, used_cpu=i % 10) for i in range(model.MAX_NODES + 20)]
    view = view_of(Board(), nodes=nodes)
    assert len(view.nodes) == model.MAX_NODES and view.node_count == model.MAX_NODES + 20
    assert view.nodes[0].bars[0].segments[0] == ("used", 9000)


# --- the pages ---------------------------------------------------------------------------

class Collect(html.parser.HTMLParser):
    """Tags, their attributes (unescaped, as a browser reads them) and the text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(text: str) -> Collect:
    found = Collect()
    found.feed(text)
    found.close()
    return found


def hostile_view() -> model.View:
    b = Board()
    b.take([app(key=f"{NS}/name{HOSTILE}", queue=f"q{HOSTILE}", state=f"S{HOSTILE}",
                groups=(task_group(f"g{HOSTILE}", reason="Capacity",
                                   message=f"m{HOSTILE}"),),
                reason=f"r{HOSTILE}", message=f"msg{HOSTILE}"),
            queue(f"q{HOSTILE}", allocated=res(1), message=f"qm{HOSTILE}",
                  apps={f"A{HOSTILE}": 1}),
            event(APPLICATION, f"{NS}/name{HOSTILE}", f"E{HOSTILE}", f"n{HOSTILE}")],
           now=1.0)
    return view_of(b, explain=format_explanation, nodes=[
        node(f"node{HOSTILE}", labels={RACK: f"rack{HOSTILE}"}, **{f"x/{HOSTILE}": 2})])


@pytest.mark.parametrize("name", [n for n, _ in render.PAGES])
def test_every_text_from_users_is_escaped(name: str) -> None:
    text = render.page(hostile_view(), name)
    found = parse(text)
    scripts = [attrs for tag, attrs in found.tags if tag == "script"]
    assert scripts == [{"src": "static/dashboard.js", "defer": None}]
    assert "<script>alert" not in text and HOSTILE not in text and NS not in text
    assert not [tag for tag, _ in found.tags if tag == "img"]
    # What the browser reads back is the text as given, attributes included.
    assert any(HOSTILE in chunk for chunk in found.text)
    if name == "apps.html":
        [row] = [attrs for tag, attrs in found.tags if tag == "tbody" and "data-gang" in attrs]
        assert row["data-namespace"] == NS
        assert row["data-queue"] == f"q{HOSTILE}" and row["data-state"] == f"S{HOSTILE}"
        options = [attrs["value"] for tag, attrs in found.tags if tag == "option"]
        assert NS in options and f"S{HOSTILE}" in options


def test_the_json_holds_the_whole_view() -> None:
    data = json.loads(render.to_json(hostile_view()))
    [gang] = data["gangs"]
    assert gang["namespace"] == NS and gang["blocked"] is True
    assert gang["groups"][0]["blocking"] == f"Capacity: m{HOSTILE}"
    assert data["queues"][0]["bars"][0]["segments"] == [["used", 1000], ["placeholders", 0],
                                                        ["pending", 0]]
    assert data["domains"][0]["free"] == {"cpu": "8", "memory": "32Gi", f"x/{HOSTILE}": "2"}


@pytest.mark.parametrize(("resource", "units", "shown"), [
    ("cpu", 4000, "4"), ("cpu", 1500, "1.5"), ("cpu", 250, "0.25"),
    ("memory", 3 * GIB // 2, "1.5Gi"), ("memory", 64 * GIB, "64Gi"),
    ("nvidia.com/gpu", 8, "8"),
])
def test_amounts(resource: str, units: int, shown: str) -> None:
    assert render.amount(resource, units) == shown


def test_bars_are_as_wide_as_their_share_and_marks_stay_inside() -> None:
    text = render.bar(model.Bar("cpu", 8000, (("used", 2000), ("placeholders", 0)),
                                (("quota", 16_000),)))
    assert 'class="seg used" style="width:25.00%"' in text
    assert "seg placeholders" not in text  # nothing held: no segment
    assert 'class="mark quota" style="left:100.00%"' in text
    assert "used 2 · quota 16" in text


def test_a_snapshot_does_not_refresh_and_a_served_page_does() -> None:
    view = view_of(Board())
    served, snapshot = render.page(view, "index.html"), render.page(view, "index.html",
                                                                    live=False)
    assert 'data-live="true"' in served and 'http-equiv="refresh"' in served
    assert 'data-live="false"' in snapshot and "refresh" not in snapshot.split("<body")[0]


def test_the_static_files_ship_in_the_package() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["gangsched"]
    static = importlib.resources.files("gangsched.view") / "static"
    names = sorted(p.name for p in static.iterdir())
    assert names == ["dashboard.css", "dashboard.js"]
    for name in names:
        assert any(fnmatch.fnmatch(f"view/static/{name}", p) for p in patterns), name
    # No framework fetched from anywhere: the script loads nothing but the page itself.
    script = (static / "dashboard.js").read_text()
    assert "http" not in script.replace("window.location.href", "")
    assert "innerHTML" not in script


def test_a_notice_is_said_above_every_page() -> None:
    contents, sources = Board().contents(), model.Sources(notice=f"not the leader {HOSTILE}")
    view = model.build(contents, sources)
    for name, _ in render.PAGES:
        page = render.page(view, name)
        assert '<p class="notice">not the leader &lt;script&gt;' in page
    assert 'class="notice"' not in render.page(view_of(Board()), "index.html")
