"""JSON-over-HTTP helper for API backends (SearXNG, Wikimedia): errors become SearchError.

Search *endpoints* come from config and are trusted (a self-hosted SearXNG on localhost is
normal), so the URL guard that protects page and image fetches does not apply here.
"""

from __future__ import annotations

from typing import Any

import httpx

from orig_local.retrieval.base import RateLimited, SearchError


class JsonApi:
    def __init__(self, user_agent: str, timeout_s: float, client: httpx.AsyncClient | None = None):
        self.client = client or httpx.AsyncClient(headers={"User-Agent": user_agent},
                                                  timeout=timeout_s, follow_redirects=True)

    async def get(self, url: str, params: dict[str, Any]) -> Any:
        try:
            response = await self.client.get(url, params=params)
        except httpx.TimeoutException as exc:
            raise SearchError(f"timeout: {type(exc).__name__}") from exc
        except httpx.HTTPError as exc:
            raise SearchError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 429:
            raise RateLimited(f"HTTP 429 from {url} (retry-after {response.headers.get('retry-after', '?')})")
        if response.status_code >= 400:
            raise SearchError(f"HTTP {response.status_code} from {url}")
        try:
            return response.json()
        except ValueError as exc:
            raise SearchError(f"answer from {url} is not JSON") from exc

    async def aclose(self) -> None:
        await self.client.aclose()
