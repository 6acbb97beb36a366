"""Cheap word-level checks that a consolidated statement says what its evidence says.

Consolidation (``stages/consolidation.py``) replaces K's entries by statements that cite them.
Three ways it can lose or invent evidence, each caught here without a model call:

* a statement cites an id but keeps little of that entry's detail (it does not *cover* it),
  so the entry's other details would be cited nowhere;
* a vague statement cites many ids with little text ("the building has many features"): it
  covers few of them;
* a statement adds detail its cited evidence does not contain (*unsupported*).

Words are compared as crude stems (lowercase, plural ``s`` off, first 6 letters) after dropping
stop words and the prompt's own words (the subject is named everywhere; it is not a detail).
Numbers count as detail words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

_STOP = frozenset("""a an and are as at be been but by for from has have in into is it its of on or
that the their there these this those to was were which with without while also very about over
under between each other such than then they them its his her our your one some more most many""".split())
_WORD = re.compile(r"[a-z]+|\d+(?:\.\d+)?")

COVERS = 0.6  # share of an entry's detail words a statement must keep to stand for it
UNSUPPORTED = 0.34  # share of a statement's detail words absent from its evidence that rejects it
VAGUE_IDS = 3  # a statement citing at least this many ids must cover at least half of them


def _stem(word: str) -> str:
    if word.isdigit() or "." in word:
        return word
    if len(word) > 4 and word.endswith("es"):
        word = word[:-2]
    elif len(word) > 3 and word.endswith("s"):
        word = word[:-1]
    return word[:6]


def detail_words(text: str, ignore: Iterable[str] = ()) -> set[str]:
    """Stems of the words that carry detail (not stop words, not in ``ignore``)."""
    return set(_details(text)) - set(ignore)


@lru_cache(maxsize=4096)
def _details(text: str) -> frozenset[str]:
    # memoised: each consolidation re-reads every entry of K it was shown (the same texts
    # round after round); bounded, and a pure function of the text
    return frozenset(_stem(w) for w in _WORD.findall(text.lower()) if (w.isdigit() or len(w) > 2) and w not in _STOP)


def subject_words(prompt: str) -> set[str]:
    return {_stem(w) for w in _WORD.findall(prompt.lower())}


def covers(statement: set[str], entry: set[str]) -> bool:
    """The statement keeps enough of the entry's details to stand for it."""
    if not entry:
        return True
    return len(statement & entry) >= COVERS * len(entry)


def unsupported(statement: set[str], evidence: set[str]) -> list[str]:
    """The statement's detail words its evidence does not contain (empty when supported)."""
    missing = sorted(statement - evidence)
    return missing if len(missing) >= 2 and len(missing) > UNSUPPORTED * len(statement) else []


def vague(statement: set[str], cited: list[set[str]]) -> bool:
    """Many ids, little text: it covers fewer than half of the entries it cites."""
    if len(cited) < VAGUE_IDS:
        return False
    return sum(covers(statement, e) for e in cited) * 2 < len(cited)
