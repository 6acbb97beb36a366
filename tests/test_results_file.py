"""results.json + results_long.csv (issue 24, point 2): every number of the report, with the run's
identity, in one versioned file a notebook reads; the long CSV holds the same numbers."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, colour_of, make_mini_benchmark, scripted_judge

from orig_local.cli import main
from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import run_phases


def _run(tmp_path, bench, name, condition):
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = condition
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "jsonl"
    cfg.eval.data = str(bench)
    cfg.eval.label = name
    run = tmp_path / name
    run_phases(cfg, run, load_benchmark("jsonl", bench), ("agent", "generate", "judge"), agent=FakeAgent(),
               generator=FakeGenerator(), judge=scripted_judge())
    return run


@pytest.fixture
def report(tmp_path, capsys):
    bench = make_mini_benchmark(tmp_path / "bench", n=9)
    a, b = _run(tmp_path, bench, "direct", "direct"), _run(tmp_path, bench, "orig", "orig")
    # one broken row in b: a data error that results.json must count, not score
    rows = [json.loads(x) for x in (b / "judge.jsonl").read_text().splitlines()]
    rows[0]["verdicts"][0]["correct"] = "false"
    (b / "judge.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "report"
    assert main(["-q", "report", str(a), str(b), "--out", str(out), "--bootstrap", "200"]) == 1  # the data error
    capsys.readouterr()
    return out, rows[0]["id"]


def test_results_json_carries_identity_and_the_same_numbers_as_accuracy_csv(report):
    out, broken = report
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema"] == "orig-local/results" and doc["schema_version"] == 1
    assert doc["settings"]["bootstrap"] == 200
    from orig_local import __version__

    assert doc["orig_local"] == __version__
    by = {r["label"]: r for r in doc["runs"]}
    assert set(by) == {"direct", "orig"}
    orig = by["orig"]
    assert orig["condition"] == "orig" and orig["data"]["benchmark"] == "jsonl"
    for role in ("backbone", "generator", "judge"):
        assert role in orig and "preset" in orig[role]
    assert orig["code"]["orig_local"] == __version__
    assert orig["counts"]["data_errors"] == 1 and orig["data_errors"][0]["item"] == broken
    with open(out / "accuracy.csv") as fh:
        table = {row["run"]: row for row in csv.DictReader(fh)}
    for label, run in by.items():
        for col, cell in run["accuracy"].items():
            want = table[label][col]
            if want == "":
                assert cell["value"] is None  # NaN = no data: null, never a number
            else:
                assert math.isclose(100 * cell["value"], float(want), abs_tol=0.01), (label, col)
                assert cell["ci_lo"] <= cell["value"] <= cell["ci_hi"]
    diff = doc["differences"][0]
    assert diff["run"] == "orig" and diff["baseline"] == "direct" and "All" in diff["cells"]


def test_long_csv_has_one_row_per_run_class_concept_metric_and_matches_the_json(report):
    out, _ = report
    doc = json.loads((out / "results.json").read_text())
    with open(out / "results_long.csv") as fh:
        rows = list(csv.DictReader(fh))
    keys = [(r["run"], r["class"], r["concept"], r["metric"]) for r in rows]
    assert len(keys) == len(set(keys))  # long format: one row per key
    acc = {k: r for k, r in zip(keys, rows, strict=True) if k[3] == "accuracy"}
    for run in doc["runs"]:
        assert float(acc[(run["label"], "All", "all", "accuracy")]["value"]) == pytest.approx(
            run["accuracy"]["All"]["value"])
        for cls in ("animal", "sports", "food"):
            cell = acc[(run["label"], cls, "all", "accuracy")]
            assert float(cell["value"]) == pytest.approx(run["accuracy"][cls]["value"], abs=1e-6)
            assert int(cell["n_prompts"]) == 3 - (run["label"] == "orig" and cls == "animal")  # the data error
    # class x concept cells agree with the fake judge (true for red images): direct, animal, PF
    direct_animal = [f"item_{i}" for i in range(9) if i % 3 == 0]
    reds = sum(colour_of(i) == "red" for i in direct_animal)
    assert float(acc[("direct", "animal", "all", "accuracy")]["value"]) == pytest.approx(reds / 3)
    assert any(k[3] == "generation_acc" for k in keys)


def test_version_flag_and_installed_provenance_say_the_version(capsys, monkeypatch, tmp_path):
    from orig_local import __version__, provenance

    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    assert capsys.readouterr().out.strip() == f"orig {__version__}"
    # a wheel install: no .git beside the package -> the version and "installed package", not a silent null
    import orig_local

    fake_pkg = tmp_path / "site" / "orig_local"
    fake_pkg.mkdir(parents=True)
    monkeypatch.setattr(orig_local, "__file__", str(fake_pkg / "__init__.py"))
    code = provenance.code_version()
    assert code["orig_local"] == __version__ and code["git_commit"] is None
    assert code["source"] == "installed package (no git checkout)"
    assert "installed package" in provenance.summary_lines({"code": code})[0]


def test_pyproject_version_is_the_package_version():
    text = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert 'version = { attr = "orig_local.__version__" }' in text and 'dynamic = ["version"]' in text


def test_every_verdict_records_its_request_hash_and_run_json_the_template_hashes(report, tmp_path):
    out, _ = report
    run = out.parent / "direct"
    rows = [json.loads(x) for x in (run / "judge.jsonl").read_text().splitlines()]
    hashes = [v["request_sha256"] for r in rows for v in r["verdicts"]]
    assert all(isinstance(h, str) and len(h) == 64 for h in hashes)
    assert len(set(hashes)) == len(hashes)  # each question a different request
    meta = json.loads((run / "run.json").read_text())
    templates = meta["provenance"]["judge_templates"]
    import hashlib

    from orig_local.evaluation.judge import TEMPLATES_DIR, template_hashes

    assert templates["judge_question.jinja"] == hashlib.sha256(
        (TEMPLATES_DIR / "judge_question.jinja").read_bytes()).hexdigest()
    doc = json.loads((out / "results.json").read_text())
    assert doc["runs"][0]["judge_templates"] == templates
    # a user's prompt folder changes the recorded hash of the file it overrides, only that one
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "judge_question.jinja").write_text("Is it so? {{ statement }}")
    mine = template_hashes(tmp_path / "p")
    assert mine["judge_question.jinja"] != templates["judge_question.jinja"]
    assert mine["judge_system.jinja"] == templates["judge_system.jinja"]


async def test_request_hash_is_the_request_same_question_same_hash_other_image_other_hash():
    from _eval_fakes import solid

    from orig_local.evaluation.items import Question

    judge = scripted_judge()
    q = Question(id="q1", text="True or False: the card is red.", answer=True, concept="PF")
    a = await judge.judge_question(q, solid("red"))
    b = await judge.judge_question(q, solid("red"))
    c = await judge.judge_question(q, solid("blue"))
    d = await judge.judge_question(Question(id="q1", text="True or False: the card is blue.", answer=True), solid("red"))
    assert a.request_sha256 == b.request_sha256
    assert len({a.request_sha256, c.request_sha256, d.request_sha256}) == 3
