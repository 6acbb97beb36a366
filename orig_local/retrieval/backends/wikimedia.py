"""``wikimedia`` backend: Wikipedia search with intro extracts, and Wikimedia Commons images
with licence and attribution. Free and keyless; a dependable fallback for encyclopedic
entities. Wikimedia requires a descriptive User-Agent (``retrieval.wikimedia.user_agent``) and
rate-limits anonymous traffic (HTTP 429 -> the chain backs off).
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote

from orig_local.retrieval.backends._jsonapi import JsonApi
from orig_local.retrieval.base import ImageHit, SearchError, TextHit
from orig_local.retrieval.config import WikimediaConfig

_TAGS = re.compile(r"<[^>]+>")


def strip_html(text: str | None) -> str:
    return html.unescape(_TAGS.sub("", text or "")).strip()


class WikimediaBackend:
    name = "wikimedia"

    def __init__(self, config: WikimediaConfig | None = None, api: JsonApi | None = None):
        self.config = config or WikimediaConfig()
        self.api = api or JsonApi(self.config.user_agent, self.config.timeout_s)

    @classmethod
    def from_config(cls, config, cache_dir=None, embedder=None) -> WikimediaBackend:
        return cls(config.wikimedia)

    @staticmethod
    def _pages(data) -> list[dict]:
        if not isinstance(data, dict):
            raise SearchError("Wikimedia answer is not a JSON object")
        if "error" in data:
            raise SearchError(f"Wikimedia API error: {data['error']}")
        pages = (data.get("query") or {}).get("pages") or {}
        pages = list(pages.values()) if isinstance(pages, dict) else list(pages)
        return sorted(pages, key=lambda p: p.get("index", 0))  # generator=search keeps rank in "index"

    async def text(self, query: str, k: int = 10) -> list[TextHit]:
        api = self.config.wikipedia_api
        data = await self.api.get(api, {
            "action": "query", "format": "json", "formatversion": 2, "generator": "search",
            "gsrsearch": query, "gsrlimit": k, "prop": "extracts|info", "inprop": "url",
            "exintro": 1, "explaintext": 1, "exsentences": 3, "exlimit": "max",
        })
        hits: list = []
        for page in self._pages(data):
            title = page.get("title") or ""
            base = api.rsplit("/w/api.php", 1)[0]
            url = page.get("fullurl") or f"{base}/wiki/{quote(title.replace(' ', '_'))}"
            hits.append(TextHit(title=title, url=url, snippet=(page.get("extract") or "").strip(),
                                rank=len(hits) + 1, backend=self.name))
        return hits[:k]

    async def images(self, query: str, k: int = 10) -> list[ImageHit]:
        data = await self.api.get(self.config.commons_api, {
            "action": "query", "format": "json", "formatversion": 2, "generator": "search",
            "gsrsearch": f"filetype:bitmap {query}", "gsrnamespace": 6, "gsrlimit": k,
            "prop": "imageinfo", "iiprop": "url|size|mime|extmetadata",
            "iiurlwidth": self.config.thumb_width,
            "iiextmetadatafilter": "LicenseShortName|Artist|Credit|ImageDescription",
        })
        hits: list = []
        for page in self._pages(data):
            info = (page.get("imageinfo") or [{}])[0]
            if not info.get("url") or not str(info.get("mime", "image/")).startswith("image/"):
                continue
            meta = info.get("extmetadata") or {}
            value = lambda key, meta=meta: strip_html((meta.get(key) or {}).get("value")) or None  # noqa: E731
            title = value("ImageDescription") or (page.get("title") or "").removeprefix("File:")
            hits.append(ImageHit(
                image_url=info.get("thumburl") or info["url"], thumbnail_url=info.get("thumburl"),
                page_url=info.get("descriptionurl"), title=title[:300],
                width=info.get("thumbwidth") or info.get("width"), height=info.get("thumbheight") or info.get("height"),
                rank=len(hits) + 1, backend=self.name,
                license=value("LicenseShortName"), attribution=value("Artist") or value("Credit"),
            ))
        return hits[:k]

    async def aclose(self) -> None:
        await self.api.aclose()
