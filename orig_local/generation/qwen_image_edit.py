"""Qwen-Image-Edit: one reference image conditions the generation.

With more references than one, ``generator.reference_strategy`` decides: ``first`` (default)
passes the agent's first (most informative) reference; ``collage`` packs all of them side by
side. ``first`` is the default because the edit model keeps the layout of its input image, so a
collage tends to come back as a collage.
"""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class QwenImageEditGenerator(DiffusersGenerator):
    pipeline_class = "QwenImageEditPipeline"
    guidance_kwarg = "true_cfg_scale"  # real CFG, as Qwen-Image
    default_negative_prompt = " "
    reference_kwarg = "image"
    requires_reference = True
    model_max_references = 1
