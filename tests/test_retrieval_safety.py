"""UrlGuard: which addresses and schemes fetching may reach (no network needed)."""

from __future__ import annotations

import pytest

from orig_local.retrieval.safety import UrlGuard


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/", "http://127.5.5.5:8080/x", "http://[::1]/", "http://localhost/",
    "http://10.0.0.1/", "http://172.16.3.4/", "http://192.168.1.1/", "http://169.254.169.254/latest/",
    "http://[fe80::1]/", "http://[fd00::1]/", "http://100.64.0.1/", "http://0.0.0.0/",
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:10.0.0.1]/", "http://224.0.0.1/",
])
async def test_non_public_addresses_are_blocked_by_default(url):
    refusal = await UrlGuard().check(url)
    assert refusal is not None and refusal[0] == "blocked", (url, refusal)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://8.8.8.8/", "gopher://8.8.8.8/",
                                 "javascript:alert(1)", "data:text/html,hi", "http:///", "http://[::1"])
async def test_bad_schemes_and_urls_are_invalid(url):
    refusal = await UrlGuard().check(url)
    assert refusal is not None and refusal[0] == "invalid_url", (url, refusal)


async def test_public_addresses_pass_without_dns():
    guard = UrlGuard()
    assert await guard.check("http://8.8.8.8/page") is None
    assert await guard.check("https://[2606:4700:4700::1111]/") is None


async def test_switches():
    loop = UrlGuard(allow_loopback=True)
    assert await loop.check("http://127.0.0.1:9/") is None and await loop.check("http://localhost/") is None
    assert (await loop.check("http://10.0.0.1/"))[0] == "blocked"  # loopback switch is not private
    private = UrlGuard(allow_private=True)
    assert await private.check("http://192.168.1.1/") is None
    assert (await private.check("http://127.0.0.1/"))[0] == "blocked"
    assert (await private.check("http://0.0.0.0/"))[0] == "blocked"


async def test_host_limiter_bounds_concurrency():
    import asyncio

    from orig_local.retrieval.safety import HostLimiter

    limiter = HostLimiter(concurrency=2, interval_s=0)
    active = peak = 0

    async def one(host):
        nonlocal active, peak
        async with limiter.slot(host):
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.02)
            active -= 1

    await asyncio.gather(*(one("a.example") for _ in range(6)))
    assert peak == 2
