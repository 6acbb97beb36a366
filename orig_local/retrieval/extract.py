"""Main-content extraction: HTML in, plain main text and metadata out (trafilatura, plus the
structural rules of :mod:`orig_local.retrieval.commentposts` (threads trafilatura pruned as
comments), :mod:`orig_local.retrieval.threads` (post sequences) and
:mod:`orig_local.retrieval.denseblock` (apparatus, loose fragments)).

Plain text, not markdown: trafilatura's markdown escapes ``_ < [ ~ *`` with backslashes and keeps
``<u>`` tags (49 and 8 of 181 pages of a public article-extraction benchmark), which cost the
whole F1 gap to plain trafilatura and reached the backbone as noise. Lines are paragraphs, list
items (``- ``), table rows (``| ``) and headings.

:func:`extract_main_text` is the pure extraction step; the extraction benchmark calls it directly.
"""

from __future__ import annotations

import re
from typing import Any

from orig_local.retrieval.commentposts import pruned_posts
from orig_local.retrieval.denseblock import densest_block, prune_apparatus
from orig_local.retrieval.htmldecode import clean_text, decode_html, page_title
from orig_local.retrieval.threads import all_posts

# MediaWiki's section "[edit]" links and numbered citation markers ("[2]") are not text; they
# cost precision on wiki pages (the most common search results) and reach the backbone as noise.
_WIKI_MARKERS = re.compile(r"\[(?:edit|\d{1,3})\]")


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
        from trafilatura.utils import load_html

        # parsed once here: trafilatura copies a tree it is given, so the post-sequence rule
        # reads the same tree afterwards without a second parse
        tree = load_html(html)
        if tree is not None:
            prune_apparatus(tree)  # reference lists, navboxes: see retrieval/denseblock.py
        text = self.trafilatura.extract(
            html if tree is None else tree, url=url, output_format="txt", with_metadata=False,
            include_comments=False, include_tables=True, include_links=False, include_images=False,
            config=self.config, favor_precision=favor == "precision", favor_recall=favor == "recall",
        )
        if tree is not None:  # the rules read trafilatura's text, which may be empty: all pruned
            # pruned posts first: where trafilatura pruned a thread its text is the menus and
            # sidebar, whose boxes the post-sequence rule may read as posts (the two rules' groups
            # never overlap: one needs members trafilatura kept, the other none of the first)
            kept = text or ""
            text = pruned_posts(tree, kept) or all_posts(tree, kept) or densest_block(tree, kept) or text
        return _WIKI_MARKERS.sub("", clean_text(text or "")).strip()


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

