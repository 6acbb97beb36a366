"""The output folder (Python API and `orig generate`): image, prompt.txt, ordered references,
trace.json with totals, config.yaml, a self-contained trace.html."""

from __future__ import annotations

import json

import yaml
from agent_support import PROMPT, RecordingGenerator, make_agent

from orig_local.agent.factory import arun_agent
from orig_local.config import Config


async def test_run_agent_writes_the_output_folder(tmp_path):
    agent = make_agent(generator=RecordingGenerator())
    config = Config()
    res = await arun_agent(PROMPT, config, tmp_path / "out", agent=agent)
    out = tmp_path / "out"
    assert (out / "prompt.txt").read_text().strip() == res.final_prompt
    assert (out / "image.png").is_file()
    refs = sorted(p.name for p in (out / "references").iterdir())
    assert refs == [f"{i:02d}_{v.id}.png" for i, v in enumerate(res.references, 1)]
    data = json.loads((out / "trace.json").read_text())
    assert data["final_prompt"] == res.final_prompt and data["stop_reason"] == "sufficient"
    assert set(data["trace"]["totals"]) >= {"bootstrap", "planning", "search", "accumulation",
                                             "sufficiency", "refinement", "extension", "generation"}
    assert data["trace"]["total"]["calls"] == sum(1 for r in res.trace.records if r.attempts)
    assert all(t["source"]["url"] for t in data["knowledge"]["texts"])
    assert yaml.safe_load((out / "config.yaml").read_text())["agent"]["condition"] == "orig"
    html = (out / "trace.html").read_text()
    assert res.final_prompt.split(".")[0] in html
    assert html.count("data:image/jpeg;base64,") >= len(res.knowledge.images) + 1  # thumbs + image
    assert "corpus://doc/" in html and "http://" not in html.replace('href="http', "")  # no external assets
    for stage in ("bootstrap", "planning", "accumulation", "refinement", "extension"):
        assert f'<span class="stage">{stage}</span>' in html


def test_cli_generate_direct_and_enhanced(tmp_path, capsys):
    from orig_local.cli import main

    out = tmp_path / "direct"
    rc = main(["-q", "generate", "A red kite", "--condition", "direct", "--out", str(out),
               "-s", "backbone.backend=scripted", "-s", "cache_dir=''"])
    assert rc == 0 and (out / "prompt.txt").read_text().strip() == "A red kite"
    assert (out / "trace.html").is_file() and not (out / "image.png").exists()

    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump([{"prompt": "A red diamond kite with a long blue tail"}]))
    out = tmp_path / "enhanced"
    rc = main(["-q", "generate", "A red kite", "--condition", "prompt_enhanced", "--out", str(out),
               "-s", "backbone.backend=scripted", "-s", f"backbone.script={script}", "-s", "cache_dir=''"])
    assert rc == 0
    assert (out / "prompt.txt").read_text().strip() == "A red diamond kite with a long blue tail"
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["agent"]["condition"] == "prompt_enhanced"
    assert "A red diamond kite" in capsys.readouterr().out


def test_report_links_only_web_and_corpus_urls():
    from orig_local.agent.output import safe_url

    assert safe_url("https://example.invalid/a") == "https://example.invalid/a"
    assert safe_url("corpus://doc/x") == "corpus://doc/x"
    assert safe_url("javascript:alert(1)") == "#" and safe_url(None) == "#"
