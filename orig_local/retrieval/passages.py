"""Keep the best passages of a long page within a character budget, instead of its head.

The page reader caps a page's text (``reader.max_chars``) because the backbone reads it whole.
Cutting at the head lost most of a long article (a 53k-character page kept recall 0.36, issue
22): the facts a sub-question needs are often further down. :func:`select_passages` splits the
text into passages of whole lines, ranks them by BM25 against a query, and keeps the best ones
in document order, marking each gap with :data:`GAP`:

* the lead passage is always kept (it names the subject and usually summarises it);
* with a query (the search query that found the page), the rest are ranked against it;
* without one, against the page title (what the page is about); with neither, the head is kept;
* passages that match nothing fill the remaining budget in document order.

Pure Python, no index: it runs in the parse workers, on one page at a time.
"""

from __future__ import annotations

import math
import re
from collections import Counter

GAP = "[…]"  # stands where passages were left out, so the backbone knows text is missing
PASSAGE_CHARS = 700  # consecutive lines are grouped up to about this many characters
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+", re.UNICODE)  # one token per CJK character
K1, B = 1.2, 0.75  # the usual BM25 constants


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def split_passages(text: str, target: int = PASSAGE_CHARS) -> list[str]:
    """Consecutive non-empty lines grouped into passages of up to ~``target`` characters (a
    line longer than that is a passage of its own; a short line such as a heading joins the
    lines after it)."""
    passages: list[str] = []
    current: list[str] = []
    size = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if current and size + len(line) > target:
            passages.append("\n".join(current))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
    if current:
        passages.append("\n".join(current))
    return passages


def bm25_scores(passages: list[str], query: str) -> list[float]:
    """BM25 of each passage for ``query``, the passages of one page as the collection."""
    terms = set(tokens(query))
    if not terms:
        return [0.0] * len(passages)
    counts = [Counter(t for t in tokens(p) if t in terms) for p in passages]
    lengths = [max(1, len(p)) for p in passages]  # characters: language-neutral length
    mean = sum(lengths) / len(lengths)
    n = len(passages)
    df = Counter(t for c in counts for t in c)
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    scores = []
    for c, length in zip(counts, lengths, strict=True):
        norm = K1 * (1 - B + B * length / mean)
        scores.append(sum(idf[t] * f * (K1 + 1) / (f + norm) for t, f in c.items()))
    return scores


def select_passages(text: str, max_chars: int, query: str | None = None, title: str | None = None) -> str:
    """``text`` if it fits in ``max_chars``; else its lead plus the passages that best match
    ``query`` (or ``title``), in document order, gaps marked with :data:`GAP`."""
    if len(text) <= max_chars:
        return text
    passages = split_passages(text)
    if not passages:
        return text[:max_chars]
    scores = bm25_scores(passages, query or title or "")
    order = [0] + sorted(range(1, len(passages)), key=lambda i: (-scores[i], i))
    kept: set[int] = set()
    used = len(GAP) + 1  # a trailing gap line
    for i in order:
        cost = len(passages[i]) + len(GAP) + 2  # the passage, its newline, and a possible gap line
        if used + cost <= max_chars:
            kept.add(i)
            used += cost
    if not kept:  # one passage longer than the whole budget: its head, cut at a space
        cut = passages[0][:max_chars]
        return cut[: cut.rfind(" ")] if cut.rfind(" ") > max_chars // 2 else cut
    out: list[str] = []
    for i, passage in enumerate(passages):
        if i in kept:
            out.append(passage)
        elif not out or out[-1] != GAP:
            out.append(GAP)
    return "\n".join(out)
