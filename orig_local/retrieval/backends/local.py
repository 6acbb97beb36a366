"""``local`` backend: search an offline corpus (the embedded default without internet).

Text: BM25 over documents. Images: BM25 over captions fused with open_clip text->image
similarity (see :meth:`CorpusIndex.search_images`). Hits point at ``corpus://doc/<id>`` and
``corpus://img/<id>``; the corpus-aware reader and fetcher (``retrieval.corpusfetch``) read
those straight from :attr:`corpus`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from orig_local.retrieval.base import ImageHit, TextHit
from orig_local.retrieval.config import LocalConfig
from orig_local.retrieval.corpus import DOC_URL, IMG_URL, Corpus, CorpusIndex, default_index_dir

log = logging.getLogger(__name__)

SNIPPET_CHARS = 300


def build_embedder(embedder: Any, cache_dir=None):
    """``embedder`` may be a ready embedder, an ``EmbedConfig`` (built here), or None."""
    if embedder is None or hasattr(embedder, "embed_texts"):
        return embedder
    from orig_local.embeddings.clip import OpenClipEmbedder

    return OpenClipEmbedder.from_config(embedder, cache_dir)


class LocalBackend:
    name = "local"

    def __init__(self, corpus: Corpus, config: LocalConfig | None = None, embedder: Any = None,
                 cache_dir=None):
        self.config = config or LocalConfig()
        self.corpus = corpus
        self._embedder_spec = embedder if self.config.images else None
        self._cache_dir = cache_dir
        self._index: CorpusIndex | None = None
        # Searches run in worker threads; concurrent first queries must not build the index or
        # load the CLIP model twice, and one torch model is not shared across threads.
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config, cache_dir=None, embedder=None) -> LocalBackend:
        return cls(Corpus.load(config.local.corpus), config.local, embedder=embedder, cache_dir=cache_dir)

    @property
    def cache_key(self) -> str:
        return f"local:{self.index.fingerprint[:16]}"

    @property
    def index(self) -> CorpusIndex:
        """Built (or loaded) on first use; the CLIP model only on the first image query."""
        if self._index is None:
            where = default_index_dir(self.corpus, self.config.index_dir, self._cache_dir)
            self._index = CorpusIndex(self.corpus, where, embedder=None)
        return self._index

    def _ensure_embedder(self) -> None:
        if self.index.embedder is None and self._embedder_spec is not None:
            self.index.embedder = build_embedder(self._embedder_spec, self._cache_dir)
            self._embedder_spec = None
        elif self.index.embedder is None and self.config.images:
            log.warning("local backend: no CLIP embedder given; image search ranks by captions only")
            self.config = self.config.model_copy(update={"images": False})

    async def aclose(self) -> None:
        """Nothing to release (no connection of its own)."""

    async def text(self, query: str, k: int = 10) -> list[TextHit]:
        def run():
            with self._lock:
                return self.index.search_docs(query, k)

        found = await asyncio.to_thread(run)
        return [TextHit(title=doc.title, url=f"{DOC_URL}{doc.id}", snippet=doc.text[:SNIPPET_CHARS],
                        rank=n, backend=self.name) for n, (doc, _score) in enumerate(found, 1)]

    async def images(self, query: str, k: int = 10) -> list[ImageHit]:
        def run():
            with self._lock:
                self._ensure_embedder()
                return self.index.search_images(query, k, self.config.clip_weight)

        found = await asyncio.to_thread(run)
        hits = []
        for n, (item, _score) in enumerate(found, 1):
            size = _image_size(item.path)
            hits.append(ImageHit(
                image_url=f"{IMG_URL}{item.id}", page_url=f"{DOC_URL}{item.doc_id}" if item.doc_id else None,
                title=item.caption, width=size[0], height=size[1], rank=n, backend=self.name,
                license=item.license, attribution=item.attribution,
            ))
        return hits

    def build(self) -> CorpusIndex:
        """Build and save the whole index now (``orig corpus build``)."""
        with self._lock:
            self._ensure_embedder()
            self.index.clip_embeddings()
            return self.index


def _image_size(path) -> tuple[int | None, int | None]:
    from PIL import Image

    try:
        with Image.open(path) as im:
            return im.size
    except OSError:
        return None, None
