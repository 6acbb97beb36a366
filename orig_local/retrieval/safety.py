"""Where fetching may go: public http(s) addresses only, unless a switch says otherwise.

Search results are untrusted input: a page or image URL could point at the machine itself
(``http://127.0.0.1:8000/admin``), a cloud metadata service (``169.254.169.254``) or an intranet.
:class:`UrlGuard` resolves the host and refuses any non-public address; the fetcher calls it on
the first URL and again on every redirect target.

Known limit: the address is resolved here and again by the HTTP client when it connects, so a
DNS answer that changes in between (DNS rebinding) is not caught. Pin resolution in a proxy if
that matters for your deployment.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

ALLOWED_SCHEMES = ("http", "https")


class UrlGuard:
    """Decides whether a URL may be fetched. ``check`` returns ``None`` (fine) or
    ``(kind, detail)`` with kind ``invalid_url`` or ``blocked``."""

    def __init__(self, allow_loopback: bool = False, allow_private: bool = False):
        self.allow_loopback = allow_loopback
        self.allow_private = allow_private

    def address_allowed(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_loopback:
            return self.allow_loopback
        if ip.is_unspecified or ip.is_multicast:
            return False
        if ip.is_global:
            return True
        # private, link-local (incl. 169.254.169.254 metadata), shared (100.64/10), reserved …
        return self.allow_private and (ip.is_private or ip.is_link_local)

    async def check(self, url: str) -> tuple[str, str] | None:
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            return "invalid_url", str(exc)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            return "invalid_url", f"scheme {parts.scheme!r} is not http(s)"
        host = parts.hostname
        if not host:
            return "invalid_url", "no host"
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            addresses = await self._resolve(host, port or (443 if parts.scheme == "https" else 80))
            if addresses is None:
                return "connection", f"cannot resolve {host}"
        for ip in addresses:
            if not self.address_allowed(ip):
                return "blocked", f"{host} resolves to non-public address {ip}"
        return None

    async def _resolve(self, host: str, port: int):
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            return None
        out = []
        for info in infos:
            addr = info[4][0].split("%", 1)[0]  # drop an IPv6 zone id
            out.append(ipaddress.ip_address(addr))
        return out


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
