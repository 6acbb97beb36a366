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
    emb = OpenClipEmbedder(tiny_clip, device="cpu", batch_size=2, precision="fp32")  # several batches
    images = pictures()
    got = emb.embed_images(images)
    assert emb.precision == "fp32"
    np.testing.assert_allclose(got, reference(emb, images), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("precision", "min_cos"), [("bf16", 0.995)])
def test_fast_precisions_stay_close_to_fp32(tiny_clip, precision, min_cos):
    images = pictures()
    ref = OpenClipEmbedder(tiny_clip, device="cpu", precision="fp32").embed_images(images)
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
    fp32 = OpenClipEmbedder.from_config(EmbedConfig(preset="tiny-clip", device="cpu", precision="fp32"),
                                        cache_dir=tmp_path)
    assert fp32.precision == "fp32" and fp32.cache.namespace == "clip:tiny-clip"  # keys unchanged
    auto = OpenClipEmbedder.from_config(EmbedConfig(preset="tiny-clip", device="cpu"), cache_dir=tmp_path)
    resolved = auto.precision  # resolving "auto" settles the namespace
    assert auto.cache.namespace == "clip:tiny-clip" + ("" if resolved == "fp32" else ":bf16")
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        EmbedConfig(precision="fp16")


def test_auto_takes_bf16_exactly_where_the_cpu_has_it_natively(tiny_clip):
    import torch

    caps = torch.cpu.get_capabilities()
    native = bool(caps.get("avx512_bf16") or caps.get("amx_bf16"))
    emb = OpenClipEmbedder(tiny_clip, device="cpu")  # the default
    assert emb.requested_precision == "auto"
    assert emb.precision == ("bf16" if native else "fp32")
    emb.embed_images(pictures(1))
    assert {p.dtype for p in emb.model.parameters()} == {torch.bfloat16 if native else torch.float32}


def test_auto_follows_the_capabilities_torch_reports(monkeypatch):
    import torch

    from orig_local.embeddings import clip

    for caps, expected in (({"avx512_bf16": True}, "bf16"), ({"amx_bf16": True}, "bf16"),
                           ({"avx512_bf16": False, "amx_bf16": False, "avx2": True}, "fp32")):
        monkeypatch.setattr(torch.cpu, "get_capabilities", lambda caps=caps: caps)
        assert clip.resolve_precision("auto", "cpu") == expected
    assert clip.resolve_precision("fp32", "cpu") == "fp32"  # an explicit choice is kept
    assert clip.resolve_precision("bf16", "cpu") == "bf16"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert clip.resolve_precision("auto", "cuda") == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert clip.resolve_precision("auto", "cuda:0") == "bf16"


def test_run_provenance_records_the_resolved_precision(monkeypatch):
    import torch

    from orig_local.config import Config
    from orig_local.provenance import model_info, summary_lines

    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"avx512_bf16": False})
    config = Config.model_validate({"embed": {"device": "cpu"}})
    assert config.embed.precision == "auto"
    info = model_info(config, {"embedder": True})
    assert info["embedder"]["precision"] == "fp32"
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"amx_bf16": True})
    info = model_info(config, {"embedder": True})
    assert info["embedder"]["precision"] == "bf16"
    assert any("embedder" in ln and "bf16" in ln for ln in summary_lines({"models": info}))
