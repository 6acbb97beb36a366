"""The models of a run, resolved once from the config and the preset catalogue.

What the agent's budgets need to know of its models - the backbone's context window and vision
tokens per image, the generator's reference capacity and P̂ token bound and the tokenizer family
that bound counts in - comes from one :class:`ResolvedModels` record, built by
:meth:`ResolvedModels.from_config` (one preset read per model) and passed down:
:func:`~orig_local.agent.factory.build_agent` hands its numbers to the
:class:`~orig_local.agent.agent.Agent`, and the study's sharing key
(:func:`~orig_local.agent.inputs.agent_inputs`) reads the generator from the same record, so two
runs share an agent phase only when the agent would have been built identically.

Nothing is loaded: a generator's capacity comes from its backend class and preset, not its weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from orig_local.config import Config
    from orig_local.generation.config import GeneratorConfig
    from orig_local.llm.config import ChatConfig

# Backends that stand in for a model: whatever preset the section names, they have no window,
# no tokenizer and no vision encoder of their own.
STAND_IN_BACKENDS = ("simulated", "scripted")


@dataclass(frozen=True)
class ResolvedModel:
    """One model of a run: which weights (preset, hub id, revision, ``path`` to load) and the
    numbers the agent's budgets read. A field that does not apply to the role, or that its
    preset does not say, is None (the agent then uses its documented default)."""

    role: Literal["backbone", "judge", "generator"]
    preset: str  # preset name; a generator given by hub id: the hub id
    hub_id: str  # hub id, or tiny:<name> for a locally built tiny model
    revision: str | None  # hub revision (None = the default branch)
    path: str  # what from_pretrained / a tokenizer loads: the hub id or the tiny model's folder
    is_tiny: bool = False
    # backbone
    context_window: int | None = None  # vLLM max_model_len of the preset
    image_tokens: int | None = None  # vision tokens per image at the preset's pixel cap
    max_pixels: int | None = None  # that cap: pixels per image the server's processor keeps
    # generator
    reference_capacity: int | None = None  # reference images the pipeline takes at once
    prompt_token_bound: int | None = None  # P̂'s bound: the text encoder's max_sequence_length
    tokenizer_family: str | None = None  # what that bound counts in: qwen2, t5, ...
    tokenizer_subfolder: str | None = None  # where the pipeline keeps that tokenizer


@dataclass(frozen=True)
class ResolvedModels:
    """The run's backbone and generator, resolved once (see the module docstring).

    ``backbone`` is None for a stand-in backend (``simulated``, ``scripted``), a section without
    a preset, or a preset that does not load (making the chat model reports that error);
    ``generator`` is None when no generator is configured."""

    backbone: ResolvedModel | None = None
    generator: ResolvedModel | None = None

    @classmethod
    def from_config(cls, config: Config) -> ResolvedModels:
        return cls(backbone=resolve_backbone(config.backbone), generator=resolve_generator(config.generator))


def resolve_backbone(config: ChatConfig, role: Literal["backbone", "judge"] = "backbone") -> ResolvedModel | None:
    """The backbone section's preset, read once: context window and vision tokens per image
    (``role="judge"``: the judge section's, read the same way)."""
    if not config.preset or config.backend in STAND_IN_BACKENDS:
        return None
    from orig_local.presets import load_preset

    try:
        preset = load_preset(config.preset)
    except Exception:  # an unknown preset is the chat model's error to report, not ours
        return None
    serve = preset.serve
    # Qwen2.5-VL uses one token per 28x28 patch group; the preset caps pixels per image
    # (``mm_processor_kwargs``: ``size.longest_edge``, or the older ``max_pixels``).
    pixels = serve.max_pixels if serve else None
    return ResolvedModel(
        role=role, preset=preset.name, hub_id=preset.hf_id, revision=config.revision or preset.revision,
        path=preset.path, is_tiny=preset.is_tiny,
        context_window=serve.max_model_len if serve else None,
        image_tokens=int(pixels) // (28 * 28) if pixels else None, max_pixels=int(pixels) if pixels else None,
    )


def resolve_generator(config: GeneratorConfig) -> ResolvedModel | None:
    """The generator section's pipeline (a preset, a hub id given as preset, or
    ``generator.model``), read once: reference capacity, P̂ token bound and its tokenizer."""
    from orig_local.generation import generator_traits

    traits = generator_traits(config)
    if traits is None:
        return None
    preset = traits["preset"]
    return ResolvedModel(
        role="generator", preset=preset.name, hub_id=preset.hf_id, revision=preset.revision,
        path=preset.path, is_tiny=preset.is_tiny,
        reference_capacity=traits["reference_capacity"], prompt_token_bound=traits["prompt_max_tokens"],
        tokenizer_family=traits["text_tokenizer"], tokenizer_subfolder=traits["tokenizer_subfolder"],
    )
