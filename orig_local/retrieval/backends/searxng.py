"""``searxng`` backend: a self-hosted SearXNG instance through its JSON API.

SearXNG answers ``format=json`` with HTTP 403 until JSON output is enabled in its
``settings.yml``::

    search:
      formats:
        - html
        - json

Text results carry ``title, url, content``; image results (``categories=images``) carry
``img_src, thumbnail_src, url`` (the page) and ``resolution`` ("1920 x 1080").
"""

from __future__ import annotations

import re

from orig_local.retrieval.backends._jsonapi import JsonApi
from orig_local.retrieval.base import ImageHit, SearchError, TextHit
from orig_local.retrieval.config import SearxngConfig

_RESOLUTION = re.compile(r"(\d+)\s*[x×]\s*(\d+)")


class SearxngBackend:
    name = "searxng"

    def __init__(self, config: SearxngConfig | None = None, user_agent: str = "orig-local/0.1",
                 api: JsonApi | None = None):
        self.config = config or SearxngConfig()
        self.api = api or JsonApi(user_agent, self.config.timeout_s)

    @classmethod
    def from_config(cls, config, cache_dir=None, embedder=None) -> SearxngBackend:
        return cls(config.searxng, user_agent=config.fetch.user_agent)

    async def _search(self, query: str, categories: str) -> list[dict]:
        cfg = self.config
        data = await self.api.get(cfg.base_url.rstrip("/") + "/search", {
            "q": query, "format": "json", "categories": categories, "language": cfg.language,
            "safesearch": cfg.safesearch, "pageno": 1,
        })
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            raise SearchError("SearXNG answer has no 'results' list")
        return data["results"]

    async def text(self, query: str, k: int = 10) -> list[TextHit]:
        hits: list[TextHit] = []
        for row in await self._search(query, self.config.text_categories):
            if row.get("url") and len(hits) < k:
                hits.append(TextHit(title=row.get("title") or "", url=row["url"],
                                    snippet=row.get("content") or "", rank=len(hits) + 1, backend=self.name))
        return hits

    async def images(self, query: str, k: int = 10) -> list[ImageHit]:
        hits: list[ImageHit] = []
        for row in await self._search(query, self.config.image_categories):
            if not row.get("img_src") or len(hits) >= k:
                continue
            size = _RESOLUTION.search(str(row.get("resolution") or ""))
            hits.append(ImageHit(
                image_url=row["img_src"], thumbnail_url=row.get("thumbnail_src") or None,
                page_url=row.get("url") or None, title=row.get("title") or "",
                width=int(size.group(1)) if size else None, height=int(size.group(2)) if size else None,
                rank=len(hits) + 1, backend=self.name, attribution=row.get("source") or row.get("author") or None,
            ))
        return hits

    async def aclose(self) -> None:
        await self.api.aclose()
