"""The one facade the agent uses: search, read pages, fetch images, record evidence.

    retriever = Retriever.from_config(config.retrieval, cache_dir, embedder=config.embed)
    outcome = await retriever.search_text("Veltrane Harbor Lighthouse", k=10)
    page = await retriever.read_page(outcome.hits[0].url)          # Page | FetchFailure
    image = await retriever.fetch_image(url, page_url=...)          # FetchedImage | FetchFailure

Nothing here raises for trouble on the web: searches return a :class:`SearchOutcome` with every
failure listed, reads and fetches return :class:`FetchFailure`. URLs ``corpus://doc/<id>`` and
``corpus://img/<id>`` (hits of the ``local`` backend) are served from the corpus itself.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from orig_local.retrieval.base import FetchedImage, FetchFailure, Page, SearchOutcome
from orig_local.retrieval.chain import FallbackChain
from orig_local.retrieval.config import FetchConfig, RetrievalConfig, SearchConfig
from orig_local.retrieval.corpus import DOC_URL, IMG_URL, Corpus
from orig_local.retrieval.images import Deduplicator, decode_image
from orig_local.retrieval.reader import now_iso
from orig_local.retrieval.store import EvidenceStore

log = logging.getLogger(__name__)


class Retriever:
    """Search (a :class:`FallbackChain` or a single backend), a page reader, an image fetcher
    and an optional evidence store, passed in explicitly (tests inject fakes)."""

    def __init__(self, search: Any, reader: Any = None, fetcher: Any = None,
                 store: EvidenceStore | None = None, *, fetch_config: FetchConfig | None = None,
                 corpora: list[Corpus] | None = None, cache: Any = None):
        if not isinstance(search, FallbackChain):
            # a lone backend: no spacing between calls, one attempt (it is a test fake or local)
            search = FallbackChain([search], SearchConfig(min_interval_s=0, max_attempts=1, cooldown_after=10**9))
        self.chain = search
        self.fetch_config = fetch_config or getattr(fetcher, "config", None) or FetchConfig()
        if reader is None or fetcher is None:
            from orig_local.retrieval.httpfetch import HttpSession

            session = HttpSession(self.fetch_config)
            if reader is None:
                from orig_local.retrieval.reader import WebPageReader

                reader = WebPageReader(session=session)
            if fetcher is None:
                from orig_local.retrieval.images import WebImageFetcher

                fetcher = WebImageFetcher(self.fetch_config, session)
        self.reader = reader
        self.fetcher = fetcher
        self.store = store
        self.cache = cache  # DiskCache for non-empty search answers, or None
        found = [b.corpus for b in self.chain.backends if isinstance(getattr(b, "corpus", None), Corpus)]
        self.corpora = list(corpora or []) + found
        self.dedup = Deduplicator(self.fetch_config.dhash_max_distance)

    @classmethod
    def from_config(cls, config: RetrievalConfig, cache_dir: str | Path | None = None,
                    embedder: Any = None, record_dir: str | Path | None = None) -> "Retriever":
        """Build from config. ``embedder``: an ``EmbedConfig`` or a ready ``OpenClipEmbedder``
        (only the ``local`` backend uses it). ``record_dir`` overrides ``config.record``."""
        from orig_local.retrieval import make_backend
        from orig_local.retrieval.httpfetch import HttpSession
        from orig_local.retrieval.images import WebImageFetcher
        from orig_local.retrieval.reader import WebPageReader

        if config.replay:
            from orig_local.retrieval.backends.snapshot import SnapshotBackend
            from orig_local.retrieval.replay import ReplayFetcher, ReplayReader

            replay = EvidenceStore(config.replay)
            chain = FallbackChain([SnapshotBackend(replay)], config.search.model_copy(update={"min_interval_s": 0}))
            # local corpora stay readable during replay only through the snapshot: exact evidence
            return cls(chain, ReplayReader(replay), ReplayFetcher(replay, config.fetch),
                       store=EvidenceStore(record_dir) if record_dir else None, fetch_config=config.fetch)
        backends = [make_backend(name, config, cache_dir=cache_dir, embedder=embedder)
                    for name in config.search.chain]
        session = HttpSession(config.fetch)
        record = record_dir or config.record
        cache = None
        if cache_dir is not None and config.search.cache:
            from orig_local.cache import DiskCache

            cache = DiskCache(Path(cache_dir) / "search.sqlite", namespace="search")
        return cls(FallbackChain(backends, config.search), WebPageReader(config.reader, session),
                   WebImageFetcher(config.fetch, session), store=EvidenceStore(record) if record else None,
                   fetch_config=config.fetch, cache=cache)

    # ------------------------------------------------------------------ search
    async def search_text(self, query: str, k: int = 10) -> SearchOutcome:
        return await self._search("text", query, k)

    async def search_images(self, query: str, k: int = 10) -> SearchOutcome:
        return await self._search("images", query, k)

    def _cache_key(self, kind: str, query: str, k: int) -> str | None:
        keys = [getattr(b, "cache_key", b.name) for b in self.chain.backends]
        if self.cache is None or any(key is None for key in keys):
            return None
        blob = json.dumps({"chain": keys, "kind": kind, "query": query, "k": k}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    async def _search(self, kind: str, query: str, k: int) -> SearchOutcome:
        key = self._cache_key(kind, query, k)
        outcome = None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                outcome = SearchOutcome.model_validate({**hit, "cached": True})
        if outcome is None:
            outcome = await self.chain.search(kind, query, k)
            if key is not None and outcome.hits:
                self.cache.set(key, outcome.model_dump(mode="json", exclude={"failures", "cached"}))
        if self.store is not None:
            self.store.record_search(outcome, k)
        return outcome

    # ------------------------------------------------------------------ pages
    async def read_page(self, url: str) -> Page | FetchFailure:
        if url.startswith(DOC_URL) and self.corpora:
            result = self._corpus_page(url)
        else:
            result = await self.reader.read(url)
        if self.store is not None:
            self.store.record_page(url, result)
        return result

    def _corpus_page(self, url: str) -> Page | FetchFailure:
        doc_id = url[len(DOC_URL):]
        for corpus in self.corpora:
            doc = corpus.doc(doc_id)
            if doc is not None:
                return Page(url=url, final_url=url, title=doc.title, text=f"# {doc.title}\n\n{doc.text}",
                            fetched_at=now_iso(), status=200)
        return FetchFailure(url=url, kind="http_error", detail=f"no document {doc_id!r} in the corpus")

    # ------------------------------------------------------------------ images
    async def fetch_image(self, url: str, page_url: str | None = None, *,
                          dedup: bool = True) -> FetchedImage | FetchFailure:
        """Download, verify, decode, downscale, hash; duplicates of images fetched since the
        last :meth:`reset_dedup` come back as ``FetchFailure(kind="duplicate")``.

        ``dedup=False`` skips that shared check: the agent keeps its own per-prompt duplicate
        set, because one Retriever serves many prompts at once (and several conditions in a
        row), and an image one prompt fetched must not be refused to another."""
        if url.startswith(IMG_URL) and self.corpora:
            got = self._corpus_image_bytes(url)
        elif hasattr(self.fetcher, "fetch_bytes"):
            got = await self.fetcher.fetch_bytes(url)
        else:  # an injected fetcher that only decodes whole images (a test fake)
            got = None
        if got is None:
            result = await self.fetcher.fetch(url, page_url)
            if self.store is not None and isinstance(result, FetchFailure):
                self.store.record_image(url, result)
        else:
            if self.store is not None:
                self.store.record_image(url, got)
            if isinstance(got, FetchFailure):
                return got
            result = await asyncio.to_thread(decode_image, got[0], url, self.fetch_config, page_url, got[1])
        if isinstance(result, FetchedImage) and dedup:
            duplicate = self.dedup.check(result)
            if duplicate is not None:
                return duplicate
            self.dedup.add(result)
        return result

    def _corpus_image_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        image_id = url[len(IMG_URL):]
        for corpus in self.corpora:
            item = corpus.image(image_id)
            if item is not None:
                try:
                    return item.path.read_bytes(), ""
                except OSError as exc:
                    return FetchFailure(url=url, kind="connection", detail=str(exc))
        return FetchFailure(url=url, kind="http_error", detail=f"no image {image_id!r} in the corpus")

    def reset_dedup(self) -> None:
        """Forget images fetched so far (call at the start of each prompt)."""
        self.dedup.reset()

    # ------------------------------------------------------------------ lifecycle
    async def aclose(self) -> None:
        closed = set()
        for part in [self.reader, self.fetcher, *self.chain.backends]:
            for obj in (part, getattr(part, "session", None)):
                close = getattr(obj, "aclose", None)
                if close is not None and id(obj) not in closed:
                    closed.add(id(obj))
                    await close()
        if self.store is not None and self.store.root.exists():
            self.store.finalize()

    async def __aenter__(self) -> "Retriever":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
