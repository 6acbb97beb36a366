"""Retrieved content is data, never instructions.

Everything that comes from the web (page text, snippets, titles, captions, URLs) and everything
the backbone derived from it (facts, descriptions) enters a request only through
:func:`delimit`: inside ``<data id="...">`` ... ``</data>`` with its evidence id, after
:func:`sanitize` removed control and bidi characters and anything that could close the block
early; short entries (K's statements, F^t) go into one :func:`list_block`, one a line, each led
by its ids (line breaks inside an entry folded, so no entry can forge another's id). The system
prompt says delimited content is material to judge, never instructions to follow.
:func:`looks_like_instruction` lets the filters drop text that addresses the model (``SYSTEM:
ignore your instructions ...``) instead of describing the world.
"""

from __future__ import annotations

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


def sanitize(text: str) -> str:
    """Control characters (except newline and tab) and Unicode format characters (bidi
    overrides, zero-width marks, BOM) removed; ``<data``/``</data`` neutralised."""
    out = []
    for ch in text:
        if ch in "\n\t":
            out.append(ch)
            continue
        cat = unicodedata.category(ch)
        if cat in ("Cc", "Cf", "Co", "Cs"):
            continue
        if cat in ("Zl", "Zp"):
            out.append("\n")
            continue
        out.append(ch)
    return _TAG_LIKE.sub(lambda m: m.group(0).replace("<", "‹"), "".join(out))


def delimit(eid: str, text: str) -> str:
    """One block of untrusted content with its evidence id."""
    return f'{OPEN} id="{sanitize(eid)}">{sanitize(text).strip()}{CLOSE}'


LIST_ID = "list"  # a block of short entries, one a line, each led by its evidence id(s)


def list_line(eid: str, text: str) -> str:
    """One entry of a :func:`list_block`: ``"T3,T1: text"``. The entry's own line breaks are
    folded into spaces, so no entry can start a line that claims another id."""
    return f"{sanitize(eid)}: {' '.join(sanitize(text).split())}"


def list_block(lines: list[str]) -> str:
    """Short entries (K's statements, F^t's descriptors) in one data block, one a line, each led
    by its ids: the same ids a block per entry carries in its attribute, at ~5 fewer tokens an
    entry (a block's ``<data id="...">`` ... ``</data>`` is ~10). ``""`` for no entries."""
    return f'{OPEN} id="{LIST_ID}">' + "\n".join(lines) + CLOSE if lines else ""


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
