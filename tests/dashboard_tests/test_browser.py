"""The dashboard in a real headless Chromium, served by the operator on the fake API server.

The pages load, show a gang's state and why it waits (with explain's numbers), change by
themselves when the gang's placeholders bind, keep the reader's filters and open details
across refreshes; the filters show only the gangs asked for. The dashboard refreshes every
half second here (three seconds by default), so that the test waits little.

``GANGSCHED_DASHBOARD_SCREENSHOT=PATH`` also saves a screenshot of the applications page
(that is how ``docs/dashboard.png`` is made: see ``scripts/dashboard-screenshot.sh``).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import dashboard_scenario as scenario
import pytest_asyncio
from dashboard_browser import Browser
from gangsched.shell.dashboard import Dashboard
from gangsched.shell.runtime import Runtime
from gangsched.view.board import Board
from shellkit import FakeClock, OperatorUnderTest, wait_for

SECOND = 'tbody[data-key="Application/default/second"]'
TIMEOUT_MS = 15_000


def keep_board(runtime: Runtime) -> None:
    runtime.board = Board(runtime._created)


@pytest_asyncio.fixture
async def served(fake_api_factory: Any, tmp_path: pathlib.Path,
                 ) -> AsyncIterator[tuple[Any, str]]:
    """The scenario's cluster, its operator, and the dashboard's address (refreshing
    every 0.5 s, a view at most every 0.2 s)."""
    api, kubeconfig = await scenario.cluster(fake_api_factory, tmp_path)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), prepare=keep_board).start()
    assert op.runtime is not None
    dashboard = Dashboard(op.runtime, host="127.0.0.1", port=0, min_interval=0.2,
                          refresh=0.5)
    await dashboard.start()
    try:
        await scenario.submit(api)
        yield api, f"http://127.0.0.1:{dashboard.port}/"
    finally:
        await dashboard.stop()
        await op.kill()


# --- work done on the browser's thread -----------------------------------------------------

def open_page(browser: Browser, url: str) -> Any:
    page = browser.context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.goto(url)
    return page


def cells(page: Any, row: str) -> dict[str, str]:
    """The texts of a gang row's cells, and of its first task group's."""
    found = page.locator(row)
    group = found.locator("table.groups tr").nth(1).locator("td")
    return {"state": found.locator("span.state").inner_text(),
            "bound": group.nth(2).inner_text(), "placeholders": group.nth(3).inner_text(),
            "blocking": group.nth(5).inner_text()}


def until_refreshed(page: Any) -> None:
    """Wait until the page has swapped its content once more."""
    page.evaluate("() => { window.__before = document.getElementById('content'); }")
    page.wait_for_function(
        "() => document.getElementById('content') !== window.__before", polling=50)


def shown(page: Any) -> list[str]:
    return list(page.eval_on_selector_all(
        "[data-gang]", "rows => rows.filter(r => !r.hidden).map(r => r.dataset.key)"))


def choose(page: Any, name: str, value: str, expected: set[str]) -> None:
    """Choose a filter's value, then wait until the rows shown are ``expected`` (the
    operator's page, fetched again at once, brings the rows it had left out)."""
    page.select_option(f'select[name="{name}"]', value)
    page.wait_for_function(
        "want => { const got = [...document.querySelectorAll('[data-gang]')]"
        ".filter(r => !r.hidden).map(r => r.dataset.key).sort();"
        " return JSON.stringify(got) === JSON.stringify(want); }",
        arg=sorted(expected), polling=50)


# --- the tests ---------------------------------------------------------------------------

async def test_a_gang_is_shown_waiting_then_bound(browser: Browser,
                                                  served: tuple[Any, str]) -> None:
    api, base = served
    page = await browser.run(open_page, browser, base + "apps.html")
    try:
        before = await browser.run(cells, page, SECOND)
        assert before["state"] == "Accepted" and before["placeholders"] == "0"
        assert before["blocking"].startswith("QueueQuota")
        # Its explanation is gangsched explain's, with the numbers.
        await browser.run(lambda: page.click(f"{SECOND} details summary"))
        explain = await browser.run(lambda: page.inner_text(f"{SECOND} pre.explain"))
        assert "blocked by QueueQuota at queue team" in explain
        assert "queue headroom: cpu=1" in explain and "queue max: cpu=4" in explain
        shot = os.environ.get("GANGSCHED_DASHBOARD_SCREENSHOT")
        if shot:
            await browser.run(lambda: page.screenshot(path=shot, full_page=True))

        scenario.raise_quota(api)
        await wait_for(lambda: scenario.reserved(api, "second") == "2/2", what="second bound")
        # The page follows by itself: no reload.
        await browser.run(lambda: page.wait_for_function(
            "row => { const r = document.querySelector(row);"
            " const held = r && r.querySelectorAll('table.groups tr')[1].cells[3];"
            " return r && !r.classList.contains('blocked') && held.textContent === '2'; }",
            arg=SECOND, polling=100))
        after = await browser.run(cells, page, SECOND)
        assert after["placeholders"] == "2" and after["blocking"] == "—", after
        assert await browser.run(lambda: page.locator(f"{SECOND} details").get_attribute(
            "open")) is not None  # the reader's open details stay open

        # The queues and the nodes show the placeholders' room.
        await browser.run(page.goto, base)
        team = await browser.run(lambda: page.inner_text('tr[data-queue="team"]'))
        assert "placeholders 5" in team and "quota 8" in team and "guaranteed 2" in team
        await browser.run(page.goto, base + "nodes.html")
        held = await browser.run(lambda: page.locator("td .seg.placeholders").count())
        assert held >= 3
        assert "node-0" in await browser.run(lambda: page.inner_text("main"))
    finally:
        await browser.run(page.close)


async def test_filters_show_only_the_gangs_asked_for(browser: Browser,
                                                     served: tuple[Any, str]) -> None:
    _, base = served
    page = await browser.run(open_page, browser, base + "apps.html")
    every = {"Application/default/first", "Application/default/second",
             "Application/research/solo"}
    try:
        assert set(await browser.run(shown, page)) == every
        solo = {"Application/research/solo"}
        await browser.run(choose, page, "namespace", "research", solo)
        assert "namespace=research" in await browser.run(lambda: page.url)
        # A refresh keeps the filter.
        await browser.run(until_refreshed, page)
        assert set(await browser.run(shown, page)) == solo
        await browser.run(choose, page, "namespace", "", every)
        await browser.run(choose, page, "queue", "team", every - solo)
        await browser.run(choose, page, "state", "Accepted", every - solo)
        await browser.run(choose, page, "namespace", "research", set())
        await browser.run(choose, page, "queue", "", solo)
        await browser.run(choose, page, "namespace", "", every)
        # A filtered address is filtered by the operator too.
        await browser.run(page.goto, base + "apps.html?queue=team")
        rows = await browser.run(lambda: page.eval_on_selector_all(
            "[data-gang]", "rows => rows.map(r => r.dataset.key)"))
        assert set(rows) == every - {"Application/research/solo"}
        assert await browser.run(lambda: page.input_value('select[name="queue"]')) == "team"
    finally:
        await browser.run(page.close)
