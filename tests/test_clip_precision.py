"""OpenClipEmbedder's speed options keep embeddings right (orig_local/embeddings/clip.py).

The default (fp32) path must give the plain open_clip forward pass's embeddings up to float
rounding; bf16 must stay close enough that dedup decisions do not change."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from orig_local.embeddings.clip import OpenClipEmbedder
from orig_local.paths import tiny_models_dir
from orig_local.tiny.build import build_one

pytest.importorskip("open_clip")


@pytest.fixture(scope="module")
def tiny_clip() -> str:
    return "local-dir:" + str(build_one("clip", tiny_models_dir()))


def pictures(n: int = 5) -> list[Image.Image]:
    out = []
    for k in range(n):
        im = Image.new("RGB", (160 + 20 * k, 120), (40 * k, 90, 200 - 30 * k))
        d = ImageDraw.Draw(im)
        d.rectangle([10 + 10 * k, 10, 80, 60 + 10 * k], fill=(250 - 40 * k, 20 * k, 60))
        d.ellipse([60, 30, 140, 110], outline=(0, 0, 0), width=3 + k)
        out.append(im)
    return out


def reference(emb: OpenClipEmbedder, images) -> np.ndarray:
    """The plain open_clip path: preprocess, encode_image under no_grad, L2-normalise."""
    import torch

    batch = torch.stack([emb.preprocess(im.convert("RGB")) for im in images])
    with torch.no_grad():
        feats = emb.model.encode_image(batch).float()
    return torch.nn.functional.normalize(feats, dim=-1).numpy()


def test_default_fp32_equals_plain_open_clip(tiny_clip):
    emb = OpenClipEmbedder(tiny_clip, device="cpu", batch_size=2)  # several batches
    images = pictures()
    got = emb.embed_images(images)
    assert emb.precision == "fp32"
    np.testing.assert_allclose(got, reference(emb, images), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("precision", "min_cos"), [("bf16", 0.995)])
def test_fast_precisions_stay_close_to_fp32(tiny_clip, precision, min_cos):
    images = pictures()
    ref = OpenClipEmbedder(tiny_clip, device="cpu").embed_images(images)
    fast = OpenClipEmbedder(tiny_clip, device="cpu", precision=precision)
    got = fast.embed_images(images)
    import torch

    assert {p.dtype for p in fast.model.parameters()} == {torch.bfloat16}  # really runs in bf16
    assert got.dtype == np.float32 and got.shape == ref.shape
    cos = np.sum(got * ref, axis=1)
    assert cos.min() >= min_cos, cos
    # the same pairs stay most alike: dedup decisions do not move
    assert np.array_equal(np.argsort(got @ got.T, axis=1), np.argsort(ref @ ref.T, axis=1))
    texts = fast.embed_texts(["a red square", "a black ring"])
    assert texts.shape[0] == 2 and np.all(np.isfinite(texts))


def test_bad_precision_and_batch_are_refused(tiny_clip):
    with pytest.raises(ValueError, match="precision"):
        OpenClipEmbedder(tiny_clip, device="cpu", precision="fp8")
    with pytest.raises(ValueError, match="batch_size"):
        OpenClipEmbedder(tiny_clip, device="cpu", batch_size=0)


def test_forget_drops_memory_cache(tiny_clip):
    emb = OpenClipEmbedder(tiny_clip, device="cpu")
    images = pictures(2)
    first = emb.embed_images(images)
    emb.embed_images(images)
    assert emb.images_embedded == 2  # second call served from memory
    emb.forget()
    again = emb.embed_images(images)
    assert emb.images_embedded == 4
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_config_precision_reaches_the_embedder(tmp_path):
    from orig_local.embeddings.config import EmbedConfig

    cfg = EmbedConfig(preset="tiny-clip", device="cpu", precision="bf16")
    emb = OpenClipEmbedder.from_config(cfg, cache_dir=tmp_path)
    assert emb.precision == "bf16"
    assert emb.cache.namespace.endswith(":bf16")  # not mixed with fp32 cache entries
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        EmbedConfig(precision="fp16")
