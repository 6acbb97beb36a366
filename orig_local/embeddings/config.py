"""Config section for CLIP embeddings and image dedup."""

from __future__ import annotations

from typing import Literal

from orig_local.configbase import StrictModel


class EmbedConfig(StrictModel):
    preset: str = "clip-vit-b-32"  # a model preset with an open_clip section (`orig models --role embedder`)
    # Any open_clip model without a preset: a hub repo in open_clip format (open_clip_config.json +
    # weights, e.g. laion/CLIP-ViT-B-32-laion2B-s34B-b79K) or a local folder; wins over `preset`.
    model: str | None = None
    revision: str | None = None  # hub revision of `model` (branch, tag or commit sha)
    device: str = "auto"
    batch_size: int = 32
    # fp32: reference embeddings. bf16: ~3x faster per CPU-second on CPUs with AVX512-BF16/AMX,
    # cosine >= 0.9999 to fp32; slower where bf16 is emulated. auto: bf16 where native (CPU
    # capabilities, or a bf16-capable GPU), fp32 elsewhere; run.json records the resolved one
    # (orig_local/embeddings/clip.py)
    precision: Literal["auto", "fp32", "bf16"] = "auto"
