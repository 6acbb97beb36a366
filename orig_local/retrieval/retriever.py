"""The one facade the agent uses: search, read pages, fetch images, record evidence.

    retriever = Retriever.from_config(config.retrieval, cache_dir, embedder=config.embed)
    outcome = await retriever.search_text("Veltrane Harbor Lighthouse", k=10)
    page = await retriever.read_page(outcome.hits[0].url)          # Page | FetchFailure
    image = await retriever.fetch_image(url, page_url=...)          # FetchedImage | FetchFailure

Nothing here raises for trouble on the web: searches return a :class:`SearchOutcome` with every
failure listed, reads and fetches return :class:`FetchFailure`. URLs ``corpus://doc/<id>`` and
``corpus://img/<id>`` (hits of the ``local`` backend) are served from the corpus by the
corpus-aware reader and fetcher that :meth:`Retriever.from_config` composes
(:mod:`~orig_local.retrieval.corpusfetch`); the facade itself knows no URL scheme.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Literal

from orig_local.retrieval.base import (
    FetchedImage,
    FetchFailure,
    ImageFetcher,
    Page,
    PageReader,
    SearchBackend,
    SearchOutcome,
)
from orig_local.retrieval.chain import FallbackChain
from orig_local.retrieval.config import FetchConfig, RetrievalConfig, SearchConfig
from orig_local.retrieval.corpus import Corpus
from orig_local.retrieval.evidence import EvidenceStore
from orig_local.retrieval.images import Deduplicator

log = logging.getLogger(__name__)


class Retriever:
    """Search (a :class:`FallbackChain` or a single backend), a page reader, an image fetcher
    and an optional evidence store, passed in explicitly (tests inject fakes that implement
    :class:`PageReader` / :class:`ImageFetcher`). Missing reader/fetcher: the web ones."""

    def __init__(self, search: SearchBackend | FallbackChain, reader: PageReader | None = None, fetcher: ImageFetcher | None = None,
                 store: EvidenceStore | None = None, *, fetch_config: FetchConfig | None = None,
                 cache: Any = None):
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
        self.dedup = Deduplicator(self.fetch_config.dhash_max_distance)

    @classmethod
    def from_config(cls, config: RetrievalConfig, cache_dir: str | Path | None = None,
                    embedder: Any = None, record_dir: str | Path | None = None) -> Retriever:
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
        reader: PageReader = WebPageReader(config.reader, session)
        fetcher: ImageFetcher = WebImageFetcher(config.fetch, session)
        corpora = [c for c in (getattr(b, "corpus", None) for b in backends) if isinstance(c, Corpus)]
        if corpora:  # corpus:// hits of the local backend are read from disk
            from orig_local.retrieval.corpusfetch import CorpusImageFetcher, CorpusReader

            reader, fetcher = CorpusReader(corpora, reader), CorpusImageFetcher(corpora, fetcher)
        record = record_dir or config.record
        cache = None
        if cache_dir is not None and config.search.cache:
            from orig_local.cache import DiskCache

            cache = DiskCache(Path(cache_dir) / "search.sqlite", namespace="search")
        return cls(FallbackChain(backends, config.search), reader, fetcher,
                   store=EvidenceStore(record) if record else None, fetch_config=config.fetch, cache=cache)

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

    async def _search(self, kind: Literal["text", "images"], query: str, k: int) -> SearchOutcome:
        key = self._cache_key(kind, query, k)
        outcome = None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                outcome = SearchOutcome.model_validate({**hit, "cached": True})
        if outcome is None:
            outcome = await self.chain.search(kind, query, k)
            if key is not None and outcome.hits:
                await self.cache.aset(key, outcome.model_dump(mode="json", exclude={"failures", "cached"}))
        if self.store is not None:
            self.store.record_search(outcome, k)
        return outcome

    # ------------------------------------------------------------------ pages
    async def read_page(self, url: str, query: str | None = None) -> Page | FetchFailure:
        """``query``: what the page was searched for (picks the passages of a long page)."""
        result = await self.reader.read(url, query=query)
        if self.store is not None:
            self.store.record_page(url, result)
        return result

    # ------------------------------------------------------------------ images
    async def fetch_image(self, url: str, page_url: str | None = None, *,
                          dedup: bool = True) -> FetchedImage | FetchFailure:
        """Download, verify, decode, downscale, hash; duplicates of images fetched since the
        last :meth:`reset_dedup` come back as ``FetchFailure(kind="duplicate")``.

        ``dedup=False`` skips that shared check: the agent keeps its own per-prompt duplicate
        set, because one Retriever serves many prompts at once (and several conditions in a
        row), and an image one prompt fetched must not be refused to another."""
        got = await self.fetcher.fetch_bytes(url)
        if self.store is not None:
            self.store.record_image(url, got)  # the bytes, so a replay decodes them identically
        if isinstance(got, FetchFailure):
            return got
        result = await self.fetcher.decode(got[0], url, page_url, got[1])
        if isinstance(result, FetchedImage) and dedup:
            duplicate = self.dedup.check(result)
            if duplicate is not None:
                return duplicate
            self.dedup.add(result)
        return result

    def reset_dedup(self) -> None:
        """Forget images fetched so far (call at the start of each prompt)."""
        self.dedup.reset()

    # ------------------------------------------------------------------ lifecycle
    async def aclose(self) -> None:
        """Close every part, even when one of them fails to close (the first error is raised
        afterwards): a backend that cannot close must not leave the parse workers running."""
        closed: set[int] = set()
        parts: list[Any] = [self.reader, self.fetcher, *self.chain.backends]
        first_error: BaseException | None = None
        while parts:  # wrappers (corpus reader/fetcher) expose what they wrap as .inner
            part = parts.pop(0)
            if part is None or id(part) in closed:
                continue
            closed.add(id(part))
            parts += [getattr(part, "inner", None), getattr(part, "session", None)]
            close = getattr(part, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception as exc:  # noqa: BLE001 - re-raised below, after the other parts
                    first_error = first_error or exc
        if self.store is not None and self.store.root.exists():
            self.store.finalize()
        if first_error is not None:
            raise first_error

    async def __aenter__(self) -> Retriever:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
