"""Stand-ins for dry runs, tests and the orchestration benchmark (no model, no network).

* :class:`SimulatedRetriever` — the :class:`~orig_local.agent.stages.base.RetrieverLike`
  interface over an in-memory corpus (by default the bundled demo corpus), with fixed latencies
  and switchable failures (search, page reads, image fetches).
* :class:`SimulatedBackbone` — chat backend ``simulated``: a
  :class:`~orig_local.llm.scripted.ScriptedChatModel` answering each agent request with the
  reply its stage declares (``orig_local.agent.simulate``; this module names no schema).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orig_local.retrieval.base import FetchedImage, FetchFailure, ImageHit, Page, TextHit

DEMO_CORPUS = Path(__file__).resolve().parents[1] / "demo_corpus"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"a", "an", "the", "of", "in", "on", "and", "with", "at", "to", "is", "for", "by", "its",
         "it", "as", "from", "picture", "image", "photo", "show", "showing", "draw", "generate"}


def words(text: str) -> set[str]:
    """Content words (lower case, stop words out): the stand-ins' one notion of overlap, for the
    simulated web's ranking here and the simulated replies (:mod:`orig_local.agent.simrequest`)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


@dataclass
class SimOutcome:
    """Same attributes as retrieval's ``SearchOutcome``."""

    query: str
    hits: list = field(default_factory=list)
    failures: list = field(default_factory=list)
    backend: str | None = "simulated"


class SimulatedRetriever:
    """Word-overlap search over documents and image captions; every call sleeps a fixed time."""

    def __init__(self, docs: list[dict], images: list[dict], *, search_latency_s: float = 0.0,
                 read_latency_s: float = 0.0, fetch_latency_s: float = 0.0, fail_search: bool = False,
                 fail_reads: bool = False, fail_fetches: bool = False):
        self.docs = docs  # {id, title, text}
        self.images = images  # {id, caption, image (PIL), doc_id}
        self.search_latency_s = search_latency_s
        self.read_latency_s = read_latency_s
        self.fetch_latency_s = fetch_latency_s
        self.fail_search, self.fail_reads, self.fail_fetches = fail_search, fail_reads, fail_fetches
        self.calls: dict[str, int] = {"search_text": 0, "search_images": 0, "read_page": 0, "fetch_image": 0}
        # word sets of the corpus, computed once: a stand-in must cost next to nothing, and
        # re-reading every document per search was a tenth of bench_agent.py's loop CPU
        self._item_words: dict[tuple[int, str], set[str]] = {}
        self._indexes: dict[int, tuple[tuple[int, ...], dict[str, list[int]]]] = {}  # per item list
        # url -> item, and the pixel hash of each picture served: a fetch hashed the whole
        # picture (tobytes + sha256, ~0.4 ms) every time, an eighth of bench_agent.py's loop CPU
        self._by_url: dict[tuple[int, str], tuple[tuple[int, ...], dict[str, dict]]] = {}
        self._sha: dict[int, tuple[Any, str]] = {}

    @classmethod
    def from_demo_corpus(cls, root: str | Path = DEMO_CORPUS, **kwargs) -> SimulatedRetriever:
        from PIL import Image

        root = Path(root)
        docs = [json.loads(line) for line in (root / "docs.jsonl").read_text().splitlines() if line.strip()]
        images = []
        for line in (root / "images.jsonl").read_text().splitlines():
            if line.strip():
                meta = json.loads(line)
                with Image.open(root / meta["file"]) as im:
                    meta["image"] = im.convert("RGB")
                images.append(meta)
        return cls(docs, images, **kwargs)

    async def _wait(self, seconds: float) -> None:
        if seconds:
            await asyncio.sleep(seconds)

    def _rank(self, query: str, items: list[dict], text_of: Callable[[dict], str], k: int) -> list[dict]:
        """The ``k`` items sharing most content words with ``query`` (ties: corpus order)."""
        index = self._index_of(items, text_of)
        scores: dict[int, int] = {}
        for w in words(query):
            for i in index.get(w, ()):
                scores[i] = scores.get(i, 0) + 1
        return [items[i] for i in sorted(scores, key=lambda i: (-scores[i], i))[:k]]

    def _index_of(self, items: list[dict], text_of: Callable[[dict], str]) -> dict[str, list[int]]:
        """word -> positions of the items holding it; rebuilt when the list's items change."""
        ids = tuple(map(id, items))
        known = self._indexes.get(id(items))
        if known is None or known[0] != ids:
            index: dict[str, list[int]] = {}
            for i, it in enumerate(items):
                for w in self._words_of(it, text_of):
                    index.setdefault(w, []).append(i)
            known = self._indexes[id(items)] = (ids, index)
        return known[1]

    def _words_of(self, item: dict, text_of: Callable[[dict], str]) -> set[str]:
        key = (id(item), item.get("id", ""))
        found = self._item_words.get(key)
        if found is None:
            found = self._item_words[key] = words(text_of(item))
        return found

    async def search_text(self, query: str, k: int = 10) -> SimOutcome:
        self.calls["search_text"] += 1
        await self._wait(self.search_latency_s)
        if self.fail_search:
            return SimOutcome(query, failures=[{"backend": "simulated", "kind": "error", "detail": "service down"}], backend=None)
        docs = self._rank(query, self.docs, lambda d: d["title"] + " " + d["text"], k)
        hits = [TextHit(title=d["title"], url=f"corpus://doc/{d['id']}", snippet=d["text"][:160], rank=i,
                        backend="simulated") for i, d in enumerate(docs, 1)]
        return SimOutcome(query, hits=hits)

    async def search_images(self, query: str, k: int = 10) -> SimOutcome:
        self.calls["search_images"] += 1
        await self._wait(self.search_latency_s)
        if self.fail_search:
            return SimOutcome(query, failures=[{"backend": "simulated", "kind": "error", "detail": "service down"}], backend=None)
        found = self._rank(query, self.images, lambda m: m["caption"], k)
        hits = [ImageHit(image_url=f"corpus://img/{m['id']}", page_url=f"corpus://doc/{m.get('doc_id')}",
                         title=m["caption"], rank=i, backend="simulated") for i, m in enumerate(found, 1)]
        return SimOutcome(query, hits=hits)

    async def read_page(self, url: str, query: str | None = None) -> Page | FetchFailure:
        self.calls["read_page"] += 1
        await self._wait(self.read_latency_s)
        if self.fail_reads:
            return FetchFailure(url=url, kind="http_error", detail="simulated 503")
        doc = self._find(url, self.docs, "corpus://doc/")
        if doc is None:
            return FetchFailure(url=url, kind="http_error", detail="404")
        return Page(url=url, final_url=url, title=doc["title"], text=doc["text"],
                    fetched_at="2025-01-01T00:00:00Z", status=200)

    async def fetch_image(self, url: str, page_url: str | None = None, *,
                          dedup: bool = True) -> FetchedImage | FetchFailure:
        self.calls["fetch_image"] += 1
        await self._wait(self.fetch_latency_s)
        if self.fail_fetches:
            return FetchFailure(url=url, kind="timeout", detail="simulated")
        meta = self._find(url, self.images, "corpus://img/")
        if meta is None:
            return FetchFailure(url=url, kind="http_error", detail="404")
        image = meta["image"]
        return FetchedImage(image=image, bytes_sha256=self._sha256(image), url=url, page_url=page_url,
                            width=image.width, height=image.height)

    def _find(self, url: str, items: list[dict], prefix: str) -> dict | None:
        """The item ``url`` names: the first whose ``prefix + id`` it is, as a scan would find
        (a map per list, rebuilt when the list's items change)."""
        ids = tuple(map(id, items))
        known = self._by_url.get((id(items), prefix))
        if known is None or known[0] != ids:
            by_url: dict[str, dict] = {}
            for it in items:
                by_url.setdefault(f"{prefix}{it['id']}", it)
            known = self._by_url[(id(items), prefix)] = (ids, by_url)
        return known[1].get(url)

    def _sha256(self, image: Any) -> str:
        """sha256 of the picture's pixel bytes, once per picture object."""
        known = self._sha.get(id(image))
        if known is None or known[0] is not image:
            import hashlib

            known = self._sha[id(image)] = (image, hashlib.sha256(image.tobytes()).hexdigest())
        return known[1]

    async def aclose(self) -> None:
        return None


# --------------------------------------------------------------------------- scripted backbone

# The replies are the agent's (each stage's SPEC carries its own): named, not imported, so
# llm/ stays below agent/ (as the backends of llm/__init__.BACKENDS are named).
RESPONDER = "orig_local.agent.simulate:orig_responder"


class SimulatedBackbone:
    """Chat backend ``simulated``: a ScriptedChatModel whose every reply is the stage's own
    simulated reply (:func:`orig_local.agent.simulate.orig_responder`, options as keyword
    arguments; ``responder`` replaces it), e.g. ``orig generate "..." --offline -s
    backbone.backend=simulated`` shows a complete, meaningful ORIG run over the demo corpus
    without any model."""

    def __new__(cls, config, cache=None, responder: Callable[..., Any] | None = None, **kwargs):
        from orig_local.llm.scripted import ScriptedChatModel

        reply = responder(**kwargs) if responder is not None else _default_responder()(**kwargs)
        model = ScriptedChatModel(config, cache=cache, replies=[reply], cycle=True)
        model.backend = "simulated"
        return model


def _default_responder() -> Callable[..., Any]:
    return _named(RESPONDER)


def _named(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


# Moved to the agent with the replies (issue 25); still importable from here, resolved lazily.
_MOVED = {"orig_responder": RESPONDER}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return _named(_MOVED[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
