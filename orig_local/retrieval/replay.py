"""Page reader and image fetcher that serve a recorded snapshot instead of the network."""

from __future__ import annotations

from orig_local.retrieval.base import FetchedImage, FetchFailure, Page
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.evidence import EvidenceStore
from orig_local.retrieval.images import ImageDecoder


class ReplayReader:
    def __init__(self, store: EvidenceStore):
        self.store = store

    async def read(self, url: str, query: str | None = None) -> Page | FetchFailure:
        return self.store.page(url)  # the text as recorded (its passages were chosen then)


class ReplayFetcher:
    """Recorded bytes go through the same :func:`decode_image` as live ones: same hashes."""

    def __init__(self, store: EvidenceStore, config: FetchConfig | None = None):
        self.store = store
        self.config = config or FetchConfig()
        self.decoder = ImageDecoder(self.config)

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "") -> FetchedImage | FetchFailure:
        return await self.decoder.decode(data, url, page_url, content_type)

    async def fetch_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        return self.store.image_bytes(url)

    async def fetch(self, url: str, page_url: str | None = None) -> FetchedImage | FetchFailure:
        got = await self.fetch_bytes(url)
        if isinstance(got, FetchFailure):
            return got
        return await self.decode(got[0], url, page_url, got[1])
