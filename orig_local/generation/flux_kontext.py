"""FLUX.1-Kontext-dev: one reference image conditions the generation.

As for Qwen-Image-Edit, several references are reduced to one by
``generator.reference_strategy`` (``first`` by default, or ``collage``). The output size is set
through ``max_area`` (the pipeline derives width and height from it and the requested aspect).
"""

from __future__ import annotations

from typing import Any

from orig_local.generation.diffusers_base import DiffusersGenerator


class FluxKontextGenerator(DiffusersGenerator):
    pipeline_class = "FluxKontextPipeline"
    guidance_kwarg = "guidance_scale"
    reference_kwarg = "image"
    model_max_references = 1
    text_tokenizer = "t5"  # max_sequence_length counts T5 tokens (the CLIP encoder reads 77)
    text_tokenizer_subfolder = "tokenizer_2"

    def call_kwargs(self, request, params, extras, references) -> dict[str, Any]:
        kwargs = super().call_kwargs(request, params, extras, references)
        # Kontext recomputes width/height from max_area (default 1024^2) and the aspect ratio:
        # without this a 512x512 request would come back at 1024x1024.
        kwargs.setdefault("max_area", params["width"] * params["height"])
        return kwargs
