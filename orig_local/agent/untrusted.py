"""Retrieved content is data, never instructions.

Everything that comes from the web (page text, snippets, titles, captions, URLs) and everything
the backbone derived from it (facts, descriptions) enters a request only through
:func:`delimit`: inside ``<data id="...">`` ... ``</data>`` with its evidence id, after
:func:`sanitize` removed control and bidi characters and anything that could open or close a
block, in any spelling; short entries (K's statements, F^t) go into one :func:`list_block`, one a line, each led
by its ids (line breaks inside an entry folded, so no entry can forge another's id). The system
prompt says delimited content is material to judge, never instructions to follow.
:func:`looks_like_instruction` lets the filters drop text that addresses the model (``SYSTEM:
ignore your instructions ...``) instead of describing the world.
"""

from __future__ import annotations

import functools
import re
import unicodedata

OPEN, CLOSE = "<data", "</data>"
_BLOCK = re.compile(r"<data id=\"[^\"]*\">.*?</data>", re.S)
# Anything a model could read as opening or closing a data block from inside one: "<", "</"
# and "data" in any spelling that normalises to them (full-width ＜／ｄａｔａ＞, entities
# &lt;/data&gt; and &#60;, markdown-escaped \</data\>, spaces, look-alike letters). The
# bracket and slash are removed, so no variant survives as a delimiter.
_LT = r"(?:<|＜|﹤|〈|⟨|‹|&lt;?|&#0*60;?|&#x0*3c;?|\\<)"
_SLASH = r"(?:/|／|⁄|∕|&#0*47;?|&#x0*2f;?|&sol;|\\/)"
_D, _A, _T = "[dDｄＤԁ]", "[aAａＡаАα]", "[tTｔＴтТτ]"
_TAG_LIKE = re.compile(rf"{_LT}\s*(?:{_SLASH}\s*)?{_D}\s*{_A}\s*{_T}\s*{_A}(?![A-Za-z])", re.I)
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
    overrides, zero-width marks, BOM) removed; ``<data``/``</data`` neutralised in any spelling.

    Printable ASCII passes without a per-character look-up: a Python loop over every character
    was the agent's largest CPU cost at 128 prompts in flight (issue 22)."""
    text = _NOT_PLAIN.sub(_clean_run, text)
    # every ASCII spelling of a tag starts with "<", "&" (an entity) or "\\" (an escape)
    if text.isascii() and not ("<" in text or "&" in text or "\\" in text):
        return text
    return _TAG_LIKE.sub("data", text)


def delimit(eid: str, text: str) -> str:
    """One block of untrusted content with its evidence id."""
    return f'{OPEN} id="{sanitize(eid)}">{sanitize(text).strip()}{CLOSE}'


LIST_ID = "list"  # a block of short entries, one a line, each led by its evidence id(s)


@functools.lru_cache(maxsize=4096)  # K's statements are rendered into most requests of a run
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
    """The gate's detector (:func:`orig_local.agent.gate.is_instruction`): normalised text,
    several languages."""
    from orig_local.agent.gate import is_instruction

    return is_instruction(text)


def drop_instructions(text: str) -> tuple[str, list[str]]:
    """``text`` without the sentences that look like instructions; returns (kept, dropped)."""
    from orig_local.agent.gate import drop_flagged

    return drop_flagged(text)
