"""One bounded, guarded HTTP GET shared by the page reader and the image fetcher.

Bounds, all enforced here so a hostile server meets them whatever it sends:

* a wall-clock deadline for the whole exchange (connect, redirects, headers, body, decoding);
  a server that stalls mid-body ends here;
* a byte cap on the body *after* decoding, enforced while streaming: content codings are
  undone here, layer by layer, with a bounded output per step (``DECODE_STEP``), so a 7 KB
  ``gzip, gzip`` bomb stops at the cap after a few milliseconds instead of expanding to
  gigabytes inside the HTTP client; more than ``MAX_CODINGS`` stacked codings are refused;
* a redirect cap, and the :class:`~orig_local.retrieval.safety.UrlGuard` on the first URL and
  every redirect target;
* DNS pinning: each hop's host is resolved once, every address checked, and the transport
  connects to exactly the checked address (:class:`PinningBackend`); the URL, ``Host`` header
  and TLS server name stay the original host's.

Failures come back as :class:`FetchFailure`, never as exceptions.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin

import httpcore
import httpx

from orig_local.retrieval.base import FetchFailure
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.safety import HostLimiter, IPAddress, Resolver, UrlGuard

log = logging.getLogger(__name__)

REDIRECT_CODES = (301, 302, 303, 307, 308)
# An error page body is read only this far: enough to recognise a bot wall.
ERROR_BODY_BYTES = 64_000
# Most decoded bytes one decompression step may produce; what bounds memory to cap + one step
# and keeps each step short (well under a millisecond) on the event loop.
DECODE_STEP = 64 * 1024
# Most bytes handed to the HTTP parser (h11) per socket read. h11 cuts each event out of its
# buffer by copying the rest, so one 64 KB read of 1-byte chunks or of ``100 Continue`` lines
# costs O(events x buffer) on the event loop (0.6 s of loop lag measured); 8 KB reads bound
# that to a few ms and cost nothing measurable on real pages.
READ_BYTES = 8 * 1024
# Response headers kept in RawResponse (a real response has tens; 10,000 were seen from a
# hostile server, and httpx's Headers mapping makes a dict of them quadratic).
MAX_HEADERS = 200
# "gzip, gzip" is legal but pointless; deeper stacks exist only to amplify.
MAX_CODINGS = 2
ACCEPT_ENCODING = "gzip, deflate"  # only what we decode ourselves, under the bounds above


class AddressBlocked(Exception):
    """Raised inside the transport when a connection would reach a refused address."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


class DecodeFailure(Exception):
    """A content coding we cannot or will not undo (corrupt, unknown, too deeply stacked)."""


# --------------------------------------------------------------------------- decoding

class _ZlibLayer:
    """One gzip or deflate layer, undone incrementally with at most ``step`` bytes out per call."""

    def __init__(self, coding: str):
        self.coding = coding
        self._d = zlib.decompressobj(self._wbits())
        self._started = False
        self._fed = False

    def _wbits(self) -> int:
        return 16 + zlib.MAX_WBITS if self.coding == "gzip" else zlib.MAX_WBITS

    def feed(self, data: bytes, step: int) -> Iterator[bytes]:
        self._fed = self._fed or bool(data)
        while data:
            try:
                out = self._d.decompress(data, step)
            except zlib.error as exc:
                if self.coding == "deflate" and not self._started:
                    # "deflate" is often sent raw, without the zlib wrapper (httpx does the same)
                    self._started = True
                    self._d = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise DecodeFailure(f"{self.coding}: {exc}") from None
            self._started = True
            data = self._d.unconsumed_tail
            if self._d.eof:
                rest = self._d.unused_data + data
                if self.coding == "gzip" and rest.startswith(b"\x1f\x8b"):
                    self._d = zlib.decompressobj(self._wbits())  # a multi-member gzip body
                    data = rest
                else:
                    data = b""  # trailing bytes after the stream: ignored, like browsers do
            if out:
                yield out

    def flush(self) -> bytes:
        return self._d.flush()  # bounded: every input byte has been drained above

    @property
    def complete(self) -> bool:
        """The stream reached its end marker (a cut-off body never does); an empty body, sent
        with a coding header by some servers, counts as complete."""
        return self._d.eof or not self._fed


class BodyDecoder:
    """Undoes ``Content-Encoding`` (applied left to right, so undone right to left)."""

    def __init__(self, content_encoding: str):
        codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > MAX_CODINGS:
            raise DecodeFailure(f"{len(codings)} stacked content codings (limit {MAX_CODINGS})")
        layers = []
        for coding in reversed(codings):
            coding = {"x-gzip": "gzip"}.get(coding, coding)
            if coding not in ("gzip", "deflate"):
                raise DecodeFailure(f"unsupported content coding {coding!r}")
            layers.append(_ZlibLayer(coding))
        self.layers = layers

    def feed(self, data: bytes) -> Iterator[bytes]:
        return self._through(data, 0)

    def _through(self, data: bytes, i: int) -> Iterator[bytes]:
        if i == len(self.layers):
            if data:
                yield data
            return
        for piece in self.layers[i].feed(data, DECODE_STEP):
            yield from self._through(piece, i + 1)

    def flush(self) -> Iterator[bytes]:
        """The rest of every layer; a layer whose stream was cut off before its end is a
        :class:`DecodeFailure` (a truncated page would otherwise pass as a shorter one)."""
        for i, layer in enumerate(self.layers):
            tail = layer.flush()
            if tail:
                yield from self._through(tail, i + 1)
            if not layer.complete:
                raise DecodeFailure(f"{layer.coding} stream is truncated (the body ends before the stream does)")


# --------------------------------------------------------------------------- pinned transport

class PinningBackend(httpcore.AsyncNetworkBackend):
    """Connects to the address the guard checked for a host, never to a fresh DNS answer.

    ``pin(host, port, ip)`` is called by :class:`HttpSession` right after the check of each hop;
    ``connect_tcp`` then dials that IP (TLS still uses the original host name, which httpcore
    passes separately). A connection for a host without a pin (should not happen) resolves and
    checks on the spot. Pins are overwritten, never cleared: every stored address was checked."""

    def __init__(self, guard: UrlGuard):
        self.guard = guard
        self.pins: dict[tuple[str, int], IPAddress] = {}
        self._inner = httpcore.AnyIOBackend()

    def pin(self, host: str, port: int, ip: IPAddress) -> None:
        self.pins[(host.lower(), port)] = ip

    async def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        ip = self.pins.get((host.lower(), port))
        if ip is None:
            got = await self.guard.resolve_host(host, port)
            if isinstance(got, tuple):
                raise AddressBlocked(*got)
            ip = got[0]
        elif not self.guard.address_allowed(ip):  # belt and braces: pins come from the guard
            raise AddressBlocked("blocked", f"{host} pinned to refused address {ip}")
        stream = await self._inner.connect_tcp(str(ip), port, timeout=timeout, local_address=local_address,
                                               socket_options=socket_options)
        return SmallReads(stream)

    async def connect_unix_socket(self, path, timeout=None, socket_options=None):
        raise AddressBlocked("blocked", "unix sockets are never fetched")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class SmallReads(httpcore.AsyncNetworkStream):
    """A connection whose reads hand at most ``READ_BYTES`` to the HTTP parser (see there), and
    give the event loop a turn before each read, so a server that floods tiny events (1-byte
    chunks, endless ``100 Continue``) cannot hold the loop between two reads."""

    def __init__(self, inner: httpcore.AsyncNetworkStream):
        self._inner = inner

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        await asyncio.sleep(0)
        return await self._inner.read(min(max_bytes, READ_BYTES), timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return SmallReads(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class PinnedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport with its connection pool built on :class:`PinningBackend`."""

    def __init__(self, backend: PinningBackend, limits: httpx.Limits):
        super().__init__(limits=limits, trust_env=False)
        ssl_context = httpx.create_ssl_context()
        # httpx builds the pool without a network-backend parameter; rebuild it with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context, max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry, network_backend=backend,
        )


# --------------------------------------------------------------------------- session

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
    """An ``httpx.AsyncClient`` (redirects handled here, not by httpx) on a pinned transport,
    plus the guard and the per-host politeness limiter. Shared by the reader and the fetcher
    of one Retriever. ``resolver`` replaces DNS (tests serve rebinding answers with it)."""

    def __init__(self, config: FetchConfig | None = None, *, resolver: Resolver | None = None):
        self.config = config or FetchConfig()
        self.guard = UrlGuard(self.config.allow_loopback, self.config.allow_private, resolver)
        self.hosts = HostLimiter(self.config.per_host_concurrency, self.config.per_host_interval_s)
        self.backend = PinningBackend(self.guard)
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=8)
        self.client = httpx.AsyncClient(
            transport=PinnedTransport(self.backend, limits),
            follow_redirects=False,
            trust_env=False,  # an environment proxy would resolve names itself: no pinning
            headers={"User-Agent": self.config.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
            timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
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
        except AddressBlocked as exc:
            return FetchFailure(url=url, kind=exc.kind, detail=exc.detail)  # type: ignore[arg-type]
        except httpx.TimeoutException as exc:
            return FetchFailure(url=url, kind="timeout", detail=type(exc).__name__)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return FetchFailure(url=url, kind="invalid_url", detail=str(exc))
        except UnicodeError as exc:  # a host that is no valid IDNA name (xn--, xn--ls8h): idna raises
            return FetchFailure(url=url, kind="invalid_url", detail=f"host name: {type(exc).__name__}: {exc}"[:300])
        except (DecodeFailure, httpx.DecodingError) as exc:
            return FetchFailure(url=url, kind="decode_error", detail=f"content coding: {exc}")
        except MemoryError:
            return FetchFailure(url=url, kind="too_large", detail="out of memory while reading the body")
        except (httpx.HTTPError, OSError) as exc:  # connect refused/reset, TLS, protocol errors
            return FetchFailure(url=url, kind="connection", detail=f"{type(exc).__name__}: {exc}")

    async def _get(self, url: str, max_bytes: int, max_redirects: int, accept: str):
        current = url
        for _hop in range(max_redirects + 1):
            refusal = self.guard.check_syntax(current)
            if refusal is not None:
                return FetchFailure(url=url, kind=refusal[0], detail=f"{refusal[1]} (at {current})")  # type: ignore[arg-type]
            request = self.client.build_request("GET", current, headers={"Accept": accept})
            host = request.url.raw_host.decode("ascii")
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            addresses = await self.guard.resolve_host(host, port)
            if isinstance(addresses, tuple):
                kind, detail = addresses
                return FetchFailure(url=url, kind=kind, detail=f"{detail} (at {current})")  # type: ignore[arg-type]
            self.backend.pin(host, port, addresses[0])
            async with self.hosts.slot(f"{host}:{port}"):
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
        error = response.status_code >= 400
        cap = min(max_bytes, ERROR_BODY_BYTES) if error else max_bytes
        declared = response.headers.get("content-length")
        if not error and declared and declared.isdigit() and int(declared) > max_bytes:
            return FetchFailure(url=url, kind="too_large",
                                detail=f"Content-Length {declared} > cap {max_bytes}")
        decoder = BodyDecoder(response.headers.get("content-encoding", ""))
        body = bytearray()
        since_yield = received = 0
        async for raw in response.aiter_raw():
            received += len(raw)
            if received > max_bytes:  # the compressed stream alone is too big
                if error:
                    return self._raw(url, final_url, response, media, charset, body[:cap])
                return FetchFailure(url=url, kind="too_large", detail=f"body exceeds cap {max_bytes}")
            for piece in decoder.feed(raw):
                body.extend(piece)
                since_yield += len(piece)
                if len(body) > cap:
                    if error:
                        del body[cap:]
                        return self._raw(url, final_url, response, media, charset, body)
                    return FetchFailure(url=url, kind="too_large", detail=f"body exceeds cap {max_bytes} once decoded")
                if since_yield >= 256_000:  # long decodes give the event loop a turn
                    since_yield = 0
                    await asyncio.sleep(0)
        try:
            for piece in decoder.flush():
                body.extend(piece)
                if len(body) > cap:
                    if error:
                        del body[cap:]
                        break
                    return FetchFailure(url=url, kind="too_large", detail=f"body exceeds cap {max_bytes} once decoded")
        except DecodeFailure:
            if not error:
                raise
            # an error page's body only serves to recognise a bot wall: keep what was decoded
        return self._raw(url, final_url, response, media, charset, body)

    @staticmethod
    def _raw(url, final_url, response, media, charset, body) -> RawResponse:
        return RawResponse(url=url, final_url=final_url, status=response.status_code,
                           content_type=media.strip().lower(), charset=charset, body=bytes(body),
                           headers=header_dict(response.headers))


def header_dict(headers: httpx.Headers) -> dict[str, str]:
    """At most ``MAX_HEADERS`` headers in one pass (``dict(headers)`` looks every key up
    again: quadratic, 17-27 s for 10,000 headers). A repeated header keeps its values joined
    with ", ", as httpx does."""
    out: dict[str, str] = {}
    for key, value in headers.multi_items():
        if key in out:
            out[key] = f"{out[key]}, {value}"
        elif len(out) < MAX_HEADERS:
            out[key] = value
    return out
