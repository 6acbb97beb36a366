"""``ddgs`` backend: DuckDuckGo and the other engines the ddgs library speaks to.

ddgs is synchronous (no async API), so each call runs in a worker thread. Engines are named
explicitly (``backend="duckduckgo,brave"``): "auto" shuffles engines, re-ranks, and puts the
AI-written Grokipedia first. In ddgs 9.x a rate limit usually surfaces as
``DDGSException("No results found.")`` (``RatelimitException`` exists but is rarely raised),
so that message from an engine that normally answers is treated as a rate limit: the chain
backs off and then falls back. ddgs speaks HTTP through its own Rust client, so HTTP-level
recorders don't see it; record/replay happens at our adapter (the evidence store).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from orig_local.retrieval.base import ImageHit, RateLimited, SearchError, TextHit
from orig_local.retrieval.config import DdgsConfig

log = logging.getLogger(__name__)

NO_RESULTS = "no results found"


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


class DdgsBackend:
    name = "ddgs"

    def __init__(self, config: DdgsConfig | None = None, ddgs_cls: Any = None):
        """``ddgs_cls`` replaces ``ddgs.DDGS`` (tests inject a fake service here)."""
        from orig_local._lazy import require

        self.config = config or DdgsConfig()
        if ddgs_cls is None:
            ddgs_cls = require("ddgs", "web").DDGS  # looked up now, so a monkeypatched class is used
        self._exc = require("ddgs.exceptions", "web")
        self._client = ddgs_cls(proxy=self.config.proxy, timeout=self.config.timeout_s)

    @classmethod
    def from_config(cls, config, cache_dir=None, embedder=None) -> DdgsBackend:
        return cls(config.ddgs)

    async def aclose(self) -> None:
        """Nothing to release (no connection of its own)."""

    async def text(self, query: str, k: int = 10) -> list[TextHit]:
        rows = await self._call("text", query, k, ",".join(self.config.text_engines))
        hits: list = []
        for row in rows:
            url = row.get("href") or row.get("url")
            if not url:
                continue
            hits.append(TextHit(title=row.get("title") or "", url=url, snippet=row.get("body") or "",
                                rank=len(hits) + 1, backend=self.name))
        return hits[:k]

    async def images(self, query: str, k: int = 10) -> list[ImageHit]:
        rows = await self._call("images", query, k, ",".join(self.config.image_engines))
        hits: list = []
        for row in rows:
            if not row.get("image"):
                continue
            hits.append(ImageHit(
                image_url=row["image"], thumbnail_url=row.get("thumbnail") or None,
                page_url=row.get("url") or None, title=row.get("title") or "",
                width=_int_or_none(row.get("width")), height=_int_or_none(row.get("height")),
                rank=len(hits) + 1, backend=self.name,
                attribution=row.get("source") or None,
            ))
        return hits[:k]

    async def _call(self, method: str, query: str, k: int, engines: str) -> list[dict]:
        cfg = self.config
        kwargs = dict(region=cfg.region, safesearch=cfg.safesearch, timelimit=cfg.timelimit,
                      max_results=k, backend=engines)
        fn = getattr(self._client, method)
        try:
            return list(await asyncio.to_thread(fn, query, **kwargs) or [])
        except self._exc.RatelimitException as exc:
            raise RateLimited(f"ddgs rate limit: {exc}") from exc
        except self._exc.TimeoutException as exc:
            raise SearchError(f"ddgs timeout: {exc}") from exc
        except self._exc.DDGSException as exc:
            if NO_RESULTS in str(exc).lower():
                # 9.x: how a rate limit usually looks (see module doc)
                raise RateLimited(f"ddgs: {exc} (treated as a soft rate limit)") from exc
            raise SearchError(f"ddgs: {exc}") from exc
