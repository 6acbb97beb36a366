"""Several images per item (issue 24, point 4): `--seeds 0,1,2` and a mean over seeds whose CI
covers both prompt and seed variance (two-level bootstrap)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from openai_loopback import OpenAILoopback

from orig_local.cli import main
from orig_local.evaluation.data import mini_path
from orig_local.evaluation.scoring import PromptScore, bootstrap_ci, table_row
from orig_local.evaluation.seeds import parse_seeds, seed_table


def _ps(pid: str, cls: str, correct: int, total: int = 4) -> PromptScore:
    return PromptScore(pid, cls, correct, total, 0, {"PF": (correct, total)})


def test_the_mean_over_seeds_ci_covers_seed_variance_that_a_prompt_bootstrap_misses():
    # every prompt right on seed 0 and wrong on seed 1: each prompt's seed mean is 0.5, so a
    # bootstrap over prompts of the seed means has zero width, though the seed decides everything
    ids = [f"p{k}" for k in range(40)]
    seed0 = [_ps(i, "animal", 4) for i in ids]
    seed1 = [_ps(i, "animal", 0) for i in ids]
    table = seed_table([seed0, seed1], ["animal"], n_boot=500, seed=1)
    value, lo, hi = table["All"]
    assert value == pytest.approx(0.5) and table["PF"][0] == pytest.approx(0.5)
    assert hi - lo > 0.2  # the seeds' disagreement shows in the interval
    means = [_ps(i, "animal", 2) for i in ids]  # the one-level alternative
    lo1, hi1 = bootstrap_ci(means, ["animal"], n_boot=500, seed=1)["All"]
    assert lo1 == pytest.approx(hi1) == pytest.approx(0.5)


def test_without_seed_variance_the_interval_is_the_prompt_interval():
    rng = np.random.default_rng(0)
    per_prompt = rng.integers(0, 5, size=60)
    seeds = [[_ps(f"p{k}", ["a", "b"][k % 2], int(c)) for k, c in enumerate(per_prompt)] for _ in range(3)]
    table = seed_table(seeds, ["a", "b"], n_boot=400, seed=3)
    lo, hi = bootstrap_ci(seeds[0], ["a", "b"], n_boot=400, seed=3)["All"]
    assert table["All"][0] == pytest.approx(table_row(seeds[0], ["a", "b"])["All"])
    assert abs((table["All"][2] - table["All"][1]) - (hi - lo)) < 0.05
    assert math.isnan(seed_table(seeds, ["a", "b", "c"], n_boot=50)["c"][0])  # no data: NaN, not 0


def test_parse_seeds_rejects_nonsense():
    from orig_local.errors import UsageError

    assert parse_seeds("0,1,2") == [0, 1, 2]
    for bad in ("a,b", "1,1", ""):
        with pytest.raises(UsageError):
            parse_seeds(bad)


def test_eval_with_seeds_generates_per_seed_and_reports_the_mean(tmp_path, capsys):
    out = tmp_path / "run"
    # the judge says true for images whose top-left pixel is bright (differs with the seed)
    with OpenAILoopback(model="j", reply=lambda body: "true") as server:
        rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(mini_path()), "--out", str(out),
                   "--condition", "direct", "--generator", "tiny-qwen-image", "--seeds", "0,1", "-s", "cache_dir=''",
                   "-s", "judge.backend=openai", "-s", f"judge.base_url={server.base_url}", "-s", "judge.model=j",
                   "-s", "eval.judge_answer_format=text", "-s", "eval.bootstrap=200"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert (out / "agent.jsonl").is_file()  # the agent once, in the parent
    for s in (0, 1):
        rows = [json.loads(x) for x in (out / f"seed-{s}" / "generate.jsonl").read_text().splitlines()]
        assert {r["seed"] for r in rows} == {s} and len(rows) == 3
        assert (out / f"seed-{s}" / "judge.jsonl").is_file()
    a = (out / "seed-0" / "images" / "mini_animal.png").read_bytes()
    b = (out / "seed-1" / "images" / "mini_animal.png").read_bytes()
    assert a != b  # another seed, another image
    doc = json.loads((out / "report" / "seeds.json").read_text())
    assert doc["seeds"] == ["run/seed-0", "run/seed-1"]
    results = json.loads((out / "report" / "results.json").read_text())
    assert [r["seed"] for r in results["runs"]] == [0, 1]
    per_seed = [r["accuracy"]["All"]["value"] for r in results["runs"]]
    # the judge said "true" to everything: both seeds score alike, the mean is theirs, no spread
    assert doc["cells"]["All"]["value"] == pytest.approx(sum(per_seed) / 2, abs=1e-6)
    assert doc["cells"]["All"]["ci_lo"] == pytest.approx(doc["cells"]["All"]["ci_hi"])
    assert "Mean over seeds" in (out / "report" / "report.md").read_text()
    # and `orig report RUN` finds the seeds again
    assert main(["-q", "report", str(out), "--bootstrap", "100"]) == 0
    assert "Mean over seeds" in capsys.readouterr().out
    assert Path(out / "report" / "seeds.md").is_file()
