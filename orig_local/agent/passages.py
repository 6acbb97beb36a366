"""The part of a long page a filter call is shown: its passages most related to what is asked.

A page of 20-60k characters does not fit a filter call's budget (``max_page_tokens``). Cutting
its head loses every fact past the first few thousand words; here the page is cut into passages
(paragraphs, long ones split at sentence ends), every passage is scored with BM25 (the
passages being the corpus; the tokenizer of the package's corpus index) against
the query, the round's sub-questions, what the last sufficiency check found missing and the
visual attributes the filter is told to extract, and the best are kept within the budget,
then put back in page order so the text reads as the page does. What was left out is reported
(count of passages and characters) for the trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from orig_local.agent.budget import TokenCounter, truncate_to_tokens

# What the text filter is asked to extract (appearance, colours, materials, parts, numbers,
# positions, dates): generic words of those kinds help BM25 prefer a passage that describes the
# subject over one that only names it. English only; other languages rank by the query alone.
VISUAL_TERMS = (
    "appearance look looks shape shaped colour color coloured painted red orange yellow green blue "
    "purple violet pink brown black white grey gray silver gold golden bronze copper crimson amber teal "
    "dark pale bright striped banded pattern material made built stone brick wood wooden iron steel "
    "glass metal concrete marble sandstone granite roof dome tower wall walls window windows door "
    "stair staircase top base front side left right above below beside height tall wide long metres "
    "feet size round square hexagonal octagonal spiral number count pairs legs wings")
_PARAGRAPH = re.compile(r"\n\s*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PASSAGE_CHARS = 600  # ~130 tokens: small enough to skip filler, large enough to keep context


@dataclass
class Selection:
    text: str
    passages: int  # passages on the page
    kept: int  # passages shown
    chars_left_out: int

    @property
    def cut(self) -> bool:
        return self.kept < self.passages


def split_passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """Paragraphs; one longer than ``size`` is split at sentence ends into pieces of about
    ``size`` characters (a single sentence longer than that stays whole)."""
    out: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = " ".join(para.split())
        if not para:
            continue
        if len(para) <= size:
            out.append(para)
            continue
        piece = ""
        for sentence in _SENTENCE_END.split(para):
            if piece and len(piece) + len(sentence) + 1 > size:
                out.append(piece)
                piece = sentence
            else:
                piece = f"{piece} {sentence}".strip()
        if piece:
            out.append(piece)
    return out


def bm25_scores(passages: list[str], query: str, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each passage for ``query``, the passages being the corpus, with the
    tokenizer of the package's corpus index (:func:`orig_local.retrieval.corpus.tokenize`).
    In plain Python: a page has tens of passages, and this needs no optional dependency."""
    import math
    from collections import Counter

    from orig_local.retrieval.corpus import tokenize

    docs = [Counter(tokenize(p)) for p in passages]
    lengths = [sum(d.values()) for d in docs]
    mean = (sum(lengths) / len(docs)) or 1.0
    df: Counter[str] = Counter(t for d in docs for t in d)
    terms = set(tokenize(query))
    idf = {t: math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df[t]}
    return [sum(idf[t] * d[t] * (k1 + 1) / (d[t] + k1 * (1 - b + b * n / mean)) for t in idf if t in d)
            for d, n in zip(docs, lengths, strict=True)]


def select_passages(text: str, question: str, max_tokens: int, counter: TokenCounter) -> Selection:
    """The passages of ``text`` BM25 ranks closest to ``question`` (plus :data:`VISUAL_TERMS`),
    best first until ``max_tokens`` is used, returned in page order joined by blank lines. A
    page that fits whole is returned whole."""
    if counter.count(text) <= max_tokens:
        return Selection(text, 1, 1, 0)
    passages = split_passages(text)
    if not passages:
        return Selection("", 0, 0, 0)
    scores = bm25_scores(passages, f"{question} {VISUAL_TERMS}")
    # best first; ties (e.g. no query word anywhere) keep page order, i.e. the head
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        cost = counter.count(passages[i]) + 2  # the blank line between passages
        if used + cost > max_tokens:
            continue  # a shorter passage further down may still fit
        chosen.append(i)
        used += cost
    if not chosen:  # even the best passage alone is over: its head
        best, _ = truncate_to_tokens(passages[order[0]], max_tokens, counter)
        chosen_text, kept = best, 1
    else:
        chosen.sort()
        chosen_text, kept = "\n\n".join(passages[i] for i in chosen), len(chosen)
    left_out = sum(len(p) for p in passages) - len(chosen_text.replace("\n\n", ""))
    return Selection(chosen_text, len(passages), kept, max(left_out, 0))
