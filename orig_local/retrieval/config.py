"""Config sections for retrieval (search, page reading, image fetching, evidence store)."""

from __future__ import annotations

from pydantic import Field

from orig_local.configbase import StrictModel


class SearchConfig(StrictModel):
    # Backends tried in order for each query (fallback chain); names from retrieval.BACKENDS.
    chain: list[str] = Field(default_factory=lambda: ["ddgs", "wikimedia"])


class ReaderConfig(StrictModel):
    timeout_s: float = 15.0


class FetchConfig(StrictModel):
    timeout_s: float = 15.0
    allow_loopback: bool = False  # local corpora and tests only


class RetrievalConfig(StrictModel):
    search: SearchConfig = Field(default_factory=SearchConfig)
    reader: ReaderConfig = Field(default_factory=ReaderConfig)
    fetch: FetchConfig = Field(default_factory=FetchConfig)
    record: str | None = None  # write an evidence snapshot here
    replay: str | None = None  # serve evidence from this snapshot (offline, exact re-runs)
