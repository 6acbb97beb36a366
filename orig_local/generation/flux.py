"""FLUX.1 [schnell] / [dev] (text-to-image; guidance-distilled, so guidance is an input
embedding, not classifier-free guidance: ``guidance_scale``, 0 for schnell)."""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class FluxGenerator(DiffusersGenerator):
    pipeline_class = "FluxPipeline"
    text_tokenizer = "t5"  # max_sequence_length counts T5 tokens (the CLIP encoder reads 77)
    text_tokenizer_subfolder = "tokenizer_2"
    guidance_kwarg = "guidance_scale"
