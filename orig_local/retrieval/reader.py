"""Page reader: the open replacement of the Jina Reader used in the paper.

Fetch (bounded, guarded) -> check status and content type -> decode (byte-order mark, then the
declared charset) -> main-content extraction to plain text (trafilatura) -> reject bot walls and
near-empty pages -> keep the best passages within the length cap. Returns :class:`Page` or
:class:`FetchFailure`.

Plain text, not markdown: trafilatura's markdown escapes ``_ < [ ~ *`` with backslashes and keeps
``<u>`` tags (49 and 8 of 181 pages of a public article-extraction benchmark), which cost the
whole F1 gap to plain trafilatura and reached the backbone as noise. Lines are paragraphs, list
items (``- ``), table rows (``| ``) and headings. Over ``reader.max_chars`` the text keeps its
lead and the passages that best match the search query (:mod:`orig_local.retrieval.passages`),
not its head.

:func:`extract_main_text` is the pure extraction step (HTML in, main text + metadata out); the
extraction benchmark calls it directly.

Parsing runs in a small pool of worker processes (:class:`ParseWorkers`), for two reasons
measured on hostile pages: a 4.5 MB page of 150k paragraphs kept trafilatura busy for 93 s,
and a thread cannot be stopped, only a process can; and extraction in a thread holds the GIL
for seconds, stalling the event loop. A worker that overruns the deadline is killed and
replaced. Limits on size or element count alone would not bound time (trafilatura's cost
depends on the tree's shape, not only its size) and would not free the event loop. A worker
costs one fork from a preloaded server (a few ms, once) and ~1 ms of pickling per page.
"""

from __future__ import annotations

import asyncio
import codecs
import html as htmllib
import logging
import os
import pickle
import re
import threading
import time
from datetime import datetime, timezone
from typing import Any

from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.config import ReaderConfig
from orig_local.retrieval.httpfetch import HttpSession, RawResponse

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
PLAIN_TYPES = ("text/plain", "text/markdown")
ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5"

# Phrases of captcha / anti-bot interstitials (Cloudflare, Akamai, DataDome, Google's
# "unusual traffic"). Only checked on short pages, so an article *about* captchas survives.
BOT_WALL_MARKERS = (
    "captcha", "cf-challenge", "cf-browser-verification", "just a moment...",
    "checking your browser", "verify you are human", "verify that you are human",
    "are you a robot", "unusual traffic from your computer", "enable javascript and cookies",
    "access denied", "request unsuccessful. incapsula", "ddos protection by",
    "please turn javascript on and reload", "bot detection",
)
BOT_WALL_MAX_CHARS = 3000
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_OG_TITLE = re.compile(
    r"""<meta\s[^>]*?(?:property|name)\s*=\s*["'](?:og:title|twitter:title)["'][^>]*?content\s*=\s*"""
    r"""(?:"([^"]*)"|'([^']*)')""", re.I)
# Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# C0 controls other than tab, newline and carriage return: never part of page text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# MediaWiki's section "[edit]" links and numbered citation markers ("[2]") are not text; they
# cost precision on wiki pages (the most common search results) and reach the backbone as noise.
_WIKI_MARKERS = re.compile(r"\[(?:edit|\d{1,3})\]")
TITLE_SCAN_CHARS = 50_000  # the <head> of real pages fits; a title further down is not one


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def decode_html(body: bytes, header_charset: str | None) -> str:
    """Byte-order mark (UTF-8/16/32), then the header charset, then a ``<meta charset>`` in the
    first 4 KB, then UTF-8, then cp1252 (the usual mislabelled-Latin fallback); never fails.
    Control characters are left in: lxml drops them while parsing, and the reader removes any
    from what it returns (title and text); a regex over the whole HTML cost ~0.36 ms a page."""
    for bom, name in BOMS:
        if body.startswith(bom):
            return body[len(bom):].decode(name, errors="replace")
    candidates: list[str | None] = [header_charset]
    match = _META_CHARSET.search(body[:4096])
    if match:
        meta = match.group(1).decode("ascii", "ignore").lower()
        # a <meta> we could read as ASCII cannot be UTF-16/32 (the HTML spec reads it as UTF-8)
        candidates.append("utf-8" if meta.startswith(("utf-16", "utf-32")) else meta)
    candidates.append("utf-8")
    for charset in candidates:
        if not charset or not _web_charset(charset):
            continue
        try:
            return body.decode(charset)
        except (LookupError, ValueError):  # UnicodeDecodeError, and UnicodeError of idna-like codecs
            continue
    return body.decode("cp1252", errors="replace")


# Python codecs that decode bytes to text but are no page encoding: ``punycode`` and ``idna`` are
# for host names (punycode decoding is quadratic: 6 s of CPU for 400 KB, and it raises plain
# UnicodeError), the escape codecs and ``undefined`` are Python-only. A page declaring one is
# read as if it declared nothing (the HTML spec ignores labels it does not know).
_NOT_WEB_CHARSETS = frozenset({"punycode", "idna", "undefined", "unicode-escape", "raw-unicode-escape",
                               "unicode_escape", "raw_unicode_escape", "utf-7"})


def _web_charset(charset: str) -> bool:
    try:
        info = codecs.lookup(charset)
    except (LookupError, ValueError):
        return False
    return getattr(info, "_is_text_encoding", True) and info.name not in _NOT_WEB_CHARSETS


def _clean(text: str) -> str:
    return _CONTROL.sub("", text)


def looks_like_bot_wall(*texts: str) -> str | None:
    joined = " ".join(t for t in texts if t)
    if len(joined) > BOT_WALL_MAX_CHARS * 2:
        return None
    low = joined.lower()
    for marker in BOT_WALL_MARKERS:
        if marker in low:
            return marker
    return None


def page_title(html: str) -> str:
    """``og:title`` (no site-name suffix), else ``<title>``, from the page head; "" if none."""
    head = html[:TITLE_SCAN_CHARS]
    for pattern in (_OG_TITLE, _TITLE):
        m = pattern.search(head)
        if m:
            raw = next((g for g in m.groups() if g), "")
            title = re.sub(r"\s+", " ", _clean(htmllib.unescape(raw))).strip()
            if title:
                return title
    return ""


class Extractor:
    """trafilatura with its insecure-SSL fallback turned off (we never let it fetch, but a
    shared config must not carry the unsafe default). One ``extract`` call per page, without
    metadata: trafilatura's metadata pass costs ~45 % more CPU and adds a header (title, url,
    fingerprint ...) that is not page text. Plain-text output (see the module doc)."""

    def __init__(self):
        from orig_local._lazy import require

        self.trafilatura = require("trafilatura", "web")
        from trafilatura.settings import use_config

        self.config = use_config()
        self.config.set("DEFAULT", "INSECURE_SSL_FALLBACK", "off")
        self.config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # signal-based; unusable in workers
        self.config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "100")
        self.config.set("DEFAULT", "EXTENSIVE_DATE_SEARCH", "off")  # we never use the date

    def __call__(self, html: str, url: str | None, favor: str = "balanced") -> str:
        text = self.trafilatura.extract(
            html, url=url, output_format="txt", with_metadata=False, include_comments=False,
            include_tables=True, include_links=False, include_images=False, config=self.config,
            favor_precision=favor == "precision", favor_recall=favor == "recall",
        )
        return _WIKI_MARKERS.sub("", _clean(text or "")).strip()


_EXTRACTOR: list[Extractor] = []  # one per process, built on first use (imports trafilatura)


def _extractor() -> Extractor:
    if not _EXTRACTOR:
        _EXTRACTOR.append(Extractor())
    return _EXTRACTOR[0]


def extract_main_text(html: str | bytes, url: str | None = None, charset: str | None = None,
                      favor: str = "balanced") -> tuple[str, dict[str, Any]]:
    """Main content of an HTML page as plain text, and its metadata (``{"title": ...}``) apart.

    Pure (no network, no state beyond a cached trafilatura config). ``html`` as bytes is
    decoded like a fetched page (BOM, ``charset``, ``<meta charset>``, UTF-8, cp1252).
    ``favor``: trafilatura's ``balanced`` default, or its ``precision`` / ``recall`` mode."""
    if isinstance(html, bytes):
        html = decode_html(html, charset)
    return _extractor()(html, url, favor), {"title": page_title(html)}


def cap_text(text: str, max_chars: int, query: str | None = None, title: str | None = None) -> str:
    """``text`` within ``max_chars``: its lead and best passages for ``query`` (else ``title``)
    in document order, gaps marked ``[…]`` (:func:`orig_local.retrieval.passages.select_passages`)."""
    from orig_local.retrieval.passages import select_passages

    return select_passages(text, max_chars, query=query, title=title)


def parse_response(raw: RawResponse, config: ReaderConfig, query: str | None = None) -> Page | FetchFailure:
    """The CPU part (decode, extract, checks) of reading one fetched page. Pure; runs in a
    parse worker, or inline when ``reader.parse_workers`` is 0. ``query``: what the page was
    searched for; a page over ``max_chars`` keeps the passages that best match it. Never raises
    for what a page contains: any error becomes that page's typed failure (an uncaught one would
    kill the worker, or leave ``read()`` with parse_workers=0)."""
    try:
        return _parse_response(raw, config, query)
    except MemoryError:
        return FetchFailure(url=raw.url, kind="too_large", detail="out of memory while parsing")
    except Exception as exc:  # noqa: BLE001 - hostile bytes must end as this page's failure
        log.warning("parsing failed for %s", raw.url, exc_info=True)
        return FetchFailure(url=raw.url, kind="decode_error", detail=f"parse: {type(exc).__name__}: {exc}"[:300])


def _parse_response(raw: RawResponse, config: ReaderConfig, query: str | None = None) -> Page | FetchFailure:
    url = raw.url
    if raw.status >= 400:
        html = decode_html(raw.body, raw.charset) if raw.body else ""
        marker = looks_like_bot_wall(html[:BOT_WALL_MAX_CHARS * 2])
        if marker and raw.status in (401, 403, 429, 503):
            return FetchFailure(url=url, kind="bot_wall", detail=f"HTTP {raw.status}, {marker!r}")
        return FetchFailure(url=url, kind="http_error", detail=f"HTTP {raw.status}")
    if raw.content_type and raw.content_type not in HTML_TYPES + PLAIN_TYPES:
        return FetchFailure(url=url, kind="not_html", detail=raw.content_type)
    html = decode_html(raw.body, raw.charset)
    if raw.content_type in PLAIN_TYPES:
        title, text = "", _clean(html).strip()
    else:
        try:
            text, meta = extract_main_text(html, raw.final_url, favor=config.favor)
            title = meta["title"]
        except MemoryError:
            return FetchFailure(url=url, kind="too_large", detail="out of memory while parsing")
        except Exception as exc:  # noqa: BLE001 - hostile HTML must not crash a run: a parser
            # failure on one page becomes that page's typed failure, with the reason kept
            log.warning("extraction failed for %s", url, exc_info=True)
            return FetchFailure(url=url, kind="decode_error", detail=f"extraction: {type(exc).__name__}: {exc}")
    marker = looks_like_bot_wall(title, text if text else html[:BOT_WALL_MAX_CHARS])
    if marker and len(text) < BOT_WALL_MAX_CHARS:
        return FetchFailure(url=url, kind="bot_wall", detail=repr(marker))
    if len(text) < config.min_chars:
        return FetchFailure(url=url, kind="empty", detail=f"{len(text)} chars of main text")
    return Page(url=url, final_url=raw.final_url, title=title,
                text=cap_text(text, config.max_chars, query=query, title=title),
                fetched_at=now_iso(), status=raw.status)


# --------------------------------------------------------------------------- parse workers

class _Worker:
    """One ``parse_worker`` process. Talks through pipes with blocking calls, which
    :class:`ParseWorkers` makes from threads under a deadline."""

    def __init__(self, args: tuple[str, ...] = ()):
        import subprocess
        import sys
        from pathlib import Path

        from orig_local.retrieval import parse_worker

        env = dict(os.environ)
        root = str(Path(parse_worker.__file__).resolve().parents[2])  # so `-m` finds this copy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orig_local.retrieval.parse_worker", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, close_fds=True)
        self.ready = False

    def call(self, request: Any) -> Any:
        from orig_local.retrieval.parse_worker import read_frame, write_frame

        self.wait_ready()
        assert self.process.stdin is not None and self.process.stdout is not None  # both are PIPEs
        write_frame(self.process.stdin, request)
        return read_frame(self.process.stdout)

    def wait_ready(self) -> None:
        from orig_local.retrieval.parse_worker import read_frame

        if not self.ready:
            assert self.process.stdout is not None
            if read_frame(self.process.stdout) != "ready":
                raise EOFError("parse worker did not start")
            self.ready = True

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class ParseTimeout(Exception):
    pass


class ParseWorkers:
    """Up to ``size`` parse processes (``python -m orig_local.retrieval.parse_worker``),
    started on demand and reused. :meth:`run` waits for a free worker and for its answer until
    a deadline; a worker past the deadline is killed and a replacement is started at once, so
    the next page does not pay its start-up (~0.5 s, mostly importing trafilatura).

    Plain subprocesses rather than ``multiprocessing``: no fork of this threaded process, and no
    re-import of the user's ``__main__`` script in every worker. Loop-independent (threads and
    pipes), so one pool can serve several event loops in turn."""

    STARTUP_S = 30.0  # longest wait for a worker's start-up (importing), apart from any deadline

    def __init__(self, size: int, *, images: bool = False, memory_mb: int | None = None):
        """``images``: workers that decode images (``parse_worker --images``) instead of pages.
        ``memory_mb``: heap each page worker may grow by past its start (``reader.worker_memory_mb``)."""
        import weakref

        self.size = max(1, size)
        self._args: tuple[str, ...] = ("--images",) if images else (
            (f"--memory-mb={memory_mb}",) if memory_mb else ())
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._free = threading.BoundedSemaphore(self.size)
        self._closed = False  # after close(): no replacement workers (nobody would stop them)
        # a pool dropped without close() (a fetcher nobody closed) still stops its processes
        weakref.finalize(self, ParseWorkers._kill_all, self._all)

    @staticmethod
    def _kill_all(workers: list[_Worker]) -> None:
        for worker in list(workers):
            worker.kill()

    def warm(self) -> None:
        """Start one worker and wait until it is ready (blocking; call from a thread)."""
        worker = self._take()
        try:
            worker.wait_ready()
        except (EOFError, OSError):
            self._discard(worker)
            raise
        self._give_back(worker)

    def prestart(self) -> None:
        """Start one worker without waiting for it (so its start-up overlaps a download), unless
        one is already there. Non-blocking: the process imports in the background."""
        with self._lock:
            if not self._all and not self._closed:
                worker = _Worker(self._args)
                self._all.append(worker)
                self._idle.append(worker)

    def _pop_idle(self) -> _Worker | None:
        """A live idle worker (dead ones are dropped), or None. The caller holds the lock."""
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            self._all.remove(worker)
        return None

    def _take_idle(self) -> _Worker | None:
        with self._lock:
            return self._pop_idle()

    def _take(self) -> _Worker:
        """An idle worker, else a newly started one (blocking: call from a thread)."""
        with self._lock:
            worker = self._pop_idle()
            if worker is None:
                worker = _Worker(self._args)
                self._all.append(worker)
            return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                return
        worker.kill()  # the pool was closed meanwhile

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
            if not self._closed and len(self._all) < self.size:  # a warm replacement for the next page
                replacement = _Worker(self._args)
                self._all.append(replacement)
                self._idle.append(replacement)

    async def run(self, raw: RawResponse, config: ReaderConfig, deadline: float,
                  query: str | None = None) -> Page | FetchFailure:
        """Parse one page in a worker; raise :class:`ParseTimeout` past ``deadline`` (a worker
        still starting, e.g. the replacement of one killed a moment ago, is waited for apart)."""
        return await self.submit((raw, config, query), raw.url, deadline, startup_s=self.STARTUP_S)

    async def submit(self, request: Any, url: str, deadline: float, startup_s: float = 0.0) -> Any:
        """Send ``request`` to a worker and return its answer; a worker that dies is
        ``FetchFailure(decode_error)`` for ``url``; past ``deadline`` it is killed and
        :class:`ParseTimeout` raised. ``startup_s``: up to this long, a worker still starting
        (importing) is waited for outside the deadline (its start-up is the pool's cost, not
        this request's); 0 counts the start-up against the deadline."""
        # a thread-level slot, polled: an asyncio semaphore would tie the pool to one loop, and a
        # blocking acquire in a thread could not be abandoned at the deadline without leaking it
        while not self._free.acquire(blocking=False):
            if time.monotonic() >= deadline:
                raise ParseTimeout()
            await asyncio.sleep(0.005)
        try:
            worker = self._take_idle()
            if worker is None:
                worker = await asyncio.to_thread(self._take)  # a start blocks
            if startup_s and not worker.ready:
                deadline += await self._wait_started(worker, startup_s)
            task = asyncio.ensure_future(asyncio.to_thread(worker.call, request))
            try:
                result = await asyncio.wait_for(asyncio.shield(task), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                # kill first: that ends the blocked read in the thread, then the slot is free
                await asyncio.to_thread(self._discard, worker)
                await asyncio.gather(task, return_exceptions=True)
                raise ParseTimeout() from None
            except (EOFError, OSError, pickle.UnpicklingError) as exc:  # the worker died
                await asyncio.to_thread(self._discard, worker)
                return FetchFailure(url=url, kind="decode_error", detail=f"worker process died: {exc!r}")
            except BaseException:  # cancelled by the caller: the worker may still be busy
                self._discard(worker)
                raise
            self._give_back(worker)
            return result
        finally:
            self._free.release()

    async def _wait_started(self, worker: _Worker, limit_s: float) -> float:
        """Seconds spent waiting for ``worker`` to be ready; ParseTimeout after ``limit_s``."""
        start = time.monotonic()
        task = asyncio.ensure_future(asyncio.to_thread(worker.wait_ready))
        try:
            await asyncio.wait_for(asyncio.shield(task), limit_s)
        except (asyncio.TimeoutError, EOFError, OSError) as exc:
            await asyncio.to_thread(self._discard, worker)
            await asyncio.gather(task, return_exceptions=True)
            raise ParseTimeout() from exc
        return time.monotonic() - start

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all, self._idle = self._all, [], []
        for worker in workers:
            worker.kill()


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
