"""Rows read by results and reports are typed records (orig_local/evaluation/rows.py): extra
fields of older or newer rows still load, a wrongly typed field is a data error naming the file
and the line, and a field the record does not declare cannot be read (mypy, and at run time)."""

import json
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge

from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import run_phases
from orig_local.evaluation.report import build_report
from orig_local.evaluation.results import load_run
from orig_local.evaluation.rows import AgentRow, JudgeRow

REPO = Path(__file__).resolve().parent.parent


def _run(tmp_path: Path) -> Path:
    bench = make_mini_benchmark(tmp_path / "bench", n=6)
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "jsonl"
    cfg.eval.data = str(bench)
    cfg.eval.label = "run"
    run = tmp_path / "run"
    run_phases(cfg, run, load_benchmark("jsonl", bench), ("agent", "generate", "judge"), agent=FakeAgent(),
               generator=FakeGenerator(), judge=scripted_judge())
    return run


def _rewrite(path: Path, change) -> None:
    rows = [json.loads(ln) for ln in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in rows))


def test_rows_with_unknown_fields_load_and_report_the_same(tmp_path):
    run = _run(tmp_path)
    before = load_run(run)
    plain = build_report([run], tmp_path / "plain", n_boot=0, gallery=True)
    for phase in ("agent", "generate", "judge"):  # fields a later (or earlier) version might write
        _rewrite(run / f"{phase}.jsonl", lambda r: {**r, "written_by": "orig-local 9.9", "extra": {"nested": [1]}})
    after = load_run(run)
    assert not after.data_errors and not after.warnings
    assert [(p.id, p.s) for p in after.prompts] == [(p.id, p.s) for p in before.prompts]
    assert after.counts == before.counts and after.status == before.status
    extra = build_report([run], tmp_path / "extra", n_boot=0, gallery=True)
    for name in ("accuracy", "status", "retrieval", "cost"):
        assert extra[name].read_text() == plain[name].read_text(), name
    gallery = (tmp_path / "extra" / "gallery" / "run.html").read_text()
    assert gallery == (tmp_path / "plain" / "gallery" / "run.html").read_text()


def test_a_wrongly_typed_field_is_a_data_error_naming_file_and_line(tmp_path):
    run = _run(tmp_path)
    lines = (run / "judge.jsonl").read_text().splitlines()
    bad = json.loads(lines[2])
    bad["judge"] = {"model": "not a name"}  # the judge's name must be a string
    lines[2] = json.dumps(bad)
    (run / "judge.jsonl").write_text("\n".join(lines) + "\n")
    res = load_run(run)
    issue = next(i for i in res.data_errors if i.item == bad["id"])
    assert issue.phase == "judge" and "judge.jsonl line 3" in issue.message and "judge" in issue.message
    assert bad["id"] not in {p.id for p in res.prompts}  # left out, never guessed
    assert len(res.prompts) == 5 and res.counts["data_errors"] == 1
    # the report says so (data_errors.md names the line) and marks the run
    paths = build_report([run], tmp_path / "report", n_boot=0, gallery=False)
    assert "judge.jsonl line 3" in paths["data_errors"].read_text()
    assert "‡" in paths["accuracy"].read_text()


def test_a_row_without_a_string_id_is_a_data_error(tmp_path):
    run = _run(tmp_path)
    with (run / "generate.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": 7, "image": "x.png"}) + "\n")
    res = load_run(run)
    assert any(i.phase == "generate" and "generate.jsonl line 7" in i.message and "id" in i.message
               for i in res.data_errors)


def test_undeclared_fields_cannot_be_read():
    row = AgentRow.model_validate({"id": "a", "final_prompt": "p", "finalPrompt": "renamed"})
    assert row.final_prompt == "p"
    with pytest.raises(AttributeError):
        row.finalPrompt  # type: ignore[attr-defined]  # noqa: B018 - reading it is the test
    assert not hasattr(JudgeRow(id="a"), "get")  # no dict reads: a typo would be a silent None


def test_mypy_flags_a_report_reading_a_field_rows_do_not_declare(tmp_path):
    """The check a renamed field meets: mypy with the project's configuration (``make lint``)."""
    api = pytest.importorskip("mypy.api")
    probe = tmp_path / "probe.py"
    probe.write_text("from orig_local.evaluation.rows import AgentRow\n\n\n"
                     "def shown(row: AgentRow) -> str:\n"
                     "    return row.final_promt or ''\n")  # misspelt
    out, _, status = api.run(["--config-file", str(REPO / "pyproject.toml"),
                              "--follow-imports", "silent", str(probe)])
    assert status == 1 and 'has no attribute "final_promt"' in out, out
