"""How many items may hold their images in memory at once: as many as keep the judge's chat
model busy, not as many as the phase has in flight.

Each item judged holds its generated picture as the base64 sent (~4 MB at 1328x1328) until its
last question is answered. The phase keeps ``judge_concurrency`` items in flight (16) but the
chat layer sends only ``concurrency`` requests at once (32, i.e. four 8-question items): the
other items' pictures would wait in memory for a free request slot, and the process's memory
would grow with the phase's concurrency while the server gains nothing. Items are admitted
while fewer than ``limit`` of the admitted items' requests exist, so the chat layer always has
a full set of requests queued and memory is bounded by its concurrency instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class RequestBudget:
    """Admits items by their number of requests; ``limit``: the chat model's concurrency.

    An item is admitted when the admitted items hold fewer than ``limit`` requests (so one item
    is always admitted, however many questions it has). The condition belongs to the event loop
    that first used it; a judge reused in a later ``asyncio.run`` gets a new one."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.held = 0
        self._cond: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._loop is not loop:
            self._cond, self._loop, self.held = asyncio.Condition(), loop, 0
        return self._cond

    @asynccontextmanager
    async def admit(self, requests: int) -> AsyncIterator[None]:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.held < self.limit)
            self.held += requests
        try:
            yield
        finally:
            async with cond:
                self.held -= requests
                cond.notify_all()
