"""Image fingerprints, one name per meaning. Neither ``retrieval`` nor ``embeddings`` owns
them, so both import from here and not from each other.

* :func:`pixels_sha256` - exact identity of the decoded picture (mode + size + pixels),
  independent of the file format; the CLIP embedding cache and exact-copy dedup use it.
* :func:`dhash64` / :func:`hamming` - a 64-bit perceptual hash and its bit distance, for
  resized/recompressed copies.

The other two SHA-256s of the project live with their data: ``FetchedImage.bytes_sha256``
(the downloaded bytes, the evidence store's content address) and ``ImageRef.sha256()``
(the bytes a chat image is sent as, part of chat cache keys).
"""

from __future__ import annotations

import hashlib
from typing import Any


def pixels_sha256(image: Any) -> str:
    """SHA-256 of a PIL image's mode, size and pixels (format-independent)."""
    h = hashlib.sha256()
    h.update(f"{image.mode}:{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()


def dhash64(image: Any) -> int:
    """64-bit difference hash: grey 9x8 thumbnail, one bit per left-right comparison."""
    small = image.convert("L").resize((9, 8), resample=1)  # 1 = LANCZOS
    px = small.tobytes()
    bits = 0
    for row in range(8):
        for col in range(8):
            bits = (bits << 1) | (px[row * 9 + col] > px[row * 9 + col + 1])
    return bits


def hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")
