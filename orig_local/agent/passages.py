"""The part of a long page a filter call is shown: its passages most related to what is asked.

A page of 20-60k characters does not fit a filter call's budget (``max_page_tokens``). Cutting
its head loses every fact past the first few thousand words; here the page is cut into passages
(paragraphs, long ones split at sentence ends), every passage is scored with BM25 (the
passages being the corpus; the page reader's tokenizer and scoring,
:mod:`orig_local.retrieval.passages`, so both rank a page alike) against the query, the
round's sub-questions, what the last sufficiency check found missing and the visual attributes
the filter is told to extract, and the best are kept within the budget, then put back in page
order so the text reads as the page does. What was left out is reported (count of passages and
characters) for the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

from orig_local.agent.budget import TokenCounter, truncate_to_tokens
from orig_local.retrieval.passages import bm25_scores, ranked, split_paragraphs

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
    """The filter's passages: paragraphs, a long one split at sentence ends into pieces of about
    ``size`` characters (:func:`orig_local.retrieval.passages.split_paragraphs`)."""
    return split_paragraphs(text, size)


def select_passages(text: str, question: str, max_tokens: int, counter: TokenCounter) -> Selection:
    """The passages of ``text`` BM25 ranks closest to ``question`` (plus :data:`VISUAL_TERMS`),
    best first until ``max_tokens`` is used, returned in page order joined by blank lines. A
    page that fits whole is returned whole."""
    if counter.count(text) <= max_tokens:
        return Selection(text, 1, 1, 0)
    passages = split_passages(text)
    if not passages:
        return Selection("", 0, 0, 0)
    # best first; ties (e.g. no query word anywhere) keep page order, i.e. the head
    order = ranked(bm25_scores(passages, f"{question} {VISUAL_TERMS}"))
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
