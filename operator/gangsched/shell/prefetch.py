"""Reading a stream of pages ahead of its reader: how the first lists start early.

At start-up the operator has the API server's answers to wait for and its own modules
(the core, the translation) to import: a few tenths of a second of CPU. The first lists do
not need the core to be *sent*, only to be *observed*, so
:meth:`gangsched.shell.client.KubeClient.prefetch` asks for them first and
:class:`ReadAhead` keeps their pages coming while the rest is imported (in a thread):
the server prepares them on its own cores meanwhile. The reader then takes the pages in
its own order, as if it had asked itself.

What the reader sees is what it would have seen asking itself: the same pages in the
same order, and an error at the page where it happened (an expired ``continue``, a
404 for a resource that is not served). Bounded: at most ``ahead`` pages wait unread.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _End:
    """The source ended: by itself (``error`` None) or raising ``error``."""

    error: Exception | None = None


class ReadAhead(Generic[T]):
    """Drains ``source`` into a queue of at most ``ahead`` items, in a task of its own
    (started at once: needs a running event loop). :meth:`items` gives them in order,
    then ends, or raises what ``source`` raised at that point. :meth:`cancel` stops it."""

    def __init__(self, source: AsyncGenerator[T, None], ahead: int) -> None:
        self._queue: asyncio.Queue[T | _End] = asyncio.Queue(maxsize=max(1, ahead))
        self._task = asyncio.get_running_loop().create_task(self._pump(source))

    async def _pump(self, source: AsyncGenerator[T, None]) -> None:
        try:
            async for item in source:
                await self._queue.put(item)
        except Exception as error:  # the reader's to handle, where it happened
            await self._queue.put(_End(error))
            return
        finally:
            with contextlib.suppress(Exception):
                await source.aclose()
        await self._queue.put(_End())

    async def items(self) -> AsyncIterator[T]:
        """The items in order; raises the source's exception where it came."""
        while True:
            item = await self._queue.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item

    def cancel(self) -> None:
        """Stop reading (what was read is dropped)."""
        self._task.cancel()
