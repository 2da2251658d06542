"""The dashboard's pages: HTML written from the view model, every text escaped here.

Three pages share one layout (a header with the navigation, ``<main id="content">``):
``index.html`` (queues), ``apps.html`` (Applications and PodGroups, with filters) and
``nodes.html`` (topology domains and nodes). Links are relative, so the same pages work
served by the operator and as files written by the simulator. ``static/dashboard.js``
(shipped in the package, no framework) re-fetches the page every few seconds and swaps
its ``<main>``, and filters the gang rows by their ``data-*`` attributes; without
JavaScript the page refreshes itself (``<noscript>`` meta refresh) and the server's own
filters (the query string) still apply.

Every name, message, label and Event shown comes from users; all of it goes through
:func:`esc` (``html.escape`` with quotes), attributes included. Numbers the renderer
computes itself (widths, counts) are formatted from ints and floats only.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Iterable
from typing import Any

from gangsched.core.values.resources import CPU, Resources
from gangsched.translate import times
from gangsched.view.model import Bar, DomainRow, GangRow, NodeRow, QueueRow, View

PAGES = (("index.html", "Queues"), ("apps.html", "Applications"), ("nodes.html", "Nodes"))
REFRESH_SECONDS = 3
GIB = 1 << 30


def esc(text: object) -> str:
    """``text`` as HTML text or a quoted attribute value."""
    return html.escape(str(text), quote=True)


def amount(resource: str, units: int) -> str:
    """cpu in cores, byte resources in GiB (one decimal below 10), others as counts."""
    if resource == CPU:
        return f"{units / 1000:.3g}" if units % 1000 else str(units // 1000)
    if resource == "memory" or resource.startswith(("hugepages-", "ephemeral-storage")):
        gib = units / GIB
        return (f"{gib:.1f}" if gib < 10 else f"{gib:.0f}") + "Gi"
    return str(units)


def page(view: View, name: str, *, live: bool = True,
         refresh: float = REFRESH_SECONDS) -> str:
    """The page ``name`` (one of :data:`PAGES`); ``live``: served by the operator (it
    refreshes itself every ``refresh`` seconds), else written as a snapshot file."""
    title = dict(PAGES)[name]
    body = {"index.html": _queues, "apps.html": _apps, "nodes.html": _nodes}[name](view)
    notice = f'<p class="notice">{esc(view.notice)}</p>' if view.notice else ""
    here = ' class="here"'
    nav = "".join(f'<a href="{n}"{here if n == name else ""}>{t}</a>' for n, t in PAGES)
    stamp = times.format_time(view.now)
    mode = f"live, refreshed every {refresh:g} s" if live else "snapshot of a simulated run"
    meta = (f'<noscript><meta http-equiv="refresh" content="{max(1, round(refresh))}">'
            "</noscript>" if live else "")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>gangsched: {title}</title>"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"{meta}<link rel=\"stylesheet\" href=\"static/dashboard.css\">"
        "<script src=\"static/dashboard.js\" defer></script></head>"
        f"<body data-live=\"{'true' if live else 'false'}\" data-refresh=\"{refresh:g}\">"
        f"<header><span class=\"brand\">gangsched</span><nav>{nav}</nav>"
        f"<span id=\"stamp\" class=\"stamp\">{esc(stamp)} · {mode}</span>"
        "<span id=\"refresh\" class=\"stamp\"></span></header>"
        f"<main id=\"content\">{notice}{body}</main></body></html>\n")


def to_json(view: View) -> str:
    """The view model as JSON (resource vectors as Kubernetes quantity maps)."""
    return json.dumps(_plain(view), separators=(",", ":"), sort_keys=True)


def _plain(value: Any) -> Any:
    if isinstance(value, Resources):
        return value.to_k8s()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, GangRow):
            out["blocked"] = value.blocked
        return out
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# --- pieces ------------------------------------------------------------------------------

def bar(b: Bar) -> str:
    """One resource as a stacked bar with its marks and a caption."""
    scale = max(b.scale, 1)
    parts = "".join(
        f'<span class="seg {kind}" style="width:{100 * units / scale:.2f}%" '
        f'title="{kind} {amount(b.resource, units)}"></span>'
        for kind, units in b.segments if units > 0)
    marks = "".join(
        f'<span class="mark {kind}" style="left:{min(100.0, 100 * units / scale):.2f}%" '
        f'title="{kind} {amount(b.resource, units)}"></span>'
        for kind, units in b.marks)
    caption = " · ".join(f"{kind} {amount(b.resource, units)}"
                         for kind, units in (*b.segments, *b.marks) if units > 0)
    if b.capacity is not None:
        caption = f"{caption or 'none'} of {amount(b.resource, b.capacity)}"
    return (f'<div class="barrow"><span class="res">{esc(b.resource)}</span>'
            f'<span class="bar">{parts}{marks}</span>'
            f'<span class="cap">{esc(caption) or "none"}</span></div>')


def _bars(bars: Iterable[Bar]) -> str:
    return "".join(bar(b) for b in bars)


def _legend(*kinds: str) -> str:
    return ('<p class="legend">' + "".join(
        f'<span class="key {k}"></span>{esc(k)} ' for k in kinds) + "</p>")


def _states(counts: dict[str, int] | Any) -> str:
    return ", ".join(f"{count} {esc(state)}" for state, count in sorted(counts.items())) \
        or "none"


# --- queues ------------------------------------------------------------------------------

def _queues(view: View) -> str:
    if not view.queues:
        return "<h1>Queues</h1><p class=\"empty\">No queue status yet.</p>"
    rows = "".join(_queue(q) for q in view.queues)
    return ("<h1>Queues</h1>" + _legend("used", "placeholders", "pending", "guaranteed",
                                        "quota")
            + "<table class=\"grid\"><thead><tr><th>queue</th><th>applications</th>"
            f"<th>resources</th></tr></thead><tbody>{rows}</tbody></table>")


def _queue(q: QueueRow) -> str:
    message = f'<div class="msg">{esc(q.message)}</div>' if q.message else ""
    return (f'<tr data-queue="{esc(q.name)}"><td class="name">{esc(q.name)}{message}</td>'
            f"<td>{_states(q.applications)}</td><td>{_bars(q.bars)}</td></tr>")


# --- gangs -------------------------------------------------------------------------------

def _select(name: str, label: str, choices: Iterable[str]) -> str:
    options = "".join(f'<option value="{esc(c)}">{esc(c)}</option>' for c in choices)
    return (f'<label>{label} <select name="{name}" data-filter>'
            f'<option value="">all</option>{options}</select></label>')


def _apps(view: View) -> str:
    filters = ('<form class="filters" method="get">'
               + _select("namespace", "namespace", view.namespaces)
               + _select("queue", "queue", view.queue_names)
               + _select("state", "state", view.states)
               + '<noscript><button type="submit">filter</button></noscript>'
               f'<span id="shown" class="stamp">{len(view.gangs)} shown</span>'
               + (f'<span class="stamp">the first {len(view.gangs)} of {view.gang_count} '
                  "that match, blocked first: filter to see others</span>"
                  if view.gang_count > len(view.gangs) else "") + "</form>")
    if not view.gangs:
        return f"<h1>Applications and PodGroups</h1>{filters}<p class=\"empty\">None.</p>"
    rows = "".join(_gang(g) for g in view.gangs)
    return ("<h1>Applications and PodGroups</h1>" + filters
            + "<table class=\"grid gangs\"><thead><tr><th>gang</th><th>queue</th>"
            "<th>state</th><th>task groups</th><th>time to full gang</th>"
            f"<th>partial gang</th></tr></thead>{rows}</table>")


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f} s"


GROUPS_HEAD = ("<tr><th>group</th><th>min</th><th>bound</th><th>placeholders</th>"
               "<th>pending</th><th>blocked by</th></tr>")


def _gang(g: GangRow) -> str:
    key = f"{g.kind}/{g.namespace}/{g.name}"
    groups = GROUPS_HEAD + "".join(
        f'<tr><td>{esc(t.name)}</td><td class="num">{t.min_member}</td>'
        f'<td class="num">{t.bound}</td><td class="num">{t.placeholders}</td>'
        f'<td class="num">{t.pending}</td>'
        f'<td class="blocking">{esc(t.blocking) or "—"}</td></tr>'
        for t in g.groups)
    events = "".join(
        f'<li><span class="when">{esc(times.format_time(e.at))}</span> '
        f'<span class="ev {esc(e.type)}">{esc(e.type)}</span> <b>{esc(e.reason)}</b>: '
        f"{esc(e.message)}</li>" for e in g.events)
    latest = (f'<div class="latest">last event: <b>{esc(g.events[0].reason)}</b> '
              f"{esc(g.events[0].message)}</div>" if g.events else "")
    reason = (f'<div class="msg">{esc(g.reason)}: {esc(g.message)}</div>'
              if g.reason or g.message else "")
    # The explanation prints the Events; the list stands in when there is none.
    told = (f'<pre class="explain">{esc(g.explanation)}</pre>' if g.explanation else
            f'<ul class="events">{events or "<li>no events</li>"}</ul>')
    detail = (f'<details data-key="{esc(key)}"><summary>explain and events</summary>'
              f"{told}</details>")
    blocked = " blocked" if g.blocked else ""
    return (f'<tbody class="gang{blocked}" data-gang data-kind="{esc(g.kind)}" '
            f'data-namespace="{esc(g.namespace)}" data-queue="{esc(g.queue)}" '
            f'data-state="{esc(g.state)}" data-key="{esc(key)}"><tr class="main">'
            f'<td class="name"><span class="kind">{esc(g.kind)}</span> '
            f"{esc(g.namespace)}/<b>{esc(g.name)}</b>{reason}{latest}</td>"
            f"<td>{esc(g.queue)}</td>"
            f'<td><span class="state s-{esc(g.state)}">{esc(g.state)}</span></td>'
            f'<td><table class="groups">{groups}</table></td>'
            f'<td class="num">{_seconds(g.time_to_full)}</td>'
            f'<td class="num">{g.partial_seconds:.1f} s</td></tr>'
            f'<tr class="detail"><td colspan="6">{detail}</td></tr></tbody>')


# --- nodes -------------------------------------------------------------------------------

def _nodes(view: View) -> str:
    legend = _legend("used", "placeholders")
    domains = "".join(_domain(d) for d in view.domains)
    domain_table = ("<table class=\"grid\"><thead><tr><th>domain</th><th>nodes</th>"
                    "<th>allocated of allocatable</th><th>free</th>"
                    "<th>most cpu free on a node</th></tr></thead>"
                    f"<tbody>{domains}</tbody></table>" if domains
                    else '<p class="empty">No node has a zone, block or rack label.</p>')
    nodes = "".join(_node(n) for n in view.nodes)
    shown = (f"{len(view.nodes)} of {view.node_count}, fullest first"
             if len(view.nodes) < view.node_count else f"{view.node_count}")
    return (f"<h1>Topology domains</h1>{legend}{domain_table}"
            f"<h1>Nodes <span class=\"stamp\">{shown}</span></h1>"
            "<table class=\"grid\"><thead><tr><th>node</th><th>domains</th>"
            "<th>allocated of allocatable</th></tr></thead>"
            f"<tbody>{nodes}</tbody></table>")


def _domain(d: DomainRow) -> str:
    free = ", ".join(f"{esc(name)} {amount(name, units)}" for name, units in d.free.items()
                     if name != "pods") or "none"
    return (f'<tr><td class="name"><span class="kind">{esc(d.level)}</span> '
            f"{esc(d.name)}</td><td class=\"num\">{d.nodes}</td><td>{_bars(d.bars)}</td>"
            f"<td>{free}</td><td class=\"num\">{amount(CPU, d.largest_free_cpu)}</td></tr>")


def _node(n: NodeRow) -> str:
    domains = ", ".join(f"{esc(level)} {esc(value)}" for level, value in n.domains) or "—"
    off = "" if n.schedulable else ' <span class="state s-Failed">unschedulable</span>'
    return (f'<tr><td class="name">{esc(n.name)}{off}</td><td>{domains}</td>'
            f"<td>{_bars(n.bars)}</td></tr>")
