"""Record a run against a loopback server, stop the server, replay: identical evidence."""

from __future__ import annotations

import json

import pytest

from orig_local.retrieval.base import FetchedImage, FetchFailure, Page
from orig_local.retrieval.config import RetrievalConfig
from orig_local.retrieval.evidence import EvidenceStore, SnapshotError, pack, unpack, verify
from orig_local.retrieval.retriever import Retriever
from orig_local.retrieval.testserver import LoopbackServer, article_html, image_bytes, respond

PARAS = ["The Quillon glassback beetle has translucent violet wing cases, each crossed by three thin "
         "gold stripes, six bright red legs and a crescent-shaped horn on its glossy black head.",
         "It lives only in the peat bogs of the Marrow Fen, where volunteers count it every June."]


def web_config(**kw) -> RetrievalConfig:
    return RetrievalConfig.model_validate({
        "search": {"chain": ["searxng"], "min_interval_s": 0, "timeout_s": 5, "cache": False},
        "reader": {"timeout_s": 2, "min_chars": 100},
        "fetch": {"timeout_s": 2, "allow_loopback": True, "per_host_interval_s": 0},
        **kw,
    })


def routes(base):
    search_text = {"results": [
        {"title": "Quillon glassback", "url": f"{base}/beetle", "content": "violet wing cases"},
        {"title": "Gone", "url": f"{base}/gone", "content": ""}]}
    search_images = {"results": [
        {"title": "beetle", "url": f"{base}/beetle", "img_src": f"{base}/beetle.png", "resolution": "320x240"},
        {"title": "beetle jpeg", "url": f"{base}/beetle", "img_src": f"{base}/beetle.jpg"},
        {"title": "fake", "url": f"{base}/beetle", "img_src": f"{base}/fake.png"}]}

    def search(h):
        body = search_images if "categories=images" in h.path else search_text
        respond(json.dumps(body).encode(), "application/json")(h)

    return {
        "/search": search,
        "/beetle": respond(article_html("Quillon glassback beetle", PARAS).encode()),
        "/gone": respond(b"<html>gone</html>", status=404),
        "/beetle.png": respond(image_bytes(320, 240, pattern=2), "image/png"),
        "/beetle.jpg": respond(image_bytes(500, 300, fmt="JPEG", pattern=6), "image/jpeg"),
        "/fake.png": respond(b"not really a png" * 20, "image/png"),
    }


async def run_once(retriever: Retriever) -> dict:
    """What an agent would do: search both kinds, read every page, fetch every image."""
    evidence = {"text": [], "images": [], "pages": [], "fetched": []}
    text = await retriever.search_text("Quillon glassback beetle", k=10)
    images = await retriever.search_images("Quillon glassback beetle", k=10)
    evidence["text"] = [h.model_dump() for h in text.hits]
    evidence["images"] = [h.model_dump() for h in images.hits]
    for hit in text.hits:
        page = await retriever.read_page(hit.url)
        evidence["pages"].append(page.model_dump(exclude={"url"}) if isinstance(page, Page) else page.kind)
    for hit in images.hits:
        img = await retriever.fetch_image(hit.image_url, page_url=hit.page_url)
        evidence["fetched"].append(
            (img.bytes_sha256, img.image.size, img.image.tobytes().__hash__(), img.dhash, img.page_url)
            if isinstance(img, FetchedImage) else img.kind)
    return evidence


async def test_record_then_replay_with_server_stopped(tmp_path):
    snap = tmp_path / "snap"
    with LoopbackServer() as server:
        base = server.url("")
        server.routes.update(routes(base))
        live = Retriever.from_config(web_config(searxng={"base_url": base}), record_dir=snap)
        recorded = await run_once(live)
        await live.aclose()
    # the server is gone: any network access would now fail
    assert recorded["pages"][0]["title"] == "Quillon glassback beetle" and recorded["pages"][1] == "http_error"
    assert isinstance(recorded["fetched"][0], tuple) and recorded["fetched"][2] == "not_image"
    assert (snap / "manifest.json").exists() and verify(snap) == []

    replay = Retriever.from_config(web_config(replay=str(snap), searxng={"base_url": base}))
    replayed = await run_once(replay)
    await replay.aclose()
    assert replayed == recorded  # same hits, same page texts, same image hashes and pixels

    # the snapshot backend names what it does not know instead of inventing an empty answer
    replay = Retriever.from_config(web_config(replay=str(snap)))
    unknown = await replay.search_text("something never searched")
    page = await replay.read_page("http://127.0.0.1:1/never-read")
    await replay.aclose()
    assert unknown.hits == [] and unknown.failures[0].kind == "error" and "not recorded" in unknown.failures[0].detail
    assert isinstance(page, FetchFailure) and page.kind == "not_recorded"


async def test_local_corpus_run_replays_without_corpus(tmp_path):
    from orig_local.config import load_config

    snap = tmp_path / "snap"
    cfg = load_config("offline", [f"cache_dir={tmp_path / 'cache'}", "retrieval.local.images=false"])
    live = Retriever.from_config(cfg.retrieval, cache_dir=cfg.resolved_cache_dir(), record_dir=snap)
    recorded = await run_once(live)
    await live.aclose()
    assert recorded["pages"] and recorded["fetched"]
    replay = Retriever.from_config(cfg.retrieval.model_copy(update={"replay": str(snap)}))
    assert await run_once(replay) == recorded
    await replay.aclose()


def test_pack_unpack_verify_and_tamper_detection(tmp_path):
    store = EvidenceStore(tmp_path / "snap")
    store.record_page("http://x.example/a", Page(url="http://x.example/a", final_url="http://x.example/a",
                                                 title="A", text="hello world", fetched_at="2026-01-01T00:00:00Z",
                                                 status=200))
    store.record_image("http://x.example/i.png", (image_bytes(), "image/png"))
    store.record_image("http://x.example/bad.png", FetchFailure(url="http://x.example/bad.png", kind="bomb"))
    archive = pack(store.root, tmp_path / "snap.tar.gz")
    assert archive.is_file() and verify(archive) == []
    restored = unpack(archive, tmp_path / "restored")
    assert restored.page("http://x.example/a").text == "hello world"
    assert restored.image_bytes("http://x.example/i.png")[0] == image_bytes()
    assert restored.image_bytes("http://x.example/bad.png").kind == "bomb"

    blob = next((tmp_path / "restored" / "blobs").rglob("*"))
    while blob.is_dir():
        blob = next(blob.iterdir())
    blob.write_bytes(b"tampered")
    problems = verify(tmp_path / "restored")
    assert any("hash mismatch" in p for p in problems) and any("does not match" in p for p in problems)
    with pytest.raises(SnapshotError):
        restored.read_blob(blob.name)


def test_unpack_refuses_path_traversal(tmp_path):
    import io
    import tarfile

    evil = tmp_path / "evil.tar.gz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../outside.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    with pytest.raises(SnapshotError, match="refusing"):
        unpack(evil, tmp_path / "out")
    assert not (tmp_path / "outside.txt").exists()
