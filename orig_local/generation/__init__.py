"""Image generators (one backend per file, chosen by the preset's ``generator`` field).

``make_generator(config)`` reads the preset ``config.preset`` (or, for ``config.model``, a hub id
without a preset, builds one: :func:`orig_local.presets.generator_preset`) and builds the backend
named there. Nothing heavy is imported until a generator is built.
"""

from __future__ import annotations

from orig_local.generation.base import GenerationRequest, GenerationResult, Generator
from orig_local.generation.config import GeneratorConfig

# preset `generator:` value -> backend class; a new model family is a new file plus one line.
BACKENDS = {
    "qwen-image": "orig_local.generation.qwen_image:QwenImageGenerator",
    "qwen-image-edit": "orig_local.generation.qwen_image_edit:QwenImageEditGenerator",
    "qwen-image-edit-plus": "orig_local.generation.qwen_image_edit_plus:QwenImageEditPlusGenerator",
    "flux": "orig_local.generation.flux:FluxGenerator",
    "flux-kontext": "orig_local.generation.flux_kontext:FluxKontextGenerator",
    "sd3": "orig_local.generation.sd3:StableDiffusion3Generator",
}


def make_generator(config: GeneratorConfig, *, progress: bool = False) -> Generator:
    """Build (but do not load yet) the generator for ``config.preset`` / ``config.model``."""
    from orig_local._lazy import resolve
    from orig_local.configbase import ConfigError
    from orig_local.presets import generator_preset

    preset = generator_preset(config)
    if not preset.generator:
        raise ConfigError(f"preset {preset.name!r} is not a generator (no `generator:` field)")
    cls = resolve("generator", BACKENDS, preset.generator)
    return cls(preset, config, progress=progress)


def generator_capacity(config: GeneratorConfig) -> tuple[int, int] | None:
    """``(reference images, prompt tokens)`` the configured generator takes, without loading
    it (None when no generator is configured): Qwen-Image, FLUX and SD3 take 0 references,
    Qwen-Image-Edit and FLUX-Kontext 1, Qwen-Image-Edit-2509 up to 3. ``generator.model`` (a
    hub id or folder) resolves through its family exactly as :func:`make_generator` does."""
    traits = generator_traits(config)
    return None if traits is None else (traits["reference_capacity"], traits["prompt_max_tokens"])


def generator_traits(config: GeneratorConfig) -> dict | None:
    """What the agent needs to know of the configured generator, from the resolved pipeline
    (whatever named it: preset, hub id as preset, ``generator.model``), nothing loaded:
    ``reference_capacity``, ``prompt_max_tokens``, ``text_tokenizer`` (the family its
    max_sequence_length counts in), ``tokenizer_subfolder``, ``preset`` (the resolved Preset).
    None when no generator is configured."""
    from orig_local._lazy import resolve
    from orig_local.presets import generator_preset

    if not (config.preset or config.model):
        return None
    preset = generator_preset(config)
    if not preset.generator:
        return None
    cls = resolve("generator", BACKENDS, preset.generator)
    capacity, tokens = cls.capacity(preset, config)
    return {"reference_capacity": capacity, "prompt_max_tokens": tokens,
            "text_tokenizer": getattr(cls, "text_tokenizer", None),
            "tokenizer_subfolder": getattr(cls, "text_tokenizer_subfolder", "tokenizer"), "preset": preset}


__all__ = ["BACKENDS", "GenerationRequest", "GenerationResult", "Generator", "GeneratorConfig", "generator_capacity", "generator_traits", "make_generator"]
