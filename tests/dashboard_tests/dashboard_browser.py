"""A headless Chromium driven by Playwright on a thread of its own (see conftest.py)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
CHROMIUM_FLAGS = ["--headless", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


def chromium() -> str | None:
    """The Chromium to drive: ``$GANGSCHED_CHROMIUM``, else the distribution's."""
    named = os.environ.get("GANGSCHED_CHROMIUM")
    if named:
        return named if os.access(named, os.X_OK) else None
    for candidate in ("chromium", "chromium-browser"):
        found = shutil.which(candidate)
        if found:
            return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def missing(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}; CI must have it (scripts/test runs scripts/install-chromium.sh)")
    pytest.skip(f"{why}: run scripts/install-chromium.sh (apt-get install chromium)")


class Browser:
    """A headless Chromium on a thread of its own (Playwright's sync API stays there)."""

    def __init__(self, executable: str) -> None:
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="browser")
        self._profile = tempfile.mkdtemp(prefix="gangsched-chromium-")
        self._thread.submit(self._start, executable).result()

    def _start(self, executable: str) -> None:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        flags = [*CHROMIUM_FLAGS, *(["--no-sandbox"] if os.geteuid() == 0 else [])]
        self.context = self._playwright.chromium.launch_persistent_context(
            self._profile, executable_path=executable, headless=True, args=flags,
            viewport={"width": 1280, "height": 800}, chromium_sandbox=False)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """``work(*args)`` on the browser's thread, the event loop free meanwhile."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, work, *args)

    def close(self) -> None:
        def stop() -> None:
            self.context.close()
            self._playwright.stop()
        try:
            self._thread.submit(stop).result(timeout=30)
        finally:
            self._thread.shutdown(wait=False)
            shutil.rmtree(self._profile, ignore_errors=True)
