"""One bounded, guarded HTTP GET shared by the page reader and the image fetcher.

Bounds: a wall-clock deadline for the whole exchange (a server that stalls mid-body ends
here), a byte cap enforced while streaming (a 20 MB page is never held in memory), a redirect
cap, and the :class:`~orig_local.retrieval.safety.UrlGuard` on the first URL and every
redirect target. Failures come back as :class:`FetchFailure`, never as exceptions.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

import httpx

from orig_local.retrieval.base import FetchFailure
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.safety import HostLimiter, UrlGuard

log = logging.getLogger(__name__)

REDIRECT_CODES = (301, 302, 303, 307, 308)
# An error page body is read only this far: enough to recognise a bot wall.
ERROR_BODY_BYTES = 64_000


@dataclass
class RawResponse:
    url: str
    final_url: str
    status: int
    content_type: str  # lower-case media type without parameters ("" when absent)
    charset: str | None
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class HttpSession:
    """An ``httpx.AsyncClient`` (redirects handled here, not by httpx) plus the guard and the
    per-host politeness limiter. Shared by the reader and the fetcher of one Retriever."""

    def __init__(self, config: FetchConfig | None = None, client: httpx.AsyncClient | None = None):
        self.config = config or FetchConfig()
        self.guard = UrlGuard(self.config.allow_loopback, self.config.allow_private)
        self.hosts = HostLimiter(self.config.per_host_concurrency, self.config.per_host_interval_s)
        self.client = client or httpx.AsyncClient(
            follow_redirects=False,
            headers={"User-Agent": self.config.user_agent},
            timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=8),
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def get(self, url: str, *, max_bytes: int, max_redirects: int, timeout_s: float,
                  accept: str = "*/*") -> RawResponse | FetchFailure:
        """GET ``url`` within every bound; the deadline covers all redirects and the body."""
        try:
            return await asyncio.wait_for(self._get(url, max_bytes, max_redirects, accept), timeout_s)
        except asyncio.TimeoutError:
            return FetchFailure(url=url, kind="timeout", detail=f"no complete answer within {timeout_s:g} s")
        except httpx.TimeoutException as exc:
            return FetchFailure(url=url, kind="timeout", detail=type(exc).__name__)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return FetchFailure(url=url, kind="invalid_url", detail=str(exc))
        except httpx.DecodingError as exc:  # e.g. a body that claims gzip but is not
            return FetchFailure(url=url, kind="decode_error", detail=f"{type(exc).__name__}: {exc}")
        except (httpx.HTTPError, OSError) as exc:  # connect refused/reset, TLS, protocol errors
            return FetchFailure(url=url, kind="connection", detail=f"{type(exc).__name__}: {exc}")

    async def _get(self, url: str, max_bytes: int, max_redirects: int, accept: str):
        current = url
        for _hop in range(max_redirects + 1):
            refusal = await self.guard.check(current)
            if refusal is not None:
                kind, detail = refusal
                return FetchFailure(url=url, kind=kind, detail=f"{detail} (at {current})")
            host = urlsplit(current).netloc.lower()
            async with self.hosts.slot(host):
                request = self.client.build_request("GET", current, headers={"Accept": accept})
                response = await self.client.send(request, stream=True)
                try:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_CODES and location:
                        current = urljoin(current, location)
                        continue
                    return await self._read(url, current, response, max_bytes)
                finally:
                    await response.aclose()
        return FetchFailure(url=url, kind="redirects", detail=f"more than {max_redirects} redirects")

    async def _read(self, url: str, final_url: str, response: httpx.Response, max_bytes: int):
        ctype_header = response.headers.get("content-type", "")
        media, _, params = ctype_header.partition(";")
        charset = None
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.lower() == "charset" and value:
                charset = value.strip().strip('"').lower()
        cap = max_bytes if response.status_code < 400 else min(max_bytes, ERROR_BODY_BYTES)
        declared = response.headers.get("content-length")
        if response.status_code < 400 and declared and declared.isdigit() and int(declared) > max_bytes:
            return FetchFailure(url=url, kind="too_large",
                                detail=f"Content-Length {declared} > cap {max_bytes}")
        body = bytearray()
        async for chunk in response.aiter_bytes():  # decoded: a gzip bomb also hits the cap
            body.extend(chunk)
            if len(body) > cap:
                if response.status_code >= 400:
                    del body[cap:]
                    break
                return FetchFailure(url=url, kind="too_large", detail=f"body exceeds cap {max_bytes}")
        return RawResponse(url=url, final_url=final_url, status=response.status_code,
                           content_type=media.strip().lower(), charset=charset, body=bytes(body),
                           headers=dict(response.headers))
