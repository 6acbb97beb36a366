"""What a stage's simulated reply reads: the rendered request (:class:`SimRequest`) and small
helpers over the packaged templates' layout. Below both the registry and the responder
(:mod:`orig_local.agent.simulate`), so stage modules import it without an import circle."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from orig_local.llm.simulated import words  # noqa: F401  (the stand-ins share one notion of overlap)

_DATA = re.compile(r'<data id="([^"]*)">(.*?)</data>', re.S)
IMAGE_ID = re.compile(r"I\d+")


def after(text: str, marker: str) -> str:
    """``text`` after the first ``marker`` ("" when absent)."""
    i = text.find(marker)
    return "" if i < 0 else text[i + len(marker):]


def blocks(text: str) -> list[tuple[str, str]]:
    """The (id, content) of every data block in ``text``, in order; a list block's entries
    (:func:`orig_local.agent.untrusted.list_block`) each as its own (ids, text)."""
    out: list[tuple[str, str]] = []
    for block_id, body in _data_blocks(text):
        if block_id == "list":
            out += [(i, t.strip()) for i, _, t in (ln.partition(": ") for ln in body.strip().splitlines())]
        else:
            out.append((block_id, body.strip()))
    return out


def _data_blocks(text: str) -> list[tuple[str, str]]:
    """(id, body) of each ``<data id="...">body</data>`` in order: what ``_DATA.finditer``
    finds, by string search (the lazy ``.*?`` tried the closing tag at every character: the
    simulated backbone reads every request it answers)."""
    out: list[tuple[str, str]] = []
    pos = 0
    while (start := text.find('<data id="', pos)) >= 0:
        quote = text.find('"', start + 10)
        if quote < 0:
            break
        if not text.startswith('">', quote):  # not a block here; the next opening may be
            pos = start + 1
            continue
        end = text.find("</data>", quote + 2)
        if end < 0:
            break
        out.append((text[start + 10:quote], text[quote + 2:end]))
        pos = end + 7
    return out


def _prompt_of(text: str) -> str:
    for line in text.splitlines():
        for label in ("User prompt: ", "Prompt: "):
            if line.startswith(label):
                return line[len(label):].strip()
    return ""


@dataclass(frozen=True)
class SimOptions:
    """How the simulated backbone decides. ``sufficient``: the sufficiency verdict (or a function
    of the rendered request); ``max_facts``: facts kept per page and features per prompt;
    ``image_queries``: whether plans ask for images."""

    sufficient: bool | Callable[[str], bool] = True
    max_facts: int = 12
    image_queries: bool = True


@dataclass(frozen=True)
class SimRequest:
    """One agent request as a stage's simulated reply sees it."""

    text: str  # the rendered template (the user turn's text)
    prompt: str  # the user's prompt P, read from the request
    n_images: int  # pictures sent with it
    options: SimOptions = field(default_factory=SimOptions)

    def blocks(self, text: str | None = None) -> list[tuple[str, str]]:
        return blocks(self.text if text is None else text)

    def after(self, marker: str) -> str:
        return after(self.text, marker)

    def image_titles(self, text: str | None = None) -> dict[str, str]:
        """``{"I1": first line, ...}`` of the image blocks."""
        return {i: b.split("\n")[0] for i, b in self.blocks(text) if IMAGE_ID.fullmatch(i)}
