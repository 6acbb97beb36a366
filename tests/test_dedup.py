"""Image dedup with the tiny random open_clip.

The tiny CLIP has random weights, so its similarities reflect low-level colour/layout statistics,
not semantics: every image lands within cosine ~0.97-0.996 of every other distinct test image,
while a resized + JPEG-re-encoded copy stays above 0.9996 (measured on the images below). The
threshold used here (0.999) sits in that measured gap; test_tiny_clip_gap asserts the gap itself
so the dedup tests cannot pass by accident.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import tiny_model

THRESHOLD = 0.999  # tiny random CLIP only; real CLIP uses ~0.95


def blobs(seed: int, size=(160, 120)):
    """A distinct synthetic picture: background colour + a few coloured ellipses."""
    from PIL import Image, ImageDraw

    rng = np.random.default_rng(seed)
    im = Image.new("RGB", size, tuple(int(x) for x in rng.integers(0, 256, 3)))
    draw = ImageDraw.Draw(im)
    for _ in range(4):
        x0, y0 = int(rng.integers(0, size[0])), int(rng.integers(0, size[1]))
        draw.ellipse([x0, y0, x0 + int(rng.integers(20, 80)), y0 + int(rng.integers(20, 80))],
                     fill=tuple(int(x) for x in rng.integers(0, 256, 3)))
    return im


def smaller_jpeg_copy(im, factor=0.5, quality=70):
    from PIL import Image

    small = im.resize((int(im.width * factor), int(im.height * factor)), Image.BILINEAR)
    buf = io.BytesIO()
    small.save(buf, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buf.getvalue())).convert("RGB")


@pytest.fixture(scope="module")
def embedder():
    from orig_local.embeddings.clip import OpenClipEmbedder

    return OpenClipEmbedder("local-dir:" + str(tiny_model("clip")), device="cpu", batch_size=8)


def dedup(embedder, **kw):
    from orig_local.embeddings.dedup import ImageDeduplicator

    return ImageDeduplicator(embedder, threshold=THRESHOLD, **kw)


def test_tiny_clip_gap(embedder):
    originals = [blobs(s) for s in range(6)]
    copies = [smaller_jpeg_copy(im) for im in originals]
    vecs = embedder.embed_images(originals + copies)
    sims = vecs @ vecs.T
    n = len(originals)
    copy_sims = [sims[i, n + i] for i in range(n)]
    distinct = [sims[i, j] for i in range(n) for j in range(i + 1, n)]
    assert min(copy_sims) > THRESHOLD > max(distinct)


def test_resized_jpeg_copy_collapses_keeping_the_larger(embedder):
    big = blobs(1)
    images = [smaller_jpeg_copy(big), blobs(2), big, blobs(3)]
    result = dedup(embedder).dedup(images)
    assert result.kept == [1, 2, 3]  # the 160x120 original beats its earlier 80x60 copy
    decision = result.decisions[0]
    assert (decision.reason, decision.duplicate_of, decision.kept) == ("near_duplicate", 2, False)
    assert decision.similarity >= THRESHOLD
    # prefer="order": the agent's rank order wins instead of resolution
    assert dedup(embedder, prefer="order").keep(images) == [0, 1, 3]


def test_distinct_images_all_stay(embedder):
    images = [blobs(s) for s in range(10, 18)]
    result = dedup(embedder).dedup(images)
    assert result.kept == list(range(8))
    assert result.reasons() == {"unique": 8}


def test_exact_copies_removed_before_embedding(embedder):
    a, b = blobs(40), blobs(41)
    images = [a, a.copy(), b, b.copy(), a.copy()]
    before = embedder.images_embedded
    result = dedup(embedder).dedup(images)
    assert result.kept == [0, 2]
    assert [d.reason for d in result.decisions] == [
        "unique", "exact_duplicate", "unique", "exact_duplicate", "exact_duplicate"]
    assert result.decisions[3].duplicate_of == 2
    # only the two distinct pictures went through the model
    assert result.embedded == 2 == embedder.images_embedded - before


def test_cache_avoids_re_embedding(embedder, tmp_path):
    from orig_local.cache import DiskCache
    from orig_local.embeddings.clip import OpenClipEmbedder

    images = [blobs(s) for s in range(50, 54)]
    first = dedup(embedder).dedup(images)
    assert first.embedded == 4
    again = dedup(embedder).dedup(list(reversed(images)))
    assert again.embedded == 0 and len(again.kept) == 4

    # the on-disk cache carries embeddings to a fresh embedder (another run)
    path = tmp_path / "emb.sqlite"
    model = "local-dir:" + str(tiny_model("clip"))
    one = OpenClipEmbedder(model, device="cpu", cache=DiskCache(path, "clip:tiny"))
    vec1 = one.embed_images(images)
    two = OpenClipEmbedder(model, device="cpu", cache=DiskCache(path, "clip:tiny"))
    vec2 = two.embed_images(images)
    assert (one.images_embedded, two.images_embedded) == (4, 0)
    np.testing.assert_allclose(vec1, vec2, rtol=1e-6)


def test_existing_images_are_never_dropped(embedder):
    kb = blobs(60)
    candidates = [smaller_jpeg_copy(kb, factor=0.9), blobs(61), kb.copy()]
    result = dedup(embedder).dedup(candidates, existing=[kb])
    assert result.kept == [1]
    assert [(d.reason, d.duplicate_of, d.duplicate_of_existing) for d in result.decisions] == [
        ("near_duplicate", 0, True), ("unique", None, False), ("exact_duplicate", 0, True)]


def test_dhash_stage_drops_copies_without_embedding(embedder):
    a = blobs(70)
    images = [a, smaller_jpeg_copy(a, factor=0.75, quality=85), blobs(71)]
    before = embedder.images_embedded
    result = dedup(embedder, dhash_max_bits=6).dedup(images)
    assert result.kept == [0, 2]
    assert result.decisions[1].reason == "perceptual_duplicate"
    assert embedder.images_embedded - before <= 2  # the copy itself was never embedded


def test_rank_images_for_text(embedder):
    from orig_local.embeddings.dedup import rank_images_for_text

    images = [blobs(s) for s in range(80, 85)]
    ranked = rank_images_for_text("a red circle", images, embedder, top_k=3)
    assert len(ranked) == 3
    scores = embedder.text_image_similarity(["a red circle"], images)[0]
    assert [r.index for r in ranked] == list(np.argsort(-scores, kind="stable")[:3])
    assert ranked[0].score >= ranked[1].score >= ranked[2].score
    assert rank_images_for_text("x", [], embedder) == []
