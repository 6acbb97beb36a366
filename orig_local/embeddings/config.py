"""Config section for CLIP embeddings and image dedup."""

from __future__ import annotations

from orig_local.configbase import StrictModel


class EmbedConfig(StrictModel):
    preset: str = "clip-vit-b-32"  # models/<preset>.yaml with an open_clip section
    device: str = "auto"
    batch_size: int = 32
