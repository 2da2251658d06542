"""kopf's start waits until the binds are done for now (``gangsched.shell.main``)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from gangsched.shell import main
from gangsched.shell.executors import WorkPool

pytestmark = pytest.mark.asyncio


def runtime(*, leading: bool = True, cycled: bool = True) -> Any:
    rt = SimpleNamespace(binds=WorkPool("bind", 1), cycled=asyncio.Event(),
                         leading=asyncio.Event())
    if leading:
        rt.leading.set()
    if cycled:
        rt.cycled.set()
    return rt


async def test_not_while_binds_are_under_way() -> None:
    rt = runtime()
    rt.binds.start()
    release = asyncio.Event()
    rt.binds.submit(release.wait)
    loop = asyncio.get_running_loop()
    waiting = asyncio.create_task(main._binds_done(rt, asyncio.Event(), loop.time() + 10))
    try:
        await asyncio.sleep(0.3)
        assert not waiting.done()
        release.set()
        ended = loop.time()
        await asyncio.wait_for(waiting, 2)
        assert loop.time() - ended >= main.BINDS_SETTLE * 0.9  # the next cycle's may come
    finally:
        waiting.cancel()
        await rt.binds.stop()


@pytest.mark.parametrize(("leading", "cycled", "waits"), [
    pytest.param(True, False, True, id="before-the-first-cycle"),
    pytest.param(False, False, False, id="a-replica-that-waits-for-the-lease"),
    pytest.param(True, True, False, id="no-bind-since-the-first-cycle"),
])
async def test_when_nothing_is_bound(leading: bool, cycled: bool, waits: bool) -> None:
    rt = runtime(leading=leading, cycled=cycled)
    loop = asyncio.get_running_loop()
    waiting = asyncio.create_task(main._binds_done(rt, asyncio.Event(), loop.time() + 10))
    try:
        await asyncio.sleep(0.2)
        assert waiting.done() is not waits
    finally:
        waiting.cancel()


async def test_at_the_deadline_or_the_stop_whatever_the_binds() -> None:
    rt = runtime()
    rt.binds.start()
    release = asyncio.Event()
    rt.binds.submit(release.wait)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    try:
        await asyncio.wait_for(main._binds_done(rt, stop, loop.time() + 0.2), 2)
        stopped = asyncio.create_task(main._binds_done(rt, stop, loop.time() + 10))
        await asyncio.sleep(0.1)
        assert not stopped.done()
        stop.set()
        await asyncio.wait_for(stopped, 2)
    finally:
        release.set()
        await rt.binds.stop()
