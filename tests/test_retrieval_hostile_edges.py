"""Fetch edge cases that escaped the typed failures (issue 23 point 4, point 5 bullet 4): 10k
response headers, malformed punycode hosts, charset=punycode, an endless 1-byte chunk drip, an
endless ``100 Continue`` flood, and a parse worker whose pool closes while it starts. Real
servers on 127.0.0.1; ``.invalid``/``.test`` hosts are refused before any connection."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.config import FetchConfig, ReaderConfig
from orig_local.retrieval.httpfetch import HttpSession, RawResponse
from orig_local.retrieval.reader import ParseWorkers, WebPageReader, decode_html, parse_response
from orig_local.retrieval.testserver import LoopbackServer, article_html, respond

TIMEOUT = 1.5
SLACK = 1.5  # scheduling slack on a busy 2-core machine
PARAS = ["The Veltrane Harbor Lighthouse stands on a black basalt outcrop at the end of the north "
         "breakwater, where it has guided fishing boats into the harbour since 1887.",
         "Its tower is painted in teal and orange spiral bands that wind around it five times, and "
         "its hexagonal lantern room is capped by a small black dome with a brass weather vane."]
ARTICLE = article_html("Veltrane Harbor Lighthouse", PARAS).encode()
BAD_HOSTS = ["http://xn--ls8h.test/a", "http://xn--/a", "http://xn--localhost-/a", "https://xn--zz-.invalid/x.png"]


def many_headers(h) -> None:
    """10,000 short response headers (60 KB: under h11's 100 KB header limit)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    for i in range(10_000):
        h.send_header(f"{i:x}", "v")
    h.send_header("Content-Length", str(len(ARTICLE)))
    h.end_headers()
    h.wfile.write(ARTICLE)


def drip(h) -> None:
    """An endless chunked body of 1-byte chunks."""
    h.send_response_only(200)
    h.send_header("Content-Type", "text/html")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    try:
        while not h.server.stopping.is_set():
            h.wfile.write(b"1\r\nx\r\n" * 1000)
    except OSError:
        pass


def continue_flood(h) -> None:
    """Endless ``100 Continue`` interim responses, never a final one."""
    try:
        while not h.server.stopping.is_set():
            h.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n" * 1000)
    except OSError:
        pass


@pytest.fixture(scope="module")
def server():
    routes = {"/article": respond(ARTICLE), "/headers": many_headers, "/drip": drip, "/continue": continue_flood,
              "/punycode": respond(b"<html><body>" + b"<p>abc-" + b"ba" * 200_000 + b"</p></body></html>",
                                   "text/html; charset=punycode"),
              "/punycode-meta": respond(b'<html><head><meta charset="punycode"></head><body>'
                                        + ARTICLE + b"</body></html>", "text/html")}
    with LoopbackServer(routes) as s:
        yield s


@pytest.fixture(scope="module")
def parse_pool():
    pool = ParseWorkers(1)
    pool.warm()  # its start-up (importing trafilatura) is not the page's deadline
    yield pool
    pool.close()


def session() -> HttpSession:
    return HttpSession(FetchConfig(timeout_s=TIMEOUT, connect_timeout_s=1.0, allow_loopback=True,
                                   per_host_interval_s=0, per_host_concurrency=8, max_bytes=5_000_000))


async def with_lag(coro):
    """(result, seconds, worst event-loop gap) of ``coro`` while a 10 ms ticker runs."""
    lag, stop = 0.0, False

    async def probe():
        nonlocal lag
        while not stop:
            t = time.monotonic()
            await asyncio.sleep(0.01)
            lag = max(lag, time.monotonic() - t - 0.01)

    ticker = asyncio.create_task(probe())
    start = time.monotonic()
    try:
        result = await coro
    finally:
        stop = True
        await ticker
    return result, time.monotonic() - start, lag


async def test_ten_thousand_headers_are_read_in_linear_time(server):
    s = session()
    try:
        raw, elapsed, lag = await with_lag(s.get(server.url("/headers"), max_bytes=1_000_000, max_redirects=0,
                                                 timeout_s=TIMEOUT))
    finally:
        await s.aclose()
    assert isinstance(raw, RawResponse) and raw.body == ARTICLE, raw
    assert len(raw.headers) <= 200 and raw.headers["content-type"].startswith("text/html")
    assert elapsed < TIMEOUT and lag < 0.5, (elapsed, lag)  # was 5+ s with the loop blocked throughout


@pytest.mark.parametrize("path", ["/drip", "/continue"])
async def test_endless_tiny_events_end_at_the_deadline_without_stalling_the_loop(server, path):
    s = session()
    try:
        raw, elapsed, lag = await with_lag(s.get(server.url(path), max_bytes=1_000_000, max_redirects=0,
                                                 timeout_s=TIMEOUT))
    finally:
        await s.aclose()
    assert isinstance(raw, FetchFailure) and raw.kind == "timeout", raw
    assert elapsed < TIMEOUT + SLACK and lag < 0.3, (elapsed, lag)


@pytest.mark.parametrize("url", BAD_HOSTS)
async def test_malformed_punycode_hosts_are_typed_failures(url):
    s = session()
    try:
        raw = await s.get(url, max_bytes=1000, max_redirects=0, timeout_s=TIMEOUT)
    finally:
        await s.aclose()
    assert isinstance(raw, FetchFailure) and raw.kind == "invalid_url", raw


async def test_a_bad_punycode_hit_is_one_failure_among_the_hits(server):
    """Each hit is read on its own: the malformed hosts fail one by one, the real page reads."""
    from orig_local.retrieval.retriever import Retriever

    class NoSearch:
        name = "none"

        async def text(self, q, k=10):
            return []

        async def images(self, q, k=10):
            return []

    fc = FetchConfig(timeout_s=TIMEOUT, allow_loopback=True, per_host_interval_s=0)
    retriever = Retriever(NoSearch(), fetch_config=fc)
    try:
        pages = await asyncio.gather(*(retriever.read_page(u) for u in [*BAD_HOSTS, server.url("/article")]))
        images = await asyncio.gather(*(retriever.fetch_image(u) for u in BAD_HOSTS))
    finally:
        await retriever.aclose()
    assert [getattr(p, "kind", "page") for p in pages] == ["invalid_url"] * len(BAD_HOSTS) + ["page"]
    assert all(isinstance(i, FetchFailure) and i.kind == "invalid_url" for i in images), images


@pytest.mark.parametrize("workers", [1, 0])
async def test_charset_punycode_is_read_as_an_undeclared_charset(server, parse_pool, workers):
    s = session()
    reader = WebPageReader(ReaderConfig(timeout_s=TIMEOUT, min_chars=100, parse_workers=workers), s,
                           parse_pool if workers else None)
    try:
        meta, elapsed, _ = await with_lag(reader.read(server.url("/punycode-meta")))
        header = await reader.read(server.url("/punycode"))
        after = await reader.read(server.url("/article"))
    finally:
        await s.aclose()
    assert isinstance(meta, Page) and "teal and orange" in meta.text, meta
    assert isinstance(header, (Page, FetchFailure)) and not (isinstance(header, FetchFailure)
                                                             and header.kind == "timeout"), header
    assert isinstance(after, Page)
    if workers:  # the worker survived both pages: the same process read the next one
        assert len(parse_pool._all) == 1


@pytest.mark.parametrize("charset", ["punycode", "idna", "undefined", "unicode_escape", "rot13", "zlib"])
def test_decode_html_never_raises_on_python_only_codecs(charset):
    body = b"<p>caf\xc3\xa9 abc-" + b"\xff" * 20 + b"</p>"
    assert "caf" in decode_html(body, charset)


def test_parse_response_turns_any_error_into_this_pages_failure():
    raw = RawResponse(url="http://a.invalid/", final_url="http://a.invalid/", status=200, content_type="text/html",
                      charset="utf-8", body=ARTICLE)
    broken = ReaderConfig(min_chars=100).model_copy(update={"max_chars": "not a number"})
    out = parse_response(raw, broken)
    assert isinstance(out, FetchFailure) and out.kind == "decode_error", out


def test_a_worker_whose_pool_goes_away_while_it_starts_exits_quietly():
    """The parent closes the reply pipe before the worker says "ready": a quiet exit, no
    BrokenPipe traceback on the user's terminal."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "orig_local.retrieval.parse_worker"], cwd=root,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdout.close()  # the pool is gone
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
    assert proc.returncode == 0
