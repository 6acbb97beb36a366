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
    it (None when no preset is set): Qwen-Image, FLUX and SD3 take 0 references,
    Qwen-Image-Edit and FLUX-Kontext 1, Qwen-Image-Edit-2509 up to 3."""
    from orig_local._lazy import resolve
    from orig_local.presets import load_preset

    if not config.preset:
        return None
    preset = load_preset(config.preset)
    if not preset.generator:
        return None
    cls = resolve("generator", BACKENDS, preset.generator)
    return cls.capacity(preset, config)


__all__ = ["BACKENDS", "GenerationRequest", "GenerationResult", "Generator", "GeneratorConfig", "generator_capacity", "make_generator"]
