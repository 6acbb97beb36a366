"""Tiny random-weight QwenImageEditPlusPipeline (Qwen-Image-Edit-2509 layout: several references)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_qwen_image_edit_plus(out_dir: str | Path, seed: int = 0) -> Path:
    from diffusers import QwenImageEditPlusPipeline

    from orig_local.tiny.qwen_image import tiny_qwen_image_components

    out = Path(out_dir)
    QwenImageEditPlusPipeline(**tiny_qwen_image_components(seed, with_processor=True)).save_pretrained(out)
    return out
