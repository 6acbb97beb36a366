"""Fallback chain over search backends: rate limiting, backoff, cool-down, failure records.

For each query the backends are tried in order. Per backend: wait for its rate limiter, then
up to ``max_attempts`` calls; a rate limit backs off exponentially with full jitter, any other
error moves on to the next backend at once. A backend whose last ``cooldown_after`` queries
all failed is skipped for ``cooldown_s``. Every failed attempt becomes a
:class:`SearchFailure` in the returned :class:`SearchOutcome`; nothing is raised.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Literal

from orig_local.retrieval.base import RateLimited, SearchBackend, SearchError, SearchFailure, SearchOutcome
from orig_local.retrieval.config import SearchConfig

log = logging.getLogger(__name__)


class RateLimiter:
    """At least ``interval_s`` between the starts of two calls (async, shared per backend)."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.monotonic):
        self.interval_s = interval_s
        self.clock = clock
        self._lock = asyncio.Lock()
        self._last = float("-inf")

    async def wait(self) -> None:
        if self.interval_s <= 0:
            return
        async with self._lock:
            delay = self._last + self.interval_s - self.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            self._last = self.clock()


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Full-jitter exponential backoff: uniform(0, min(max, base * 2**(attempt-1)))."""
    return rng.uniform(0, min(max_s, base_s * 2 ** (attempt - 1)))


class _Health:
    def __init__(self):
        self.consecutive_failures = 0
        self.cooldown_until = 0.0


class FallbackChain:
    """Implements the search side of the Retriever; ``backends`` are tried in order."""

    def __init__(self, backends: list[SearchBackend], config: SearchConfig | None = None,
                 rng: random.Random | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep):
        if not backends:
            raise ValueError("a fallback chain needs at least one backend")
        self.backends = list(backends)
        self.config = config or SearchConfig()
        self.rng = rng or random.Random(0)
        self.sleep = sleep  # injectable so tests can count backoff without waiting
        self.limiters = {b.name: RateLimiter(self.config.min_interval_s) for b in self.backends}
        self.health = {b.name: _Health() for b in self.backends}
        self.backoffs: list[float] = []  # every backoff delay taken (for tests and stats)

    @property
    def name(self) -> str:
        return "+".join(b.name for b in self.backends)

    async def text(self, query: str, k: int = 10) -> SearchOutcome:
        return await self.search("text", query, k)

    async def images(self, query: str, k: int = 10) -> SearchOutcome:
        return await self.search("images", query, k)

    async def search(self, kind: Literal["text", "images"], query: str, k: int) -> SearchOutcome:
        failures: list[SearchFailure] = []
        for backend in self.backends:
            hits = await self._try_backend(backend, kind, query, k, failures)
            if hits:
                return SearchOutcome(query=query, kind=kind, hits=hits, failures=failures, backend=backend.name)
        return SearchOutcome(query=query, kind=kind, hits=[], failures=failures, backend=None)

    async def _try_backend(self, backend, kind, query, k, failures):
        cfg, health = self.config, self.health[backend.name]
        now = time.monotonic()
        if health.cooldown_until > now:
            failures.append(SearchFailure(backend=backend.name, kind="cooldown",
                                          detail=f"skipped for {health.cooldown_until - now:.0f} s more"))
            return None
        call = backend.text if kind == "text" else backend.images
        for attempt in range(1, cfg.max_attempts + 1):
            await self.limiters[backend.name].wait()
            start = time.monotonic()

            def failed(fkind, detail, attempt=attempt, start=start):
                failures.append(SearchFailure(backend=backend.name, kind=fkind, detail=detail,
                                              attempt=attempt, elapsed_s=round(time.monotonic() - start, 3)))

            try:
                hits = await asyncio.wait_for(call(query, k), cfg.timeout_s)
            except RateLimited as exc:
                failed("rate_limited", str(exc))
                if attempt < cfg.max_attempts:
                    delay = backoff_delay(attempt, cfg.backoff_base_s, cfg.backoff_max_s, self.rng)
                    self.backoffs.append(delay)
                    log.info("%s rate-limited; backing off %.1f s", backend.name, delay)
                    await self.sleep(delay)
                continue
            except asyncio.TimeoutError:
                failed("timeout", f"no answer within {cfg.timeout_s:g} s")
                break
            except SearchError as exc:
                failed("error", f"{type(exc).__name__}: {exc}")
                break
            if hits:
                health.consecutive_failures = 0
                return hits
            # No results is an answer, not a service failure: record it and try the next
            # backend, but don't move this one towards a cool-down (a local corpus simply has
            # nothing on some queries). ddgs turns its rate-limit-shaped empties into RateLimited.
            failed("empty", "no results")
            return None
        health.consecutive_failures += 1
        if health.consecutive_failures >= cfg.cooldown_after:
            health.cooldown_until = time.monotonic() + cfg.cooldown_s
            health.consecutive_failures = 0
            log.warning("%s failed %d queries in a row; cooling down %.0f s", backend.name,
                        cfg.cooldown_after, cfg.cooldown_s)
        return None
