"""Bytes to page text: decoding (byte-order mark, declared charset, ``<meta charset>``), the
page title, control-character cleaning and the bot-wall check. Pure functions, no trafilatura;
used by the page parser (:mod:`orig_local.retrieval.parsepage`) in a parse worker.
"""

from __future__ import annotations

import codecs
import html as htmllib
import re

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
TITLE_SCAN_CHARS = 50_000  # the <head> of real pages fits; a title further down is not one


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


def clean_text(text: str) -> str:
    """``text`` without C0 control characters (other than tab, newline, carriage return)."""
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
            title = re.sub(r"\s+", " ", clean_text(htmllib.unescape(raw))).strip()
            if title:
                return title
    return ""

