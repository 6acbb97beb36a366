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
from collections import OrderedDict
from pathlib import Path
from typing import Any

# 32 MP ~ 96 MB of RGB: some forty 1024x768 references, more than one prompt's requests share.
DEFAULT_MAX_PIXELS = 32_000_000

_Key = tuple[str, int, int]


class DecodedImages:
    """A small LRU of decoded image files, bounded by pixel count; safe across threads."""

    def __init__(self, max_pixels: int = DEFAULT_MAX_PIXELS):
        self.max_pixels = max_pixels
        self.decodes = 0  # files opened and decoded
        self.hits = 0  # pictures served without reading the file
        self._items: OrderedDict[_Key, Any] = OrderedDict()
        self._by_path: dict[str, _Key] = {}  # a path's current entry (a rewrite replaces it)
        self._pixels = 0
        self._lock = threading.Lock()

    @property
    def pixels(self) -> int:
        """Pixels held now (at most ``max_pixels``)."""
        return self._pixels

    def get(self, path: str | os.PathLike[str]):
        """The RGB picture in the file at ``path``, decoded once per (path, size, mtime)."""
        name = os.path.abspath(path)
        stat = os.stat(name)
        key = (name, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            picture = self._items.get(key)
            if picture is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return picture
        picture = _decode(Path(name))  # outside the lock: another thread may decode another file
        with self._lock:
            self.decodes += 1
            self._put(key, picture)
        return picture

    def _put(self, key: _Key, picture: Any) -> None:
        old = self._by_path.pop(key[0], None)
        if old is not None:  # the file changed (or the same key raced in): drop its old picture
            self._drop(old)
        size = picture.width * picture.height
        if size > self.max_pixels:
            return
        self._items[key] = picture
        self._by_path[key[0]] = key
        self._pixels += size
        while self._pixels > self.max_pixels:
            oldest = next(iter(self._items))
            self._by_path.pop(oldest[0], None)
            self._drop(oldest)

    def _drop(self, key: _Key) -> None:
        picture = self._items.pop(key, None)
        if picture is not None:
            self._pixels -= picture.width * picture.height


def _decode(path: Path):
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")
