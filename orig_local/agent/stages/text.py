"""Cleaning the final prompt: what reaches the generator is plain prose.

The authors' prototype left output tags inside the prompt it sent to the generator; here every
final prompt goes through :func:`clean_prompt` (markup out, whitespace collapsed) and
:func:`limit_words` (cut at a sentence end at or below the word budget).
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[a-zA-Z]*\n?|```")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9_\-]*(\s[^<>]*)?/?>")
_HEADING = re.compile(r"(^|\s)#{1,6}\s+", re.M)  # a heading marker, also one run into a line
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.M)
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_LABEL = re.compile(r"^\s*(final|enhanced|extended|generation)?\s*prompt\s*:\s*", re.I)


def clean_prompt(text: str) -> str:
    """Remove markdown/HTML/XML markup and a leading "Prompt:" label; one paragraph out."""
    text = _FENCE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _TAG.sub(" ", text)
    text = _HEADING.sub(" ", text)
    text = _BULLET.sub("", text)
    text = _EMPHASIS.sub("", text)
    text = " ".join(text.split())
    text = _LABEL.sub("", text)
    return text.strip().strip('"').strip()


def limit_words(text: str, max_words: int) -> tuple[str, int]:
    """Cut ``text`` to at most ``max_words`` words, at the last sentence end if there is one
    in the second half. Returns (text, original word count)."""
    words = text.split()
    if len(words) <= max_words:
        return text, len(words)
    cut = " ".join(words[:max_words])
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "), cut.rfind("."))
    if end >= len(cut) // 2:
        cut = cut[: end + 1]
    return cut.strip(), len(words)


def word_count(text: str) -> int:
    return len(text.split())
