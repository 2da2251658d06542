"""The dashboard as the operator serves it (``--dashboard-port``), over plain HTTP."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import aiohttp
import dashboard_scenario as scenario
import pytest
from gangsched import cli
from gangsched.shell.main import run_operator
from gangsched.shell.settings import OperatorSettings
from shellkit import FakeClock, OperatorUnderTest


async def get(port: int, path: str, method: str = "GET") -> tuple[int, dict[str, str], str]:
    async with aiohttp.ClientSession() as session, \
            session.request(method, f"http://127.0.0.1:{port}{path}") as response:
        return response.status, dict(response.headers), await response.text()


async def test_the_operator_serves_the_pages_of_what_it_holds(
        fake_api_factory: Any, tmp_path: pathlib.Path) -> None:
    api, kubeconfig = await scenario.cluster(fake_api_factory, tmp_path)
    port = scenario.free_port()
    op = await OperatorUnderTest(api, kubeconfig, FakeClock(), dashboard_port=port).start()
    try:
        await scenario.submit(api)
        await op.settle()
        status, headers, page = await get(port, "/apps.html")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert 'data-key="Application/default/second"' in page
        assert "QueueQuota: " in page and "queue headroom: cpu=1" in page  # explain's numbers
        assert "does not hold the Lease" not in page  # it leads
        _, _, research = await get(port, "/apps.html?namespace=research")
        assert 'data-key="Application/research/solo"' in research
        assert 'data-key="Application/default/second"' not in research
        _, _, queues = await get(port, "/")
        assert 'data-queue="team"' in queues and "quota 4" in queues
        _, _, nodes = await get(port, "/nodes.html")
        assert "node-0" in nodes and "placeholders" in nodes
        status, headers, text = await get(port, "/view.json")
        data = json.loads(text)
        second = next(g for g in data["gangs"] if g["name"] == "second")
        assert second["blocked"] and second["groups"][0]["blocking"].startswith("QueueQuota")
        assert {q["name"] for q in data["queues"]} == {"default", "team"}
        status, headers, _ = await get(port, "/static/dashboard.js")
        assert status == 200 and headers["Content-Type"].startswith("text/javascript")
        for path in ("/static/../pyproject.toml", "/static/other.js", "/admin", "/x/y"):
            assert (await get(port, path))[0] == 404, path
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert (await get(port, "/", method))[0] == 405, method
            assert (await get(port, "/view.json", method))[0] == 405, method
    finally:
        await op.kill()


async def test_no_dashboard_unless_asked(fake_api_factory: Any,
                                         tmp_path: pathlib.Path) -> None:
    api, kubeconfig = await scenario.cluster(fake_api_factory, tmp_path)
    op = await OperatorUnderTest(api, kubeconfig, FakeClock()).start()
    try:
        assert op.runtime is not None and op.runtime.board is None  # nothing kept either
    finally:
        await op.kill()


def test_the_flag_sets_the_port(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[OperatorSettings] = []

    async def operate(settings: OperatorSettings, *_: Any, **__: Any) -> str:
        seen.append(settings)
        return ""

    monkeypatch.setattr("gangsched.shell.main.operate", operate)
    monkeypatch.setattr("gangsched.shell.logs.configure", lambda *_: None)
    args = cli.build_parser().parse_args(["run", "--dashboard-port", "9091"])
    assert run_operator(args) == 0
    assert seen[0].dashboard_port == 9091 and OperatorSettings().dashboard_port == 0
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "--dashboard-port", "70000"])
