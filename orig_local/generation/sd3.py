"""Stable Diffusion 3 / 3.5 (text-to-image; classifier-free guidance via ``guidance_scale``)."""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class StableDiffusion3Generator(DiffusersGenerator):
    pipeline_class = "StableDiffusion3Pipeline"
    text_tokenizer = "t5"  # max_sequence_length counts T5 tokens (the CLIP encoder reads 77)
    text_tokenizer_subfolder = "tokenizer_3"
    guidance_kwarg = "guidance_scale"
    default_max_sequence_length = 256  # the pipeline's T5 default (its CLIP encoders read 77)
