"""Config sections for retrieval (search, page reading, image fetching, evidence store)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from orig_local.configbase import StrictModel


class SearchConfig(StrictModel):
    # Backends tried in order for each query (fallback chain); names from retrieval.BACKENDS.
    chain: list[str] = Field(default_factory=lambda: ["ddgs", "wikimedia"], min_length=1)
    # Per-backend rate limiter: at least this many seconds between two calls to one backend.
    # ddgs users report 1-2 s spacing avoids most rate limits.
    min_interval_s: float = 1.0
    # Attempts per backend and query when rate-limited, with exponential backoff + jitter.
    max_attempts: int = 3
    backoff_base_s: float = 2.0
    backoff_max_s: float = 30.0
    # After this many consecutive failed queries a backend is skipped for cooldown_s.
    cooldown_after: int = 3
    cooldown_s: float = 120.0
    # Wall-clock bound for one backend call (the ddgs thread keeps running; we stop waiting).
    timeout_s: float = 20.0
    cache: bool = True  # cache non-empty search answers in <cache_dir>/search.sqlite
    # Paper §3: top 10 text and image results per query.
    default_k: int = 10


class ReaderConfig(StrictModel):
    timeout_s: float = 15.0  # whole read: connect + headers + body + decoding + parsing
    connect_timeout_s: float = 5.0
    max_bytes: int = 5_000_000  # bigger pages are refused (too_large), never held in memory
    max_redirects: int = 5
    min_chars: int = 200  # extracted text shorter than this is "empty"
    # longer text keeps its lead + the passages best matching the query (the backbone reads it whole)
    max_chars: int = 20_000
    # Parse worker processes (killable at the deadline; null = min(4, CPU count)). 0 parses in
    # a thread instead: no deadline on parsing, and a big page can stall the event loop.
    parse_workers: int | None = None
    # Heap a parse worker may grow by past its start-up (Linux RLIMIT_DATA; null = no cap). A page
    # whose parse needs more (150k paragraphs took trafilatura to ~310 MB) ends as too_large in
    # well under a second instead of holding the memory until the deadline. Real articles of a
    # few hundred thousand characters need a few tens of MB.
    worker_memory_mb: int | None = Field(160, ge=32)
    # trafilatura's mode: balanced (its default; the configuration behind its published 0.958
    # F1 on the article-extraction benchmark), precision or recall.
    favor: Literal["balanced", "precision", "recall"] = "balanced"


class FetchConfig(StrictModel):
    timeout_s: float = 15.0
    connect_timeout_s: float = 5.0
    max_bytes: int = 10_000_000
    max_redirects: int = 5
    # Decoded width*height above this is a decompression bomb (JPEGs count at their reduced
    # decoding scale). 16 MP x 4 bytes x 3 copies bounds one decode to ~200 MB.
    max_pixels: int = 16_000_000
    decode_memory_mb: int = 256  # estimated memory of all image decodes in flight at once
    # Processes that decode images, so a decode past the deadline is killed (a thread cannot
    # be stopped); None: min(2, cores); 0: decode in a thread of this process, no deadline.
    decode_workers: int | None = Field(None, ge=0)
    # A JPEG with more scans than this is refused: each scan is another pass over the whole
    # image (a real progressive JPEG has about 10; 2,000 repeated scans took 135 s to decode).
    max_jpeg_scans: int = Field(64, ge=1)
    max_side: int = 1024  # downscale so the longest side is at most this
    min_side: int = 64  # icons, spacers and tracking pixels are refused (too_small)
    dhash_max_distance: int = 6  # 64-bit dHash; <= 6-8 bits apart = resized/recompressed copy
    allow_loopback: bool = False  # local corpora and tests only
    allow_private: bool = False  # private/link-local ranges (a lab intranet); never by default
    user_agent: str = "orig-local/0.1 (research; factual image generation)"
    # Politeness: per host, at most this many requests at once and this spacing between starts.
    per_host_concurrency: int = 2
    per_host_interval_s: float = 0.5


class DdgsConfig(StrictModel):
    # Engines named explicitly: "auto" shuffles engines, re-ranks, and puts AI-written
    # Grokipedia first. Comma-joined into ddgs's `backend=` argument.
    text_engines: list[str] = Field(default_factory=lambda: ["duckduckgo", "brave", "mojeek"])
    image_engines: list[str] = Field(default_factory=lambda: ["duckduckgo", "bing"])
    region: str = "us-en"
    safesearch: str = "moderate"  # on | moderate | off
    timelimit: str | None = None  # d | w | m | y
    proxy: str | None = None  # also honours $DDGS_PROXY
    timeout_s: int = 10

    @field_validator("text_engines", "image_engines")
    @classmethod
    def _explicit_engines(cls, engines: list[str]) -> list[str]:
        if not engines:
            raise ValueError("name at least one engine")
        if {"auto", "all"} & {e.strip().lower() for e in engines}:
            raise ValueError("name engines explicitly: 'auto'/'all' shuffle engines and re-rank results")
        return engines


class SearxngConfig(StrictModel):
    base_url: str = "http://127.0.0.1:8888"  # a self-hosted instance with JSON output enabled
    text_categories: str = "general"
    image_categories: str = "images"
    language: str = "en"
    safesearch: int = 1  # 0 off, 1 moderate, 2 strict
    timeout_s: float = 10.0


class WikimediaConfig(StrictModel):
    wikipedia_api: str = "https://en.wikipedia.org/w/api.php"
    commons_api: str = "https://commons.wikimedia.org/w/api.php"
    # Wikimedia requires a descriptive User-Agent with contact details; set yours.
    user_agent: str = "orig-local/0.1 (research; factual image generation; contact: set retrieval.wikimedia.user_agent)"
    thumb_width: int = 1024  # ask Commons for a thumbnail this wide instead of the original
    timeout_s: float = 10.0


class LocalConfig(StrictModel):
    # Corpus folder (docs.jsonl + images.jsonl + images/) or null for the packaged demo corpus.
    corpus: str | None = None
    # Where the index goes; null = beside the corpus, or <cache_dir>/corpus-index/ when the
    # corpus folder is read-only (e.g. installed package data).
    index_dir: str | None = None
    # Image score = (1 - w) * BM25(captions, normalised) + w * CLIP(text, image, normalised).
    clip_weight: float = 0.3
    images: bool = True  # False: text only, no CLIP model is loaded


class RetrievalConfig(StrictModel):
    search: SearchConfig = Field(default_factory=SearchConfig)
    reader: ReaderConfig = Field(default_factory=ReaderConfig)
    fetch: FetchConfig = Field(default_factory=FetchConfig)
    ddgs: DdgsConfig = Field(default_factory=DdgsConfig)
    searxng: SearxngConfig = Field(default_factory=SearxngConfig)
    wikimedia: WikimediaConfig = Field(default_factory=WikimediaConfig)
    local: LocalConfig = Field(default_factory=LocalConfig)
    record: str | None = None  # write an evidence snapshot here
    replay: str | None = None  # serve evidence from this snapshot (offline, exact re-runs)
