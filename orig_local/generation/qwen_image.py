"""Qwen-Image (text-to-image; the paper's main generator)."""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class QwenImageGenerator(DiffusersGenerator):
    pipeline_class = "QwenImagePipeline"
    # Qwen-Image is not guidance-distilled: its guidance is real classifier-free guidance,
    # which the pipeline applies only when a negative prompt is given (Qwen's examples use " ").
    guidance_kwarg = "true_cfg_scale"
    default_negative_prompt = " "
