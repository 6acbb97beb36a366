"""Decoded pictures of image files, kept across the requests of one in-process backend.

The transformers backend hands its processor PIL images. A reference picture given as a file
path goes into several requests of one prompt (the image filter, refinement, prompt extension,
each retry), and each used to open and decode the file again. :class:`DecodedImages` keeps the
decoded RGB picture under ``(path, file size, mtime)``, so a file rewritten in place is read
again, and holds at most ``max_pixels`` pixels in all (3 bytes each in RGB), dropping the least
recently used first. A picture larger than the whole bound is decoded each time, never kept.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from orig_local.filememo import FileMemo

# 32 MP ~ 96 MB of RGB: some forty 1024x768 references, more than one prompt's requests share.
DEFAULT_MAX_PIXELS = 32_000_000


class DecodedImages:
    """A small LRU of decoded image files, bounded by pixel count; safe across threads."""

    def __init__(self, max_pixels: int = DEFAULT_MAX_PIXELS):
        self.max_pixels = max_pixels
        self.decodes = 0  # files opened and decoded
        self.hits = 0  # pictures served without reading the file
        # a picture over the whole bound would push every other one out: handed out, never kept
        self._files: FileMemo[Any] = FileMemo(max_pixels, keep_oversized=False)
        self._lock = threading.Lock()  # the two counters

    @property
    def pixels(self) -> int:
        """Pixels held now (at most ``max_pixels``)."""
        return self._files.weight

    def get(self, path: str | os.PathLike[str]):
        """The RGB picture in the file at ``path``, decoded once per (path, size, mtime)."""
        picture, kept = self._files.get(path, _decode)
        with self._lock:
            if kept:
                self.hits += 1
            else:
                self.decodes += 1
        return picture


def _decode(path: Path, size: int) -> tuple[Any, int]:
    """(the RGB picture, its pixels)."""
    from PIL import Image

    with Image.open(path) as im:
        picture = im.convert("RGB")
    return picture, picture.width * picture.height
