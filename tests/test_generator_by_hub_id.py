"""A generator named by hub id gets its capacity and prompt bound from the resolved pipeline,
exactly as a preset does, and `orig eval --generator <hub id>` runs (issue 19 point 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orig_local.agent.factory import build_agent
from orig_local.agent.inputs import agent_inputs, generator_view
from orig_local.config import load_config

MINI = str(Path(__file__).resolve().parents[1] / "orig_local" / "evaluation" / "data" / "mini.jsonl")


@pytest.mark.parametrize("named", [["generator.model=Qwen/Qwen-Image"], ["generator.preset=Qwen/Qwen-Image"],
                                   ["generator.preset=qwen-image"]])
async def test_a_hub_id_generator_is_text_only_like_its_preset(named):
    config = load_config(overrides=["backbone.backend=simulated", "agent.condition=orig_txt", *named])
    agent = build_agent(config, generator=False, retriever=object(), dedup=False)
    assert agent.reference_capacity == 0 and agent.prompt_max_tokens == 512
    await agent.aclose()
    orig = load_config(overrides=["backbone.backend=simulated", "agent.condition=orig", *named])
    agent = build_agent(orig, generator=False, retriever=object(), dedup=False)
    assert agent.text_only_warning and "text-only generator" in agent.text_only_warning
    # the same agent inputs whatever named it: one shared agent phase in a study
    assert agent_inputs(orig) == agent_inputs(load_config(overrides=[
        "backbone.backend=simulated", "agent.condition=orig", "generator.preset=qwen-image"]))


def test_edit_models_by_hub_id_take_their_references():
    view = generator_view(load_config(overrides=["generator.model=Qwen/Qwen-Image-Edit-2509"]).generator)
    assert (view.reference_capacity, view.prompt_max_tokens, view.text_tokenizer) == (3, 512, "qwen2")
    view = generator_view(load_config(overrides=["generator.preset=black-forest-labs/FLUX.1-Kontext-dev"]).generator)
    assert (view.reference_capacity, view.text_tokenizer) == (1, "t5")


def test_orig_eval_accepts_a_generator_hub_id(tmp_path, capsys, monkeypatch):
    from orig_local.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing is downloaded (no agent row: nothing loads)
    args = ["--quiet", "eval", "--benchmark", "jsonl", "--data", MINI, "--condition", "direct", "--limit", "1",
            "--phase", "generate"]
    assert main([*args, "--generator", "Qwen/Qwen-Image", "--out", str(tmp_path / "hub")]) == 0
    assert "unknown preset" not in capsys.readouterr().err
    assert main([*args, "--generator", "qwen-imgae", "--out", str(tmp_path / "typo")]) == 2
    assert "unknown preset 'qwen-imgae'" in capsys.readouterr().err
