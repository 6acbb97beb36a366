"""The Retriever facade works with any reader/fetcher that implements the protocols: no
special cases for fakes, and ``corpus://`` URLs are routed by a composed reader/fetcher."""

from __future__ import annotations

from orig_local.retrieval.base import FetchedImage, FetchFailure, ImageFetcher, Page, PageReader
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.evidence import EvidenceStore
from orig_local.retrieval.images import ImageDecoder
from orig_local.retrieval.retriever import Retriever
from orig_local.retrieval.testserver import image_bytes


class NoSearch:
    name = "none"

    async def text(self, q, k=10):
        return []

    images = text


class DictReader:
    def __init__(self, pages):
        self.pages, self.calls = pages, []

    async def read(self, url, query=None):
        self.calls.append(url)
        text = self.pages.get(url)
        if text is None:
            return FetchFailure(url=url, kind="http_error", detail="HTTP 404")
        return Page(url=url, final_url=url, title="t", text=text, fetched_at="2026-01-01T00:00:00+00:00", status=200)


class DictFetcher:
    """Serves bytes from a dict; decoding is the real, budgeted one."""

    def __init__(self, blobs):
        self.blobs, self.config = blobs, FetchConfig(min_side=8)
        self.decoder = ImageDecoder(self.config)

    async def fetch_bytes(self, url):
        data = self.blobs.get(url)
        return (data, "image/png") if data else FetchFailure(url=url, kind="http_error", detail="HTTP 404")

    async def decode(self, data, url, page_url=None, content_type=""):
        return await self.decoder.decode(data, url, page_url, content_type)

    async def fetch(self, url, page_url=None):
        got = await self.fetch_bytes(url)
        return got if isinstance(got, FetchFailure) else await self.decode(got[0], url, page_url, got[1])


async def test_fakes_implementing_the_protocols_are_used_as_is(tmp_path):
    reader = DictReader({"https://a.invalid/": "Alpha text."})
    fetcher = DictFetcher({"https://a.invalid/i.png": image_bytes(80, 60, pattern=3)})
    assert isinstance(reader, PageReader) and isinstance(fetcher, ImageFetcher)
    store = EvidenceStore(tmp_path / "snap")
    r = Retriever(NoSearch(), reader, fetcher, store=store)
    try:
        page = await r.read_page("https://a.invalid/")
        img = await r.fetch_image("https://a.invalid/i.png", page_url="https://a.invalid/")
        missing = await r.fetch_image("https://a.invalid/none.png")
        corpus_url = await r.read_page("corpus://doc/x")  # no corpus composed: the reader decides
    finally:
        await r.aclose()
    assert isinstance(page, Page) and page.text == "Alpha text."
    assert isinstance(img, FetchedImage) and img.page_url == "https://a.invalid/"
    assert isinstance(missing, FetchFailure) and missing.kind == "http_error"
    assert isinstance(corpus_url, FetchFailure) and reader.calls == ["https://a.invalid/", "corpus://doc/x"]
    # the downloaded bytes were recorded, so a replay decodes the same image
    assert store.image_bytes("https://a.invalid/i.png")[0] == fetcher.blobs["https://a.invalid/i.png"]


async def test_corpus_urls_go_to_the_corpus_and_the_rest_to_the_wrapped_parts():
    from orig_local.retrieval.corpus import Corpus
    from orig_local.retrieval.corpusfetch import CorpusImageFetcher, CorpusReader

    corpus = Corpus.load()
    doc, item = corpus.docs[0], corpus.images[0]
    web_reader = DictReader({"https://a.invalid/": "Alpha text."})
    web_fetcher = DictFetcher({})
    reader, fetcher = CorpusReader([corpus], web_reader), CorpusImageFetcher([corpus], web_fetcher)
    r = Retriever(NoSearch(), reader, fetcher)
    try:
        from_corpus = await r.read_page(f"corpus://doc/{doc.id}")
        from_web = await r.read_page("https://a.invalid/")
        unknown = await r.read_page("corpus://doc/no-such-doc")
        image = await r.fetch_image(f"corpus://img/{item.id}")
        web_image = await r.fetch_image("https://a.invalid/none.png")
    finally:
        await r.aclose()
    assert isinstance(from_corpus, Page) and from_corpus.title == doc.title and doc.text in from_corpus.text
    assert isinstance(from_web, Page) and web_reader.calls == ["https://a.invalid/"]
    assert isinstance(unknown, FetchFailure) and unknown.kind == "http_error"
    assert isinstance(image, FetchedImage)
    assert isinstance(web_image, FetchFailure) and web_image.kind == "http_error"
