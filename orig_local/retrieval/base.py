"""Types and the protocol every search backend implements (one backend per file).

The agent sees only these types; it never branches on which backend produced a hit.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field


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
    """Async search. ``k`` is the number of hits wanted (the paper uses top 10)."""

    name: str

    async def text(self, query: str, k: int = 10) -> list[TextHit]: ...

    async def images(self, query: str, k: int = 10) -> list[ImageHit]: ...
