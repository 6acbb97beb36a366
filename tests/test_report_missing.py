"""Reports and commands that say what is missing (issue 21 point 4): a never-judged run, a phase
that does not apply to the condition, a bad --limit, the flag that fixes a generator mismatch,
an unreadable judge file, and `orig generate`/`orig chat` failing fast on a dead server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge

from orig_local.cli import main
from orig_local.config import Config
from orig_local.errors import DataError, UsageError
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.orchestrate import RunMismatch, run_phases
from orig_local.evaluation.phases.common import select_items
from orig_local.evaluation.results import load_run
from orig_local.llm.local_server import free_port

ROOT = Path(__file__).resolve().parents[1]


def _config(condition: str = "orig") -> Config:
    cfg = Config()
    cfg.progress, cfg.cache_dir = False, ""
    cfg.agent.condition = condition
    cfg.generator.preset = "fake"
    return cfg


@pytest.fixture
def bench(tmp_path) -> Path:
    return make_mini_benchmark(tmp_path / "bench", n=3)


def _run(cfg, run, bench, phases):
    items = load_benchmark("jsonl", bench)
    cfg.eval.benchmark, cfg.eval.data = "jsonl", str(bench)
    return run_phases(cfg, run, items, phases, agent=FakeAgent(), generator=FakeGenerator(),
                      judge=scripted_judge(), preflight=False)


def test_report_on_a_never_judged_run_says_so_and_exits_1(tmp_path, bench, capsys):
    run = tmp_path / "run"
    _run(_config(), run, bench, ["agent", "generate"])
    rc = main(["-q", "report", str(run), "--no-gallery", "--bootstrap", "0"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "never judged" in err and "--phase judge" in err
    assert "never judged" in (run / "report" / "status.md").read_text()
    # asked for (a report of the earlier phases only): said, but exit 0
    assert main(["-q", "report", str(run), "--no-gallery", "--bootstrap", "0", "--allow-unjudged"]) == 0
    assert "never judged" in capsys.readouterr().err
    # once judged, the same report exits 0
    _run(_config(), run, bench, ["judge"])
    assert main(["-q", "report", str(run), "--no-gallery", "--bootstrap", "0"]) == 0


def test_retrieval_accuracy_does_not_apply_to_direct(tmp_path, bench):
    run = tmp_path / "run"
    with pytest.raises(UsageError, match="does not apply to condition 'direct'"):
        _run(_config("direct"), run, bench, ["agent", "retrieval"])
    assert not run.exists()
    # a direct run that has retrieval rows anyway (written by older code): R. Acc is n/a, not 100
    _run(_config("direct"), run, bench, ["agent", "generate", "judge"])
    rows = [{"id": f"item_{i}", "status": "ok", "accuracy": 1.0, "facts": []} for i in range(3)]
    (run / "retrieval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    main(["-q", "report", str(run), "--no-gallery", "--bootstrap", "0"])
    table = (run / "report" / "retrieval.md").read_text()
    lines = table.splitlines()
    line = lines[lines.index(next(ln for ln in lines if ln.startswith("|---"))) + 1]  # the run's row
    assert "100.0" not in line and "| n/a |" in line


@pytest.mark.parametrize("limit", [0, -1])
def test_a_limit_below_one_is_an_error_not_a_smaller_run(limit, bench, tmp_path, capsys):
    items = load_benchmark("jsonl", bench)
    with pytest.raises(UsageError, match="--limit"):
        select_items(items, limit=limit)
    rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(bench), "--condition", "direct",
               "--out", str(tmp_path / "run"), "--phase", "agent", "--limit", str(limit)])
    assert rc == 2 and "--limit" in capsys.readouterr().err
    assert len(select_items(items, limit=2)) == 2 and len(select_items(items, limit=3)) == 3


def test_another_generator_names_the_flag_that_fixes_it(tmp_path, bench):
    run = tmp_path / "run"
    _run(_config(), run, bench, ["agent"])
    other = _config()
    other.generator.preset = "tiny-qwen-image"  # what --offline brings
    with pytest.raises(RunMismatch) as err:
        _run(other, run, bench, ["generate"])
    assert "--generator fake" in (err.value.hint or "")


@pytest.mark.parametrize("kind", ["directory", "dangling link"])
def test_a_judge_file_that_cannot_be_read_is_an_error_not_an_empty_judge(tmp_path, bench, kind, capsys):
    run = tmp_path / "run"
    _run(_config(), run, bench, ["agent", "generate"])
    target = run / "judge.jsonl"
    if kind == "directory":
        target.mkdir()
    else:
        target.symlink_to(tmp_path / "gone.jsonl")
    with pytest.raises(DataError, match="judge.jsonl"):
        load_run(run)
    assert main(["-q", "report", str(run), "--no-gallery", "--bootstrap", "0"]) == 2
    assert "judge.jsonl" in capsys.readouterr().err


def _cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "orig_local", *argv], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("command", ["generate", "chat"])
def test_generate_and_chat_fail_fast_on_a_server_that_is_down(command, tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    common = ["-s", "backbone.backend=openai", "-s", f"backbone.base_url={url}", "-s", "backbone.model=x",
              "-s", "cache_dir=''", "-s", "backbone.connect_retries=4"]
    argv = (["generate", "a red fox", "--condition", "prompt_enhanced", "--out", str(tmp_path / "g"), *common]
            if command == "generate" else ["chat", "hello", *common])
    proc = _cli(*argv)
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    # one line: no retries, no warnings per attempt before it
    assert len(lines) == 1 and url in lines[0] and "orig serve" in lines[0], proc.stderr
    assert not (tmp_path / "g").exists()
