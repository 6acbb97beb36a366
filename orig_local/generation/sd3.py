"""Stable Diffusion 3 / 3.5 (text-to-image; classifier-free guidance via ``guidance_scale``)."""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class StableDiffusion3Generator(DiffusersGenerator):
    pipeline_class = "StableDiffusion3Pipeline"
    guidance_kwarg = "guidance_scale"
    default_max_sequence_length = 256  # the pipeline's T5 default (its CLIP encoders read 77)
