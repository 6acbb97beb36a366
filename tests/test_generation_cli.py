"""`orig image`: direct generation from the command line (tiny FLUX-Kontext, one reference)."""

from __future__ import annotations

import json

from conftest import tiny_model
from PIL import Image


def test_orig_image_with_reference(tmp_path):
    from orig_local.cli import main

    tiny_model("flux_kontext")
    ref = tmp_path / "ref.png"
    Image.new("RGB", (40, 40), "red").save(ref)
    out = tmp_path / "out" / "cat.png"
    code = main(["-q", "image", "a red cat", "--preset", "tiny-flux-kontext", "--ref", str(ref), "--ref", str(ref),
                 "--seed", "3", "--width", "32", "--height", "48", "--steps", "1", "--out", str(out),
                 "--set", "generator.device=cpu"])
    assert code == 0
    assert Image.open(out).size == (32, 48)
    record = json.loads(out.with_suffix(".png.json").read_text())
    assert record["references_used"] == 1 and "kept the first 1 of 2" in record["notes"][0]
    assert record["params"]["seed"] == 3 and record["params"]["steps"] == 1


def test_orig_image_missing_reference_is_an_error(tmp_path, capsys):
    from orig_local.cli import main

    code = main(["-q", "image", "x", "--preset", "tiny-flux", "--ref", str(tmp_path / "nope.png")])
    assert code == 2 and "not found" in capsys.readouterr().err
