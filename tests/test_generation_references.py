"""Fitting reference images to a model's limit (pure PIL, no model)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from orig_local.generation.references import collage, fit_references, to_pil


def imgs(n, size=(30, 20)):
    return [Image.new("RGB", size, (40 * i, 0, 0)) for i in range(n)]


def test_under_the_limit_everything_passes_in_order():
    given = imgs(2)
    out, used, notes = fit_references(given, 3)
    assert [im.getpixel((0, 0)) for im in out] == [(0, 0, 0), (40, 0, 0)] and used == 2 and notes == []


def test_text_only_and_first_and_collage():
    out, used, notes = fit_references(imgs(2), 0, model="m")
    assert out == [] and used == 0 and "text-only generator m" in notes[0]
    out, used, notes = fit_references(imgs(4), 1, "first")
    assert len(out) == 1 and used == 1 and "dropped 3" in notes[0]
    out, used, notes = fit_references(imgs(4), 2, "collage")
    assert [im.size for im in out] == [(30, 20), (90, 20)] and used == 4
    with pytest.raises(ValueError, match="unknown reference strategy"):
        fit_references(imgs(3), 1, "best")
    assert fit_references([], 0) == ([], 0, [])


def test_collage_scales_to_a_common_height():
    strip = collage([Image.new("RGB", (10, 10), "red"), Image.new("RGB", (40, 20), "blue")])
    assert strip.size == (60, 20)
    assert strip.getpixel((5, 5)) == (255, 0, 0) and strip.getpixel((30, 5)) == (0, 0, 255)


def test_to_pil_accepts_paths_bytes_and_image_refs(tmp_path):
    from orig_local.llm.base import ImageRef

    im = Image.new("L", (8, 6), 128)
    path = tmp_path / "a.png"
    im.save(path)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    for source in (im, path, str(path), buf.getvalue(), ImageRef(path)):
        out = to_pil(source)
        assert out.mode == "RGB" and out.size == (8, 6)
    with pytest.raises(TypeError):
        to_pil(42)
