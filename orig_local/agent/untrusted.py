"""Retrieved content is data, never instructions.

Everything that comes from the web (page text, snippets, titles, captions, URLs) and everything
the backbone derived from it (facts, descriptions) enters a request only through
:func:`delimit`: inside ``<data id="...">`` ... ``</data>`` with its evidence id, after
:func:`sanitize` removed control and bidi characters and anything that could close the block
early. The system prompt says delimited content is material to judge, never instructions to
follow. :func:`looks_like_instruction` lets the filters drop text that addresses the model
(``SYSTEM: ignore your instructions ...``) instead of describing the world.
"""

from __future__ import annotations

import functools
import re
import unicodedata

OPEN, CLOSE = "<data", "</data>"
_BLOCK = re.compile(r"<data id=\"[^\"]*\">.*?</data>", re.S)
# anything that could open or close a data block from inside one
_TAG_LIKE = re.compile(r"</?\s*data\b", re.I)

# Text addressed to an assistant rather than describing something: role labels, "ignore/forget
# your instructions", "you are now", "output/respond/print the prompt ...", chat-template tokens.
_INSTRUCTION = re.compile(
    r"(^|[\s\"'(\[])(system|assistant|developer)\s*:"
    r"|\b(ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,60}\b(instructions?|prompts?|rules|guidelines|"
    r"above|previous|system)\b"
    r"|\byou\s+are\s+now\b"
    r"|\bnew\s+instructions?\b"
    r"|\b(output|respond|reply|answer|return|print|write)\b[^.!?\n]{0,30}\b(only|exactly|with the prompt|"
    r"the (?:following|prompt|text))\b"
    r"|<\|[a-z_]+\|>|\[/?INST\]",
    re.I,
)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\n+")
# Runs of characters other than printable ASCII, newline and tab: only these need a look-up.
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n\t]+")


@functools.lru_cache(maxsize=8192)
def _cleaned(ch: str) -> str:
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cf", "Co", "Cs"):
        return ""
    return "\n" if cat in ("Zl", "Zp") else ch


def _clean_run(match: re.Match) -> str:
    return "".join(map(_cleaned, match.group(0)))


def sanitize(text: str) -> str:
    """Control characters (except newline and tab) and Unicode format characters (bidi
    overrides, zero-width marks, BOM) removed; ``<data``/``</data`` neutralised.

    Printable ASCII passes without a per-character look-up: a Python loop over every character
    was the agent's largest CPU cost at 128 prompts in flight (issue 22)."""
    return _TAG_LIKE.sub(lambda m: m.group(0).replace("<", "‹"), _NOT_PLAIN.sub(_clean_run, text))


def delimit(eid: str, text: str) -> str:
    """One block of untrusted content with its evidence id."""
    return f'{OPEN} id="{sanitize(eid)}">{sanitize(text).strip()}{CLOSE}'


def outside_blocks(text: str) -> str:
    """``text`` with every data block removed (what a test checks for leaked evidence)."""
    return _BLOCK.sub(" ", text)


def looks_like_instruction(text: str) -> bool:
    return bool(_INSTRUCTION.search(text))


def drop_instructions(text: str) -> tuple[str, list[str]]:
    """``text`` without the sentences that look like instructions; returns (kept, dropped)."""
    lines: list[str] = []
    dropped: list[str] = []
    for line in text.split("\n"):  # line structure (headings, paragraphs) is kept
        kept: list[str] = []
        for sentence in _SENTENCES.split(line):
            if sentence.strip():
                (dropped if looks_like_instruction(sentence) else kept).append(sentence.strip())
        if kept or not line.strip():
            lines.append(" ".join(kept))
    return "\n".join(lines).strip(), dropped
