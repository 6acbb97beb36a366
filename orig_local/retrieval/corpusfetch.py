"""Page reader and image fetcher for ``corpus://`` URLs (hits of the ``local`` backend),
composed around the web ones: ``corpus://doc/<id>`` and ``corpus://img/<id>`` are served from
the corpora on disk, every other URL goes to the wrapped reader/fetcher. Corpus images go
through the same verify/decode/downscale/hash path as downloaded ones."""

from __future__ import annotations

from orig_local.retrieval.base import FetchedImage, FetchFailure, ImageFetcher, Page, PageReader
from orig_local.retrieval.corpus import DOC_URL, IMG_URL, Corpus
from orig_local.retrieval.parsepage import now_iso


class CorpusReader:
    def __init__(self, corpora: list[Corpus], inner: PageReader):
        self.corpora = corpora
        self.inner = inner

    async def read(self, url: str, query: str | None = None) -> Page | FetchFailure:
        if not url.startswith(DOC_URL):
            return await self.inner.read(url, query=query)
        doc_id = url[len(DOC_URL):]
        for corpus in self.corpora:
            doc = corpus.doc(doc_id)
            if doc is not None:
                return Page(url=url, final_url=url, title=doc.title, text=f"# {doc.title}\n\n{doc.text}",
                            fetched_at=now_iso(), status=200)
        return FetchFailure(url=url, kind="http_error", detail=f"no document {doc_id!r} in the corpus")


class CorpusImageFetcher:
    def __init__(self, corpora: list[Corpus], inner: ImageFetcher):
        self.corpora = corpora
        self.inner = inner
        self.config = inner.config

    async def fetch_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        if not url.startswith(IMG_URL):
            return await self.inner.fetch_bytes(url)
        image_id = url[len(IMG_URL):]
        for corpus in self.corpora:
            item = corpus.image(image_id)
            if item is not None:
                try:
                    return item.path.read_bytes(), ""
                except OSError as exc:
                    return FetchFailure(url=url, kind="connection", detail=f"{item.path}: {exc.strerror or exc}")
        return FetchFailure(url=url, kind="http_error", detail=f"no image {image_id!r} in the corpus")

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "") -> FetchedImage | FetchFailure:
        return await self.inner.decode(data, url, page_url, content_type)

    async def fetch(self, url: str, page_url: str | None = None) -> FetchedImage | FetchFailure:
        got = await self.fetch_bytes(url)
        if isinstance(got, FetchFailure):
            return got
        return await self.decode(got[0], url, page_url, got[1])
