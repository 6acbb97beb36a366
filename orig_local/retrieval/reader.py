"""Page reader: the open replacement of the Jina Reader used in the paper.

Fetch (bounded, guarded) -> check status and content type -> decode (byte-order mark, then the
declared charset) -> main-content extraction to plain text -> reject bot walls and near-empty
pages -> keep the best passages within the length cap. Returns :class:`Page` or
:class:`FetchFailure`.

The parts, one responsibility each (this module re-exports their public names):

- :mod:`~orig_local.retrieval.htmldecode`: bytes to text, title, bot-wall check;
- :mod:`~orig_local.retrieval.extract`: main-content extraction (:func:`extract_main_text`);
- :mod:`~orig_local.retrieval.parsepage`: one fetched response to a ``Page`` or a failure;
- :mod:`~orig_local.retrieval.parse_pool`: the worker processes that parse under a deadline;
- this module: :class:`WebPageReader`, which fetches and hands the bytes to the pool.

Imports run one way (reader -> parse_pool -> parse_worker -> parsepage -> extract ->
htmldecode): a parse worker never imports the reader.
"""

from __future__ import annotations

import asyncio
import os
import time

from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.config import ReaderConfig
from orig_local.retrieval.extract import Extractor, _extractor, extract_main_text
from orig_local.retrieval.htmldecode import (
    BOT_WALL_MARKERS,
    BOT_WALL_MAX_CHARS,
    decode_html,
    looks_like_bot_wall,
    page_title,
)
from orig_local.retrieval.httpfetch import HttpSession, RawResponse
from orig_local.retrieval.parse_pool import ParseTimeout, ParseWorkers
from orig_local.retrieval.parsepage import HTML_TYPES, PLAIN_TYPES, cap_text, now_iso, parse_response

__all__ = [
    "ACCEPT", "BOT_WALL_MARKERS", "BOT_WALL_MAX_CHARS", "HTML_TYPES", "PLAIN_TYPES", "Extractor",
    "ParseTimeout", "ParseWorkers", "WebPageReader", "cap_text", "decode_html", "extract_main_text",
    "looks_like_bot_wall", "now_iso", "page_title", "parse_response",
]

ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5"


class WebPageReader:
    """Reads web pages to plain main text. ``session`` is shared with the image fetcher.

    ``config.timeout_s`` bounds the whole read: fetching, decoding and parsing. A page whose
    parse has not finished by then ends as ``FetchFailure(kind="timeout")``; the reader waits at
    most ``PARSE_GRACE_S`` past the deadline for a parse that started late."""

    PARSE_GRACE_S = 0.5

    def __init__(self, config: ReaderConfig | None = None, session: HttpSession | None = None,
                 workers: ParseWorkers | None = None):
        """``workers``: a parse pool to share (tests share one across readers); by default the
        reader owns a pool of ``config.parse_workers`` processes, closed by :meth:`aclose`."""
        self.config = config or ReaderConfig()
        self.session = session or HttpSession()
        self._owns_workers = workers is None
        if workers is None:
            size = self.config.parse_workers
            if size is None:
                size = min(4, os.cpu_count() or 1)
            workers = ParseWorkers(size, memory_mb=self.config.worker_memory_mb) if size > 0 else None
        self.workers = workers

    async def read(self, url: str, query: str | None = None) -> Page | FetchFailure:
        """The page's main text; ``query`` (what it was searched for) picks the passages kept
        when the text is longer than ``max_chars``."""
        cfg = self.config
        deadline = time.monotonic() + cfg.timeout_s
        raw = await self.session.get(url, max_bytes=cfg.max_bytes, max_redirects=cfg.max_redirects,
                                     timeout_s=cfg.timeout_s, accept=ACCEPT)
        if isinstance(raw, FetchFailure):
            return raw
        parse_deadline = max(deadline, time.monotonic() + self.PARSE_GRACE_S)
        if self.workers is None:  # inline: bounded only by the page size cap
            return await asyncio.to_thread(self.parse, raw, query)
        try:
            return await self.workers.run(raw, cfg, parse_deadline, query)
        except ParseTimeout:
            return FetchFailure(url=url, kind="timeout",
                                detail=f"parsing did not finish within the {cfg.timeout_s:g} s deadline")

    @property
    def extractor(self) -> Extractor:
        """The in-process extractor that :meth:`parse` uses (first access imports trafilatura)."""
        return _extractor()

    def parse(self, raw: RawResponse, query: str | None = None) -> Page | FetchFailure:
        """The CPU part in this process; public so benchmarks can time it alone."""
        return parse_response(raw, self.config, query)

    async def aclose(self) -> None:
        if self.workers is not None and self._owns_workers:
            await asyncio.to_thread(self.workers.close)
