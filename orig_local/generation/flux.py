"""FLUX.1 [schnell] / [dev] (text-to-image; guidance-distilled, so guidance is an input
embedding, not classifier-free guidance: ``guidance_scale``, 0 for schnell)."""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class FluxGenerator(DiffusersGenerator):
    pipeline_class = "FluxPipeline"
    guidance_kwarg = "guidance_scale"
