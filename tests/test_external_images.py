"""Judge images made elsewhere (issue 24, point 4): `orig eval --phase judge --images DIR` imports
another system's outputs and judges them with the same judge; provenance says "external: NAME"
and never the configured generator; an item without an image is a failed row, not a gap."""

from __future__ import annotations

import json
from pathlib import Path

from openai_loopback import OpenAILoopback
from PIL import Image

from orig_local.cli import main
from orig_local.evaluation.data import mini_path

MINI = str(mini_path())


def _eval(out: Path, *extra: str) -> list[str]:
    return ["-q", "eval", "--benchmark", "jsonl", "--data", MINI, "--out", str(out), "-s", "cache_dir=''", *extra]


def _served(server: OpenAILoopback) -> list[str]:
    return ["-s", "judge.backend=openai", "-s", f"judge.base_url={server.base_url}", "-s", f"judge.model={server.model}",
            "-s", "judge.connect_retries=0", "-s", "eval.judge_answer_format=text"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_external_images_are_judged_with_provenance_external(tmp_path, capsys):
    images = tmp_path / "othersys"
    images.mkdir()
    Image.new("RGB", (1024, 768), (200, 30, 30)).save(images / "mini_landmark.jpg")
    Image.new("RGB", (64, 64), (30, 30, 200)).save(images / "mini_animal.png")
    Image.new("RGB", (8, 8)).save(images / "not_an_item.png")
    out = tmp_path / "run"
    with OpenAILoopback(model="j", reply=lambda body: "true") as server:
        rc = main(_eval(out, "--phase", "judge", "--images", str(images), "--generator", "tiny-qwen-image",
                        *_served(server)))
        asked = server.chat_requests
    captured = capsys.readouterr()
    assert rc == 1  # mini_sports has no image: failed, said so, exit 1
    assert "imported 2 image(s)" in captured.out and "1 item(s) WITHOUT an image" in captured.out
    assert "1 image(s) match no selected item" in captured.out
    meta = json.loads((out / "run.json").read_text())
    assert meta["generator"] == "external: othersys"  # never the configured tiny-qwen-image
    assert "tiny-qwen-image" not in json.dumps(meta.get("provenance", {}).get("models", {}))
    gen = {r["id"]: r for r in _rows(out / "generate.jsonl")}
    assert gen["mini_landmark"]["generator"] == "external: othersys" and gen["mini_landmark"]["status"] == "ok"
    assert gen["mini_sports"]["status"] == "failed" and "no image" in gen["mini_sports"]["error"]
    with Image.open(out / gen["mini_landmark"]["image"]) as im:
        assert im.size == (1024, 768)
    judged = {r["id"]: r for r in _rows(out / "judge.jsonl")}
    assert judged["mini_landmark"]["status"] == "ok" and judged["mini_animal"]["status"] == "ok"
    assert asked == sum(len(judged[i]["verdicts"]) for i in ("mini_landmark", "mini_animal"))
    # the report's results file names the external system
    main(["-q", "report", str(out), "--bootstrap", "0", "--allow-data-errors"])
    capsys.readouterr()
    doc = json.loads((out / "report" / "results.json").read_text())
    assert doc["runs"][0]["images"] == "external: othersys"
    # rerun: nothing imported twice; another system's images into the same folder are refused
    with OpenAILoopback(model="j", reply=lambda body: "true") as server:
        main(_eval(out, "--phase", "judge", "--images", str(images), *_served(server)))
    assert len(_rows(out / "generate.jsonl")) == 3
    other = tmp_path / "another"
    other.mkdir()
    assert main(_eval(out, "--phase", "judge", "--images", str(other))) == 2
    assert "already holds images from 'external: othersys'" in capsys.readouterr().err


def test_images_only_with_the_judge_phase(tmp_path, capsys):
    assert main(_eval(tmp_path / "r", "--phase", "agent", "--images", str(tmp_path))) == 2
    assert "--phase judge" in capsys.readouterr().err
