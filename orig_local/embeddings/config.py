"""Config section for CLIP embeddings and image dedup."""

from __future__ import annotations

from typing import Literal

from orig_local.configbase import StrictModel


class EmbedConfig(StrictModel):
    preset: str = "clip-vit-b-32"  # models/<preset>.yaml with an open_clip section
    device: str = "auto"
    batch_size: int = 32
    # fp32: reference embeddings. bf16: ~3x faster per CPU-second on CPUs with AVX512-BF16/AMX,
    # cosine >= 0.9999 to fp32; slower where bf16 is emulated (orig_local/embeddings/clip.py)
    precision: Literal["fp32", "bf16"] = "fp32"
