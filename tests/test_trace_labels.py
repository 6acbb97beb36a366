"""Stand-ins say so where their output shows (issue 9.8), and trace.html shows the generated
image large (issue 12.3)."""

import json
from types import SimpleNamespace

from orig_local.labels import SIMULATED, TINY, config_labels, is_tiny_ref, run_labels, tokens_estimated


def test_simulated_generate_run_is_labelled_in_trace_json_and_html(tmp_path, capsys):
    from orig_local.cli import main

    out = tmp_path / "g"
    rc = main(["-q", "generate", "The Korvath K-7 tram", "--offline", "-s", "backbone.backend=simulated",
               "-s", "generator.preset=null", "--out", str(out)])
    stdout = capsys.readouterr().out
    assert rc == 0
    assert "note: SIMULATED backbone — not model output" in stdout  # the CLI summary says so
    data = json.loads((out / "trace.json").read_text())
    assert data["labels"] == [SIMULATED] and data["trace"]["simulated"] is True
    assert data["trace"]["tokens_estimated"] is True
    page = (out / "trace.html").read_text()
    assert "SIMULATED backbone — not model output" in page
    assert "estimated" in page and "(est.)" in page


def test_label_rules():
    scripted = SimpleNamespace(backend="scripted", config=SimpleNamespace(preset="tiny-qwen2.5-vl", model=None))
    assert run_labels(scripted) == [SIMULATED] and tokens_estimated(scripted)
    tiny = SimpleNamespace(backend="transformers", config=SimpleNamespace(preset="tiny-qwen2.5-vl", model=None))
    assert run_labels(tiny) == [TINY] and not tokens_estimated(tiny)
    real = SimpleNamespace(backend="openai", config=SimpleNamespace(preset="qwen2.5-vl-72b", model="Qwen/x"))
    assert run_labels(real) == []
    gen = SimpleNamespace(preset=SimpleNamespace(is_tiny=True), name="tiny-qwen-image")
    assert run_labels(real, gen) == [TINY]
    assert is_tiny_ref("tiny:qwen2.5-vl") and is_tiny_ref("local-dir:tiny:clip") and not is_tiny_ref("ViT-B-32")
    cfg = {"backbone": {"backend": "simulated", "preset": "tiny-qwen2.5-vl"}, "judge": {"preset": "tiny-judge"},
           "generator": {"preset": "flux.1-schnell"}}
    assert config_labels(cfg) == [SIMULATED, TINY]
    assert config_labels(cfg, ["generator"]) == []


def test_trace_html_shows_a_small_generated_image_large():
    from PIL import Image

    from orig_local.agent.agent import AgentResult
    from orig_local.agent.output import render_html
    from orig_local.agent.trace import Trace

    result = AgentResult(prompt="p", condition="orig", final_prompt="p", trace=Trace(labels=[TINY]))
    result.generation = SimpleNamespace(image=Image.new("RGB", (64, 64), "red"), seed=0, seconds=0.1,
                                        references_used=0, notes=[], params={})
    page = render_html(result)
    tag = page[page.index('<img class="generated"'):]
    tag = tag[:tag.index(">")]
    assert "generated" in tag
    css = page[page.index("img.generated{"):]
    css = css[:css.index("}")]
    assert "width:100%" in css and "min-width" in css  # scaled up, not shown at its 64 px
    assert TINY in page


def test_a_tiny_clip_labels_runs_that_dedup_retrieved_images_only(tmp_path):
    """CLIP decides which retrieved images are duplicates: random CLIP weights change what an
    image-retrieving condition does, so its run is labelled; a text-only run is not."""
    import yaml

    from orig_local.evaluation.results import run_stand_in_labels

    real = {"backend": "openai", "preset": "qwen2.5-vl-7b"}
    cfg = {"backbone": real, "judge": real, "generator": {"preset": "qwen-image-edit-2509"},
           "embed": {"preset": "tiny-clip"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert TINY in run_stand_in_labels(tmp_path, {"condition": "orig"})
    assert TINY in run_stand_in_labels(tmp_path, {"condition": "orig_img"})
    assert TINY not in run_stand_in_labels(tmp_path, {"condition": "orig_txt"})
    assert TINY not in run_stand_in_labels(tmp_path, {"condition": "direct"})
