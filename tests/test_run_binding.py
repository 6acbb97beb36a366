"""A run folder is bound to everything it was judged on (issue 21 point 3): each phase to the
resolved settings it reads, the data to every field a phase reads, the judge to its name, and
the data to an absolute path a report finds from any working directory."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge
from _wise_release import make_repo

from orig_local.config import Config
from orig_local.evaluation.binding import SettingsMismatch, phase_settings
from orig_local.evaluation.orchestrate import RunMismatch, run_phases
from orig_local.evaluation.results import load_run
from orig_local.evaluation.rundir import read_meta


def _config(**agent_kw) -> Config:
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    for k, v in agent_kw.items():
        setattr(cfg.agent, k, v)
    return cfg


@pytest.fixture
def bench(tmp_path) -> Path:
    return make_mini_benchmark(tmp_path / "bench", n=3)


def _identity(cfg: Config):
    from orig_local.cli.eval_cmd import _load_items

    return _load_items(cfg.eval)


def _run(cfg, run, phases, items=None, **kw):
    items_all, identity = _identity(cfg)
    return run_phases(cfg, run, items if items is not None else items_all, phases, agent=FakeAgent(),
                      generator=FakeGenerator(), judge=kw.pop("judge", scripted_judge()), preflight=False,
                      data_identity=identity, **kw)


def test_resuming_the_agent_phase_without_an_ablation_switch_is_refused_with_a_diff(tmp_path, bench):
    run = tmp_path / "run"
    cfg = _config(refinement=False)
    cfg.eval.data = str(bench)
    cfg.eval.benchmark = "jsonl"
    items, _ = _identity(cfg)
    _run(cfg, run, ["agent"], items=items[:1])  # like --limit 1
    before = (run / "agent.jsonl").read_bytes()
    resumed = _config()  # the switch left out: refinement back on
    resumed.eval.data, resumed.eval.benchmark = str(bench), "jsonl"
    with pytest.raises(SettingsMismatch) as err:
        _run(resumed, run, ["agent"])
    assert "agent.refinement: false -> true" in str(err.value)
    assert (run / "agent.jsonl").read_bytes() == before  # nothing written
    # a budget, the backend and the retrieval chain are bound too
    for change in (lambda c: setattr(c.agent, "max_rounds", 2),
                   lambda c: setattr(c.backbone, "backend", "transformers"),
                   lambda c: setattr(c.retrieval.search, "chain", ["local"])):
        other = _config(refinement=False)
        other.eval.data, other.eval.benchmark = str(bench), "jsonl"
        change(other)
        with pytest.raises(SettingsMismatch):
            _run(other, run, ["agent"])
    # operational settings (server location, concurrency, timeouts) may change between invocations
    same = _config(refinement=False, concurrency=3)
    same.eval.data, same.eval.benchmark = str(bench), "jsonl"
    same.backbone.base_url, same.backbone.timeout_s = "http://127.0.0.1:9/v1", 5.0
    summaries = _run(same, run, ["agent"])
    assert summaries[0]["ran"] == 2


def test_every_phase_keeps_the_config_that_wrote_its_rows(tmp_path, bench):
    run = tmp_path / "run"
    cfg = _config(refinement=False)
    cfg.eval.data, cfg.eval.benchmark = str(bench), "jsonl"
    cfg.backbone.backend = "scripted"
    _run(cfg, run, ["agent"])
    later = _config()  # the generate phase, without the agent phase's overrides
    later.eval.data, later.eval.benchmark = str(bench), "jsonl"
    _run(later, run, ["generate"])
    agent_cfg = yaml.safe_load((run / "config.agent.yaml").read_text())
    assert agent_cfg["agent"]["refinement"] is False and agent_cfg["backbone"]["backend"] == "scripted"
    assert yaml.safe_load((run / "config.yaml").read_text())["agent"]["refinement"] is True  # the last one
    invocations = sorted((run / "configs").glob("*.yaml"))
    assert [p.name.split("-", 1)[1] for p in invocations] == ["agent.yaml", "generate.yaml"]
    assert read_meta(run)["settings"]["agent"] == phase_settings(cfg, "agent")


def test_another_judge_on_a_judged_run_is_refused_or_kept_apart(tmp_path, bench):
    run = tmp_path / "run"
    cfg = _config()
    cfg.eval.data, cfg.eval.benchmark = str(bench), "jsonl"
    _run(cfg, run, ["agent", "generate", "judge"])
    other = _config()
    other.eval.data, other.eval.benchmark = str(bench), "jsonl"
    other.judge.preset = "qwen2.5-vl-7b"
    with pytest.raises(SettingsMismatch) as err:
        _run(other, run, ["judge"], retry_errors=True)
    assert "judge.preset" in str(err.value) and "--judge-name" in (err.value.hint or "")
    other.eval.judge_name = "small"
    _run(other, run, ["judge"])
    assert (run / "judge-small.jsonl").is_file() and (run / "config.judge-small.yaml").is_file()
    assert len((run / "judge.jsonl").read_text().splitlines()) == 3  # the first judge's rows untouched


@pytest.mark.parametrize("edit", ["Explanation", "Category", "Subcategory"])
def test_an_edited_field_that_a_phase_reads_is_other_data(tmp_path, edit):
    root = make_repo(tmp_path / "wise")
    cfg = _config()
    cfg.eval.benchmark, cfg.eval.data = "wise", str(root / "data_verified")
    run = tmp_path / "run"
    _run(cfg, run, ["agent"], items=_identity(cfg)[0][:2])
    f = root / "data_verified" / "cultural_common_sense_verified.json"
    rows = json.loads(f.read_text())
    rows[0][edit] = {"Explanation": "An edited explanation.", "Category": "Cultural knowledge ",
                     "Subcategory": "Art"}[edit]
    f.write_text(json.dumps(rows))
    with pytest.raises(RunMismatch, match="other data"):
        _run(cfg, run, ["agent"])


def test_an_edited_option_text_is_other_data(tmp_path):
    openpyxl = pytest.importorskip("openpyxl")
    from test_eval_ihalla import make_release  # the I-HallA fixture of its own tests

    data = make_release(tmp_path / "ihalla")
    cfg = _config()
    cfg.eval.benchmark, cfg.eval.data = "ihalla", str(data)
    run = tmp_path / "run"
    _run(cfg, run, ["agent"])
    book = data / "GPT4o_QA_science_mod_cois.xlsx"
    wb = openpyxl.load_workbook(book)
    ws = wb["Sheet1"]
    ws.cell(row=3, column=4).value = ws.cell(row=3, column=4).value.replace("option b", "option beta")
    wb.save(book)
    with pytest.raises(RunMismatch, match="other data"):
        _run(cfg, run, ["agent"])


def test_another_wise_protocol_is_a_judge_name_on_the_same_data(tmp_path):
    root = make_repo(tmp_path / "wise")
    cfg = _config()
    cfg.eval.benchmark, cfg.eval.data = "wise", str(root / "data_verified")
    cfg.eval.classes = ["chemistry"]
    run = tmp_path / "run"
    items, _ = _identity(cfg)
    _run(cfg, run, ["agent", "generate", "judge"], items=items[:2])
    statement = _config()
    statement.eval.benchmark, statement.eval.data = "wise", str(root / "data_verified")
    statement.eval.wise_judge, statement.eval.classes = ["statement"], ["chemistry"]
    with pytest.raises(SettingsMismatch) as err:  # not "other data": the same data, another judge
        _run(statement, run, ["judge"], items=items[:2])
    assert "eval.wise_judge" in str(err.value)
    statement.eval.judge_name = "statement"
    _run(statement, run, ["judge"], items=_identity(statement)[0][:2],
         judge=scripted_judge(reply=lambda messages, schema: "true"))
    rows = [json.loads(ln) for ln in (run / "judge-statement.jsonl").read_text().splitlines()]
    assert {v["qid"] for r in rows for v in r["verdicts"]} == {"statement"}


def test_report_from_another_directory_finds_the_data_errors_it_finds_in_place(tmp_path, bench, monkeypatch):
    monkeypatch.chdir(bench.parent)
    run = tmp_path / "work" / "run"
    cfg = _config()
    cfg.eval.data, cfg.eval.benchmark = bench.name, "jsonl"  # relative, as typed
    _run(cfg, run, ["agent", "generate", "judge"])
    assert Path(read_meta(run)["data"]).is_absolute()
    with (run / "judge.jsonl").open("a") as fh:  # a row for an id the benchmark does not have
        fh.write(json.dumps({"id": "not_in_bench", "status": "ok", "verdicts": []}) + "\n")
    in_place = {(e.item, e.message) for e in load_run(run).data_errors}
    assert ("not_in_bench", "id is not in the benchmark (rejected)") in in_place
    moved = tmp_path / "elsewhere" / "run"
    moved.parent.mkdir()
    shutil.move(run, moved)
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert {(e.item, e.message) for e in load_run(moved).data_errors} == in_place
    # and `orig eval --out moved` (no --data) resumes from there on the same data
    from orig_local.cli.eval_cmd import adopt_run_meta

    resumed = _config()
    adopt_run_meta(resumed, SimpleNamespace(condition=None, benchmark=None, data=None, generator=None,
                                            backbone=None, overrides=[]), moved)
    assert resumed.eval.data == str(bench.resolve())
    assert _run(resumed, moved, ["judge"])[0]["ran"] == 0  # nothing to do, nothing refused


@pytest.mark.parametrize("status", ["weird", "FAILED"])
def test_a_judge_row_with_an_unknown_status_is_a_data_error_not_a_score(tmp_path, bench, status):
    run = tmp_path / "run"
    cfg = _config()
    cfg.eval.data, cfg.eval.benchmark = str(bench), "jsonl"
    _run(cfg, run, ["agent", "generate", "judge"])
    rows = [json.loads(ln) for ln in (run / "judge.jsonl").read_text().splitlines()]
    rows[0]["status"] = status
    (run / "judge.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = load_run(run)
    assert any(e.item == rows[0]["id"] and "unknown status" in e.message for e in res.data_errors)
    assert rows[0]["id"] not in {p.id for p in res.prompts}


def test_report_says_when_the_data_changed_since_the_run(tmp_path, bench):
    run = tmp_path / "run"
    cfg = _config()
    cfg.eval.data, cfg.eval.benchmark = str(bench), "jsonl"
    _run(cfg, run, ["agent", "generate", "judge"])
    assert not any("not the data this run was made with" in w for w in load_run(run).warnings)
    rows = [json.loads(ln) for ln in bench.read_text().splitlines()]
    rows[0]["reference_text"] = "An edited reference the judge reads."
    bench.write_text("".join(json.dumps(r) + "\n" for r in rows))
    warned = [w for w in load_run(run).warnings if "not the data this run was made with" in w]
    assert len(warned) == 1 and str(bench) in warned[0]
