"""`orig generate "…" --offline`, as docs/agent.md writes it, writes an image and says where;
without a generator it says there is none (issue 12)."""

from __future__ import annotations

from PIL import Image

from orig_local.cli import main
from orig_local.config import load_config

PROMPT = "The Veltrane Harbor Lighthouse at dusk"


def test_offline_config_has_a_generator_that_takes_references():
    from orig_local.presets import load_preset

    gen = load_config("offline").generator
    assert gen.preset and load_preset(gen.preset).is_tiny  # offline: a tiny, local model
    assert "edit" in gen.preset  # takes ORIG's reference images, as the paper's Qwen-Image-Edit did


def test_generate_offline_writes_an_image_and_prints_its_path(tmp_path, capsys):
    import json

    out = tmp_path / "run"
    rc = main(["-q", "generate", PROMPT, "--offline", "-s", "backbone.backend=simulated", "-s", "cache_dir=''",
               "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert f"image: {out}/image.png" in captured.out.splitlines()
    with Image.open(out / "image.png") as im:
        assert im.size[0] > 0 and im.size[1] > 0
    trace = json.loads((out / "trace.json").read_text())
    assert trace["files"]["image"] == "image.png"
    assert trace["generation"]["references_used"] == len(trace["references"]) > 0  # the references reached it


def test_generate_without_a_generator_says_there_is_no_image(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["-q", "generate", PROMPT, "--offline", "-s", "backbone.backend=simulated", "-s", "cache_dir=''",
               "-s", "generator.preset=null", "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 0
    assert not (out / "image.png").exists()
    assert "image: none - no generator configured" in captured.err and "generator.preset" in captured.err
