"""Retrieval: search backends, page reader, safe image fetcher, evidence store.

The agent uses one facade, :class:`orig_local.retrieval.retriever.Retriever`. Search backends
are picked by name from :data:`BACKENDS` (module imported only when built).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orig_local.retrieval.base import SearchBackend
    from orig_local.retrieval.config import RetrievalConfig

# name -> "module:Class"; a new backend is a new file in backends/ plus one line here.
BACKENDS = {
    "ddgs": "orig_local.retrieval.backends.ddgs:DdgsBackend",
    "searxng": "orig_local.retrieval.backends.searxng:SearxngBackend",
    "wikimedia": "orig_local.retrieval.backends.wikimedia:WikimediaBackend",
    "local": "orig_local.retrieval.backends.local:LocalBackend",
    "snapshot": "orig_local.retrieval.backends.snapshot:SnapshotBackend",
}


def make_backend(name: str, config: RetrievalConfig, cache_dir: str | Path | None = None,
                 embedder: Any = None) -> SearchBackend:
    """Build backend ``name`` from a :class:`RetrievalConfig` (each backend reads its section)."""
    from orig_local._lazy import resolve

    cls = resolve("search", BACKENDS, name)
    return cls.from_config(config, cache_dir=cache_dir, embedder=embedder)
