"""Stand-ins for dry runs, tests and the orchestration benchmark (no model, no network).

* :class:`SimulatedRetriever` — the :class:`~orig_local.agent.stages.base.RetrieverLike`
  interface over an in-memory corpus (by default the bundled demo corpus), with fixed latencies
  and switchable failures (search, page reads, image fetches).
* :func:`orig_responder` — a reply function for :class:`~orig_local.llm.scripted.ScriptedChatModel`
  that answers every agent request by its schema name (``schema.__name__``), reading the
  evidence out of the rendered request: it keeps every page sentence as a fact, keeps every
  image, and writes the final prompt from the descriptors. It follows the packaged templates'
  layout; a copied prompt folder with a different layout needs its own responder.
"""

from __future__ import annotations

import asyncio
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


def _words(text: str) -> set[str]:
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
        q = _words(query)
        scored = [(len(q & self._words_of(it, text_of)), i, it) for i, it in enumerate(items)]
        scored = [s for s in scored if s[0] > 0]
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [it for _, _, it in scored[:k]]

    def _words_of(self, item: dict, text_of: Callable[[dict], str]) -> set[str]:
        key = (id(item), item.get("id", ""))
        words = self._item_words.get(key)
        if words is None:
            words = self._item_words[key] = _words(text_of(item))
        return words

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
        doc = next((d for d in self.docs if f"corpus://doc/{d['id']}" == url), None)
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
        meta = next((m for m in self.images if f"corpus://img/{m['id']}" == url), None)
        if meta is None:
            return FetchFailure(url=url, kind="http_error", detail="404")
        image = meta["image"]
        import hashlib

        sha = hashlib.sha256(image.tobytes()).hexdigest()
        return FetchedImage(image=image, bytes_sha256=sha, url=url, page_url=page_url, width=image.width,
                            height=image.height)

    async def aclose(self) -> None:
        return None


# --------------------------------------------------------------------------- scripted backbone


def _after(text: str, marker: str) -> str:
    i = text.find(marker)
    return "" if i < 0 else text[i + len(marker):]


def _prompt_of(text: str) -> str:
    for line in text.splitlines():
        for label in ("User prompt: ", "Prompt: "):
            if line.startswith(label):
                return line[len(label):].strip()
    return ""


_DATA = re.compile(r'<data id="([^"]*)">(.*?)</data>', re.S)


def _blocks(text: str) -> list[tuple[str, str]]:
    """The (id, content) of every data block in ``text``, in order; a list block's entries
    (:func:`orig_local.agent.untrusted.list_block`) each as its own (ids, text)."""
    out: list[tuple[str, str]] = []
    for m in _DATA.finditer(text):
        if m.group(1) == "list":
            out += [(i, t.strip()) for i, _, t in (ln.partition(": ") for ln in m.group(2).strip().splitlines())]
        else:
            out.append((m.group(1), m.group(2).strip()))
    return out


_TITLE_PREFIX = re.compile(r"^(?:[^.:]{1,80}?:\s+)+(?=[A-Z0-9])")


def _merge_statements(entries: list[tuple[list[str], str]]) -> list[tuple[list[str], str]]:
    """Deduplicate statements the way a careful model would, deterministically: entries are
    split into sentences (a snippet's "Title: " prefix dropped); a sentence cut off mid-way (a
    search snippet's end) is left out; a sentence whose words another sentence already says
    is folded into it, its evidence ids moving along."""
    parts: list[tuple[list[str], str]] = []
    fragments: list[tuple[list[str], str]] = []
    for ids, text in entries:
        for sentence in re.split(r"(?<=[.!?])\s+", _TITLE_PREFIX.sub("", text.strip())):
            sentence = sentence.strip()
            if len(sentence) > 10:
                (parts if sentence[-1] in ".!?" else fragments).append((list(ids), sentence))
    for ids, fragment in fragments:  # a cut-off snippet end: folded into what says it in full
        fw = _words(fragment)
        best = max(range(len(parts)), key=lambda j: len(fw & _words(parts[j][1])), default=None)
        if best is not None and len(fw & _words(parts[best][1])) >= 0.6 * len(fw):
            parts[best] = (list(dict.fromkeys(parts[best][0] + ids)), parts[best][1])
        else:
            parts.append((list(ids), fragment.rsplit(" ", 1)[0] + "."))
    words = [_words(t) for _, t in parts]
    alive = list(range(len(parts)))
    for i in sorted(range(len(parts)), key=lambda i: (len(words[i]), i)):  # shortest first
        others = [j for j in alive if j != i and words[j]]
        if not words[i] or not others:
            continue
        best = max(others, key=lambda j: (len(words[i] & words[j]), -j))
        if len(words[i] & words[best]) >= 0.85 * len(words[i]):
            alive.remove(i)
            # the same statement twice: keep the plainer (shorter) wording
            same = len(words[i] & words[best]) >= 0.85 * len(words[best])
            text = parts[i][1] if same and len(parts[i][1]) < len(parts[best][1]) else parts[best][1]
            parts[best] = (list(dict.fromkeys(parts[best][0] + parts[i][0])), text)
    return [parts[i] for i in sorted(alive)]


def orig_responder(*, sufficient: bool | Callable[[str], bool] = True, max_facts: int = 12,
                   image_queries: bool = True) -> Callable[[list, Any], str]:
    """A ``(messages, schema) -> str`` reply function for the whole agent (see module doc).

    ``sufficient``: the sufficiency verdict (or a function of the rendered request)."""

    def reply(messages, schema) -> str:
        request = next(m for m in messages if m.role == "user")  # a retry appends more turns
        text = request.text
        name = getattr(schema, "__name__", "")
        prompt = _prompt_of(text)
        n_images = len(request.images)
        if name == "BootstrapPlan":
            return json.dumps({"entities": [{"name": prompt, "why": "specific"}], "queries": [prompt]})
        if name == "PageSelection":
            return json.dumps({"reason": "most specific", "chosen": [1, 2]})
        if name == "Plan":
            searched_line = _after(text, "Already searched: ").split("\n")[0]
            searched = {q.strip().lower() for _, q in _blocks(searched_line)}
            options = [prompt + s for s in ("", " details", " appearance", " colours", " history", " shape")]
            fresh = [q for q in options if q.lower() not in searched]
            tq, iq = fresh[:1], fresh[1:2] if image_queries else []
            return json.dumps({"analysis": "need appearance", "sub_questions": [
                {"question": f"What does {prompt} look like?", "modality": "image", "reason": "appearance"}],
                "text_queries": tq, "image_queries": iq})
        if name == "TextFilter":
            page = next((b for i, b in _blocks(text) if i == "P"), "")
            body = page.split("\n", 2)[-1]  # title and URL lines first
            body = "\n".join(ln for ln in body.splitlines() if not ln.lstrip().startswith("#"))  # headings
            facts = [s.strip() for s in re.split(r"(?<=[.!?])\s+", body) if len(s.strip()) > 10]
            return json.dumps({"reason": "about the prompt", "relevant": True, "consistent": True,
                               "facts": facts[:max_facts]})
        if name == "ImageFilter":
            titles = {i: b.split("\n")[0] for i, b in _blocks(text) if re.fullmatch(r"I\d+", i)}
            return json.dumps({"decisions": [{"image": i, "shows": titles.get(f"I{i}", f"candidate {i}"),
                                              "reason": "fits", "keep": True}
                                             for i in range(1, n_images + 1)]})
        if name == "Consolidation":
            entries = [([e.strip() for e in i.split(",")], b) for i, b in _blocks(text)]
            merged = _merge_statements(entries)
            return json.dumps({"reason": "merged repeats", "statements": [
                {"evidence": ids, "text": t} for ids, t in merged]})
        if name == "Sufficiency":
            ok = sufficient(text) if callable(sufficient) else sufficient
            return json.dumps({"reason": "checked", "missing": [] if ok else ["more detail"], "sufficient": ok})
        if name == "RefinedText":
            knowledge = _after(text, "\nKnowledge:\n").split("\nImages (", 1)[0]
            facts = [b for i, b in _blocks(knowledge)]
            # the statements most about the prompt's subject first (stable), as a model would
            want = _words(prompt)
            chosen = set(sorted(range(len(facts)), key=lambda i: (-len(_words(facts[i]) & want), i))[:max_facts])
            facts = [f for i, f in enumerate(facts) if i in chosen]  # K's order among those chosen
            # the images shown, or (no pixels sent) the images described
            listed = n_images or len([i for i, _ in _blocks(_after(text, "\nImages (")) if re.fullmatch(r"I\d+", i)])
            return json.dumps({"features": facts, "keep_images": [
                {"reason": "shows the subject", "image": i} for i in range(1, listed + 1)]})
        if name == "VisualFeatures":
            shows = {i: b.split("\n")[0] for i, b in _blocks(text) if re.fullmatch(r"I\d+", i)}
            return json.dumps({"images": [{"image": i, "contributes": shows.get(f"I{i}", f"the look of image {i}"),
                                           "preserve": ["colours", "shape"], "ignore": ["background"]}
                                          for i in range(1, (n_images or len(shows)) + 1)]})
        if name == "Extension":
            section = _after(text, "Visual descriptors:").split("\nReference images:", 1)[0]
            features = [b.rstrip(".") + "." for i, b in _blocks(section)]
            refs = " ".join(f"Reference image {n} shows {b.split(';')[0]}: keep its look." for n, (i, b) in enumerate(
                _blocks(_after(text, "\nReference images:")), 1))
            return json.dumps({"prompt": f"{prompt.rstrip('.')}. {' '.join(features)} {refs}".strip()})
        if name == "EnhancedPrompt":
            return json.dumps({"prompt": f"{prompt}, rendered in rich, accurate detail."})
        raise ValueError(f"orig_responder: no scripted answer for schema {name!r}")

    return reply


class SimulatedBackbone:
    """Chat backend ``simulated``: a ScriptedChatModel whose every reply is
    :func:`orig_responder`'s (e.g. ``orig generate "..." --offline -s backbone.backend=simulated``
    shows a complete, meaningful ORIG run over the demo corpus without any model)."""

    def __new__(cls, config, cache=None, **kwargs):
        from orig_local.llm.scripted import ScriptedChatModel

        model = ScriptedChatModel(config, cache=cache, replies=[orig_responder(**kwargs)], cycle=True)
        model.backend = "simulated"
        return model
