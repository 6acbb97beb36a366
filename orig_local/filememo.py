"""One value made from each file (a decoded picture, an encoded one), kept while the file is
unchanged and within a weight bound: shared by the judge's reference pictures and the
transformers backend's decoded ones.

An entry is keyed by the file's resolved path and stamped with its size and mtime, so a file
rewritten in place is made again and its old value goes. Past ``max_weight`` (bytes, pixels:
the caller's unit) the least recently used entries go first, the newest always stays; with
``keep_oversized=False`` a value heavier than the whole bound is handed out but never kept.
Safe across threads; ``make`` runs outside the lock, so two files are made at once.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

V = TypeVar("V")


class FileMemo(Generic[V]):
    def __init__(self, max_weight: int, *, keep_oversized: bool = True):
        self.max_weight = max_weight
        self.keep_oversized = keep_oversized
        self.weight = 0  # held now
        self._items: OrderedDict[str, tuple[tuple[int, int], V, int]] = OrderedDict()  # path -> (stamp, value, weight)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, path: str | os.PathLike[str], make: Callable[[Path, int], tuple[V, int]]) -> tuple[V, bool]:
        """(the value for the file at ``path``, whether it was kept from before). ``make(path,
        file size)`` returns a new value and its weight."""
        resolved = Path(path).resolve()
        stat = resolved.stat()
        name, stamp = str(resolved), (stat.st_size, stat.st_mtime_ns)
        with self._lock:
            entry = self._items.get(name)
            if entry is not None and entry[0] == stamp:
                self._items.move_to_end(name)
                return entry[1], True
        value, weight = make(resolved, stat.st_size)
        with self._lock:
            self._put(name, stamp, value, weight)
        return value, False

    def _put(self, name: str, stamp: tuple[int, int], value: V, weight: int) -> None:
        old = self._items.pop(name, None)  # the file changed (or another thread made it too)
        if old is not None:
            self.weight -= old[2]
        if weight > self.max_weight and not self.keep_oversized:
            return
        self._items[name] = (stamp, value, weight)
        self.weight += weight
        while self.weight > self.max_weight and len(self._items) > 1:
            self.weight -= self._items.popitem(last=False)[1][2]
