"""Reports that refuse bad data and show what happened: data errors, status counts, failed-item
footnotes, mixed judges, provenance, stand-in labels, portable folders (issues 9.4/9.6/9.8, 12.3)."""

import json
import math
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, colour_of, make_mini_benchmark, scripted_judge

from orig_local.cli import main
from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import run_phases
from orig_local.evaluation.results import load_run, row_status
from orig_local.evaluation.scoring import check_verdicts


@pytest.fixture
def bench(tmp_path):
    return make_mini_benchmark(tmp_path / "bench", n=9)


def _run(tmp_path, bench, name="run", agent=None, judge=None, **cfg_kw):
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    cfg.eval.benchmark = "jsonl"
    cfg.eval.data = str(bench)
    cfg.eval.label = name
    for key, value in cfg_kw.items():
        section, attr = key.split("__")
        setattr(getattr(cfg, section), attr, value)
    items = load_benchmark("jsonl", bench)
    run = tmp_path / name
    run_phases(cfg, run, items, ("agent", "generate", "judge"), agent=agent or FakeAgent(),
               generator=FakeGenerator(), judge=judge or scripted_judge())
    return run


def _rows(path):
    """A phase file's rows by id (they are appended in completion order, which varies)."""
    return sorted((json.loads(ln) for ln in Path(path).read_text().splitlines()), key=lambda r: r["id"])


def _write(path, rows):
    Path(path).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _report(capsys, *argv):
    rc = main(["-q", "report", *map(str, argv), "--bootstrap", "0"])
    out, err = capsys.readouterr()
    return rc, out, [ln for ln in err.splitlines() if ln.strip()]


def _expected_all(run_ids_excluded=()):
    """All (%) from the fake judge (true for red images) over items not excluded."""
    items = [(f"item_{i}", ["animal", "sports", "food"][i % 3]) for i in range(9)]
    by: dict[str, list[float]] = {}
    for pid, cls in items:
        if pid not in run_ids_excluded:
            by.setdefault(cls, []).append(100.0 if colour_of(pid) == "red" else 0.0)
    return sum(sum(v) / len(v) for v in by.values()) / len(by)


def _all_cell(report_dir):
    import csv

    with (Path(report_dir) / "accuracy.csv").open() as fh:
        return float(next(csv.DictReader(fh))["All"])


# --------------------------------------------------------------------------- 9.6 bad data


def test_string_false_verdict_is_a_data_error_naming_the_item_and_is_never_counted(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    red = next(r for r in rows if colour_of(r["id"]) == "blue")  # judged all false
    for v in red["verdicts"]:
        v["correct"] = "false"  # truthy string: the old scorer counted it correct
    _write(run / "judge.jsonl", rows)
    rc, out, err = _report(capsys, run)
    assert rc == 1  # documented policy: report written, rows left out, exit 1
    assert len(err) == 1 and red["id"] in err[0] and "not a boolean" in err[0] and "Traceback" not in err[0]
    assert _all_cell(run / "report") == pytest.approx(_expected_all([red["id"]]), abs=0.01)
    errors = json.loads((run / "report" / "data_errors.json").read_text())
    assert {e["item"] for e in errors} == {red["id"]}
    assert "‡" in (run / "report" / "accuracy.md").read_text()
    assert main(["-q", "report", str(run), "--bootstrap", "0", "--allow-data-errors"]) == 0


def test_check_verdicts_rules():
    good = [{"qid": "q1", "correct": True, "concept": "PF"}, {"qid": "q2", "correct": False, "concept": "CC"}]
    assert check_verdicts(good).ok and check_verdicts(good).outcomes == [("PF", True), ("CC", False)]
    for bad in ("false", "true", 1, 0, None):
        c = check_verdicts([{"qid": "q1", "correct": bad}])
        assert not c.ok and c.outcomes == [], bad
    # a judge error is not a data error; its `correct` is ignored
    c = check_verdicts([{"qid": "q1", "correct": "true", "error": "timeout"}])
    assert c.ok and c.outcomes == [(None, None)] and c.question_errors == 1
    assert not check_verdicts(good + [{"qid": "q1", "correct": True}]).ok  # duplicate question id
    c = check_verdicts(good, [("q1", "PF"), ("q2", "CC"), ("q3", "TC")])
    assert not c.ok and c.missing == ["q3"]
    assert not check_verdicts(good, [("q1", "PF")]).ok  # q2 is not one of the item's questions
    assert not check_verdicts("oops").ok
    graded = [{"qid": "w1", "correct": None, "answer": {"consistency": 2, "wiscore": 0.9}}]
    c = check_verdicts(graded + good[:1], [("w1", None), ("q1", "PF")])
    assert c.ok and c.outcomes == [("PF", True)]  # the graded one is neither scored nor an error


def test_duplicate_rows_foreign_ids_and_missing_verdicts_are_counted_not_resolved(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    rows.append(dict(rows[0]))  # item_0 twice
    rows[1]["verdicts"] = rows[1]["verdicts"][:2]  # item_1 lacks q3
    rows.append({**rows[2], "id": "not_in_benchmark"})
    _write(run / "judge.jsonl", rows)
    res = load_run(run)
    assert res.benchmark_checked
    problems = {i.item: i.message for i in res.data_errors}
    assert set(problems) == {"item_0", "item_1", "not_in_benchmark"}
    assert "2 rows" in problems["item_0"] and "no verdict" in problems["item_1"]
    assert "not in the benchmark" in problems["not_in_benchmark"]
    assert {p.id for p in res.prompts} == {f"item_{i}" for i in range(2, 9)}
    assert res.counts["missing_verdicts"] == 1 and res.counts["data_errors"] == 3
    rc, _, err = _report(capsys, run)
    assert rc == 1 and len(err) == 1 and "3 row(s)" in err[0]
    status = (run / "report" / "status.md").read_text()
    assert "| 1 | 3 |" in status  # missing verdicts, data errors


def test_duplicate_row_across_shard_file_is_a_data_error(tmp_path, bench):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    _write(run / "judge.shard-1-of-2.jsonl", [rows[3]])
    res = load_run(run)
    assert [i.item for i in res.data_errors] == ["item_3"]
    assert "item_3" not in {p.id for p in res.prompts}


def test_class_names_are_normalised_before_scoring(tmp_path, bench):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    for r in rows:
        if r["category"] == "sports":
            r["category"] = "sport"
    _write(run / "judge.jsonl", rows)
    res = load_run(run, check_benchmark=False)
    assert {p.category for p in res.prompts} == {"animal", "sports", "food"}
    assert not res.data_errors
    with_bench = load_run(run)
    assert not with_bench.data_errors and {p.category for p in with_bench.prompts} == {"animal", "sports", "food"}


def test_report_selection_rejects_unknown_ids_and_classes_listing_valid_ones(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    rc, _, err = _report(capsys, run, "--ids", "item_0,item_99", "--out", tmp_path / "rep")
    assert rc == 2 and len(err) == 1 and "item_99" in err[0] and "item_0" in err[0] and "valid ids" in err[0]
    rc, _, err = _report(capsys, run, "--classes", "animls", "--out", tmp_path / "rep")
    assert rc == 2 and len(err) == 1 and "valid classes" in err[0] and "animal" in err[0]
    assert not (tmp_path / "rep").exists()
    rc, _, err = _report(capsys, run, "--classes", "sport", "--out", tmp_path / "rep")  # alias of sports
    assert rc == 0, err
    acc = (tmp_path / "rep" / "accuracy.md").read_text()
    assert "| 3 |" in acc  # the three sports items only


def test_check_selection_normalises_and_lists(bench):
    from orig_local.errors import UsageError
    from orig_local.evaluation.selection import check_selection

    items = load_benchmark("jsonl", bench)
    assert check_selection(items, ["item_1"], ["sport", "food"]) == ["sports", "food"]
    with pytest.raises(UsageError) as exc:
        check_selection(items, None, ["plants"])
    assert "plants" in exc.value.one_line() and "valid classes: animal, food, sports" in exc.value.one_line()


def test_partial_question_file_warns_with_the_right_reason(tmp_path, caplog):
    root = tmp_path / "fig"
    root.mkdir()
    prompts = [{"id": f"animal_{i}", "category": "animal", "prompt_en": f"An animal {i}"} for i in range(3)]
    prompts += [{"id": "food_0", "category": "food", "prompt_en": "A dish"}]
    (root / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    q = {"questions": {"question_1": {"content": "Is it an animal?", "class_id": 1, "modal": "T"}}}
    (root / "animal_grouped.json").write_text(json.dumps({"animal_0": q}))  # animal_1, animal_2 lack questions
    with caplog.at_level("INFO"):
        items = load_benchmark("figeval", root)
    assert [i.id for i in items] == ["animal_0"]
    warn = [r for r in caplog.records if r.levelname == "WARNING" and "animal" in r.getMessage()]
    assert warn and "2 animal prompt(s)" in warn[0].getMessage() and "animal_grouped.json" in warn[0].getMessage()
    info = [r for r in caplog.records if r.levelname == "INFO" and "food" in r.getMessage()]
    assert info and "no question file" in info[0].getMessage()


def test_gallery_survives_rows_missing_optional_fields(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    for v in rows[0]["verdicts"]:
        for key in ("text", "raw", "p_true", "answer", "reference_image", "concept"):
            v.pop(key, None)
    rows[1].pop("score")
    _write(run / "judge.jsonl", rows)
    agent = _rows(run / "agent.jsonl")
    for key in ("final_prompt", "references", "prompt"):
        agent[0].pop(key)
    _write(run / "agent.jsonl", agent)
    rc, _, err = _report(capsys, run)
    assert rc == 0, err
    page = (run / "report" / "gallery" / "run.html").read_text()
    assert "item_0" in page and "q1" in page  # the question id stands in for missing text
    assert "P(true)" not in page  # no soft score anywhere: no empty column


def test_p_true_column_shows_dash_where_missing(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    rows[0]["verdicts"][0]["p_true"] = 0.875
    _write(run / "judge.jsonl", rows)
    assert _report(capsys, run)[0] == 0
    page = (run / "report" / "gallery" / "run.html").read_text()
    assert "P(true)" in page and "0.88" in page and "—" in page


# --------------------------------------------------------------------------- 9.4 what happened


class _FailingAgent(FakeAgent):
    def __call__(self, item):
        if item.id in ("item_4", "item_5"):
            raise RuntimeError("backbone unreachable")
        return super().__call__(item)


def test_status_counts_and_failed_runs_marked_in_every_table(tmp_path, bench, capsys):
    good = _run(tmp_path, bench, "good")
    bad = _run(tmp_path, bench, "bad", agent=_FailingAgent())
    # an old-style row: no error, but the loop stopped with "error" (issue 9's silent failure)
    rows = _rows(bad / "agent.jsonl")
    rows[0]["stop_reason"] = "error"
    for key in ("status", "warning", "failure"):  # rows from before statuses existed
        rows[0].pop(key, None)
    _write(bad / "agent.jsonl", rows)
    # one judge question errored
    jrows = _rows(bad / "judge.jsonl")
    judged = [r for r in jrows if r["verdicts"] and r["id"] != rows[0]["id"]]  # rows are in completion order
    judged[0]["verdicts"][0].update(error="HTTP 404", correct=None, answer=None)
    _write(bad / "judge.jsonl", jrows)
    res = load_run(bad)
    assert res.status["agent"] == {"ok": 6, "degraded": 0, "failed": 3}
    assert res.status["judge"]["degraded"] == 1 and res.counts["judge_question_errors"] == 1
    assert res.stop_reasons.get("error") == 1
    # item_0's agent failed (stop_reason error) but was still generated and judged (from the raw
    # prompt): its verdicts do not measure the condition, so it is not scored
    assert rows[0]["id"] not in {p.id for p in res.prompts} and len(res.prompts) == 6
    assert res.counts["not_scored_failed_upstream"] == 3 and res.status["judge"]["failed"] == 3
    out = tmp_path / "rep"
    rc, stdout, err = _report(capsys, good, bad, "--out", out)
    assert rc == 0, err
    for name in ("accuracy.md", "differences.md", "retrieval.md", "cost.md", "status.md"):
        text = (out / name).read_text()
        bad_line = next(ln for ln in text.splitlines() if "bad" in ln and ln.startswith(("|", "**")))
        assert "†" in bad_line, name
        if name != "differences.md":  # there the good run is the baseline, not a row
            good_line = next(ln for ln in text.splitlines() if ln.startswith(("| good", "**good")))
            assert "†" not in good_line, name
        assert "has failed items (agent 3" in text, name
    status = (out / "status.md").read_text()
    assert "| bad | 6/0/3 |" in status and "error 1" in status
    assert "1 questions in 1 items" in status
    assert "What happened" in stdout


def test_item_whose_every_question_errored_is_failed_not_scored(tmp_path, bench):
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    for v in rows[2]["verdicts"]:
        v.update(error="HTTPStatusError: 404", correct=None, answer=None)
    rows[2].update(status="failed", error="every question errored")  # the new row layout
    _write(run / "judge.jsonl", rows)
    for policy in ("exclude", "false"):
        res = load_run(run, errors=policy)
        assert "item_2" not in {p.id for p in res.prompts}, policy
        assert res.status["judge"]["failed"] == 1 and res.counts["judge_question_errors"] == 3
        assert not res.data_errors


def test_row_status_from_new_and_old_rows():
    from orig_local.evaluation.rows import AgentRow, JudgeRow

    assert row_status(JudgeRow(id="a", status="degraded", error=None)) == "degraded"
    assert row_status(JudgeRow(id="a", status="failed", error="x")) == "failed"
    assert row_status(JudgeRow(id="a", error="ConnectError")) == "failed"
    assert row_status(AgentRow(id="a", error=None, stop_reason="error"), "agent") == "failed"
    assert row_status(AgentRow(id="a", error=None, stop_reason="sufficient"), "agent") == "ok"


def test_runs_with_different_judges_are_not_compared_without_the_flag(tmp_path, bench, capsys):
    a = _run(tmp_path, bench, "a")
    b = _run(tmp_path, bench, "b")
    rows = _rows(b / "judge.jsonl")
    for r in rows:
        r["judge"] = "other-judge-7b"
    _write(b / "judge.jsonl", rows)
    out = tmp_path / "rep"
    rc, _, err = _report(capsys, a, b, "--out", out)
    assert rc == 2 and len(err) == 1 and "different judges" in err[0] and "--allow-mixed-judges" in err[0]
    assert not out.exists()
    rc, _, err = _report(capsys, a, b, "--out", out, "--allow-mixed-judges")
    assert rc == 0 and "Mixed judges" in (out / "report.md").read_text()


def test_judge_revision_from_provenance_separates_judges(tmp_path, bench, capsys):
    a = _run(tmp_path, bench, "a")
    b = _run(tmp_path, bench, "b")
    for run, rev in ((a, "abc123"), (b, "def456")):
        meta = json.loads((run / "run.json").read_text())
        meta["provenance"] = {"models": {"judge": {"preset": "qwen2.5-vl-72b", "revision": rev}}}
        (run / "run.json").write_text(json.dumps(meta))
    rc, _, err = _report(capsys, a, b, "--out", tmp_path / "rep")
    assert rc == 2 and "abc123" in err[0] and "def456" in err[0]


def test_provenance_block_prints_what_run_json_has_and_unknown_otherwise(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    meta = json.loads((run / "run.json").read_text())
    meta["provenance"] = {"orig_local_version": "0.3.1", "git": {"commit": "deadbeef", "dirty": True},
                          "python": "3.12.1", "models": {"judge": {"hub_id": "Qwen/Qwen2.5-VL-72B-Instruct",
                                                                   "revision": "r1", "served_name": "judge72"}}}
    (run / "run.json").write_text(json.dumps(meta))
    assert _report(capsys, run)[0] == 0
    md = (run / "report" / "report.md").read_text()
    block = md[md.index("## Provenance"):]
    assert "orig_local: 0.3.1" in block and "git commit: deadbeef" in block and "git dirty: True" in block
    assert "host: unknown" in block and "GPU: unknown" in block
    assert "Qwen/Qwen2.5-VL-72B-Instruct" in block and "revision r1" in block and "served as judge72" in block


def test_provenance_in_the_layout_orig_eval_records(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    meta = json.loads((run / "run.json").read_text())
    meta["provenance"] = {
        "code": {"orig_local": "0.4.0", "git_commit": "cafe01", "git_dirty": False},
        "libraries": {"python": "3.12.3", "torch": "2.9.0"}, "host": {"host": "node7", "gpus": ["NVIDIA H200"]},
        "started_at": "2026-12-01T03:00:00Z", "ended_at": None, "config_sha256": "ab12",
        "models": {"backbone": {"backend": "simulated", "preset": "qwen2.5-vl-7b", "hub_id": "Qwen/x"},
                   "judge": {"backend": "openai", "preset": "tiny-judge", "hub_id": "tiny:judge",
                             "tiny_random_weights": True, "model": "served-judge", "revision": None}}}
    (run / "run.json").write_text(json.dumps(meta))
    assert _report(capsys, run)[0] == 0
    md = (run / "report" / "report.md").read_text()
    block = md[md.index("## Provenance"):]
    for text in ("orig_local: 0.4.0", "git commit: cafe01", "git dirty: False", "python: 3.12.3", "host: node7",
                 "GPU: NVIDIA H200", "started: 2026-12-01T03:00:00Z", "finished: unknown", "config hash: ab12",
                 "served as served-judge", "revision unknown"):
        assert text in block, text
    # stand-ins recorded in provenance are labelled even without a config.yaml saying so
    assert "SIMULATED BACKBONE" in md and "Tiny random-weight models" in md


def test_unreadable_lines_are_reported(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    lines = (run / "judge.jsonl").read_text().splitlines()
    lines[4] = '{"id": "item_4", "verd'  # a corrupt line in the middle
    (run / "judge.jsonl").write_text("\n".join(lines) + "\n")
    res = load_run(run)
    assert any("judge.jsonl" in w and "could not be read" in w for w in res.warnings)
    assert _report(capsys, run)[0] == 0
    assert "could not be read" in (run / "report" / "status.md").read_text()


# --------------------------------------------------------------------------- 9.8 labels


def test_simulated_and_tiny_runs_are_labelled_in_report_and_gallery(tmp_path, bench, capsys):
    run = _run(tmp_path, bench, "sim", backbone__backend="simulated", judge__preset="tiny-judge")
    assert _report(capsys, run)[0] == 0
    report = (run / "report" / "report.md").read_text()
    assert "SIMULATED backbone — not model output".upper() in report
    assert "random-weight models — numbers test the machinery only" in report
    assert "SIMULATED" in (run / "report" / "accuracy.md").read_text()
    page = (run / "report" / "gallery" / "sim.html").read_text()
    assert "SIMULATED backbone — not model output" in page and "tiny random-weight models" in page
    out = capsys.readouterr()
    # a real (non-stand-in) run says nothing of the kind
    plain = _run(tmp_path, bench, "plain")
    assert _report(capsys, plain)[0] == 0
    assert "SIMULATED" not in (plain / "report" / "report.md").read_text()
    assert out is not None


def test_direct_run_with_simulated_backbone_is_not_labelled_simulated(tmp_path, bench, capsys):
    from orig_local.evaluation.results import run_stand_in_labels
    from orig_local.labels import SIMULATED, TINY

    run = tmp_path / "d"
    run.mkdir()
    (run / "config.yaml").write_text("agent: {condition: direct}\nbackbone: {backend: simulated}\n"
                                     "judge: {preset: tiny-judge}\n")
    assert run_stand_in_labels(run, {"condition": "direct"}) == [TINY]
    (run / "config.yaml").write_text("agent: {condition: orig}\nbackbone: {backend: simulated}\n")
    assert run_stand_in_labels(run, {"condition": "orig"}) == [SIMULATED]


# --------------------------------------------------------------------------- 12.3 portable


class _Srcs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.srcs = []

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k == "src" and v:
                self.srcs.append(v)


def test_report_folder_is_self_contained_after_copying_elsewhere(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    assert _report(capsys, run)[0] == 0
    moved = tmp_path / "elsewhere" / "deep" / "report-copy"
    shutil.copytree(run / "report", moved)
    shutil.rmtree(run)  # the run folder and the benchmark are gone: the copy must not need them
    shutil.rmtree(tmp_path / "bench")
    pages = list(moved.rglob("*.html"))
    assert pages
    n = 0
    for page in pages:
        parser = _Srcs()
        parser.feed(page.read_text())
        for src in parser.srcs:
            assert not src.startswith("/") and "://" not in src, src
            assert (page.parent / src).resolve().is_file(), f"{page.name}: {src}"
            assert moved.resolve() in (page.parent / src).resolve().parents, src
            n += 1
    assert n >= 9 * 3  # generated image + reference + judge reference image per item


def test_classes_figure_legend_never_overlaps_the_axes(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from orig_local.evaluation.report import _save_figure

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k in range(3):
        ax.bar([0 + k * 0.2, 1 + k * 0.2], [100, 95], 0.2, label=f"a long run label number {k}")
    ax.set_ylim(0, 100)
    _save_figure(fig, ax, tmp_path / "f.png")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    legend_box = ax.get_legend().get_window_extent(renderer)
    axes_box = ax.get_window_extent(renderer)
    assert legend_box.y1 <= axes_box.y0  # below the plot: no bar can be hidden
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_missing_run_folder_is_one_line_and_creates_nothing(tmp_path, capsys):
    rc, _, err = _report(capsys, tmp_path / "missing_dir")
    assert rc == 2 and len(err) == 1 and "missing_dir" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "missing_dir").exists()
    (tmp_path / "empty").mkdir()
    rc, _, err = _report(capsys, tmp_path / "empty")
    assert rc == 2 and len(err) == 1 and "no run results" in err[0]
    assert not (tmp_path / "empty" / "report").exists()


def test_corrupt_run_json_is_one_line_naming_the_file(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    (run / "run.json").write_text("{not json")
    rc, _, err = _report(capsys, run)
    assert rc == 2 and len(err) == 1 and str(run / "run.json") in err[0]
    assert not (run / "report").exists()


def test_math_sanity_all_matches_expected(tmp_path, bench, capsys):
    run = _run(tmp_path, bench)
    assert _report(capsys, run)[0] == 0
    assert not math.isnan(_all_cell(run / "report"))
    assert _all_cell(run / "report") == pytest.approx(_expected_all(), abs=0.01)


def test_classes_figure_says_no_data_instead_of_a_zero_bar(tmp_path, bench, monkeypatch):
    import orig_local.evaluation.report_figures as report

    good = load_run(_run(tmp_path, bench, "good"))
    empty = load_run(_run(tmp_path, bench, "empty"))
    empty.prompts = []  # nothing scored (e.g. every item failed)
    seen = {}

    def keep(fig, ax, path):
        seen["texts"] = [t.get_text() for t in ax.texts]
        seen["labels"] = ax.get_legend_handles_labels()[1]
        return path

    monkeypatch.setattr(report, "_save_figure", keep)
    report.figure_classes([good, empty], tmp_path / "f.png", n_boot=0, ci=0.95, seed=0)
    assert seen["texts"].count("no data") == 4  # animal, sports, food, All
    assert seen["labels"] == ["good", "empty"]


def test_a_true_false_verdict_shaped_like_a_graded_one_is_a_data_error_not_dropped(tmp_path, bench):
    # correct=null with an answer object is WISE's graded WiScore form; on a FIG-Eval-style
    # true/false question it must not silently leave the item scored on its other questions.
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    rows[0]["verdicts"][0].update(correct=None, answer={"x": 1})
    _write(run / "judge.jsonl", rows)
    res = load_run(run)
    assert "item_0" in {i.item for i in res.data_errors}
    assert "item_0" not in {p.id for p in res.prompts}


def test_a_row_with_no_verdicts_is_a_data_error_even_when_the_benchmark_is_unreadable(tmp_path, bench):
    run = _run(tmp_path, bench)
    meta = json.loads((run / "run.json").read_text())
    meta["data"] = str(tmp_path / "moved_away")
    (run / "run.json").write_text(json.dumps(meta))
    rows = _rows(run / "judge.jsonl")
    rows[0]["verdicts"] = []
    _write(run / "judge.jsonl", rows)
    res = load_run(run)
    assert not res.benchmark_checked
    assert "item_0" in {i.item for i in res.data_errors}
    assert res.counts["data_errors"] == 1 and res.counts["judged_prompts"] == 8


def test_items_generated_but_never_judged_are_counted_and_warned(tmp_path, bench, capsys):
    # an interrupted judge phase: 4 of 9 items have images but no verdicts; the report must say
    # so instead of presenting the 5 judged items as the run
    run = _run(tmp_path, bench)
    rows = _rows(run / "judge.jsonl")
    _write(run / "judge.jsonl", rows[4:])
    res = load_run(run)
    assert res.counts["not_judged"] == 4
    assert any("no judge row" in w and "item_0" in w for w in res.warnings)
    _report(capsys, run)
    assert "no judge row" in (run / "report" / "status.md").read_text()


def test_a_class_selection_covers_every_table_not_just_accuracy(tmp_path, bench, capsys):
    # item_4 (sports) and item_5 (food) failed in the agent phase; a report on `animal` alone
    # must not carry their failures, stop reasons or costs, and one on `sports` must carry
    # exactly its own failure
    bad = _run(tmp_path, bench, "bad", agent=_FailingAgent())
    rc, _, err = _report(capsys, bad, "--classes", "animal", "--out", tmp_path / "animal")
    assert rc == 0, err
    status = (tmp_path / "animal" / "status.md").read_text()
    assert "| bad | 3/0/0 |" in status and "†" not in status
    assert "†" not in (tmp_path / "animal" / "accuracy.md").read_text()
    rc, _, err = _report(capsys, bad, "--classes", "sports", "--out", tmp_path / "sports")
    status = (tmp_path / "sports" / "status.md").read_text()
    assert "| bad | 2/0/1 |" in status and "has failed items (agent 1" in status
    assert "| 2/1 | 2/0/1 |" in status  # generate 2 ok / 1 failed; judge: item_4 failed upstream


def test_retrieval_accuracy_leaves_out_items_whose_agent_failed(tmp_path, bench):
    # an old-style failed agent row (stop_reason "error", no error text) still got a retrieval
    # row with A_i = 0; generation accuracy leaves the item out, so must retrieval accuracy
    run = _run(tmp_path, bench)
    rows = _rows(run / "agent.jsonl")
    rows[0]["stop_reason"] = "error"
    for key in ("status", "warning", "failure"):  # a row from before statuses existed
        rows[0].pop(key, None)
    _write(run / "agent.jsonl", rows)
    _write(run / "retrieval.jsonl", [{"id": r["id"], "accuracy": 0.0 if k == 0 else 1.0, "error": None}
                                     for k, r in enumerate(rows)])
    res = load_run(run)
    assert res.retrieval_accuracy == 1.0
