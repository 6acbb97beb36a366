"""The agent at realistic size (issue 19): 12 pages of 20-30k characters over two rounds, the
default config, a backbone that replies like a real model (long, cut at the max_tokens it is
sent with). Consolidation must succeed on its first attempt, and a failed one must say so on the
row."""

from __future__ import annotations

import json
import re

import pytest
from realistic_support import PROMPT, SUBJECT, RealisticBackbone, planner, realistic_corpus

from orig_local.agent.agent import Agent
from orig_local.agent.config import AgentConfig


def _agent(chat, **cfg) -> Agent:
    config = AgentConfig(condition="orig_txt", fixed_rounds=2, **cfg)  # otherwise the defaults
    return Agent(chat, realistic_corpus(), config, reference_capacity=0, prompt_max_tokens=512)


@pytest.fixture(scope="module")
def run_at_scale():
    import asyncio

    chat = RealisticBackbone({"Plan": planner(3)}, max_facts=12)
    result = asyncio.run(_agent(chat).run(PROMPT))
    return chat, result


def test_consolidation_succeeds_first_time_at_defaults_and_realistic_size(run_at_scale):
    chat, res = run_at_scale
    read = [r for r in res.trace.records if r.step == "read_page" and not r.error]
    assert len(read) >= 6 and res.rounds == 2
    assert {len(t.text) for t in res.knowledge.texts} and len(res.knowledge.texts) >= 120  # a big K (12 facts a page)
    calls = [c for c in chat.replies if c[0] == "Consolidation"]
    assert len(calls) >= 2  # one per round at least
    # The default backbone max_tokens is 1,024; a ~2,000-token summary needs more: it is sent.
    assert chat.config.max_tokens == 1024
    for _name, sent, wrote, cut in calls:
        assert not cut and wrote > 1024, (sent, wrote)
    records = [r for r in res.trace.records if r.step == "consolidate"]
    assert records and all(r.error is None and r.attempts == 1 for r in records)
    assert not any("consolidation failed" in n for r in records for n in r.notes)
    assert res.status == "ok", res.failure


def test_a_failed_consolidation_is_on_the_row_warning():
    import asyncio

    from orig_local.evaluation.agent_adapter import to_output

    chat = RealisticBackbone({"Plan": planner(3), "Consolidation": lambda m, s: '{"reason": "merged", "stat'},
                             max_facts=12)
    res = asyncio.run(_agent(chat).run(PROMPT))
    assert res.status == "degraded"
    assert res.failure.startswith("knowledge consolidation failed") and "unmerged" in res.failure
    assert to_output(res).failure == res.failure  # the agent phase writes it as the row's warning


# --------------------------------------------------------------------------- consolidation loses nothing

GOLD = ["The Quillmere Tidal Observatory dome is sheathed in verdigris copper with violet glass ribs.",
        "A zinc heron statue balances on the Quillmere Tidal Observatory weather mast.",
        "The Quillmere Tidal Observatory entrance has twin basalt lions holding brass anchors.",
        "Eleven saffron pennants fly from the Quillmere Tidal Observatory parapet.",
        "The Quillmere Tidal Observatory clock face shows tide heights instead of hours.",
        "Crimson shutters frame the Quillmere Tidal Observatory tide-gauge windows."]


def _gold_corpus():
    from realistic_support import page_text

    from orig_local.llm.simulated import SimulatedRetriever

    text = " ".join(GOLD) + " " + page_text(0, "part0", 25_000, seed=7)  # a 25k-character page
    return SimulatedRetriever([{"id": "gold", "title": f"{SUBJECT} guide", "text": text}], [])


def _cited_ids(messages) -> list[list[str]]:
    from orig_local.agent.simrequest import blocks as _blocks

    text = next(m for m in messages if m.role == "user").text
    return [[e.strip() for e in i.split(",")] for i, _ in _blocks(text)]


async def test_a_vague_statement_citing_every_id_loses_no_detail():
    def vague(messages, schema):
        ids = sorted({i for group in _cited_ids(messages) for i in group})
        return json.dumps({"reason": "merged", "statements": [
            {"evidence": ids, "text": "The Quillmere Tidal Observatory has many notable architectural features."}]})

    def gold_facts(messages, schema):  # the filter extracts the six details of the page
        return json.dumps({"reason": "about it", "relevant": True, "consistent": True, "facts": GOLD})

    chat = RealisticBackbone({"Consolidation": vague, "TextFilter": gold_facts})
    cfg = AgentConfig(condition="orig_txt", fixed_rounds=1, consolidate_min_tokens=0)  # the merge call on this small K
    res = await Agent(chat, _gold_corpus(), cfg, reference_capacity=0, prompt_max_tokens=512).run(PROMPT)
    rec = next(r for r in res.trace.records if r.step == "consolidate")
    assert rec.output["vague"] and not any("many notable" in f.text for f in res.knowledge.summary)
    for fact in GOLD:  # every detail is still in K's summary and reaches P̂
        assert any(fact in f.text for f in res.knowledge.summary), fact
        assert fact.rstrip(".") in res.final_prompt, fact


async def test_an_unsupported_detail_never_reaches_the_prompt():
    from realistic_support import consolidation_reply

    from orig_local.llm.tokens import default_counter

    honest = consolidation_reply(default_counter())

    def embellish(messages, schema):
        reply = json.loads(honest(messages, schema))
        st = next(s for s in reply["statements"] if "zinc heron" in s["text"])
        st["text"] += " The heron wears a gilded crown shaped like a whale with ruby eyes."
        return json.dumps(reply)

    chat = RealisticBackbone({"Consolidation": embellish}, max_facts=6)
    cfg = AgentConfig(condition="orig_txt", fixed_rounds=1, consolidate_min_tokens=0)  # the merge call on this small K
    res = await Agent(chat, _gold_corpus(), cfg, reference_capacity=0, prompt_max_tokens=512).run(PROMPT)
    rec = next(r for r in res.trace.records if r.step == "consolidate")
    assert any("whale" in s for s in rec.output["unsupported"])
    assert "whale" not in res.final_prompt and "ruby" not in res.final_prompt
    assert "zinc heron statue" in res.final_prompt  # its evidence is kept (carried over)


async def test_coverage_is_per_evidence_id_across_rounds():
    """Round 1 merges entries in pairs; round 2 rewrites each pair citing only its first id.
    Every K entry must still be covered by a statement that keeps its details."""
    from realistic_support import consolidation_reply

    from orig_local.llm.tokens import default_counter

    honest = consolidation_reply(default_counter())
    calls = []

    def sloppy(messages, schema):
        from orig_local.agent.simrequest import blocks as _blocks

        calls.append(1)
        blocks = _blocks(next(m for m in messages if m.role == "user").text)
        if len(calls) == 1:  # pairs: one statement of two entries, citing both
            pairs = [blocks[i:i + 2] for i in range(0, len(blocks), 2)]
            return json.dumps({"reason": "pairs", "statements": [
                {"evidence": [b[0] for b in p], "text": " ".join(b[1] for b in p)} for p in pairs]})
        earlier = [(i.split(","), b) for i, b in blocks if "," in i]
        new = json.loads(honest(messages, schema))["statements"]
        new = [s for s in new if len(s["evidence"]) == 1 and "," not in s["evidence"][0]]
        return json.dumps({"reason": "shortened", "statements": [
            {"evidence": [ids[0]], "text": re.split(r"(?<=\.)\s+", b)[0]} for ids, b in earlier] + new})

    chat = RealisticBackbone({"Plan": planner(3), "Consolidation": sloppy})
    res = await _agent(chat).run(PROMPT)
    assert len(calls) >= 2 and res.rounds == 2
    summary = res.knowledge.summary
    for t in res.knowledge.texts:
        citing = [f for f in summary if t.id in f.evidence]
        assert citing and any(t.text in f.text or f.text in t.text or t.text.split(": ", 1)[-1] in f.text
                              for f in citing), (t.id, t.text[:80])


# --------------------------------------------------------------------------- loop deviations


async def test_an_empty_first_round_searches_again_before_judging_sufficiency():
    """Round 1 rejects every page (20-30k characters each); the paper's loop plans new
    sub-queries instead of stopping with no_new_evidence, and round 2's facts are judged."""
    from orig_local.llm.simulated import orig_responder

    base = orig_responder()
    judged: list[str] = []

    def picky_filter(messages, schema):
        text = next(m for m in messages if m.role == "user").text
        if any(f"{topic} survey" in text for topic in ("wing0", "wing1", "wing2")):
            return json.dumps({"reason": "another building", "relevant": False, "consistent": True, "facts": []})
        return base(messages, schema)

    def sufficiency(messages, schema):
        judged.append(messages[-1].text)
        return json.dumps({"reason": "enough", "missing": [], "sufficient": True})

    chat = RealisticBackbone({"Plan": planner(3), "TextFilter": picky_filter, "Sufficiency": sufficiency})
    cfg = AgentConfig(condition="orig_txt", bootstrap=False)  # adaptive, max_rounds 3
    res = await Agent(chat, realistic_corpus(), cfg, reference_capacity=0, prompt_max_tokens=512).run(PROMPT)
    assert res.stop_reason == "sufficient" and res.rounds == 2
    assert len(judged) == 1 and "wing3" in judged[0]
    assert all(t.source.round == 2 for t in res.knowledge.texts) and len(res.knowledge.texts) >= 12
    assert any(r.step == "skipped" and r.stage == "sufficiency" and r.round == 1 for r in res.trace.records)


def _photo(seed: int):
    """A 1024x768 photo-like picture (gradients and shapes, not a flat colour)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:768, 0:1024]
    img = np.stack([(x * (seed + 1) // 5) % 256, (y * 3 + seed * 40) % 256,
                    ((x + y) // 4 + rng.integers(0, 30, (768, 1024))) % 256], axis=-1).astype("uint8")
    return Image.fromarray(img)


async def test_oracle_with_a_text_only_generator_describes_the_gold_images_in_words():
    from orig_local.agent.agent import OracleEvidence

    looks = ["teal tower wound with five orange spiral bands", "hexagonal lantern room with a copper cupola"]

    def visual(messages, schema):  # the model sees which gold photo it is (its pixels)
        images = next(m for m in messages if m.role == "user").images
        which = [im.to_pil().getpixel((0, 0))[1] // 40 - 1 for im in images]
        return json.dumps({"images": [{"image": i, "contributes": looks[w], "preserve": ["spiral bands"],
                                       "ignore": ["sky"]} for i, w in enumerate(which, 1)]})

    chat = RealisticBackbone({"VisualFeatures": visual})
    gold = OracleEvidence(text=[GOLD[0], GOLD[1]], images=[_photo(1), _photo(2)])
    for capacity, described in ((0, looks), (1, looks[1:])):
        cfg = AgentConfig(condition="oracle")
        res = await Agent(chat, None, cfg, reference_capacity=capacity, prompt_max_tokens=512).run(PROMPT, oracle=gold)
        assert len(res.references) == capacity
        for words in described:  # the gold images the generator does not get, in words
            assert words in res.final_prompt, (capacity, res.final_prompt)
        if capacity == 0:
            assert "reference image" not in res.final_prompt.lower()


def _image_corpus(n: int = 6):
    images = [{"id": f"img{i}", "caption": f"{SUBJECT} photo view{i // 3} seen from the quay {i}",
               "image": _photo(i + 3), "doc_id": f"wing0-{i % 2}"} for i in range(n)]
    return realistic_corpus(topics=2, images=images)


@pytest.mark.parametrize("keep", [[], [{"reason": "shows the violet glass ribs of the dome", "image": 2}]])
async def test_refinement_keeps_at_least_one_reference_when_images_passed(keep):
    def refined(messages, schema):
        return json.dumps({"features": ["copper dome with violet glass ribs"], "keep_images": keep})

    chat = RealisticBackbone({"Plan": planner(1, image_queries=1), "RefinedText": refined})
    cfg = AgentConfig(condition="orig", fixed_rounds=1, bootstrap=False)
    res = await Agent(chat, _image_corpus(), cfg, reference_capacity=3, prompt_max_tokens=512).run(PROMPT)
    passed = [v for v in res.knowledge.images]
    assert passed and all(v.image.size == (1024, 768) for v in passed)
    assert len(res.references) == 1  # never none when images passed the filter
    rec = next(r for r in res.trace.records if r.step == "text_features")
    if keep:
        assert res.reference_notes[0].reason == keep[0]["reason"]
    else:
        assert any("kept no image" in n for n in rec.notes)


def _citing_extension(messages, schema):
    """P̂ citing the three references out of order, as models do: bare, ordinal and plural."""
    from orig_local.agent.simrequest import after as _after
    from orig_local.agent.simrequest import blocks as _blocks

    text = next(m for m in messages if m.role == "user").text
    refs = [b.split(";")[0] for _, b in _blocks(_after(text, "\nReference images:"))]
    parts = [f"{PROMPT}, drawn with the copper dome."]
    if len(refs) >= 3:
        parts += [f"As in image 3, show {refs[2]}.", f"The first image gives {refs[0]}.",
                  f"Reference images 2 and 3 both frame the quay; reference image 2 is {refs[1]}."]
    else:
        parts += [f"The provided photo gives {refs[0]}.", "Keep the railings as in image 2."]
    return json.dumps({"prompt": " ".join(parts)})


@pytest.mark.parametrize("capacity", [3, 1])
async def test_plural_bare_and_ordinal_citations_are_renumbered_to_the_right_images(capacity):
    keep = [{"reason": "r", "image": n} for n in (3, 1, 2)]
    chat = RealisticBackbone({"Plan": planner(1, image_queries=1), "Extension": _citing_extension,
                              "RefinedText": lambda m, s: json.dumps({"features": ["copper dome"], "keep_images": keep})})
    cfg = AgentConfig(condition="orig", fixed_rounds=1, bootstrap=False)
    res = await Agent(chat, _image_corpus(), cfg, reference_capacity=capacity, prompt_max_tokens=512).run(PROMPT)
    assert len(res.references) == capacity
    captions = [v.description for v in res.references]
    final = res.final_prompt
    # every single citation names the picture it describes, under the new numbers
    for m in re.finditer(r"[Rr]eference image (\d+)(?: gives| is|, show) ([^.;]+)", final):
        n, said = int(m.group(1)), m.group(2).strip()
        assert 1 <= n <= capacity and captions[n - 1].startswith(said.split(";")[0][:40]), (final, captions)
    assert re.search(r"\bimages? \d", final.replace("eference image", "")) is None  # no uncanonical citation left
    if capacity == 1:
        assert "railings" not in final  # cited image 2, which the generator does not get
        assert "Reference image 1 gives" in final
    else:
        assert "Reference images 3 and 1 both frame the quay" in final, final
