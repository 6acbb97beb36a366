"""Citations of reference images in P̂: found in every form a model writes them, renumbered.

P̂ must cite reference images by the numbers they reach the generator with. Models cite in
more ways than "reference image 2": plural lists ("reference images 1 and 2", "images 1, 2
and 3"), bare nouns ("image 2", "photo #3"), ordinals ("the first image", "the second
reference photo") and, with one reference, unnumbered ("the provided photo", "the reference
image"). :func:`cited_numbers` reads them all (in text order); :func:`renumber` rewrites each to
the canonical "reference image N" / "reference images N and M" with the new numbers, so a
citation can never point at the wrong picture after references are dropped or reordered.
An unnumbered mention with several references is ambiguous and left as written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

_NOUN = r"(?:image|picture|photo|photograph|shot)"
_QUAL = r"(?:reference|ref\.|provided|given|input|attached|supplied)"
_SEP = r"(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*&\s*|\s+or\s+)"
_NUMBERED = re.compile(
    rf"\b(?:{_QUAL}\s+)?{_NOUN}s?\s*(?:no\.\s*|number\s+)?(?P<nums>#?\s*\d+(?:{_SEP}#?\s*\d+)*)\b", re.I)
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
             "eighth": 8, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4, "5th": 5, "6th": 6, "7th": 7, "8th": 8}
_ORDINAL = re.compile(rf"\bthe\s+(?P<ord>{'|'.join(_ORDINALS)})\s+(?:{_QUAL}\s+)?{_NOUN}\b", re.I)
_UNNUMBERED = re.compile(rf"\bthe\s+{_QUAL}\s+{_NOUN}\b(?!s|\s*(?:no\.\s*|number\s+)?#?\s*\d)", re.I)
# Any mention of a reference picture, numbered or not (for a generator that receives none).
MENTION = re.compile(rf"\b{_QUAL}\s+{_NOUN}s?\b|\b(?:as|like)\s+(?:in|on)\s+the\s+reference\b"
                     rf"|\b{_NOUN}s?\s*#?\s*\d+\b|\bthe\s+(?:{'|'.join(_ORDINALS)})\s+{_NOUN}\b", re.I)


_NOUN_STEMS = ("imag", "pictur", "photo", "shot")  # every spelling of _NOUN contains one


Match = tuple[int, int, tuple[int, ...]]


# P̂ is read three times as it is finalised (cited, renumbered, bounded): the scans are
# regexes tried at every word, so a final text is scanned once
@functools.lru_cache(maxsize=256)
def _matches(text: str, n_refs: int) -> tuple[Match, ...]:
    """(start, end, numbers) of every citation in ``text``, in order, without overlaps."""
    if text.isascii():  # every citation names a picture: most sentences need no regex scan
        low = text.lower()
        if not any(stem in low for stem in _NOUN_STEMS):
            return ()
    found = [(m.start(), m.end(), tuple(int(d) for d in re.findall(r"\d+", m.group("nums"))))
             for m in _NUMBERED.finditer(text)]
    found += [(m.start(), m.end(), (_ORDINALS[m.group("ord").lower()],)) for m in _ORDINAL.finditer(text)]
    if n_refs == 1:  # "the provided photo" can only mean the one reference
        found += [(m.start(), m.end(), (1,)) for m in _UNNUMBERED.finditer(text)]
    found.sort()
    out: list[Match] = []
    for start, end, nums in found:
        if not out or start >= out[-1][1]:
            out.append((start, end, nums))
    return tuple(out)


def cited_numbers(text: str, n_refs: int) -> list[int]:
    """Every reference number ``text`` cites, in order (repeats included)."""
    return [n for _, _, nums in _matches(text, n_refs) for n in nums]


def _canonical(numbers: list[int], capital: bool) -> str:
    head = "Reference" if capital else "reference"
    if len(numbers) == 1:
        return f"{head} image {numbers[0]}"
    listed = ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"
    return f"{head} images {listed}"


def renumber(text: str, n_refs: int, mapping: dict[int, int] | Callable[[int], int]) -> str:
    """``text`` with every citation rewritten canonically under ``mapping`` (old -> new)."""
    get = mapping.get if isinstance(mapping, dict) else mapping
    out, last = [], 0
    for start, end, nums in _matches(text, n_refs):
        new = list(dict.fromkeys(get(n) for n in nums))
        if any(n is None for n in new):
            continue  # a number outside the mapping is left for the caller's check
        out += [text[last:start], _canonical(new, text[start].isupper())]  # type: ignore[arg-type]
        last = end
    return "".join(out) + text[last:]


def strip_citations(text: str, n_refs: int = 0) -> str:
    """``text`` without citations (a reference's own description must not cite)."""
    out, last = [], 0
    for start, end, _ in _matches(text, max(n_refs, 2)):
        out.append(text[last:start])
        last = end
    return " ".join(("".join(out) + text[last:]).split())
