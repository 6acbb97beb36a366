"""The CPU part of reading one fetched page: check status and content type -> decode -> extract
the main text -> reject bot walls and near-empty pages -> keep the best passages within the
length cap. Pure; runs in a parse worker (:mod:`orig_local.retrieval.parse_worker`), or inline
when ``reader.parse_workers`` is 0.

Over ``reader.max_chars`` the text keeps its lead and the passages that best match the search
query (:mod:`orig_local.retrieval.passages`), not its head.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.config import ReaderConfig
from orig_local.retrieval.extract import extract_main_text
from orig_local.retrieval.htmldecode import BOT_WALL_MAX_CHARS, clean_text, decode_html, looks_like_bot_wall
from orig_local.retrieval.httpfetch import RawResponse

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
PLAIN_TYPES = ("text/plain", "text/markdown")


def now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()



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
        title, text = "", clean_text(html).strip()
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

