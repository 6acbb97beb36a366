"""Tiny random-weight QwenImageEditPipeline (Qwen-Image-Edit layout: one reference image)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_qwen_image_edit(out_dir: str | Path, seed: int = 0) -> Path:
    from diffusers import QwenImageEditPipeline

    from orig_local.tiny.qwen_image import tiny_qwen_image_components

    out = Path(out_dir)
    QwenImageEditPipeline(**tiny_qwen_image_components(seed, with_processor=True)).save_pretrained(out)
    return out
