"""Realistic sizes for agent tests (issue 19): web pages of 20-30k characters, 1024x768 images,
and a scripted backbone that replies like a real model would - long, imperfect, and cut at the
``max_tokens`` each call is sent with (``finish_reason="length"``), as vLLM cuts it.

``RealisticBackbone`` answers every schema through :func:`orig_local.llm.simulated.orig_responder`
except where a real model behaves differently at scale:

* consolidation writes about the number of tokens the request asks for ("Aim for about N
  tokens"), overshooting it by 15%, in statements that cite the blocks they merge; what does not
  fit that length it leaves out (the code must keep it);
* planning asks ``queries_per_round`` text queries per round, each about one topic of the corpus.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable

from orig_local.agent.simrequest import blocks as _blocks
from orig_local.agent.simulate import orig_responder
from orig_local.agent.stages.consolidation import _merge_statements
from orig_local.llm.base import BaseChatModel, Completion, Usage
from orig_local.llm.config import ChatConfig
from orig_local.llm.simulated import SimulatedRetriever

SUBJECT = "Quillmere Tidal Observatory"
PROMPT = f"The {SUBJECT} at noon"

_PARTS = ["gallery", "stair", "balcony", "lantern room", "archway", "buttress", "cornice", "portico",
          "spire", "terrace", "chimney", "gable", "colonnade", "parapet", "vestibule", "rotunda"]
_COLOURS = ["ochre", "teal", "crimson", "ivory", "cobalt", "amber", "slate", "olive", "saffron", "umber",
            "jade", "maroon", "pewter", "coral", "indigo", "russet"]
_MATERIALS = ["basalt", "brass", "oak", "granite", "copper", "terracotta", "limestone", "cedar", "bronze",
              "marble", "sandstone", "zinc", "walnut", "slate tile", "glass brick", "iron"]
_THINGS = ["lamps", "shutters", "pillars", "gargoyles", "windows", "banners", "bells", "railings",
           "mosaics", "arches", "clocks", "weathervanes", "statues", "plaques", "lanterns", "benches"]
_VERBS = ["is lined with", "carries", "is crowned by", "holds", "is flanked by", "displays", "shelters"]


def topic(k: int) -> str:
    return f"wing{k}"


def page_text(k: int, part: str, chars: int, seed: int) -> str:
    """~``chars`` characters of distinct factual sentences about topic ``k`` of the subject."""
    rng = random.Random(seed)
    out, n = [], 0
    i = 0
    while n < chars:
        i += 1
        s = (f"The {rng.choice(_PARTS)} of the {SUBJECT} {topic(k)} {rng.choice(_VERBS)} {rng.randint(2, 99)} "
             f"{rng.choice(_COLOURS)} {rng.choice(_MATERIALS)} {rng.choice(_THINGS)} set in {part} "
             f"row r{seed}x{i}.")
        out.append(s)
        n += len(s) + 1
    return " ".join(out)


def realistic_corpus(topics: int = 6, pages_per_topic: int = 2, chars: tuple[int, int] = (20_000, 30_000),
                     images: list[dict] | None = None) -> SimulatedRetriever:
    """``topics`` x ``pages_per_topic`` pages of 20-30k characters (the title names the topic)."""
    docs = []
    for k in range(topics):
        for j in range(pages_per_topic):
            size = chars[0] + (k * pages_per_topic + j) * 997 % (chars[1] - chars[0])
            docs.append({"id": f"{topic(k)}-{j}", "title": f"{SUBJECT} {topic(k)} survey part {j}",
                         "text": page_text(k, f"part{j}", size, seed=100 * k + j)})
    return SimulatedRetriever(docs, images or [])


def planner(queries_per_round: int = 3, image_queries: int = 0) -> Callable:
    """Round r asks about topics (r-1)*n ... r*n-1 (text), and ``image_queries`` image queries."""
    asked: list[int] = []

    def reply(messages, schema):
        start = len(asked) * queries_per_round
        asked.append(1)
        tq = [f"{SUBJECT} {topic(start + j)}" for j in range(queries_per_round)]
        iq = [f"{SUBJECT} photo view{start + j}" for j in range(image_queries)]
        return json.dumps({"analysis": "cover every wing", "sub_questions": [], "text_queries": tq,
                           "image_queries": iq})

    return reply


def consolidation_reply(counter) -> Callable:
    """A model asked for "about N tokens": merges repeats, writes statements citing their
    blocks, up to ~1.15 N tokens of statement text, and leaves out what does not fit."""

    def reply(messages, schema):
        text = next(m for m in messages if m.role == "user").text
        m = re.search(r"[Aa]im for about (\d+) tokens", text)
        target = int(m.group(1)) if m else 2000
        entries = [([e.strip() for e in i.split(",")], b) for i, b in _blocks(text)]
        statements, used = [], 0
        for ids, t in _merge_statements(entries):
            cost = counter.count(t)
            if used + cost > 1.15 * target:
                break
            statements.append({"evidence": ids, "text": t})
            used += cost
        return json.dumps({"reason": "merged repeats, kept every concrete detail", "statements": statements},
                          indent=1)  # real models pretty-print long JSON: more tokens

    return reply


class RealisticBackbone(BaseChatModel):
    """See the module doc. ``overrides``: schema name -> ``(messages, schema) -> str``.
    ``replies`` records (schema name, max_tokens sent, reply tokens written, cut?) per call."""

    backend = "scripted"

    def __init__(self, overrides: dict[str, Callable] | None = None, config: ChatConfig | None = None, **kw):
        from orig_local.llm.tokens import default_counter

        super().__init__(config or ChatConfig(backend="scripted", model="realistic-scripted"))
        self.counter = default_counter()
        self.base = orig_responder(**kw)
        self.overrides = {"Consolidation": consolidation_reply(self.counter), **(overrides or {})}
        self.replies: list[tuple[str, int, int, bool]] = []

    async def _complete(self, messages, *, schema, temperature, max_tokens, logprobs) -> Completion:
        from orig_local.llm.tokens import count_request

        name = getattr(schema, "__name__", "")
        fn = self.overrides.get(name)
        text = fn(messages, schema) if fn else self.base(messages, schema)
        tokens = self.counter.count(text)
        cut = tokens > max_tokens
        if cut:  # as a server does: the reply stops at max_tokens, mid-JSON
            chars = int(len(text) * max_tokens / tokens)
            while self.counter.count(text[:chars]) > max_tokens:
                chars = int(chars * 0.95)
            text = text[:chars]
        self.replies.append((name, max_tokens, tokens, cut))
        return Completion(text=text, usage=Usage(count_request(messages, self.counter).total, min(tokens, max_tokens)),
                          finish_reason="length" if cut else "stop")
