"""The run's models are resolved once (orig_local/resolved.py) and the agent's budgets all come
from that one record: the backbone's window, the generator's reference capacity, P̂'s token bound
and the tokenizer family it counts in - for shipped presets and for a generator given by hub id."""

from __future__ import annotations

import pytest

from orig_local import presets
from orig_local.agent.factory import build_agent
from orig_local.agent.inputs import agent_inputs, generator_view
from orig_local.config import load_config
from orig_local.generation import GeneratorConfig, generator_capacity
from orig_local.llm import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel
from orig_local.resolved import ResolvedModel, ResolvedModels


def _models(*overrides: str) -> ResolvedModels:
    return ResolvedModels.from_config(load_config(overrides=list(overrides)))


def test_shipped_backbone_presets_resolve_to_their_window_and_weights():
    big = _models("backbone.preset=qwen2.5-vl-7b").backbone
    assert big is not None
    assert (big.preset, big.hub_id, big.path, big.is_tiny) == (
        "qwen2.5-vl-7b", "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct", False)
    assert big.context_window == 32768
    tiny = _models("backbone.preset=tiny-qwen2.5-vl").backbone
    assert tiny is not None and tiny.is_tiny and tiny.context_window == 4096
    assert tiny.hub_id == "tiny:qwen2_5_vl" and tiny.path.endswith("qwen2_5_vl")
    pinned = _models("backbone.preset=qwen2.5-vl-7b", "backbone.revision=abc123").backbone
    assert pinned is not None and pinned.revision == "abc123"


def test_vision_tokens_per_image_follow_the_presets_pixel_cap():
    # the shipped presets say the cap as size.longest_edge (pixels, transformers' name): one token
    # per 28x28 patch group -> 1,003,520 px = 1,280 tokens for 7B/32B/72B, 50,176 px = 64 tiny
    for name in ("qwen2.5-vl-7b", "qwen2.5-vl-32b", "qwen2.5-vl-72b"):
        resolved = _models(f"backbone.preset={name}").backbone
        assert resolved is not None and resolved.image_tokens == 1280
    tiny = _models("backbone.preset=tiny-qwen2.5-vl").backbone
    assert tiny is not None and tiny.image_tokens == 64
    spec = presets.ServeSpec(mm_processor_kwargs={"max_pixels": 28 * 28 * 100})  # the older key
    assert spec.max_pixels == 78400
    assert presets.ServeSpec(mm_processor_kwargs={}).max_pixels is None


@pytest.mark.parametrize("backend", ["simulated", "scripted"])
def test_a_stand_in_backbone_has_no_window_of_its_own(backend):
    # whatever preset the section names: the stand-in is not that model
    assert _models(f"backbone.backend={backend}", "backbone.preset=qwen2.5-vl-72b").backbone is None


@pytest.mark.parametrize(("given", "capacity", "family"), [
    ("generator.preset=qwen-image-edit-2509", 3, "qwen2"),
    ("generator.model=Qwen/Qwen-Image-Edit-2509", 3, "qwen2"),  # by hub id: the family's pipeline
    ("generator.preset=flux.1-kontext-dev", 1, "t5"),
    ("generator.preset=qwen-image", 0, "qwen2"),
])
def test_generator_resolves_to_what_the_pipeline_takes(given, capacity, family):
    gen = _models(given).generator
    assert gen is not None and gen.role == "generator"
    assert (gen.reference_capacity, gen.tokenizer_family) == (capacity, family)
    # the same numbers the generation layer reports without the record
    section = load_config(overrides=[given]).generator
    assert (gen.reference_capacity, gen.prompt_token_bound) == generator_capacity(section)
    assert gen.prompt_token_bound == 512
    assert generator_view(section).reference_capacity == capacity
    capped = _models(given, "generator.max_references=0").generator
    assert capped is not None and capped.reference_capacity == 0


def test_no_generator_resolves_to_none():
    assert _models("generator.preset=null").generator is None
    assert generator_view(GeneratorConfig()).reference_capacity is None


def _scripted() -> ScriptedChatModel:
    return ScriptedChatModel(ChatConfig(backend="scripted", model="scripted"), replies=[])


def test_build_agent_takes_every_budget_from_the_resolved_record():
    config = load_config(overrides=["backbone.preset=tiny-qwen2.5-vl", "generator.preset=flux.1-kontext-dev",
                                    "agent.condition=prompt_enhanced"])
    models = ResolvedModels.from_config(config)
    assert models.backbone is not None and models.generator is not None
    agent = build_agent(config, chat=_scripted(), generator=False)
    assert agent.budget.context_tokens == models.backbone.context_window == 4096
    assert agent.reference_capacity == models.generator.reference_capacity == 1
    assert agent.prompt_max_tokens == models.generator.prompt_token_bound == 512
    # a record passed in is what the agent gets (a caller that resolved already)
    other = ResolvedModels(backbone=ResolvedModel(
        role="backbone", preset="x", hub_id="x", revision=None, path="x", context_window=8192))
    agent = build_agent(config, chat=_scripted(), generator=False, models=other)
    assert (agent.budget.context_tokens, agent.prompt_max_tokens) == (8192, None)
    assert agent.reference_capacity == config.agent.max_references  # no generator known


def test_build_agent_reads_each_preset_once(monkeypatch):
    read: list[str] = []
    original = presets.load_preset

    def counting(name, directory=None):
        read.append(name)
        return original(name, directory)

    monkeypatch.setattr(presets, "load_preset", counting)
    config = load_config(overrides=["backbone.preset=tiny-qwen2.5-vl", "generator.preset=flux.1-kontext-dev",
                                    "agent.condition=prompt_enhanced"])
    build_agent(config, chat=_scripted(), generator=False)
    assert sorted(read) == ["flux.1-kontext-dev", "tiny-qwen2.5-vl"]


def test_share_key_reads_the_same_generator_view():
    config = load_config(overrides=["generator.preset=qwen-image-edit-2509"])
    view = agent_inputs(config)["generator_view"]
    assert view == {"reference_capacity": 3, "prompt_max_tokens": 512, "text_tokenizer": "qwen2"}
