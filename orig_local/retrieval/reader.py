"""Page reader: the open replacement of the Jina Reader used in the paper.

Fetch (bounded, guarded) -> check status and content type -> decode with the right charset
-> main-content extraction to markdown (trafilatura) -> reject bot walls and near-empty
pages -> cap the length. Returns :class:`Page` or :class:`FetchFailure`.
"""

from __future__ import annotations

import asyncio
import codecs
import logging
import re
from datetime import datetime, timezone

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
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def decode_html(body: bytes, header_charset: str | None) -> str:
    """Header charset, then a ``<meta charset>`` in the first 4 KB, then UTF-8, then cp1252
    (the usual mislabelled-Latin fallback); never fails."""
    candidates = [header_charset]
    match = _META_CHARSET.search(body[:4096])
    if match:
        candidates.append(match.group(1).decode("ascii", "ignore"))
    candidates.append("utf-8")
    for name in candidates:
        if not name:
            continue
        try:
            codecs.lookup(name)
            return body.decode(name)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("cp1252", errors="replace")


def looks_like_bot_wall(*texts: str) -> str | None:
    joined = " ".join(t for t in texts if t)
    if len(joined) > BOT_WALL_MAX_CHARS * 2:
        return None
    low = joined.lower()
    for marker in BOT_WALL_MARKERS:
        if marker in low:
            return marker
    return None


class Extractor:
    """trafilatura with its insecure-SSL fallback turned off (we never let it fetch, but a
    shared config must not carry the unsafe default) and markdown output."""

    def __init__(self):
        from orig_local._lazy import require

        self.trafilatura = require("trafilatura", "web")
        from trafilatura.settings import use_config

        self.config = use_config()
        self.config.set("DEFAULT", "INSECURE_SSL_FALLBACK", "off")
        self.config.set("DEFAULT", "EXTRACTION_TIMEOUT", "0")  # signal-based; unusable in threads
        self.config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "100")
        self.config.set("DEFAULT", "EXTENSIVE_DATE_SEARCH", "off")  # we never use the date

    def __call__(self, html: str, url: str) -> tuple[str, str]:
        # one parse gives both the markdown and the metadata (title)
        doc = self.trafilatura.extract_with_metadata(
            html, url=url, output_format="markdown", include_comments=False, include_tables=True,
            include_links=False, include_images=False, config=self.config,
        )
        text = (doc.text or "") if doc is not None else ""
        title = (doc.title or "") if doc is not None else ""
        if not title:
            m = _TITLE.search(html[:20000])
            title = re.sub(r"\s+", " ", m.group(1)).strip() if m else ""
        return title, text.strip()


def cap_text(text: str, max_chars: int) -> str:
    """Cut at the last paragraph break before ``max_chars`` (or hard-cut if there is none)."""
    if len(text) <= max_chars:
        return text
    cut = text.rfind("\n\n", 0, max_chars)
    return text[: cut if cut > max_chars // 2 else max_chars].rstrip()


class WebPageReader:
    """Reads web pages to markdown. ``session`` is shared with the image fetcher."""

    def __init__(self, config: ReaderConfig | None = None, session: HttpSession | None = None):
        self.config = config or ReaderConfig()
        self.session = session or HttpSession()
        self._extract: Extractor | None = None

    @property
    def extractor(self) -> Extractor:
        if self._extract is None:
            self._extract = Extractor()
        return self._extract

    async def read(self, url: str) -> Page | FetchFailure:
        cfg = self.config
        raw = await self.session.get(url, max_bytes=cfg.max_bytes, max_redirects=cfg.max_redirects,
                                     timeout_s=cfg.timeout_s, accept=ACCEPT)
        if isinstance(raw, FetchFailure):
            return raw
        return await asyncio.to_thread(self.parse, raw)

    def parse(self, raw: RawResponse) -> Page | FetchFailure:
        """The CPU part (decode, extract, checks); public so benchmarks can time it alone."""
        cfg, url = self.config, raw.url
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
            title, text = "", html.strip()
        else:
            try:
                title, text = self.extractor(html, raw.final_url)
            except Exception as exc:  # noqa: BLE001 - hostile HTML must not crash a run: a parser
                # failure on one page becomes that page's typed failure, with the reason kept
                log.warning("extraction failed for %s", url, exc_info=True)
                return FetchFailure(url=url, kind="decode_error", detail=f"extraction: {type(exc).__name__}: {exc}")
        marker = looks_like_bot_wall(title, text if text else html[:BOT_WALL_MAX_CHARS])
        if marker and len(text) < BOT_WALL_MAX_CHARS:
            return FetchFailure(url=url, kind="bot_wall", detail=repr(marker))
        if len(text) < cfg.min_chars:
            return FetchFailure(url=url, kind="empty", detail=f"{len(text)} chars of main text")
        return Page(url=url, final_url=raw.final_url, title=title, text=cap_text(text, cfg.max_chars),
                    fetched_at=now_iso(), status=raw.status)
