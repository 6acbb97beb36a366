"""Types and the protocol every search backend implements (one backend per file).

The agent sees only these types; it never branches on which backend produced a hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

if TYPE_CHECKING:
    from orig_local.retrieval.config import RetrievalConfig


class TextHit(BaseModel):
    title: str
    url: str
    snippet: str = ""
    rank: int  # 1-based rank within the backend's answer
    backend: str


class ImageHit(BaseModel):
    image_url: str
    thumbnail_url: str | None = None
    page_url: str | None = None
    title: str = ""
    width: int | None = None
    height: int | None = None
    rank: int
    backend: str
    license: str | None = None  # e.g. Wikimedia Commons licence short name
    attribution: str | None = None


class SearchError(RuntimeError):
    """A search that failed (after the backend's own bounded retries)."""


class RateLimited(SearchError):
    """The service refused us for now; back off, then fall back."""


@runtime_checkable
class SearchBackend(Protocol):
    """Async search. ``k`` is the number of hits wanted (the paper uses top 10). Built by
    :func:`orig_local.retrieval.make_backend` through ``from_config``; ``aclose`` releases its
    connections (a no-op for a backend without any)."""

    name: str

    @classmethod
    def from_config(cls, config: RetrievalConfig, cache_dir: str | Path | None = None,
                    embedder: Any = None) -> SearchBackend: ...

    async def text(self, query: str, k: int = 10) -> list[TextHit]: ...

    async def images(self, query: str, k: int = 10) -> list[ImageHit]: ...

    async def aclose(self) -> None: ...


SearchFailureKind = Literal["rate_limited", "error", "timeout", "empty", "cooldown"]


class SearchFailure(BaseModel):
    """One failed attempt of one backend; the agent copies these into its trace."""

    backend: str
    kind: SearchFailureKind
    detail: str = ""
    attempt: int = 1  # 1-based attempt of this backend for this query
    elapsed_s: float = 0.0


class SearchOutcome(BaseModel):
    """What a search returned, plus every failure on the way (never raised)."""

    query: str
    kind: Literal["text", "images"]
    hits: list[TextHit] | list[ImageHit] = []
    failures: list[SearchFailure] = []
    backend: str | None = None  # the backend that answered; None if all failed
    cached: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.hits)


# --------------------------------------------------------------------------- reading & fetching

FailureKind = Literal[
    "timeout", "too_large", "not_html", "not_image", "blocked", "http_error", "empty",
    "bot_wall", "redirects", "decode_error", "bomb", "duplicate", "connection", "invalid_url",
    "too_small",  # an icon or tracking pixel below fetch.min_side
    "not_recorded",  # replay: the snapshot holds nothing for this URL
]


class Page(BaseModel):
    """A web page read to main-content plain text (lines: paragraphs, list items, headings)."""

    url: str
    final_url: str
    title: str = ""
    text: str
    fetched_at: str  # ISO 8601 UTC
    status: int


class FetchFailure(BaseModel):
    """Why a page or an image could not be used. Recorded in the trace, never raised past
    the reader/fetcher."""

    url: str
    kind: FailureKind
    detail: str = ""


@dataclass
class FetchedImage:
    """A downloaded, verified, decoded, RGB, size-capped image."""

    image: Any  # PIL.Image.Image (RGB)
    bytes_sha256: str  # sha256 of the downloaded bytes (content address in the evidence store)
    url: str
    page_url: str | None = None
    width: int = 0
    height: int = 0
    dhash: int | None = None  # 64-bit perceptual hash, for cheap near-duplicate drops


@runtime_checkable
class PageReader(Protocol):
    async def read(self, url: str, query: str | None = None) -> Page | FetchFailure:
        """``query``: what the page was searched for; a reader that shortens long pages keeps
        the passages that match it (the web reader does), others may ignore it."""
        ...


@runtime_checkable
class ImageFetcher(Protocol):
    """Two halves, so the evidence store can record the downloaded bytes between them:
    ``fetch_bytes`` (network or disk; ``(bytes, content type)``) and ``decode`` (deterministic:
    the same bytes always give the same image and hashes). ``fetch`` does both."""

    config: Any  # FetchConfig

    async def fetch_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure: ...

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "") -> FetchedImage | FetchFailure: ...

    async def fetch(self, url: str, page_url: str | None = None) -> FetchedImage | FetchFailure: ...
