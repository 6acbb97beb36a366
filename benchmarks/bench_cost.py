"""What one ORIG prompt costs in backbone input tokens on realistic evidence, and what it keeps.

    python benchmarks/bench_cost.py [--rounds 1 2] [--prompts 3] [--legacy]

A realistic offline corpus, built in memory and deterministic: long pages (20-30k characters)
about a fictional entity, full of prose that does not help draw it (history, administration,
things with similar names), with gold visual facts planted at known depths (5 % ... 90 % of
the page); distractor pages about look-alike entities; 1024x768 pictures. The backbone is
scripted with replies shaped like a real model's: the text filter keeps the page's sentences
about the subject's appearance (a real model reads what it is shown and extracts what the
instructions ask for, not the first sentences), the image filter keeps what fits, sufficiency
says "enough" after the requested number of rounds.

Every request the agent makes is counted as Qwen2.5-VL sees it (:mod:`orig_local.llm.tokens`:
real Qwen2 BPE when available, else a labelled estimate; images with the preset's pixel rule).
Printed per run: input tokens per stage and in total, per loop round, the cacheable share
(tokens a prefix cache can reuse: the longest prefix, in whole 16-token blocks, shared with an
earlier request of the same prompt, or with the same stage's request of another prompt), and
gold-fact recall: which planted facts reach each stage's request, K, refinement's request and
the final prompt P̂.

``--legacy`` settings turn off issue 22's settings (images at full size to every stage that took
them, the head of each page to the text filter, a merge call every round) on today's instructions and evidence layout
(shorter than before issue 22; the figures of the code before it are in docs/cost.md): both are
printed side by side.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import footer, header

SUBJECT = "Korvath Tidal Observatory"
PROMPTS = [
    "The Korvath Tidal Observatory on Merrow Point at dusk",
    "A postcard view of the Korvath Tidal Observatory seen from the tidal flats",
    "Tourists climbing the outside staircase of the Korvath Tidal Observatory",
]
# Gold facts: each carries one marker word found nowhere else in the corpus.
GOLD = {
    "verdigris": "The Korvath Tidal Observatory has a copper dome streaked with verdigris green.",
    "octagonal": "The main tower of the Korvath Tidal Observatory is octagonal and built of pale ochre sandstone.",
    "anemometer": "Three slender white anemometer masts stand on the north terrace of the Korvath Tidal Observatory.",
    "dolphin": "A crimson weather vane shaped like a leaping dolphin crowns the dome of the Korvath Tidal Observatory.",
    "lancet": "The twelve lancet windows of the Korvath Tidal Observatory are framed in dark grey stone.",
    "lanterns": "At dusk the Korvath Tidal Observatory lights a ring of amber lanterns around its gallery.",
    "basalt": "The Korvath Tidal Observatory stands on a black basalt promontory above the tidal flats.",
    "spiral": "A teal iron spiral staircase winds up the outside of the Korvath Tidal Observatory tower.",
}
# (page, marker, depth as a fraction of the page)
PLANTED = [(0, "verdigris", 0.06), (0, "lancet", 0.72), (1, "octagonal", 0.33), (1, "spiral", 0.91),
           (2, "anemometer", 0.52), (2, "basalt", 0.17), (3, "dolphin", 0.81), (3, "lanterns", 0.44)]
VISUAL = {"colour", "color", "green", "white", "crimson", "amber", "teal", "grey", "black", "ochre", "dome",
          "tower", "windows", "staircase", "vane", "masts", "sandstone", "copper", "iron", "stone", "shaped"}


def _filler(rng: random.Random, n_chars: int, topic: str) -> str:
    """Prose that mentions the subject but says nothing a picture needs (history, staff,
    funding, tides, a museum and a ferry of the same name)."""
    subjects = [topic, f"the {topic.split()[0]} Tidal Museum", "the Merrow Point ferry company",
                "the harbour board", f"the {topic.split()[0]} survey office", "the regional archive"]
    verbs = ["recorded", "published", "funded", "reorganised", "audited", "catalogued", "reported", "debated"]
    objects = ["tide tables for the northern coast", "the annual budget", "a report on silt deposits",
               "a revised schedule of readings", "staff rotas for the winter season", "letters from the ministry",
               "measurements of the spring tides", "a dispute over mooring fees", "the transfer of its library"]
    out, size = [], 0
    while size < n_chars:
        s = (f"In {rng.randint(1850, 2020)}, {rng.choice(subjects)} {rng.choice(verbs)} "
             f"{rng.choice(objects)}, according to {rng.choice(['minutes', 'records', 'the gazette', 'a memoir'])} "
             f"of {rng.choice(['the period', 'the council', 'its director', 'a local historian'])}.")
        if rng.random() < 0.15:
            s = f"\n\n{s}"
        out.append(s)
        size += len(s) + 1
    return " ".join(out)


def build_corpus(seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Relevant pages with planted facts, distractor pages, and 1024x768 pictures."""
    import numpy as np
    from PIL import Image

    rng = random.Random(seed)
    docs = []
    titles = [f"{SUBJECT} - history and architecture", f"Visiting the {SUBJECT}",
              f"The {SUBJECT}: a guide", f"{SUBJECT} restoration report"]
    for p, title in enumerate(titles):
        body = _filler(rng, rng.randint(20_000, 30_000), SUBJECT)
        for _page, marker, depth in sorted((x for x in PLANTED if x[0] == p), key=lambda x: -x[2]):
            at = body.find(". ", int(len(body) * depth)) + 2
            body = body[:at] + GOLD[marker] + " " + body[at:]
        docs.append({"id": f"korvath-{p}", "title": title, "text": body})
    for i, other in enumerate(["Korvath Tidal Museum", "Merrow Point ferry", "Korvath Valley observatory"]):
        docs.append({"id": f"other-{i}", "title": f"{other} (tidal records)",
                     "text": _filler(rng, rng.randint(20_000, 30_000), other)})
    images = []
    for i in range(12):
        arr = np.random.default_rng(seed + i).integers(0, 255, (24, 32, 3), dtype=np.uint8)
        pic = Image.fromarray(arr).resize((1024, 768), Image.Resampling.BICUBIC)
        kind = ["dome", "tower", "terrace", "staircase", "gallery", "promontory"][i % 6]
        images.append({"id": f"img-{i}", "caption": f"{SUBJECT} {kind} photograph", "image": pic,
                       "doc_id": f"korvath-{i % 4}"})
    return docs, images


def realistic_responder(rounds: int):
    """The simulated backbone's replies, but a text filter that extracts what the instructions
    ask for (appearance of the subject) from wherever it is in the text shown, and a
    sufficiency verdict after ``rounds`` rounds."""
    from orig_local.agent.simrequest import blocks as _blocks
    from orig_local.agent.simulate import orig_responder
    from orig_local.llm.simulated import words as _words

    base = orig_responder(sufficient=lambda _text: True)
    state = {"sufficiency": 0}
    subject = _words(SUBJECT)

    def reply(messages, schema) -> str:
        name = getattr(schema, "__name__", "")
        text = next(m for m in messages if m.role == "user").text
        if name == "TextFilter":
            page = next((b for i, b in _blocks(text) if i == "P"), "")
            sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", page.split("\n", 2)[-1]) if s.strip()]
            facts = [s for s in sentences if len(_words(s) & subject) >= 2 and _words(s) & VISUAL]
            return json.dumps({"reason": "describes the observatory", "relevant": bool(facts),
                               "consistent": True, "facts": facts[:8]})
        if name == "Sufficiency":
            state["sufficiency"] += 1
            ok = state["sufficiency"] >= rounds
            return json.dumps({"reason": "checked", "missing": [] if ok else ["colours of the tower"],
                               "sufficient": ok})
        return base(messages, schema)

    return reply


@dataclass
class Count:
    stage: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(float)))
    total: float = 0
    cacheable: float = 0
    cacheable_cross: float = 0
    rounds: int = 0
    recall: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))  # union over prompts
    recall_sum: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # summed per prompt
    prompts: int = 0
    templates: dict[str, str] = field(default_factory=dict)  # stage/step -> its template
    knowledge: list[list[int]] = field(default_factory=list)  # per prompt: K's size at each round's check


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _text_prefix(messages: list[dict]) -> str:
    """The request as the chat template lays it out, up to its first image."""
    out = ""
    for m in messages:
        out += f"<|im_start|>{m['role']}\n"
        for p in m["parts"]:
            if not isinstance(p, str):
                return out
            out += p
        out += "<|im_end|>\n"
    return out


class _AgentCounter:
    """The bench's exact text counter as the agent's budget counter (``label`` in the trace)."""

    def __init__(self, counter):
        self.counter, self.label = counter, f"tokenizer:{counter.name}"

    def count(self, text: str) -> int:
        return self.counter.count(text)


async def one_prompt(prompt: str, rounds: int, settings: dict[str, Any], docs, images, counter, max_pixels: int,
                     seen: dict[str, str], out: Count) -> None:
    from bench_tokens import Recorder

    from orig_local.agent.agent import Agent
    from orig_local.agent.config import AgentConfig
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel
    from orig_local.llm.simulated import SimulatedRetriever
    from orig_local.llm.tokens import count_request

    recorder = Recorder(realistic_responder(rounds))
    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="sim"), replies=[recorder], cycle=True)
    cfg = AgentConfig(**settings)
    # budgets counted as a real run counts them: with the backbone's tokenizer where one is
    # cached (build_agent's make_token_counter), else the agent's own estimate
    agent = Agent(chat, SimulatedRetriever(docs, images), cfg,
                  tokens=_AgentCounter(counter) if counter.exact else None)
    result = await agent.run(prompt)
    if result.error or result.rounds != rounds:
        raise SystemExit(f"run failed or ran {result.rounds} rounds: {result.error}")
    out.rounds += result.rounds
    out.knowledge.append(knowledge_sizes(result, counter.count))
    _check_sizes(result, agent.budget.counter.count)
    earlier: list[str] = []
    mine: dict[str, set[str]] = defaultdict(set)  # this prompt's
    out.prompts += 1
    for r in result.trace.records:
        if not r.messages:
            continue
        got = count_request(r.messages, counter, image_size=recorder.size, max_pixels=max_pixels)
        row = out.stage[f"{r.stage}/{r.step}"]
        out.templates[f"{r.stage}/{r.step}"] = r.template
        row["calls"] += 1
        row["text"] += got.text
        row["image"] += got.image
        row["images"] += got.images
        row["decode"] += counter.count(json.dumps(r.output, ensure_ascii=False)) if r.output is not None else 0
        out.total += got.total
        prefix = _text_prefix(r.messages)
        within = max((_common(prefix, e) for e in earlier), default=0)
        cross = max(within, _common(prefix, seen.get(r.step, "")))
        for value, attr in ((within, "cacheable"), (cross, "cacheable_cross")):
            setattr(out, attr, getattr(out, attr) + counter.count(prefix[:value]) // 16 * 16)
        row["cacheable"] += counter.count(prefix[:within]) // 16 * 16
        earlier.append(prefix)
        seen.setdefault(r.step, prefix)
        request = json.dumps(r.messages, ensure_ascii=False).lower()
        mine[f"{r.stage}/{r.step}"] |= {m for m in GOLD if m in request}
    mine["K (knowledge base)"] |= {m for m in GOLD for t in result.knowledge.texts if m in t.text.lower()}
    mine["P̂ (final prompt)"] |= {m for m in GOLD if m in result.final_prompt.lower()}
    for k, v in mine.items():
        out.recall[k] |= v
        out.recall_sum[k] += len(v)


def knowledge_sizes(result: Any, count: Any) -> list[int]:
    """K's size in tokens (``count``) at each round's consolidation check, as consolidation.py
    measures it: the summary so far plus the entries not folded in yet (bootstrap's join round
    1's). Rebuilt from the final K, which is exact while no merge call was made: folding leaves
    a statement's text and first evidence id as they were when it joined; after a merge call
    the sizes are not recorded (None)."""
    if any(r.step == "consolidate" and r.messages for r in result.trace.records):
        return []
    kb = result.knowledge
    joined = {t.id: max(t.source.round, 1) for t in kb.texts}
    return [sum(count(f.text) for f in kb.summary if joined[f.evidence[0]] < r)
            + sum(count(t.text) for t in kb.texts if joined[t.id] == r) for r in range(1, result.rounds + 1)]


def legacy_settings() -> dict[str, Any]:
    """Settings that reproduce the agent before issue 22 (see --legacy)."""
    from orig_local.agent.config import AgentConfig

    fields = AgentConfig.model_fields
    out: dict[str, Any] = {}
    if "images" in fields:
        out["images"] = {"image_filter": None, "text_features": None, "visual_features": None, "extension": None}
    if "page_text" in fields:
        out["page_text"] = "head"
    if "max_page_tokens" in fields:
        out["max_page_tokens"] = 3000
    if "consolidate_min_tokens" in fields:
        out["consolidate_min_tokens"] = 0
    return out


def run_setting(rounds: int, legacy: bool, prompts: list[str], docs, images, counter, max_pixels: int,
                overrides: dict[str, Any] | None = None) -> Count:
    """Every prompt at ``rounds`` rounds, with --legacy's settings or the defaults, and ``overrides``."""
    out = Count()
    seen: dict[str, str] = {}
    settings = {**(legacy_settings() if legacy else {}), **(overrides or {})}
    for p in prompts:
        asyncio.run(one_prompt(p, rounds, settings, docs, images, counter, max_pixels, seen, out))
    return out


def print_setting(label: str, c: Count, n_prompts: int, rounds: int) -> None:
    per_prompt = c.total / n_prompts
    print(f"\n### {label}: {rounds} loop round(s), {n_prompts} prompt(s)")
    print("| stage/step | calls | text | images (n) | image tokens | cacheable (same prompt) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in c.stage.items():
        print(f"| {name} | {row['calls'] / n_prompts:.1f} | {row['text'] / n_prompts:,.0f} | "
              f"{row['images'] / n_prompts:.1f} | {row['image'] / n_prompts:,.0f} | {row['cacheable'] / n_prompts:,.0f} |")
    print(f"input tokens per prompt: {per_prompt:,.0f}; per prompt per loop round: {per_prompt / rounds:,.0f}")
    print(f"cacheable: {c.cacheable / c.total:.0%} within a prompt's own requests, "
          f"{c.cacheable_cross / c.total:.0%} with the same stage's request of other prompts in flight too "
          f"(new tokens per prompt: {(c.total - c.cacheable_cross) / n_prompts:,.0f})")


def _per_call(c: Count) -> dict[str, dict[str, Any]]:
    return {name: {"template": c.templates[name], "text": round(row["text"] / row["calls"]),
                   "decode": round(row["decode"] / row["calls"])} for name, row in c.stage.items() if row["calls"]}


def reference(current: Count, rounds: int, prompts: list[str], corpus: tuple, counter, max_pixels: int) -> dict[str, Any]:
    """The cost plan's reference (orig_local/evaluation/costref.py says what each field is):
    per-call text and decode tokens per step at default settings (images are priced by the plan
    from the config's pixel bounds, so they are left out), the merge call's figures from a run
    that makes it every round, K's size at each round's check, and the fingerprint of what the
    figures depend on."""
    from orig_local.agent.config import AgentConfig
    from orig_local.evaluation.costref import fingerprint

    docs, images = corpus
    merged = run_setting(rounds, False, prompts, docs, images, counter, max_pixels, {"consolidate_min_tokens": 0})
    sized = current if all(current.knowledge) else run_setting(
        rounds, False, prompts, docs, images, counter, max_pixels, {"consolidate_min_tokens": 10**9})
    ours, merge = _per_call(current), _per_call(merged)
    order = list(dict.fromkeys([*merged.stage, *current.stage]))
    per_call = {name: ours.get(name) or merge[name] for name in order if name in ours or name == "accumulation/consolidate"}
    return {"source": f"benchmarks/bench_cost.py --write-reference: scripted backbone, {len(prompts)} prompt(s) x "
                      f"{rounds} round(s), default agent settings (the merge call: consolidate_min_tokens=0), "
                      f"text counted with {counter.name}",
            "counter": counter.name, "exact": counter.exact,
            "max_page_tokens": AgentConfig().max_page_tokens,
            **fingerprint([r["template"] for r in per_call.values()], counter),
            "knowledge_at_round": [round(sum(k[r] for k in sized.knowledge) / len(sized.knowledge)) for r in range(rounds)],
            "per_call": per_call}


def _check_sizes(result: Any, count: Any) -> None:
    """knowledge_sizes() rebuilds what the agent measured: where every round deferred its merge
    call, the sizes it noted (with its own counter, ``count``) must come out again."""
    noted = [r.output["knowledge_tokens"] for r in result.trace.records if r.step == "consolidation_deferred"]
    if len(noted) == result.rounds and noted != knowledge_sizes(result, count):
        raise SystemExit(f"K sizes rebuilt wrongly: agent noted {noted}, "
                         f"rebuilt {knowledge_sizes(result, count)}")


def print_recall(rows: dict[str, Count], stages: list[str]) -> None:
    names = list(rows)
    print(f"\n### Gold-fact recall: planted facts (of {len(GOLD)}) reaching each stage's requests, "
          "union over prompts (mean per prompt)")
    print("| stage | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for s in stages:
        print(f"| {s} | " + " | ".join(
            f"{len(rows[n].recall.get(s, set()))}/{len(GOLD)} ({rows[n].recall_sum.get(s, 0) / rows[n].prompts:.1f})"
            for n in names) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 2], help="loop rounds per run")
    parser.add_argument("--prompts", type=int, default=3, help="prompts per setting (1-3)")
    parser.add_argument("--preset", default="qwen2.5-vl-7b", help="backbone preset (its max_pixels)")
    parser.add_argument("--only", choices=["legacy", "current"], help="run one setting only")
    parser.add_argument("--write-reference", metavar="PATH",
                        help="write the current defaults' per-call figures of the last --rounds value as JSON "
                             "(the cost plan's reference: orig_local/evaluation/cost_reference.json; "
                             "tests/test_cost_reference.py says when it is stale)")
    args = parser.parse_args()

    from orig_local.llm.tokens import DEFAULT_MAX_PIXELS, load_counter
    from orig_local.presets import load_preset

    preset = load_preset(args.preset)
    # the preset's pixel cap as the agent and the cost plan read it (ServeSpec.max_pixels)
    max_pixels = (preset.serve.max_pixels if preset.serve else None) or DEFAULT_MAX_PIXELS
    counter = load_counter()
    header("Backbone input tokens per prompt on realistic evidence (deterministic; no spread)",
           preset=args.preset, max_pixels=max_pixels, text_counter=counter.name, prompts=args.prompts)
    if not counter.exact:
        print("  ** ESTIMATE: no Qwen2 tokenizer available here; text counts are approximate **")
    docs, images = build_corpus()
    print(f"corpus: {len(docs)} pages of {min(len(d['text']) for d in docs):,}-{max(len(d['text']) for d in docs):,} "
          f"characters ({len(GOLD)} gold facts planted at depths "
          f"{', '.join(f'{d:.0%}' for *_, d in sorted(PLANTED, key=lambda x: x[2]))}), {len(images)} images 1024x768")
    prompts = PROMPTS[: max(1, min(args.prompts, len(PROMPTS)))]
    settings = [s for s in ("legacy", "current") if args.only in (None, s)]
    for rounds in args.rounds:
        rows = {}
        for s in settings:
            label = "issue 22 settings off (--legacy)" if s == "legacy" else "current defaults"
            rows[s] = run_setting(rounds, s == "legacy", prompts, docs, images, counter, max_pixels)
            print_setting(label, rows[s], len(prompts), rounds)
        stages = list(dict.fromkeys(k for c in rows.values() for k in c.stage))  # pipeline order
        print_recall(rows, stages + ["K (knowledge base)", "P̂ (final prompt)"])
        if len(rows) == 2:
            a, b = (rows[s].total / len(prompts) / rounds for s in settings)
            na, nb = ((rows[s].total - rows[s].cacheable_cross) / len(prompts) / rounds for s in settings)
            print(f"\ninput tokens per prompt per round: {a:,.0f} -> {b:,.0f} ({b / a:.0%})"
                  f"   goal <= 8,000: {'MET' if b <= 8000 else 'MISSED'}")
            print(f"of which new (not cacheable):      {na:,.0f} -> {nb:,.0f} ({nb / na:.0%})")
        if args.write_reference and "current" in rows and rounds == args.rounds[-1]:
            from pathlib import Path

            ref = reference(rows["current"], rounds, prompts, (docs, images), counter, max_pixels)
            Path(args.write_reference).write_text(json.dumps(ref, indent=1) + "\n", encoding="utf-8")
    footer()


if __name__ == "__main__":
    main()
