"""``snapshot`` backend: answers searches from a recorded evidence snapshot (offline, exact).

Recorded answers are looked up by (kind, query); a query the snapshot never saw is an error
("not recorded"), never a silent empty answer. Pages and images of a replayed run come from
the same snapshot through :mod:`orig_local.retrieval.replay`.
"""

from __future__ import annotations

from pathlib import Path

from orig_local.errors import UsageError
from orig_local.retrieval.base import ImageHit, SearchError, TextHit
from orig_local.retrieval.evidence import EvidenceStore, SnapshotError


class SnapshotBackend:
    name = "snapshot"
    cache_key = None  # never cache: the snapshot is the cache

    def __init__(self, store: EvidenceStore | str | Path):
        self.store = store if isinstance(store, EvidenceStore) else EvidenceStore(store)
        if not self.store.root.is_dir():
            raise SnapshotError(f"no snapshot at {self.store.root}",
                                hint="record one with -s retrieval.record=DIR, or `orig snapshot unpack`")

    @classmethod
    def from_config(cls, config, cache_dir=None, embedder=None) -> SnapshotBackend:
        if not config.replay:
            raise UsageError("the snapshot backend needs a recorded snapshot",
                             hint="add -s retrieval.replay=<snapshot dir>")
        return cls(config.replay)

    def _hits(self, kind: str, query: str) -> list[dict]:
        row = self.store.search(kind, query)
        if row is None:
            raise SearchError(f"{kind} query {query!r} not recorded in {self.store.root}")
        return row["hits"]

    async def aclose(self) -> None:
        """Nothing to release (no connection of its own)."""

    async def text(self, query: str, k: int = 10) -> list[TextHit]:
        return [TextHit(**h) for h in self._hits("text", query)][:k]

    async def images(self, query: str, k: int = 10) -> list[ImageHit]:
        return [ImageHit(**h) for h in self._hits("images", query)][:k]
