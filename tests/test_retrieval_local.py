"""The local corpus backend over the packaged demo corpus, with the tiny open_clip model."""

from __future__ import annotations

import json
import shutil

import pytest

from orig_local.retrieval.base import FetchedImage, FetchFailure, Page
from orig_local.retrieval.corpus import DEMO_CORPUS, Corpus, CorpusIndex, tokenize

pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def tiny_clip():
    pytest.importorskip("open_clip")
    from orig_local.embeddings.clip import OpenClipEmbedder
    from orig_local.embeddings.config import EmbedConfig
    from orig_local.paths import tiny_models_dir
    from orig_local.tiny.build import build_one

    build_one("clip", tiny_models_dir())
    return OpenClipEmbedder.from_config(EmbedConfig(preset="tiny-clip", device="cpu"))


@pytest.fixture
def local_config(tmp_path):
    from orig_local.config import load_config

    return load_config("offline", [f"cache_dir={tmp_path / 'cache'}"])


@pytest.fixture
async def retriever(local_config, tiny_clip):
    from orig_local.retrieval.retriever import Retriever

    r = Retriever.from_config(local_config.retrieval, cache_dir=local_config.resolved_cache_dir(), embedder=tiny_clip)
    yield r
    await r.aclose()


def test_demo_corpus_is_small_and_consistent():
    corpus = Corpus.load()
    assert 25 <= len(corpus.docs) <= 40 and 12 <= len(corpus.images) <= 20
    total = sum(p.stat().st_size for p in DEMO_CORPUS.rglob("*") if p.is_file() and ".index" not in p.parts)
    assert total < 1_000_000
    for image in corpus.images:
        assert image.path.is_file() and corpus.doc(image.doc_id) is not None, image.id
    fictional = {d.entity for d in corpus.docs if d.entity and d.entity != "eiffel-tower"}
    assert {"veltrane-lighthouse", "quillon-beetle", "marrowby-kestrels", "korvath-k7-tram"} <= fictional


@pytest.mark.parametrize("query,expected_first", [
    ("Veltrane Harbor Lighthouse lantern room", "veltrane-02"),
    ("Quillon glassback beetle legs and horn", "quillon-02"),
    ("Marrowby Kestrels home kit", "kestrels-02"),
    ("Korvath K-7 tram headlight", "k7-02"),
    ("Eiffel Tower paint colour", "eiffel-03"),
])
async def test_text_search_ranks_expected_document_first(retriever, query, expected_first):
    outcome = await retriever.search_text(query, k=5)
    assert outcome.backend == "local" and outcome.failures == []
    assert outcome.hits[0].url == f"corpus://doc/{expected_first}"
    assert [h.rank for h in outcome.hits] == list(range(1, len(outcome.hits) + 1))


@pytest.mark.parametrize("query,entity_prefix,exact_first", [
    ("Veltrane Harbor Lighthouse", "img-veltrane-", None),
    ("Brannock Point Lighthouse red and white stripes", "img-brannock-", "img-brannock-1"),
    ("Quillon glassback beetle", "img-quillon-", None),
    ("Korvath K-7 tram", "img-k7-", None),
    ("Marrowby Kestrels crest", "img-kestrels-", "img-kestrels-2"),
])
async def test_image_search_ranks_expected_images_first(retriever, query, entity_prefix, exact_first):
    outcome = await retriever.search_images(query, k=5)
    ids = [h.image_url.removeprefix("corpus://img/") for h in outcome.hits]
    assert ids[0].startswith(entity_prefix), ids
    if exact_first:
        assert ids[0] == exact_first
    first = outcome.hits[0]
    assert first.page_url.startswith("corpus://doc/") and first.width == first.height == 256 and first.title


async def test_corpus_urls_resolve_through_the_retriever(retriever):
    hit = (await retriever.search_text("Veltrane hexagonal lantern", k=1)).hits[0]
    page = await retriever.read_page(hit.url)
    assert isinstance(page, Page) and "hexagonal lantern room" in page.text and page.title
    image_hit = (await retriever.search_images("Veltrane Harbor Lighthouse", k=1)).hits[0]
    image = await retriever.fetch_image(image_hit.image_url, page_url=image_hit.page_url)
    assert isinstance(image, FetchedImage) and image.image.mode == "RGB" and image.page_url == image_hit.page_url
    missing = await retriever.read_page("corpus://doc/no-such-doc")
    assert isinstance(missing, FetchFailure) and missing.kind == "http_error"


async def test_distinct_views_of_an_entity_are_not_near_duplicates(retriever):
    outcome = await retriever.search_images("Veltrane Harbor Lighthouse", k=3)
    fetched = [await retriever.fetch_image(h.image_url, h.page_url) for h in outcome.hits]
    assert all(isinstance(f, FetchedImage) for f in fetched), fetched


def test_index_is_saved_once_and_reused(tmp_path, tiny_clip):
    corpus_dir = tmp_path / "corpus"
    shutil.copytree(DEMO_CORPUS, corpus_dir, ignore=shutil.ignore_patterns(".index"))
    corpus = Corpus.load(corpus_dir)
    index = CorpusIndex(corpus, corpus_dir / ".index", embedder=tiny_clip)
    index.clip_embeddings()
    saved = list((corpus_dir / ".index").glob("*/"))
    assert len(saved) == 1 and (saved[0] / "meta.json").exists() and list(saved[0].glob("clip-*.npy"))
    before = tiny_clip.images_embedded
    again = CorpusIndex(Corpus.load(corpus_dir), corpus_dir / ".index", embedder=tiny_clip)
    again._clip = None
    again.clip_embeddings()
    assert tiny_clip.images_embedded == before  # loaded from disk, not re-embedded
    # editing the corpus changes the fingerprint -> a new index
    with open(corpus_dir / "docs.jsonl", "a") as f:
        f.write(json.dumps({"id": "new-1", "title": "Zorbling", "text": "The zorbling is a new thing."}) + "\n")
    edited = CorpusIndex(Corpus.load(corpus_dir), corpus_dir / ".index")
    assert edited.fingerprint != index.fingerprint
    assert edited.search_docs("zorbling", 1)[0][0].id == "new-1"


def test_packaged_corpus_index_goes_to_cache_dir(tmp_path):
    from orig_local.retrieval.corpus import default_index_dir

    assert default_index_dir(Corpus.load(), None, tmp_path) == tmp_path / "corpus-index"
    assert default_index_dir(Corpus.load(), None, None) is None  # in memory only


def test_folder_corpus_without_manifests(tmp_path, tiny_clip):
    from PIL import Image

    (tmp_path / "otter.md").write_text("# Sea otters\n\nSea otters hold hands while they sleep.")
    (tmp_path / "kiln.txt").write_text("Pottery kilns\nA kiln fires clay at 1200 degrees.")
    Image.new("RGB", (80, 80), (0, 0, 255)).save(tmp_path / "blue_square.png")
    (tmp_path / "blue_square.txt").write_text("a plain blue square")
    corpus = Corpus.load(tmp_path)
    assert sorted(d.id for d in corpus.docs) == ["kiln", "otter"]
    assert [(i.id, i.caption) for i in corpus.images] == [("blue_square", "a plain blue square")]
    index = CorpusIndex(corpus, None, embedder=tiny_clip)
    assert index.search_docs("otters sleep", 2)[0][0].id == "otter"
    assert index.search_images("blue square", 1)[0][0].id == "blue_square"


def test_tokenizer_drops_stopwords_and_plural_s():
    assert tokenize("The legs of the Beetles, and its horns!") == ["leg", "beetle", "horn"]
    assert tokenize("glass grass") == ["glass", "grass"]


async def test_local_backend_without_embedder_uses_captions(local_config, tmp_path):
    from orig_local.retrieval.retriever import Retriever

    r = Retriever.from_config(local_config.retrieval, cache_dir=tmp_path)
    try:
        outcome = await r.search_images("Korvath K-7 tram", k=3)
        assert outcome.hits[0].image_url.startswith("corpus://img/img-k7-")
    finally:
        await r.aclose()


async def test_concurrent_first_queries_build_once(local_config, tmp_path, monkeypatch):
    import asyncio

    from orig_local.retrieval import corpus as corpus_mod
    from orig_local.retrieval.retriever import Retriever

    builds = []
    real = corpus_mod.CorpusIndex.__init__

    def counting(self, *a, **kw):
        builds.append(1)
        real(self, *a, **kw)

    monkeypatch.setattr(corpus_mod.CorpusIndex, "__init__", counting)
    r = Retriever.from_config(local_config.retrieval, cache_dir=tmp_path)
    try:
        outcomes = await asyncio.gather(*(r.search_text(q, k=2) for q in ["Veltrane", "Quillon", "Korvath", "Eiffel"]))
    finally:
        await r.aclose()
    assert len(builds) == 1 and all(o.hits for o in outcomes)


@pytest.mark.slow
async def test_real_clip_preset_ranks_demo_images(local_config, tmp_path):
    """With real CLIP weights on the machine (clip-vit-b-32), images rank by content too."""
    from orig_local.embeddings.clip import OpenClipEmbedder
    from orig_local.embeddings.config import EmbedConfig
    from orig_local.retrieval.retriever import Retriever

    try:
        embedder = OpenClipEmbedder.from_config(EmbedConfig(preset="clip-vit-b-32", device="cpu"))
        embedder.model  # noqa: B018 - the weights load on first use: load them here
    except Exception as exc:  # noqa: BLE001 - no weights offline: nothing to test here
        pytest.skip(f"real CLIP weights not available: {exc}")
    r = Retriever.from_config(local_config.retrieval, cache_dir=tmp_path, embedder=embedder)
    try:
        outcome = await r.search_images("a red and cream tram with a round yellow headlight", k=3)
    finally:
        await r.aclose()
    assert outcome.hits[0].image_url.startswith("corpus://img/img-k7-")
