"""Search backends and the fallback chain.

ddgs is faked at the ``ddgs.DDGS`` class (the one service that cannot be reached here) with
result dicts in its real shapes; SearXNG and Wikimedia are exercised against loopback servers
that answer like their JSON APIs.
"""

from __future__ import annotations

import json
import random

import pytest

from orig_local.retrieval.base import ImageHit, RateLimited, SearchError, SearchOutcome, TextHit
from orig_local.retrieval.chain import FallbackChain, backoff_delay
from orig_local.retrieval.config import DdgsConfig, RetrievalConfig, SearchConfig
from orig_local.retrieval.testserver import LoopbackServer, respond

ddgs = pytest.importorskip("ddgs")
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException  # noqa: E402


def _rows(cls, items):
    """Result dicts exactly as ddgs builds them (its own result dataclasses, then asdict)."""
    from dataclasses import asdict

    out = []
    for item in items:
        result = cls()
        for key, value in item.items():
            setattr(result, key, value)
        out.append(asdict(result))
    return out


from ddgs.results import ImagesResult, TextResult  # noqa: E402

TEXT_ROWS = _rows(TextResult, [
    {"title": "Veltrane Harbor Lighthouse - Wikipedia", "href": "https://en.wikipedia.org/wiki/Veltrane",
     "body": "The Veltrane Harbor Lighthouse is painted in teal and orange spiral bands."},
    {"title": "Visiting Veltrane", "href": "https://visit.example/veltrane", "body": "142 steps to the gallery."},
])
IMAGE_ROWS = _rows(ImagesResult, [
    {"title": "Veltrane lighthouse at dusk", "image": "https://upload.example/veltrane.jpg",
     "thumbnail": "https://tse.example/th?id=1", "url": "https://photos.example/veltrane",
     "height": "1080", "width": "1920", "source": "Bing"},
    {"title": "no image url", "image": "", "thumbnail": "", "url": "", "height": "", "width": "", "source": "Bing"},
    {"title": "Lantern room", "image": "https://upload.example/lantern.png", "thumbnail": "",
     "url": "https://photos.example/lantern", "height": "600", "width": "800", "source": "DuckDuckGo"},
])


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: same constructor and methods, scripted answers.

    ``script`` items are a list of rows to return or an exception instance to raise."""

    script: list = []
    calls: list = []
    instances: list = []

    def __init__(self, proxy=None, timeout=5, *, verify=True):
        self.proxy, self.timeout = proxy, timeout
        FakeDDGS.instances.append(self)

    def _next(self, method, query, kwargs):
        FakeDDGS.calls.append((method, query, kwargs))
        item = FakeDDGS.script.pop(0) if FakeDDGS.script else []
        if isinstance(item, Exception):
            raise item
        return item

    def text(self, query, **kwargs):
        return self._next("text", query, kwargs)

    def images(self, query, **kwargs):
        return self._next("images", query, kwargs)


@pytest.fixture
def fake_ddgs(monkeypatch):
    FakeDDGS.script, FakeDDGS.calls, FakeDDGS.instances = [], [], []
    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    return FakeDDGS


class StaticBackend:
    """A second backend that always answers (the fallback)."""

    name = "static"

    def __init__(self):
        self.calls = 0

    async def text(self, query, k=10):
        self.calls += 1
        return [TextHit(title="fallback", url="https://fallback.example/", snippet="", rank=1, backend=self.name)]

    async def images(self, query, k=10):
        self.calls += 1
        return [ImageHit(image_url="https://fallback.example/a.png", rank=1, backend=self.name)]


def fast_chain_config(**kw) -> SearchConfig:
    base = dict(min_interval_s=0, max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.05,
                cooldown_after=2, cooldown_s=60, timeout_s=2)
    return SearchConfig(**{**base, **kw})


def recording_sleep(log):
    async def sleep(seconds):
        log.append(seconds)
    return sleep


# --------------------------------------------------------------------------- ddgs

async def test_ddgs_text_and_images_map_real_shapes(fake_ddgs):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    fake_ddgs.script = [TEXT_ROWS, IMAGE_ROWS]
    backend = DdgsBackend(DdgsConfig(text_engines=["duckduckgo", "brave"], image_engines=["bing"], proxy="socks5://p:1"))
    text = await backend.text("Veltrane Harbor Lighthouse", k=5)
    images = await backend.images("Veltrane Harbor Lighthouse", k=5)
    assert [h.url for h in text] == [r["href"] for r in TEXT_ROWS]
    assert text[0].snippet.startswith("The Veltrane") and [h.rank for h in text] == [1, 2]
    assert all(h.backend == "ddgs" for h in text + images)
    assert [h.image_url for h in images] == ["https://upload.example/veltrane.jpg", "https://upload.example/lantern.png"]
    assert images[0].page_url == "https://photos.example/veltrane" and images[0].width == 1920
    assert images[1].height == 600 and images[1].thumbnail_url is None and images[1].rank == 2
    # engines named explicitly, never "auto"; k passed as max_results; proxy passed through
    (m1, q1, kw1), (m2, _, kw2) = fake_ddgs.calls
    assert kw1["backend"] == "duckduckgo,brave" and kw2["backend"] == "bing"
    assert kw1["max_results"] == 5 and kw1["region"] == "us-en" and q1 == "Veltrane Harbor Lighthouse"
    assert fake_ddgs.instances[0].proxy == "socks5://p:1"


async def test_ddgs_runs_off_the_event_loop(fake_ddgs):
    import threading

    from orig_local.retrieval.backends.ddgs import DdgsBackend

    main = threading.get_ident()
    seen = []

    class ThreadProbe(FakeDDGS):
        def text(self, query, **kwargs):
            seen.append(threading.get_ident())
            return TEXT_ROWS

    backend = DdgsBackend(ddgs_cls=ThreadProbe)
    await backend.text("q")
    assert seen and seen[0] != main


@pytest.mark.parametrize("exc", [RatelimitException("202 Ratelimit"), DDGSException("No results found.")])
async def test_ddgs_rate_limit_backs_off_then_falls_back(fake_ddgs, exc):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    fake_ddgs.script = [exc, exc, exc]
    fallback = StaticBackend()
    sleeps: list[float] = []
    chain = FallbackChain([DdgsBackend(), fallback], fast_chain_config(), sleep=recording_sleep(sleeps))
    outcome = await chain.text("Veltrane Harbor Lighthouse")
    assert isinstance(outcome, SearchOutcome)
    assert outcome.backend == "static" and outcome.hits[0].url == "https://fallback.example/"
    assert [f.kind for f in outcome.failures] == ["rate_limited"] * 3
    assert [f.attempt for f in outcome.failures] == [1, 2, 3] and {f.backend for f in outcome.failures} == {"ddgs"}
    assert len(fake_ddgs.calls) == 3 and fallback.calls == 1
    assert len(sleeps) == 2 and sleeps == chain.backoffs  # backoff between attempts, none after the last


async def test_ddgs_recovers_after_one_rate_limit(fake_ddgs):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    fake_ddgs.script = [DDGSException("No results found."), TEXT_ROWS]
    fallback = StaticBackend()
    chain = FallbackChain([DdgsBackend(), fallback], fast_chain_config(), sleep=recording_sleep([]))
    outcome = await chain.text("q")
    assert outcome.backend == "ddgs" and len(outcome.hits) == 2
    assert [f.kind for f in outcome.failures] == ["rate_limited"] and fallback.calls == 0


async def test_ddgs_other_errors_fall_back_without_backoff(fake_ddgs):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    fake_ddgs.script = [TimeoutException("timed out"), DDGSException("engine exploded")]
    sleeps: list[float] = []
    chain = FallbackChain([DdgsBackend(), StaticBackend()], fast_chain_config(), sleep=recording_sleep(sleeps))
    first = await chain.text("a")
    second = await chain.images("b")
    assert [f.kind for f in first.failures] == ["error"] and "timeout" in first.failures[0].detail
    assert [f.kind for f in second.failures] == ["error"] and "engine exploded" in second.failures[0].detail
    assert sleeps == [] and first.backend == second.backend == "static"


async def test_backend_in_cooldown_is_skipped_and_recorded(fake_ddgs):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    fake_ddgs.script = [DDGSException("boom"), DDGSException("boom")]
    chain = FallbackChain([DdgsBackend(), StaticBackend()], fast_chain_config(cooldown_after=2), sleep=recording_sleep([]))
    await chain.text("1")
    await chain.text("2")
    third = await chain.text("3")
    assert len(fake_ddgs.calls) == 2  # not called a third time
    assert [f.kind for f in third.failures] == ["cooldown"] and third.backend == "static"


async def test_all_backends_failing_gives_empty_outcome_not_exception(fake_ddgs):
    from orig_local.retrieval.backends.ddgs import DdgsBackend

    class Broken:
        name = "broken"

        async def text(self, q, k=10):
            raise SearchError("down")

        images = text

    fake_ddgs.script = [[]]  # an engine that answers with nothing
    chain = FallbackChain([DdgsBackend(), Broken()], fast_chain_config(max_attempts=1), sleep=recording_sleep([]))
    outcome = await chain.text("q")
    assert outcome.hits == [] and outcome.backend is None and not outcome.ok
    assert [(f.backend, f.kind) for f in outcome.failures] == [("ddgs", "empty"), ("broken", "error")]


async def test_slow_backend_times_out_and_falls_back():
    import asyncio

    class Slow:
        name = "slow"

        async def text(self, q, k=10):
            await asyncio.sleep(10)

        images = text

    chain = FallbackChain([Slow(), StaticBackend()], fast_chain_config(timeout_s=0.2))
    outcome = await chain.text("q")
    assert [f.kind for f in outcome.failures] == ["timeout"] and outcome.backend == "static"


async def test_rate_limiter_spaces_calls():
    import time

    backend = StaticBackend()
    chain = FallbackChain([backend], fast_chain_config(min_interval_s=0.15))
    start = time.monotonic()
    for _ in range(3):
        await chain.text("q")
    assert time.monotonic() - start >= 0.3


def test_backoff_is_exponential_with_jitter_and_bounded():
    rng = random.Random(1)
    delays = [[backoff_delay(a, 1.0, 5.0, rng) for _ in range(200)] for a in (1, 2, 3, 4, 5)]
    assert max(delays[0]) <= 1.0 and max(delays[1]) <= 2.0 and max(delays[2]) <= 4.0
    assert max(delays[4]) <= 5.0  # capped
    assert len(set(delays[2])) > 100  # jittered
    assert sum(delays[2]) / 200 > sum(delays[0]) / 200  # grows


def test_backends_map_is_lazy_and_complete():
    import subprocess
    import sys

    from orig_local.retrieval import BACKENDS

    assert set(BACKENDS) == {"ddgs", "searxng", "wikimedia", "local", "snapshot"}
    code = ("import sys, orig_local.retrieval, orig_local.retrieval.retriever\n"
            "heavy = [m for m in ('ddgs', 'trafilatura', 'torch', 'open_clip', 'bm25s') if m in sys.modules]\n"
            "assert not heavy, heavy")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_unknown_backend_name_is_a_clear_error():
    from orig_local._lazy import UnknownBackendError
    from orig_local.retrieval import make_backend

    with pytest.raises(UnknownBackendError, match="known: ddgs, local"):
        make_backend("google", RetrievalConfig())


# --------------------------------------------------------------------------- SearXNG, Wikimedia

SEARX_TEXT = {"query": "veltrane", "results": [
    {"title": "Veltrane Lighthouse", "url": "https://a.example/v", "content": "teal and orange", "engine": "bing"},
    {"title": "Other", "url": "https://b.example/o", "content": "", "engine": "brave"}]}
SEARX_IMAGES = {"query": "veltrane", "results": [
    {"title": "Veltrane", "url": "https://a.example/page", "img_src": "https://a.example/v.jpg",
     "thumbnail_src": "https://a.example/v_t.jpg", "resolution": "1920 x 1080", "engine": "bing images"},
    {"title": "no src", "url": "https://a.example/x"}]}


async def test_searxng_backend_against_loopback_api():
    from orig_local.retrieval.backends.searxng import SearxngBackend
    from orig_local.retrieval.config import SearxngConfig

    seen = []

    def search(h):
        from urllib.parse import parse_qs, urlsplit

        params = {k: v[0] for k, v in parse_qs(urlsplit(h.path).query).items()}
        seen.append(params)
        body = SEARX_IMAGES if params["categories"] == "images" else SEARX_TEXT
        respond(json.dumps(body).encode(), "application/json")(h)

    with LoopbackServer({"/search": search}) as server:
        backend = SearxngBackend(SearxngConfig(base_url=server.url("")))
        try:
            text = await backend.text("veltrane", k=10)
            images = await backend.images("veltrane", k=10)
        finally:
            await backend.aclose()
    assert [h.url for h in text] == ["https://a.example/v", "https://b.example/o"]
    assert text[0].snippet == "teal and orange"
    assert len(images) == 1 and images[0].image_url == "https://a.example/v.jpg"
    assert (images[0].width, images[0].height) == (1920, 1080) and images[0].page_url == "https://a.example/page"
    assert seen[0]["format"] == "json" and seen[1]["categories"] == "images"


async def test_searxng_json_disabled_403_is_an_error():
    from orig_local.retrieval.backends.searxng import SearxngBackend
    from orig_local.retrieval.config import SearxngConfig

    with LoopbackServer({"/search": respond(b"Forbidden", "text/plain", status=403)}) as server:
        backend = SearxngBackend(SearxngConfig(base_url=server.url("")))
        try:
            with pytest.raises(SearchError, match="403"):
                await backend.text("q")
        finally:
            await backend.aclose()


WIKI_TEXT = {"batchcomplete": True, "query": {"pages": [
    {"pageid": 2, "title": "Brannock Point", "index": 2, "extract": "A lighthouse.",
     "fullurl": "https://en.wikipedia.org/wiki/Brannock_Point"},
    {"pageid": 1, "title": "Veltrane Harbor Lighthouse", "index": 1, "extract": "A spiral-painted lighthouse.",
     "fullurl": "https://en.wikipedia.org/wiki/Veltrane_Harbor_Lighthouse"}]}}
WIKI_IMAGES = {"query": {"pages": [
    {"title": "File:Veltrane.jpg", "index": 1, "imageinfo": [{
        "url": "https://upload.wikimedia.org/a/Veltrane.jpg", "thumburl": "https://upload.wikimedia.org/thumb/Veltrane.jpg",
        "thumbwidth": 1024, "thumbheight": 768, "width": 4000, "height": 3000, "mime": "image/jpeg",
        "descriptionurl": "https://commons.wikimedia.org/wiki/File:Veltrane.jpg",
        "extmetadata": {"LicenseShortName": {"value": "CC BY-SA 4.0"},
                        "Artist": {"value": "<a href='//x'>Edda Quillon</a>"},
                        "ImageDescription": {"value": "The <b>Veltrane</b> lighthouse"}}}]},
    {"title": "File:Doc.pdf", "index": 2, "imageinfo": [{"url": "https://upload.wikimedia.org/Doc.pdf", "mime": "application/pdf"}]}]}}


async def test_wikimedia_backend_against_loopback_api():
    from orig_local.retrieval.backends.wikimedia import WikimediaBackend
    from orig_local.retrieval.config import WikimediaConfig

    agents = []

    def api(body):
        def route(h):
            agents.append(h.headers.get("User-Agent"))
            respond(json.dumps(body).encode(), "application/json")(h)
        return route

    with LoopbackServer({"/w/api.php": api(WIKI_TEXT), "/c/w/api.php": api(WIKI_IMAGES)}) as server:
        backend = WikimediaBackend(WikimediaConfig(wikipedia_api=server.url("/w/api.php"),
                                                   commons_api=server.url("/c/w/api.php"),
                                                   user_agent="orig-test (contact: test@example.org)"))
        try:
            text = await backend.text("veltrane")
            images = await backend.images("veltrane")
        finally:
            await backend.aclose()
    assert [h.title for h in text] == ["Veltrane Harbor Lighthouse", "Brannock Point"]  # ranked by index
    assert text[0].snippet == "A spiral-painted lighthouse."
    assert len(images) == 1
    img = images[0]
    assert img.image_url.endswith("thumb/Veltrane.jpg") and (img.width, img.height) == (1024, 768)
    assert img.license == "CC BY-SA 4.0" and img.attribution == "Edda Quillon"
    assert img.title == "The Veltrane lighthouse" and img.page_url.endswith("File:Veltrane.jpg")
    assert set(agents) == {"orig-test (contact: test@example.org)"}


async def test_http_429_is_a_rate_limit():
    from orig_local.retrieval.backends.wikimedia import WikimediaBackend
    from orig_local.retrieval.config import WikimediaConfig

    with LoopbackServer({"/w/api.php": respond(b"slow down", "text/plain", status=429)}) as server:
        backend = WikimediaBackend(WikimediaConfig(wikipedia_api=server.url("/w/api.php")))
        try:
            with pytest.raises(RateLimited):
                await backend.text("q")
        finally:
            await backend.aclose()


async def test_search_answers_are_cached_on_disk(tmp_path):
    from orig_local.cache import DiskCache
    from orig_local.retrieval.retriever import Retriever

    backend = StaticBackend()
    cache = DiskCache(tmp_path / "search.sqlite", namespace="search")
    r = Retriever(backend, cache=cache)
    try:
        first = await r.search_text("q", k=3)
        second = await r.search_text("q", k=3)
        other_k = await r.search_text("q", k=4)
    finally:
        await r.aclose()
    assert not first.cached and second.cached and not other_k.cached
    assert second.hits == first.hits and backend.calls == 2


async def test_failed_searches_are_not_cached(tmp_path):
    from orig_local.cache import DiskCache
    from orig_local.retrieval.retriever import Retriever

    class Flaky:
        name = "flaky"
        calls = 0

        async def text(self, q, k=10):
            Flaky.calls += 1
            if Flaky.calls == 1:
                raise SearchError("down")
            return [TextHit(title="t", url="https://x.example/", rank=1, backend="flaky")]

        images = text

    r = Retriever(Flaky(), cache=DiskCache(tmp_path / "s.sqlite", namespace="search"))
    try:
        assert (await r.search_text("q")).hits == []
        assert (await r.search_text("q")).hits and Flaky.calls == 2
    finally:
        await r.aclose()


async def test_empty_answers_do_not_cool_a_backend_down():
    class Empty:
        name = "empty"
        calls = 0

        async def text(self, q, k=10):
            Empty.calls += 1
            return []

        images = text

    chain = FallbackChain([Empty(), StaticBackend()], fast_chain_config(cooldown_after=2))
    for q in "abcde":
        outcome = await chain.text(q)
        assert [f.kind for f in outcome.failures] == ["empty"] and outcome.backend == "static"
    assert Empty.calls == 5


def test_ddgs_engines_must_be_explicit():
    from orig_local.config import load_config
    from orig_local.configbase import ConfigError

    with pytest.raises(ConfigError, match="explicitly"):
        load_config(None, ["retrieval.ddgs.text_engines=[auto]"])
    assert load_config(None, ["retrieval.ddgs.text_engines=[mojeek]"]).retrieval.ddgs.text_engines == ["mojeek"]
