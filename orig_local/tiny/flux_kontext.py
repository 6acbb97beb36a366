"""Tiny random-weight FluxKontextPipeline (FLUX.1-Kontext-dev layout, one reference image)."""

from __future__ import annotations

from pathlib import Path


def build_tiny_flux_kontext(out_dir: str | Path, seed: int = 0) -> Path:
    # Kontext shares FLUX's components; saving through its class writes its own model_index,
    # so DiffusionPipeline.from_pretrained resolves FluxKontextPipeline as for the real model.
    from diffusers import FluxKontextPipeline

    from orig_local.tiny.flux import tiny_flux_components

    out = Path(out_dir)
    FluxKontextPipeline(**tiny_flux_components(seed), image_encoder=None, feature_extractor=None).save_pretrained(out)
    return out
