"""The first hour (issue 24, point 1): the first command a newcomer types succeeds and says what
it is, shows progress while it runs, keeps stderr clean, and a typo gets a suggestion."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import time

import pytest

from orig_local.cli import library_root_chatter, main
from orig_local.config import load_config


def test_orig_generate_offline_a_red_apple_succeeds_labelled_with_live_stage_lines(tmp_path, capsys):
    out = tmp_path / "g"
    # exactly the README's first command (plus a folder), default settings otherwise
    rc = main(["generate", "--offline", "a red apple", "--out", str(out), "-s", "cache_dir=''"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "status=ok" in captured.out
    assert "note: SIMULATED backbone — not model output" in captured.out.splitlines()  # never passes for a model
    assert (out / "image.png").is_file()
    stages = [ln for ln in captured.err.splitlines() if ln.startswith("orig generate:")]
    text = "\n".join(stages)
    assert "SIMULATED" in stages[0]  # the first line already says what is loading
    for words in ("round 1  planning", "round 1  searching and reading", "round 1  writing the enriched prompt",
                  "generating the image", "done: ok"):
        assert words in text, text
    assert "Traceback" not in captured.err


def test_tiny_backbone_is_one_flag_away_and_shows_the_failure_path(tmp_path, capsys):
    c = load_config(["offline"], ["backbone.backend=transformers"])
    assert c.backbone.preset == "tiny-qwen2.5-vl"
    rc = main(["-q", "generate", "--offline", "--tiny-backbone", "a red apple", "--out", str(tmp_path / "t"),
               "-s", "generator.preset=null", "-s", "cache_dir=''", "-s", "agent.bootstrap=false"])
    captured = capsys.readouterr()
    assert rc == 1  # random weights cannot follow a schema: failed, said so, never a success
    assert "FAILED" in captured.err
    assert "SIMULATED" not in captured.out and "tiny random-weight" in captured.out


def test_quiet_prints_no_stage_lines(tmp_path, capsys):
    rc = main(["-q", "generate", "--offline", "a red apple", "--out", str(tmp_path / "q"),
               "-s", "generator.preset=null", "-s", "cache_dir=''"])
    assert rc == 0
    assert "orig generate:" not in capsys.readouterr().err


def test_library_info_on_the_root_logger_is_dropped_warnings_and_our_loggers_pass():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(library_root_chatter)
    root_info = logging.LogRecord("root", logging.INFO, "/x/open_clip/factory.py", 1, "Parsing model identifier", None, None)
    root_warn = logging.LogRecord("root", logging.WARNING, "/x/open_clip/factory.py", 1, "weights missing", None, None)
    ours = logging.LogRecord("orig_local.generation", logging.INFO, "/x/g.py", 1, "loading", None, None)
    for record in (root_info, root_warn, ours):
        handler.handle(record)
    assert stream.getvalue().splitlines() == ["weights missing", "loading"]


def test_open_clip_load_prints_no_info_root_lines_through_the_cli(tmp_path):
    """A real process (logging configured by the CLI, not by pytest): `orig generate --offline`
    loads the tiny CLIP (dedup) and prints no ``INFO root`` line, but its own stage lines."""
    proc = subprocess.run([sys.executable, "-m", "orig_local", "generate", "--offline", "a red apple",
                           "--out", str(tmp_path / "g"), "-s", "cache_dir=", "-s", "generator.preset=null",
                           "-s", "retrieval.search.timeout_s=120"], capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "orig generate:" in proc.stderr and "filtering evidence" in proc.stderr
    assert "INFO root" not in proc.stderr, proc.stderr[-2000:]


def test_preset_typo_suggests_the_close_name():
    from orig_local.configbase import ConfigError
    from orig_local.presets import load_preset

    with pytest.raises(ConfigError, match=r"did you mean 'qwen2.5-vl-7b'"):
        load_preset("qwen2.5vl-7b")
    with pytest.raises(ConfigError) as err:
        load_preset("zzzzzz")
    assert "did you mean" not in str(err.value)  # nothing close: no invented suggestion


def test_eval_prints_each_phase_summary_as_a_readable_line():
    from orig_local.evaluation.phases.loop import PhaseSummary, summary_line

    s = PhaseSummary("judge", ran=3, ok=2, failed=1, skipped=5, earlier={"ok": 5}, seconds=12.34,
                     file="runs/x/judge.jsonl")
    assert summary_line(s) == ("judge: ran 3 (ok 2, degraded 0, failed 1), skipped 5 already done (ok 5) "
                               "in 12.3 s -> runs/x/judge.jsonl")


def test_study_shows_a_running_phase_progress_with_eta(tmp_path):
    from orig_local.study.progress import RowCounter, progress_text, wait_with_progress

    path = tmp_path / "agent.jsonl"
    path.write_text('{"id": "old"}\n')  # finished earlier: not this phase's progress
    counter = RowCounter(path)
    lines: list[str] = []
    ticks = iter(range(4))

    def wait(timeout):  # the "child": appends two rows per tick, exits after the third
        tick = next(ticks)
        if tick == 3:
            return 0
        with open(path, "a") as f:
            f.write('{"id": "a"}\n{"id": "b"}\n')
        time.sleep(0.01)
        return None

    assert wait_with_progress(wait, counter, 6, lines.append, "agent", 0.01) == 0
    assert [ln.split(",")[0].strip() for ln in lines] == ["agent: 2/6 items", "agent: 4/6 items", "agent: 6/6 items"]
    assert "ETA" in lines[0] and "ETA" not in lines[-1]
    assert progress_text(0, 10, 5.0) == "0/10 items"
    partial = tmp_path / "p.jsonl"
    counter = RowCounter(partial)
    partial.write_text('{"id": "a"}\n{"id": ')  # a row being written is not counted yet
    assert counter.poll() == 1
