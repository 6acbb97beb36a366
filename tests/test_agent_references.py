"""References the generator can use (issue 10 point 2) and refinement over all of K's images
(point 4): the agent selects at most what the generator takes, P̂ cites only those, and a
text-only generator gets the visual features as words, with no reference image mentioned."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest
from agent_support import PROMPT, RecordingGenerator, backbone, make_agent
from PIL import Image

from orig_local.agent.config import AgentConfig
from orig_local.agent.knowledge import KnowledgeBase, Source
from orig_local.agent.prompting import PromptLibrary
from orig_local.agent.stages.base import StageContext
from orig_local.agent.stages.refinement import refine
from orig_local.agent.trace import Trace

_MENTION = re.compile(r"reference|picture|photo", re.I)


@pytest.mark.parametrize("preset,capacity", [
    ("qwen-image", 0), ("flux.1-schnell", 0), ("flux.1-dev", 0), ("sd-3.5-large", 0),
    ("qwen-image-edit", 1), ("flux.1-kontext-dev", 1), ("qwen-image-edit-2509", 3),
    ("tiny-qwen-image", 0), ("tiny-qwen-image-edit", 1), ("tiny-qwen-image-edit-2509", 3),
])
def test_capacity_is_known_without_loading(preset, capacity):
    from orig_local.generation import GeneratorConfig, generator_capacity

    refs, tokens = generator_capacity(GeneratorConfig(preset=preset))
    assert refs == capacity and tokens >= 32
    assert generator_capacity(GeneratorConfig(preset=preset, max_references=0))[0] == 0
    assert generator_capacity(GeneratorConfig()) is None


def test_capacity_lookup_imports_no_torch():
    import subprocess

    code = ("import sys; from orig_local.generation import GeneratorConfig, generator_capacity; "
            "print(generator_capacity(GeneratorConfig(preset='qwen-image-edit-2509'))); "
            "print('torch' in sys.modules, 'diffusers' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["(3, 512)", "False False"]


async def test_text_only_generator_gets_words_not_references():
    gen = RecordingGenerator(max_references=0)
    res = await make_agent(generator=gen).run(PROMPT)
    assert res.references == [] and gen.requests[0].references == []
    assert not _MENTION.search(res.final_prompt), res.final_prompt
    # The images were still looked at: their features went into F^t / the prompt text.
    assert any(r.step == "text_only_generator" for r in res.trace.records)
    assert any("lighthouse" in f.lower() for f in res.text_features)
    assert any("text-only generator" in n for n in res.notes)


async def test_text_only_generator_prompt_never_mentions_references_even_if_the_writer_does():
    def writer(messages, schema):
        return json.dumps({"prompt": "A striped lighthouse at dusk. Follow reference image 1 for the tower. "
                                     "The lantern is hexagonal, as in the reference photo."})

    gen = RecordingGenerator(max_references=0)
    res = await make_agent(chat=backbone({"Extension": writer}), generator=gen).run(PROMPT)
    assert res.final_prompt == "A striped lighthouse at dusk."
    assert gen.requests[0].references == []


async def test_one_reference_generator_cites_only_reference_one():
    def writer(messages, schema):  # a writer that cites more than it was given
        return json.dumps({"prompt": "A lighthouse with teal and orange bands, as in reference image 1. "
                                     "Its lantern follows reference image 2. The dome is black."})

    gen = RecordingGenerator(max_references=1)
    res = await make_agent(chat=backbone({"Extension": writer}), generator=gen).run(PROMPT)
    assert len(res.references) == 1 and len(gen.requests[0].references) == 1
    cited = {int(n) for n in re.findall(r"reference image (\d+)", res.final_prompt, re.I)}
    assert cited == {1}
    assert "reference image 2" not in res.final_prompt.lower()
    # the simulated writer too
    res2 = await make_agent(generator=RecordingGenerator(max_references=1)).run(PROMPT)
    assert {int(n) for n in re.findall(r"reference image (\d+)", res2.final_prompt, re.I)} == {1}


async def test_eval_agent_knows_the_capacity_from_the_preset():
    from orig_local.agent.factory import build_agent
    from orig_local.config import load_config

    for preset, capacity in (("qwen-image", 0), ("qwen-image-edit", 1), ("qwen-image-edit-2509", 3)):
        cfg = load_config(overrides=[f"generator.preset={preset}", "agent.dedup=false"])
        agent = build_agent(cfg, chat=backbone(), retriever=make_agent().retriever, generator=False)
        assert agent.generator is None and agent.reference_capacity == capacity
        assert (agent.text_only_warning is not None) == (capacity == 0)


async def test_oracle_passes_only_what_the_generator_takes():
    from orig_local.agent.agent import OracleEvidence

    imgs = [Image.new("RGB", (16, 16), c) for c in ("red", "blue", "green")]
    gen = RecordingGenerator(max_references=1)
    res = await make_agent(condition="oracle", generator=gen).run(PROMPT, oracle=OracleEvidence(text=["a fact"], images=imgs))
    assert len(gen.requests[0].references) == 1 and len(res.references) == 1
    assert any(r.step == "oracle_cap" for r in res.trace.records)


# --------------------------------------------------------------------------- point 4


def _ctx(images_per_round: dict[int, int], chat, dedup=None, **cfg) -> StageContext:
    kb = KnowledgeBase()
    kb.add_text("The tower has teal and orange bands.", Source(url="https://a", round=1))
    n = 0
    for rnd, count in images_per_round.items():
        for _ in range(count):
            n += 1
            im = Image.new("RGB", (16, 16), (n * 9 % 256, n * 31 % 256, n * 57 % 256))
            kb.add_image(im, f"sha{n}", Source(url=f"https://i/{n}", round=rnd), description=f"image {n} round {rnd}")
    return StageContext(chat=chat, retriever=None, config=AgentConfig(**cfg), prompts=PromptLibrary(),
                        trace=Trace(), prompt=PROMPT, knowledge=kb, dedup=dedup)


def _keep_last_shown(seen):
    def reply(messages, schema):
        seen.append(re.findall(r"image (\d+) round", messages[-1].text))
        return json.dumps({"features": ["teal bands"], "keep_images": [len(seen[-1])]})  # the last listed
    return reply


async def test_refinement_can_choose_images_found_in_later_rounds():
    seen: list = []
    ctx = _ctx({1: 10, 2: 2}, backbone({"RefinedText": _keep_last_shown(seen)}))
    result = await refine(ctx)
    shown = [int(x) for x in seen[0]]
    assert len(shown) == 8 and {11, 12} <= set(shown)  # round-2 images were candidates
    assert result.references[0].id == "V12"
    assert any(r.step == "shortlist" and r.evidence_ids for r in ctx.trace.records)


class _FakeClip:
    """Scores images by their red channel: a stand-in for CLIP's text-image similarity."""

    def text_image_similarity(self, texts, images):
        return np.array([[im.getpixel((0, 0))[0] / 255 for im in images]])


class _ClipDedup:
    embedder = _FakeClip()

    def keep(self, images):
        return list(range(len(images)))


async def test_refinement_shortlist_ranks_all_candidates_with_clip():
    seen: list = []
    ctx = _ctx({1: 12}, backbone({"RefinedText": _keep_last_shown(seen)}), dedup=_ClipDedup())
    await refine(ctx)
    reds = {v.id: v.image.getpixel((0, 0))[0] for v in ctx.knowledge.images}
    best8 = sorted(reds, key=lambda i: -reds[i])[:8]
    shown = [f"V{x}" for x in seen[0]]
    assert sorted(shown) == sorted(best8)
    assert "clip" in next(r for r in ctx.trace.records if r.step == "shortlist").notes[0]


async def test_prompt_is_bounded_in_the_generators_own_tokens_when_available():
    from orig_local.agent.factory import build_agent
    from orig_local.config import load_config
    from orig_local.presets import load_preset

    load_preset("tiny-qwen-image-edit-2509").ensure_path()
    cfg = load_config(overrides=["generator.preset=tiny-qwen-image-edit-2509", "agent.dedup=false"])
    agent = build_agent(cfg, chat=backbone(), retriever=make_agent().retriever, generator=False)
    assert agent.prompt_tokens.label.startswith("tokenizer:") and agent.prompt_max_tokens == 512
    # a hub model's tokenizer is used only if it is already cached; else the labelled estimate
    cfg = load_config(overrides=["generator.preset=qwen-image", "agent.dedup=false"])
    agent = build_agent(cfg, chat=backbone(), retriever=make_agent().retriever, generator=False)
    assert agent.prompt_max_tokens == 512
    assert agent.prompt_tokens is None or agent.prompt_tokens.label.startswith("tokenizer:")
