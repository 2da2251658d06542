"""Listening on a port of the operator's: the metrics endpoint, the health probes and the
dashboard are each an aiohttp application served this way.

aiohttp is imported only when something is served: never on the start-up path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiohttp import web


async def listen(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``host``:``port`` and return its runner and the port it listens on
    (``port`` 0 picks a free one). When it cannot listen (the port is taken, the host
    unknown), the runner is cleaned up and the error raised."""
    from aiohttp import web

    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return runner, int(address[1])
    return runner, port
