"""Main-text extraction scoring against the hand-checked set in ``data/extraction/``.

Token-level precision / recall / F1 as in the article-extraction benchmarks: both texts become
bags of lower-cased word tokens (``\\w+`` runs; every CJK character is a token of its own, as
Chinese and Japanese are written without spaces), and the overlap is the multiset intersection.
Markdown markup (``#``, ``*``, ``|``, ``-``) is not a word and so never counts.
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "extraction"
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+", re.UNICODE)


def tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


@dataclass
class Score:
    precision: float
    recall: float
    f1: float


def score(predicted: str, gold: str) -> Score:
    p, g = Counter(tokens(predicted)), Counter(tokens(gold))
    overlap = sum((p & g).values())
    if not p or not g:
        return Score(float(not p and not g), float(not g), float(not p and not g))
    precision, recall = overlap / sum(p.values()), overlap / sum(g.values())
    f1 = 2 * precision * recall / (precision + recall) if overlap else 0.0
    return Score(precision, recall, f1)


@dataclass
class Page:
    name: str
    html: str
    gold: str


def load_pages(folder: Path = DATA) -> list[Page]:
    pages = []
    for html in sorted(folder.glob("*.html")):
        gold = html.with_suffix(".txt")
        if not gold.is_file():
            raise FileNotFoundError(f"{html.name} has no hand-checked main text {gold.name}")
        pages.append(Page(html.stem, html.read_text(encoding="utf-8"), gold.read_text(encoding="utf-8")))
    return pages


def page_text(html: str) -> str:
    """Visible text of a page, whitespace-collapsed (for checking gold lines against it)."""
    import html as htmlmod

    body = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", html)
    body = re.sub(r"(?is)<sup\b.*?</sup>", "", body)  # reference markers are not main text
    body = re.sub(r"(?s)<[^>]+>", "", body)
    return re.sub(r"\s+", " ", htmlmod.unescape(body))


def load_extractor(spec: str) -> Callable[[str, str], str]:
    """``module:name`` -> ``f(html, url) -> main text``. ``name`` may be a function returning
    text, a ``(title, text)`` pair, a ``(text, metadata)`` pair (the reader's
    ``extract_main_text``) or an object with ``.text``; or a class whose instances are such
    functions."""
    module, _, attr = spec.partition(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    if isinstance(obj, type):
        obj = obj()

    def extract(html: str, url: str) -> str:
        out = obj(html, url)
        if isinstance(out, tuple):  # the last string: text of (title, text) and of (text, metadata)
            out = [x for x in out if isinstance(x, str)][-1]
        elif out is not None and not isinstance(out, str):
            out = getattr(out, "text", out)
        return out or ""

    return extract


def trafilatura_plain() -> Callable[[str, str], str]:
    """Plain ``trafilatura.extract`` with its defaults (the yardstick)."""
    import trafilatura

    return lambda html, url: trafilatura.extract(html, url=url) or ""
