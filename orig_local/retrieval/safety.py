"""Where fetching may go: public http(s) addresses only, unless a switch says otherwise.

Search results are untrusted input: a page or image URL could point at the machine itself
(``http://127.0.0.1:8000/admin``), a cloud metadata service (``169.254.169.254``) or an intranet.

* :func:`classify_address` sorts one IP address into ``public``, ``loopback``, ``private`` or
  ``blocked``. An IPv6 address that carries an IPv4 address (IPv4-mapped, IPv4-compatible,
  NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo ``2001::/32``) is judged by that IPv4
  address, because that is where the packets end up. Only global unicast IPv6 (``2000::/3``)
  outside the special-purpose ranges counts as public: Python's ``is_global`` calls several of
  those ranges global.
* :class:`UrlGuard` checks a URL: scheme, host, and every address the host resolves to.
  :meth:`UrlGuard.resolve` returns the checked addresses; the HTTP transport
  (:mod:`~orig_local.retrieval.httpfetch`) connects to exactly one of them, so a DNS answer that
  changes between the check and the connection (DNS rebinding) cannot redirect the request.
* The resolver is a parameter (``resolver(host, port) -> [ip, ...]``), so tests can serve a
  rebinding DNS answer without any network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Literal
from urllib.parse import urlsplit

ALLOWED_SCHEMES = ("http", "https")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
AddressClass = Literal["public", "loopback", "private", "blocked"]

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
# IPv4 ranges that are never fetched, whatever the switches say.
_V4_BLOCKED = [
    _V4("0.0.0.0/8"),  # "this network": Linux connects 0.x.x.x to the local host
    _V4("100.64.0.0/10"),  # carrier-grade NAT (shared address space)
    _V4("192.0.0.0/24"),  # IETF protocol assignments
    _V4("192.0.2.0/24"), _V4("198.51.100.0/24"), _V4("203.0.113.0/24"),  # documentation
    _V4("198.18.0.0/15"),  # benchmarking
    _V4("224.0.0.0/4"),  # multicast
    _V4("240.0.0.0/4"),  # reserved, incl. 255.255.255.255 broadcast
]
_V4_PRIVATE = [_V4("10.0.0.0/8"), _V4("172.16.0.0/12"), _V4("192.168.0.0/16"),
               _V4("169.254.0.0/16")]  # link-local (cloud metadata lives here)

_MAPPED = _V6("::ffff:0:0/96")
_COMPAT = _V6("::/96")  # deprecated IPv4-compatible ::a.b.c.d (:: and ::1 handled first)
_NAT64 = _V6("64:ff9b::/96")  # well-known NAT64 prefix: the last 32 bits are the IPv4 target
_6TO4 = _V6("2002::/16")  # bits 16-47 are the IPv4 address of the 6to4 relay target
_TEREDO = _V6("2001::/32")  # server IPv4 in bits 32-63, client IPv4 (inverted) in the last 32
_V6_GLOBAL_UNICAST = _V6("2000::/3")
_V6_PRIVATE = [_V6("fc00::/7"),  # unique local addresses
               _V6("fe80::/10"),  # link-local
               _V6("fec0::/10")]  # deprecated site-local
# Special-purpose ranges (IANA registry) that are not globally reachable. Anything outside
# 2000::/3 is refused as well (multicast ff00::/8, discard 100::/64, reserved space ...).
_V6_BLOCKED = [
    _V6("64:ff9b:1::/48"),  # local-use NAT64 (RFC 8215): the IPv4 position is operator-chosen
    _V6("2001::/23"),  # IETF protocol assignments (Teredo is judged before this)
    _V6("2001:db8::/32"), _V6("3fff::/20"),  # documentation
    _V6("2001:10::/28"), _V6("2001:20::/28"),  # ORCHID
    _V6("5f00::/16"),  # SRv6 segment identifiers
]


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (empty when it carries none). Teredo carries
    two (server and client); the address is only as safe as the worse of them."""
    value = int(ip)
    low32 = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if ip in _MAPPED or ip in _NAT64:
        return [low32]
    if ip in _COMPAT and value > 1:
        return [low32]
    if ip in _6TO4:
        return [ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF)]
    if ip in _TEREDO:
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF)
        return [server, ipaddress.IPv4Address(~value & 0xFFFFFFFF)]
    return []


def _classify_v4(ip: ipaddress.IPv4Address) -> AddressClass:
    if ip.is_loopback:
        return "loopback"
    if any(ip in net for net in _V4_BLOCKED):
        return "blocked"
    if any(ip in net for net in _V4_PRIVATE):
        return "private"
    return "public" if ip.is_global else "blocked"


def classify_address(ip: IPAddress) -> AddressClass:
    """``public`` (fetchable), ``loopback`` (only with ``allow_loopback``), ``private`` (only
    with ``allow_private``) or ``blocked`` (never). Pure: never resolves or connects."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _classify_v4(ip)
    if ip.scope_id:  # a zone id means a link-scoped address
        return "private"
    if ip == ipaddress.IPv6Address("::1"):
        return "loopback"
    if ip == ipaddress.IPv6Address("::"):
        return "blocked"
    carried = embedded_ipv4(ip)
    if carried:
        classes = [_classify_v4(v4) for v4 in carried]
        for worst in ("blocked", "private", "loopback"):
            if worst in classes:
                return worst  # type: ignore[return-value]
        return "public"
    if any(ip in net for net in _V6_PRIVATE):
        return "private"
    if ip not in _V6_GLOBAL_UNICAST or any(ip in net for net in _V6_BLOCKED):
        return "blocked"
    return "public"


async def system_resolver(host: str, port: int) -> list[IPAddress]:
    """Every address ``getaddrinfo`` gives for ``host`` (raises ``OSError`` when none)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    out: list[IPAddress] = []
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])  # drop an IPv6 zone id
        if addr not in out:
            out.append(addr)
    return out


class UrlGuard:
    """Decides whether a URL may be fetched. ``check`` returns ``None`` (fine) or
    ``(kind, detail)`` with kind ``invalid_url``, ``connection`` or ``blocked``;
    ``resolve`` additionally returns the checked addresses to connect to."""

    def __init__(self, allow_loopback: bool = False, allow_private: bool = False,
                 resolver: Resolver | None = None):
        self.allow_loopback = allow_loopback  # tests and local corpora only (config switch)
        self.allow_private = allow_private
        self.resolver: Resolver = resolver or system_resolver

    def address_allowed(self, ip: IPAddress) -> bool:
        kind = classify_address(ip)
        return (kind == "public" or (kind == "loopback" and self.allow_loopback)
                or (kind == "private" and self.allow_private))

    async def check(self, url: str) -> tuple[str, str] | None:
        got = await self.resolve(url)
        return got if isinstance(got, tuple) else None

    @staticmethod
    def check_syntax(url: str) -> tuple[str, str] | None:
        """Scheme and host only (no DNS): ``None`` or ``("invalid_url", detail)``."""
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError as exc:
            return "invalid_url", str(exc)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            return "invalid_url", f"scheme {parts.scheme!r} is not http(s)"
        if not parts.hostname:
            return "invalid_url", "no host"
        return None

    async def resolve(self, url: str) -> list[IPAddress] | tuple[str, str]:
        """The checked addresses of ``url``'s host, or a refusal ``(kind, detail)``. Every
        address must pass: a host that resolves to one public and one private address could
        otherwise reach the private one on a retry."""
        refusal = self.check_syntax(url)
        if refusal is not None:
            return refusal
        parts = urlsplit(url)
        default = 443 if parts.scheme.lower() == "https" else 80
        return await self.resolve_host(parts.hostname or "", parts.port or default)

    async def resolve_host(self, host: str, port: int) -> list[IPAddress] | tuple[str, str]:
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addresses = list(await self.resolver(host, port))
            except (OSError, UnicodeError) as exc:
                return "connection", f"cannot resolve {host}: {exc}"
            if not addresses:
                return "connection", f"cannot resolve {host}"
        for ip in addresses:
            if not self.address_allowed(ip):
                return "blocked", f"{host} resolves to non-public address {ip} ({classify_address(ip)})"
        return addresses


class HostLimiter:
    """Per-host politeness: at most ``concurrency`` requests in flight to one host, and starts
    spaced by ``interval_s``. Hosts are independent, so one slow site does not stall others."""

    def __init__(self, concurrency: int = 2, interval_s: float = 0.5):
        self.concurrency = max(1, concurrency)
        self.interval_s = interval_s
        self._hosts: dict[str, tuple[asyncio.Semaphore, asyncio.Lock, list[float]]] = {}

    @asynccontextmanager
    async def slot(self, host: str):
        if host not in self._hosts:
            self._hosts[host] = (asyncio.Semaphore(self.concurrency), asyncio.Lock(), [0.0])
        sem, lock, last = self._hosts[host]
        async with sem:
            if self.interval_s > 0:
                async with lock:
                    wait = last[0] + self.interval_s - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                    last[0] = time.monotonic()
            yield
