"""The agent with the real Retriever over the packaged demo corpus (`local` backend: BM25 +
tiny open_clip) and the real CLIP deduper, driven by a scripted backbone: what `--offline`
runs, minus the noisy tiny backbone."""

from __future__ import annotations

import pytest
from agent_support import PROMPT, RecordingGenerator, backbone, keep_only

from orig_local.agent.factory import build_agent
from orig_local.config import load_config


@pytest.fixture(scope="module")
def offline_config():
    return load_config("offline", ["cache_dir=''"])


async def test_full_run_over_the_demo_corpus(offline_config):
    gen = RecordingGenerator()
    agent = build_agent(offline_config, chat=backbone({"RefinedText": keep_only(2, 1)}), generator=gen)
    try:
        res = await agent.run(PROMPT)
        # Same prompt twice at once, then again: a Retriever shared by concurrent prompts must
        # not refuse one prompt the images another fetched.
        again = await agent.run_many([PROMPT, PROMPT], concurrency=2)
    finally:
        await agent.aclose()
    assert res.trace.stages() == ["bootstrap", "planning", "search", "accumulation", "sufficiency",
                                  "refinement", "extension", "generation"]
    assert res.stop_reason == "sufficient" and res.rounds == 1
    p = res.final_prompt.lower()
    assert "teal and orange" in p and "hexagonal" in p  # facts only the fictional corpus has
    assert all(t.source.url.startswith("corpus://doc/") for t in res.knowledge.texts)
    shown = [i for i in next(r for r in res.trace.records if r.step == "text_features").evidence_ids if i.startswith("V")]
    assert [v.id for v in res.references] == [shown[1], shown[0]]
    assert gen.requests[0].references == [v.image for v in res.references]
    assert res.references[0].url.startswith("corpus://img/")
    assert any(r.step == "dedup_images" for r in res.trace.records)  # CLIP dedup ran before the VLM
    for other in again:
        assert [v.url for v in other.references] == [v.url for v in res.references]


def test_cli_offline_with_the_simulated_backbone(tmp_path):
    """`orig generate --offline` end to end (real config loading, factory, Retriever, dedup,
    output folder), with the `simulated` backbone instead of the noisy tiny model."""
    import json

    from orig_local.cli import main

    out = tmp_path / "run"
    rc = main(["-q", "generate", PROMPT, "--offline", "-s", "backbone.backend=simulated",
               "-s", "cache_dir=''", "-s", "generator.preset=null", "--out", str(out)])  # image: test_generate_offline_image
    assert rc == 0
    data = json.loads((out / "trace.json").read_text())
    assert data["stop_reason"] == "sufficient" and "hexagonal" in data["final_prompt"]
    assert len(list((out / "references").iterdir())) == len(data["references"]) > 0
    assert (out / "trace.html").stat().st_size > 10_000


VARIANTS = [
    ({"condition": "direct"}, []),
    ({"condition": "prompt_enhanced"}, ["enhance"]),
    ({"condition": "orig_txt"}, ["bootstrap", "planning", "search", "accumulation", "sufficiency",
                                 "refinement", "extension"]),
    ({"condition": "orig_img"}, ["planning", "search", "accumulation", "sufficiency", "refinement", "extension"]),
    ({"bootstrap": False}, ["planning", "search", "accumulation", "sufficiency", "refinement", "extension"]),
    ({"accumulation_filter": False}, ["bootstrap", "planning", "search", "sufficiency", "refinement", "extension"]),
    ({"refinement": False}, ["bootstrap", "planning", "search", "accumulation", "sufficiency", "extension"]),
    ({"prompt_extension": False}, ["bootstrap", "planning", "search", "accumulation", "sufficiency", "refinement"]),
    ({"fixed_rounds": 2}, ["bootstrap", "planning", "search", "accumulation", "planning", "search",
                           "accumulation", "refinement", "extension"]),
]


async def test_every_condition_and_ablation_over_the_demo_corpus(offline_config):
    from orig_local.agent.agent import Agent
    from orig_local.agent.config import AgentConfig

    base = build_agent(offline_config, chat=backbone())  # one Retriever + deduper for all variants
    try:
        for overrides, expected in VARIANTS:
            agent = Agent(chat=backbone(), retriever=base.retriever, dedup=base.dedup,
                          config=AgentConfig(**overrides))
            res = await agent.run(PROMPT)
            steps = [s for s, _ in res.trace.steps()]
            assert steps == expected, overrides
            assert res.error is None and res.trace.errors() == [], overrides
            if agent.config.retrieves:
                p = res.final_prompt.lower()
                if overrides.get("condition") == "orig_img":  # no text: the corpus speaks through images
                    assert all("veltrane" in v.url for v in res.references), overrides
                else:
                    assert "teal and orange" in p or "hexagonal" in p, overrides
                assert res.rounds == overrides.get("fixed_rounds", 1)
                assert res.stop_reason == ("max_rounds" if "fixed_rounds" in overrides else "sufficient")
                assert bool(res.references) == (overrides.get("condition") != "orig_txt"), overrides
    finally:
        await base.aclose()


@pytest.mark.slow
def test_cli_offline_with_a_tiny_multi_reference_generator(tmp_path):
    """The whole product path offline: config -> factory -> Retriever -> agent -> tiny
    Qwen-Image-Edit-2509 pipeline fed P̂ and every reference -> output folder (~45 s on CPU)."""
    import json

    from PIL import Image

    from orig_local.cli import main

    out = tmp_path / "run"
    rc = main(["-q", "generate", PROMPT, "--offline", "-s", "backbone.backend=simulated",
               "-s", "generator.preset=tiny-qwen-image-edit-2509", "-s", "cache_dir=''", "--out", str(out)])
    assert rc == 0
    data = json.loads((out / "trace.json").read_text())
    assert data["generation"]["references_used"] == len(data["references"]) > 0
    with Image.open(out / "image.png") as im:
        assert im.size[0] > 0
    assert "data:image/jpeg;base64," in (out / "trace.html").read_text()
