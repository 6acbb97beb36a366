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
    """Remove markdown/HTML/XML markup and a leading "Prompt:" label; one paragraph out.

    A pattern runs only when the character it needs is in the text (a plain prose prompt has
    none: the heading scan alone tried every space, half of this function's CPU)."""
    if "`" in text:
        text = _FENCE.sub("", text)
    if "](" in text:
        text = _LINK.sub(r"\1", text)
    if "<" in text:
        text = _TAG.sub(" ", text)
    if "#" in text:
        text = _HEADING.sub(" ", text)
    text = _BULLET.sub("", text)
    if "*" in text or "_" in text or "`" in text:
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


_CONTENT = re.compile(r"[^\W_]")


def has_content(text: str) -> bool:
    """At least one letter or digit: a prompt of only punctuation/markup says nothing."""
    return bool(_CONTENT.search(text or ""))


def word_count(text: str) -> int:
    return len(text.split())


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text.strip()) if s]


def sanitize_prompt(text: str) -> str:
    """Control and bidi/format characters removed (they are invisible in a trace but change
    what a text encoder sees), then :func:`clean_prompt`."""
    from orig_local.agent.untrusted import sanitize

    return clean_prompt(sanitize(text))


def bound_prompt(text: str, max_words: int, max_chars: int, max_tokens: int | None = None,
                 counter=None) -> tuple[str, bool]:
    """The longest run of whole sentences from the start of ``text`` within every limit
    (words, characters and, with ``counter``, text-encoder tokens). A first sentence that is
    alone too long is cut at a word boundary (a single over-long "word" at the character cap).
    Returns (text, was_cut)."""

    def fits(s: str) -> bool:
        return (len(s.split()) <= max_words and len(s) <= max_chars
                and (max_tokens is None or counter is None or counter.count(s) <= max_tokens))

    text = text.strip()
    if fits(text):
        return text, False
    kept = ""
    for sentence in sentences(text):
        candidate = f"{kept} {sentence}".strip()
        if not fits(candidate):
            break
        kept = candidate
    if kept:
        return kept, True
    # No whole sentence fits: words, then characters, until everything holds.
    joined = " ".join(text.split()[:max_words])
    cut = joined[:max_chars]
    while cut and not fits(cut):
        cut = cut[: int(len(cut) * 0.9)]
    if len(cut) < len(joined) and " " in cut and not joined[len(cut)].isspace():
        cut = cut[: cut.rfind(" ")]  # do not end inside a word
    return cut.strip(), True
