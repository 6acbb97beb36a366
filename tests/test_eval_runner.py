"""Phased runs with scripted components: errors per item, shards + merge, reports, agreement, CLI."""

import csv
import json

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, colour_of, make_mini_benchmark, scripted_judge

from orig_local.config import Config
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import RunMismatch, run_phases
from orig_local.evaluation.phases.common import parse_shard, select_items, shard_from_env
from orig_local.evaluation.rundir import backbone_size, read_phase


@pytest.fixture
def items(tmp_path):
    return load_benchmark("jsonl", make_mini_benchmark(tmp_path / "bench", n=9))


def _config(**eval_kw):
    cfg = Config()
    cfg.progress = False
    cfg.cache_dir = ""
    cfg.agent.condition = "orig"
    cfg.generator.preset = "fake"
    for k, v in eval_kw.items():
        setattr(cfg.eval, k, v)
    return cfg


def _run(cfg, run, items, phases=("agent", "generate", "judge", "retrieval"), **kw):
    gen = kw.pop("generator", FakeGenerator())
    return run_phases(cfg, run, items, phases, agent=kw.pop("agent", FakeAgent()), generator=gen,
                      judge=kw.pop("judge", scripted_judge()), **kw)


def test_full_run_scores_match_the_scripted_judge(tmp_path, items):
    run = tmp_path / "run"
    summaries = _run(_config(), run, items)
    assert [s["phase"] for s in summaries] == ["agent", "generate", "judge", "retrieval"]
    rows = read_phase(run, "judge")
    for it in items:  # the fake generator draws the item's colour; the judge says true for red
        assert rows[it.id]["score"] == (1.0 if colour_of(it.id) == "red" else 0.0)
        assert (run / read_phase(run, "generate")[it.id]["image"]).is_file()
    meta = json.loads((run / "run.json").read_text())
    assert meta["condition"] == "orig" and meta["generator"] == "fake" and (run / "config.yaml").is_file()
    # a second invocation finds everything done
    again = _run(_config(), run, items)
    assert all(s["ran"] == 0 for s in again)


def test_item_errors_recorded_and_run_goes_on(tmp_path, items):
    class Flaky(FakeAgent):
        def __call__(self, item):
            if item.id == "item_2":
                raise RuntimeError("backbone unreachable")
            return super().__call__(item)

    run = tmp_path / "run"
    s = _run(_config(), run, items, agent=Flaky())
    assert s[0]["errors"] == 1 and s[1]["errors"] == 1 and s[2]["errors"] == 1
    agent = read_phase(run, "agent")
    assert "backbone unreachable" in agent["item_2"]["error"]
    assert "agent phase failed" in read_phase(run, "generate")["item_2"]["error"]
    assert read_phase(run, "judge")["item_2"]["score"] is None
    assert len(read_phase(run, "judge")) == 9
    # --retry-errors reruns only the failed item
    fixed = FakeAgent()
    _run(_config(), run, items, phases=("agent",), agent=fixed, retry_errors=True)
    assert fixed.calls == 1 and read_phase(run, "agent")["item_2"]["error"] is None


def test_phases_run_alone_and_wait_for_their_input(tmp_path, items):
    run = tmp_path / "run"
    gen = FakeGenerator()
    s = _run(_config(), run, items, phases=("generate",), generator=gen)
    assert s[0]["ran"] == 0 and s[0]["waiting"] == 9 and gen.calls == 0
    _run(_config(), run, items, phases=("agent",))
    _run(_config(), run, items, phases=("generate",), generator=gen)
    assert gen.calls == 9
    assert len(read_phase(run, "judge")) == 0


def test_run_folder_refuses_another_condition(tmp_path, items):
    run = tmp_path / "run"
    _run(_config(), run, items[:1], phases=("agent",))
    cfg = _config()
    cfg.agent.condition = "direct"
    with pytest.raises(RunMismatch):
        _run(cfg, run, items[:1], phases=("agent",))


def test_shards_and_merge(tmp_path, items):
    run = tmp_path / "run"
    for i in range(3):
        _run(_config(), run, items, phases=("agent", "generate"), shard=(i, 3))
    assert sorted(p.name for p in run.glob("agent*.jsonl")) == [f"agent.shard-{i}-of-3.jsonl" for i in range(3)]
    assert len(read_phase(run, "generate")) == 9  # readers see all shards before merging
    from orig_local.cli import main

    assert main(["merge", str(run)]) == 0
    lines = (run / "agent.jsonl").read_text().splitlines()
    assert sorted(json.loads(ln)["id"] for ln in lines) == sorted(i.id for i in items)
    assert not list(run.glob("*.shard-*.jsonl")) and len(list((run / "shards").glob("*.jsonl"))) == 6
    assert main(["merge", str(run)]) == 0  # idempotent
    assert len((run / "agent.jsonl").read_text().splitlines()) == 9


def test_merge_run_folders_from_two_machines(tmp_path, items):
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "merged"
    _run(_config(), a, items, phases=("agent", "generate"), shard=(0, 2))
    _run(_config(), b, items, phases=("agent", "generate"), shard=(1, 2))
    from orig_local.evaluation.merge import merge_runs

    merge_runs([a, b], out)
    gen = read_phase(out, "generate")
    assert len(gen) == 9 and all((out / r["image"]).is_file() for r in gen.values())


def test_shard_helpers(items):
    assert parse_shard("1/4") == (1, 4) and parse_shard(None) == (0, 1)
    with pytest.raises(ValueError):
        parse_shard("4/4")
    assert shard_from_env({"RANK": "1", "WORLD_SIZE": "2"}) == (1, 2)
    assert shard_from_env({"WORLD_SIZE": "1"}) is None
    parts = [select_items(items, shard=(i, 2)) for i in range(2)]
    assert sorted(i.id for p in parts for i in p) == sorted(i.id for i in items)
    assert [i.id for i in select_items(items, classes=["food"], limit=2)] == ["item_2", "item_5"]
    assert backbone_size("qwen2.5-vl-72b") == 72 and backbone_size("tiny-judge") is None


def test_report_tables_gallery_figure_and_cli(tmp_path, items):
    runs = []
    for name, size in (("orig-7b", "qwen2.5-vl-7b"), ("orig-72b", "qwen2.5-vl-72b")):
        cfg = _config(label=name)
        cfg.backbone.preset = size
        _run(cfg, tmp_path / name, items)
        runs.append(tmp_path / name)
    from orig_local.cli import main

    out = tmp_path / "report"
    assert main(["report", *map(str, runs), "--out", str(out), "--bootstrap", "100"]) == 0
    for name in ("accuracy.md", "accuracy.csv", "differences.md", "cost.md", "retrieval.md", "report.md",
                 "figures/classes.png", "figures/backbone_scale.png", "gallery/orig-7b.html"):
        assert (out / name).is_file(), name
    with (out / "accuracy.csv").open() as fh:
        row = next(csv.DictReader(fh))
    reds = {"animal": [], "sports": [], "food": []}
    for it in items:
        reds[it.category].append(100.0 if colour_of(it.id) == "red" else 0.0)
    expect = {c: sum(v) / len(v) for c, v in reds.items()}
    assert float(row["animal"]) == pytest.approx(expect["animal"], abs=0.01)
    assert float(row["All"]) == pytest.approx(sum(expect.values()) / 3, abs=0.01)
    assert float(row["All_lo"]) <= float(row["All"]) <= float(row["All_hi"])
    page = (out / "gallery" / "orig-7b.html").read_text()
    assert "the thing is shown" in page and "images/item_0.png" in page
    cost = (out / "cost.md").read_text()
    assert "planning" in cost and "100.0" in cost


def test_agreement_with_humans(tmp_path, items):
    run = tmp_path / "run"
    _run(_config(), run, items)
    judge = read_phase(run, "judge")
    labels = tmp_path / "labels.csv"
    with labels.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question_id", "human", "annotator"])
        for pid, row in judge.items():
            for v in row["verdicts"]:
                # humans agree except on item_0/q1; item_1/q2 is a tie (left out)
                h = v["answer"] if (pid, v["qid"]) != ("item_0", "q1") else not v["answer"]
                w.writerow([pid, v["qid"], str(h).lower(), "a1"])
                if (pid, v["qid"]) == ("item_1", "q2"):
                    w.writerow([pid, v["qid"], str(not h).lower(), "a2"])
    from orig_local.evaluation.agreement import cohen_kappa, human_agreement

    res = human_agreement(run, labels)
    assert res["items"] == 26 and res["ties"] == 1
    assert res["accuracy"] == pytest.approx(25 / 26)
    assert res["cohen_kappa"] < 1 and res["cohen_kappa"] > 0.8
    assert set(res["classes"]) == {"animal", "sports", "food"}
    assert -1 <= res["pearson"] <= 1
    assert cohen_kappa([True, False, True, False], [True, False, False, True]) == pytest.approx(0.0)
    from orig_local.cli import main

    assert main(["agreement", str(run), "--human", str(labels), "--out", str(tmp_path / "agr")]) == 0
    assert "Cohen" in (tmp_path / "agr" / "agreement.md").read_text()


def test_cli_eval_direct_agent_phase_and_selection(tmp_path, items):
    from orig_local.cli import main

    bench = tmp_path / "bench" / "bench.jsonl"
    out = tmp_path / "run"
    rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(bench), "--condition", "direct",
               "--out", str(out), "--phase", "agent", "--classes", "animal,food", "--limit", "3"])
    assert rc == 0
    rows = read_phase(out, "agent")
    assert sorted(rows) == ["item_0", "item_2", "item_3"]  # completion order on disk
    assert rows["item_0"]["final_prompt"] == "A picture of thing 0" and rows["item_0"]["error"] is None
    rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(bench), "--condition", "direct",
               "--out", str(out), "--phase", "agent", "--ids", "item_1", "--shard", "0/2"])
    assert rc == 0 and list(read_phase(out, "agent")) == ["item_0", "item_2", "item_3", "item_1"]
    assert (out / "agent.shard-0-of-2.jsonl").is_file()
    assert main(["-q", "eval", "--data", str(bench), "--out", str(out), "--shard", "3/2"]) == 2


def test_two_judges_compared_in_one_report(tmp_path, items):
    run = tmp_path / "run"
    _run(_config(), run, items)
    cfg = _config(judge_name="contrarian")
    _run(cfg, run, items, phases=("judge",), judge=scripted_judge(reply=lambda m, s: "false"))
    from orig_local.evaluation.agreement import judge_agreement
    from orig_local.evaluation.report import build_report

    written = build_report([run], tmp_path / "rep", judge_name="default,contrarian", n_boot=50, gallery=False)
    table = written["accuracy"].read_text()
    assert "run [default]" in table and "run [contrarian]" in table
    res = judge_agreement(run, None, "contrarian")
    n_true = sum(v["answer"] for r in read_phase(run, "judge").values() for v in r["verdicts"])
    assert res["items"] == 27 and res["accuracy"] == pytest.approx(1 - n_true / 27)


def test_generate_phase_shards_itself_under_accelerate(tmp_path, items, monkeypatch):
    run = tmp_path / "run"
    _run(_config(), run, items, phases=("agent",))
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    gen = FakeGenerator()
    _run(_config(), run, items, phases=("generate",), generator=gen)
    rows = [json.loads(ln) for ln in (run / "generate.shard-1-of-2.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(i.id for i in items[1::2]) and gen.calls == 4
    assert not (run / "agent.shard-1-of-2.jsonl").exists()  # only generation is data-parallel


def test_cli_later_phase_adopts_the_run_settings(tmp_path, items):
    from orig_local.cli import main

    bench = tmp_path / "bench" / "bench.jsonl"
    out = tmp_path / "run"
    assert main(["-q", "eval", "--benchmark", "jsonl", "--data", str(bench), "--condition", "direct",
                 "--out", str(out), "--phase", "agent", "--limit", "2"]) == 0
    # no --condition/--benchmark/--data: taken from run.json instead of clashing with the defaults
    assert main(["-q", "eval", "--out", str(out), "--phase", "agent", "--limit", "3"]) == 0
    assert list(read_phase(out, "agent")) == ["item_0", "item_1", "item_2"]
