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

Pure Python, no index: it runs in the parse workers, on one page at a time. The text filter
(:mod:`orig_local.agent.passages`) ranks a page's passages with the same tokenizer, BM25 and
ranking here, within its token budget instead of a character cap.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

GAP = "[…]"  # stands where passages were left out, so the backbone knows text is missing
PASSAGE_CHARS = 700  # consecutive lines are grouped up to about this many characters
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+", re.UNICODE)  # one token per CJK character
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
K1, B = 1.2, 0.75  # the usual BM25 constants


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, one per CJK character (a script without spaces still matches)."""
    return [t.lower() for t in _TOKEN.findall(text)]


def _pack(units: Iterable[str], target: int, sep: str) -> list[str]:
    """Consecutive units joined by ``sep`` into passages of up to ~``target`` characters; a unit
    longer than that is a passage of its own."""
    passages: list[str] = []
    current = ""
    for unit in units:
        if current and len(current) + len(sep) + len(unit) > target:
            passages.append(current)
            current = unit
        else:
            current = f"{current}{sep}{unit}" if current else unit
    if current:
        passages.append(current)
    return passages


def split_passages(text: str, target: int = PASSAGE_CHARS) -> list[str]:
    """Consecutive non-empty lines grouped into passages of up to ~``target`` characters (a
    line longer than that is a passage of its own; a short line such as a heading joins the
    lines after it). The reader's split: its text is one paragraph per line."""
    return _pack((line for line in text.splitlines() if line.strip()), target, "\n")


def split_paragraphs(text: str, target: int) -> list[str]:
    """Paragraphs (blank-line separated, whitespace collapsed), each its own passage; one longer
    than ``target`` is split at sentence ends into pieces of about ``target`` characters (a
    single sentence longer than that stays whole)."""
    out: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = " ".join(para.split())
        if para:
            out += _pack(_SENTENCE_END.split(para), target, " ") if len(para) > target else [para]
    return out


def bm25_scores(passages: list[str], query: str) -> list[float]:
    """BM25 of each passage for ``query``, the passages of one page as the collection; a
    passage's length in characters (language-neutral)."""
    terms = set(tokens(query))
    if not terms or not passages:
        return [0.0] * len(passages)
    counts = [Counter(t for t in tokens(p) if t in terms) for p in passages]
    lengths = [max(1, len(p)) for p in passages]
    mean = sum(lengths) / len(lengths)
    n = len(passages)
    df = Counter(t for c in counts for t in c)
    idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
    scores = []
    for c, length in zip(counts, lengths, strict=True):
        norm = K1 * (1 - B + B * length / mean)
        scores.append(sum(idf[t] * f * (K1 + 1) / (f + norm) for t, f in c.items()))
    return scores


def ranked(scores: list[float]) -> list[int]:
    """Passage indices best first, equal scores in page order (so with no match anywhere, the
    head first). Only the passages that match are sorted (:func:`orig_local.retrieval.topk.top_k`);
    the rest, score 0, follow in page order: most of a long page matches no query word."""
    import numpy as np

    from orig_local.retrieval.topk import top_k

    matching = [i for i, s in enumerate(scores) if s > 0]
    rest = [i for i, s in enumerate(scores) if not s > 0]
    return [int(i) for i in top_k(np.asarray(scores), len(matching))] + rest if matching else rest


def select_passages(text: str, max_chars: int, query: str | None = None, title: str | None = None) -> str:
    """``text`` if it fits in ``max_chars``; else its lead plus the passages that best match
    ``query`` (or ``title``), in document order, gaps marked with :data:`GAP`."""
    if len(text) <= max_chars:
        return text
    passages = split_passages(text)
    if not passages:
        return text[:max_chars]
    order = [0] + [i for i in ranked(bm25_scores(passages, query or title or "")) if i]
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
