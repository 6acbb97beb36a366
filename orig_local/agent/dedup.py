"""The agent's view of embedding-based near-duplicate removal: ``keep(images) -> indices``.

Exact copies and resized/recompressed copies (dHash) are dropped earlier, while fetching; this
catches what those miss (crops, re-encodes with borders, the same photo at another size) by
CLIP image-embedding cosine similarity. Earlier images win, so rank order is kept.
"""

from __future__ import annotations

from typing import Any, Sequence


class ClipDeduper:
    def __init__(self, embedder: Any, threshold: float = 0.95):
        self.embedder = embedder  # OpenClipEmbedder (or anything with embed_images -> (n, d) unit rows)
        self.threshold = threshold

    def keep(self, images: Sequence[Any]) -> list[int]:
        if len(images) < 2:
            return list(range(len(images)))
        vectors = self.embedder.embed_images(list(images))
        kept: list[int] = []
        for i in range(len(images)):
            if all(float(vectors[i] @ vectors[j]) < self.threshold for j in kept):
                kept.append(i)
        return kept
