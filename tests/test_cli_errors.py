"""One line per mistake, never a traceback (issue 12.1): every user-fixable error prints one
line on stderr saying what to do, and exits 2; --debug shows the traceback; Ctrl-C exits 130."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orig_local.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return rc, out, lines


def _one_line(rc, lines, *needles):
    assert rc == 2, lines
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    for n in needles:
        assert n in lines[0], (n, lines[0])


@pytest.fixture
def bench(tmp_path):
    from _eval_fakes import make_mini_benchmark

    return make_mini_benchmark(tmp_path / "bench", n=3)


# --------------------------------------------------------------------------- --data


@pytest.mark.parametrize("case", ["missing", "empty", "file"])
def test_eval_data_missing_empty_or_a_file(tmp_path, capsys, case):
    data = tmp_path / "data"
    if case == "empty":
        data.mkdir()
    elif case == "file":
        data = tmp_path / "notes.txt"
        data.write_text("hello")
    out = tmp_path / "run"
    rc, _, lines = _cli(capsys, "-q", "eval", "--data", data, "--out", out, "--condition", "direct", "--phase", "agent")
    _one_line(rc, lines, str(data))
    assert "(" in lines[0]  # what to do
    assert not out.exists()


def test_jsonl_benchmark_that_is_not_json(tmp_path, capsys):
    bad = tmp_path / "bench.jsonl"
    bad.write_text('{"id": "a", "prompt": "x", "class": "animal"}\n{oops\n')
    rc, _, lines = _cli(capsys, "-q", "eval", "--benchmark", "jsonl", "--data", bad, "--out", tmp_path / "run",
                        "--condition", "direct", "--phase", "agent")
    _one_line(rc, lines, f"{bad}:2", "not JSON")


def test_corrupt_run_json_names_the_file(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{broken")
    rc, _, lines = _cli(capsys, "-q", "report", run)
    _one_line(rc, lines, str(run / "run.json"))


def test_agreement_with_missing_labels_file(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    rc, _, lines = _cli(capsys, "agreement", run, "--human", tmp_path / "missing.csv")
    _one_line(rc, lines, "missing.csv", "id,question_id,human")


# --------------------------------------------------------------------------- config


def test_unknown_config_key_suggests_the_right_one(capsys):
    rc, out, lines = _cli(capsys, "config", "-s", "agent.max_round=3")
    _one_line(rc, lines, "agent.max_round", "did you mean `agent.max_rounds`?")
    assert "errors.pydantic.dev" not in lines[0] and out == ""


def test_bad_config_value_is_one_line_without_url(capsys):
    rc, _, lines = _cli(capsys, "config", "-s", "agent.max_rounds=lots")
    _one_line(rc, lines, "agent.max_rounds", "'lots'")
    assert "http" not in lines[0]


def test_unknown_section_suggests_the_section(capsys):
    rc, _, lines = _cli(capsys, "config", "-s", "backbon.preset=x")
    _one_line(rc, lines, "did you mean `backbone`?")


def test_models_with_unknown_role_lists_roles(capsys):
    rc, out, lines = _cli(capsys, "models", "--role", "genertor")
    _one_line(rc, lines, "genertor", "backbone, judge, generator, embedder")
    assert out == ""
    rc, out, _ = _cli(capsys, "models", "--role", "generator")
    assert rc == 0 and "flux.1-schnell" in out and "clip-vit-b-32" not in out


# --------------------------------------------------------------------------- global options


def test_global_options_before_or_after_the_subcommand(capsys):
    for argv in (["--quiet", "models"], ["models", "--quiet"], ["models", "-q", "--log-level", "warning"],
                 ["--log-level", "error", "models", "--debug"]):
        rc, out, lines = _cli(capsys, *argv)
        assert rc == 0 and "tiny-judge" in out, argv
    import argparse

    from orig_local.cli import build_parser

    args = build_parser().parse_args(["--quiet", "--log-level", "error", "models"])
    assert args.quiet and args.log_level == "error"  # not reset by the subcommand's defaults
    args = build_parser().parse_args(["models", "--quiet", "--debug"])
    assert args.quiet and args.debug and isinstance(args, argparse.Namespace)
    for name in ("eval", "report", "generate", "agreement"):  # every subcommand takes them
        argv = {"eval": ["eval", "--out", "x"], "report": ["report", "r"], "generate": ["generate", "p"],
                "agreement": ["agreement", "r", "--human", "h.csv"]}[name]
        args = build_parser().parse_args(argv + ["--quiet", "--log-level", "debug"])
        assert args.quiet and args.log_level == "debug", name


def test_debug_shows_the_traceback(capsys):
    rc, _, lines = _cli(capsys, "config", "-s", "agent.max_round=3", "--debug")
    assert rc == 2 and any("Traceback" in ln for ln in lines)
    assert "did you mean" in lines[-1]
    rc, _, lines = _cli(capsys, "--log-level", "debug", "config", "-s", "agent.max_round=3")
    assert rc == 2 and any("Traceback" in ln for ln in lines)


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch):
    import orig_local.cli.models as models

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(models, "run", interrupted)
    rc, _, lines = _cli(capsys, "models")
    assert rc == 130 and lines == ["orig: interrupted — rerun the same command to resume"]


def test_ctrl_c_in_a_real_process_exits_130(tmp_path):
    """SIGINT to a running `orig` process (not a simulated exception)."""
    import signal
    import time

    script = tmp_path / "slow.py"
    script.write_text(
        "import sys, time\n"
        "import orig_local.cli.models as m\n"
        "def run(args):\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
        "m.run = run\n"
        "from orig_local.cli import main\n"
        "sys.exit(main(['models']))\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert [ln for ln in err.splitlines() if ln.strip()] == ["orig: interrupted — rerun the same command to resume"]


def test_run_mismatch_is_one_line(tmp_path, capsys, bench):
    out = tmp_path / "run"
    base = ["-q", "eval", "--benchmark", "jsonl", "--data", bench, "--out", out, "--phase", "agent"]
    assert _cli(capsys, *base, "--condition", "direct")[0] == 0
    meta = json.loads((out / "run.json").read_text())
    meta["condition"] = "orig"  # as if another condition had started this folder
    (out / "run.json").write_text(json.dumps(meta))
    rc, _, lines = _cli(capsys, *base, "--condition", "direct")
    _one_line(rc, lines, "condition", "--out")


# --------------------------------------------------------------------------- weights


def test_weights_not_cached_offline_is_one_line(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    rc, _, lines = _cli(capsys, "-q", "chat", "hello", "-s", "backbone.backend=transformers",
                        "-s", "backbone.model=orig-local-tests/never-downloaded")
    _one_line(rc, lines, "orig-local-tests/never-downloaded", "not cached",
              "huggingface-cli download orig-local-tests/never-downloaded", "HF_HUB_OFFLINE")


def test_not_cached_recognises_the_libraries_errors():
    from orig_local.loaderrors import ModelNotCached, loading, model_not_cached

    with pytest.raises(ModelNotCached):
        with loading("org/x"):
            raise OSError("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't "
                          "find them in the cached files.")
    with pytest.raises(ModelNotCached):
        with loading("org/x"):
            raise RuntimeError("Failed to download weights for tag 'openai': ...")
    with pytest.raises(ValueError):  # anything else passes through untouched
        with loading("org/x"):
            raise ValueError("bad dtype")
    assert model_not_cached(OSError("disk full")) is None


def test_clip_loads_lazily_after_the_cheap_checks():
    from orig_local.embeddings.clip import OpenClipEmbedder

    emb = OpenClipEmbedder("local-dir:/nonexistent/clip", device="cpu")
    assert emb._loaded is None  # constructing it touched no weights
    with pytest.raises(Exception):  # noqa: B017 - whichever error the loader gives; the point is when
        emb.embed_texts(["a"])  # the first use loads (and here fails)


def test_generate_contacts_the_backbone_before_loading_clip(tmp_path, capsys, monkeypatch):
    """`orig generate` with a dead backbone must fail on the backbone, not spend time on CLIP."""
    import open_clip

    loads = []

    def no_clip(*args, **kwargs):
        loads.append(args)
        raise AssertionError("CLIP weights loaded")

    monkeypatch.setattr(open_clip, "create_model_and_transforms", no_clip)
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    rc = main(["-q", "generate", "a red apple", "--offline", "--out", str(tmp_path / "g"),
               "-s", "backbone.backend=openai", "-s", f"backbone.base_url=http://127.0.0.1:{port}/v1",
               "-s", "backbone.model=x", "-s", "generator.preset=null", "-s", "backbone.connect_retries=0"])
    err = capsys.readouterr().err
    assert loads == []
    # the preflight contacted the backbone first and stopped there: exit 2, nothing written
    assert rc == 2 and f"127.0.0.1:{port}" in err and "does not answer" in err
    assert not (tmp_path / "g").exists()


def test_corrupt_run_json_when_resuming_eval_names_the_file(tmp_path, capsys, bench):
    out = tmp_path / "run"
    base = ["-q", "eval", "--benchmark", "jsonl", "--data", bench, "--out", out, "--phase", "agent",
            "--condition", "direct"]
    assert _cli(capsys, *base)[0] == 0
    (out / "run.json").write_text('{"condition": "direct",')
    rc, _, lines = _cli(capsys, *base)
    _one_line(rc, lines, "run.json", "not valid JSON")


def test_missing_run_folder_for_agreement_and_missing_corpus(tmp_path, capsys):
    rc, _, lines = _cli(capsys, "agreement", tmp_path / "nope", "--human", tmp_path / "x.csv")
    _one_line(rc, lines, "nope")
    rc, _, lines = _cli(capsys, "-q", "corpus", "build", tmp_path / "no_corpus")
    _one_line(rc, lines, "no_corpus")


def test_argument_mistakes_are_one_line_with_where_help_is(capsys):
    for argv in (["eval", "--out", "x", "--bogus"], ["report"], ["nosuchcommand"], ["models", "--role"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert exc.value.code == 2 and len(err) == 1 and "--help" in err[0], (argv, err)


# --------------------------------------------------------------------------- orig report options


@pytest.fixture
def judged_run(tmp_path):
    import test_eval_report_checks as T
    from _eval_fakes import make_mini_benchmark

    return T._run(tmp_path, make_mini_benchmark(tmp_path / "b9", n=9))


@pytest.mark.parametrize("argv,needle", [(["--ci", "2"], "--ci"), (["--ci", "0"], "--ci"),
                                         (["--bootstrap", "-5"], "--bootstrap")])
def test_report_numbers_out_of_range_are_one_line(judged_run, capsys, argv, needle):
    with pytest.raises(SystemExit) as exc:  # argparse's own exit, with our one-line format
        main(["-q", "report", str(judged_run), *argv])
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert exc.value.code == 2 and len(lines) == 1 and needle in lines[0], lines
    assert not (judged_run / "report").exists()


def test_report_out_that_is_a_file_is_one_line(judged_run, tmp_path, capsys):
    target = tmp_path / "a_file"
    target.write_text("keep me")
    rc, _, lines = _cli(capsys, "-q", "report", judged_run, "--out", target, "--bootstrap", "0")
    _one_line(rc, lines, str(target))
    assert target.read_text() == "keep me"


def test_unknown_baseline_is_refused_before_anything_is_written(judged_run, tmp_path, capsys):
    out = tmp_path / "cmp"
    rc, _, lines = _cli(capsys, "-q", "report", judged_run, judged_run, "--out", out,
                        "--baseline", tmp_path / "nope", "--bootstrap", "0")
    _one_line(rc, lines, "--baseline")
    assert not out.exists()


def test_an_os_error_naming_a_file_is_one_line(judged_run, capsys, monkeypatch):
    # disk full while writing the report: one line naming the file, no traceback
    import errno

    from orig_local.evaluation import report

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device", str(judged_run / "report" / "status.md"))

    monkeypatch.setattr(report, "write_status", full)
    rc, _, lines = _cli(capsys, "-q", "report", judged_run, "--bootstrap", "0")
    assert rc == 1, lines  # a full disk exits 1, as in `orig eval` (DiskWriteError)
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert "No space left on device" in lines[0] and "status.md" in lines[0], lines


def test_human_labels_csv_saved_by_a_spreadsheet_or_broken_is_read_or_one_line(tmp_path, capsys):
    from orig_local.evaluation.agreement import read_labels

    # Excel's "CSV UTF-8" starts with a byte-order mark: the header must still be recognised
    bom = tmp_path / "excel.csv"
    bom.write_bytes(b"\xef\xbb\xbfid,question_id,human\r\nitem_0,q1,true\r\nitem_0,q2,FALSE\r\n")
    assert read_labels(bom) == ({("item_0", "q1"): True, ("item_0", "q2"): False}, 0)
    run = tmp_path / "run"
    run.mkdir()
    (run / "judge.jsonl").write_text("")
    for name, blob, needle in [("latin.csv", b"\xff\xfeid,question_id,human\n", "UTF-8"),
                               ("short.csv", b"id,question_id,human\nitem_0,q1\n", ":2:")]:
        path = tmp_path / name
        path.write_bytes(blob)
        rc, _, lines = _cli(capsys, "-q", "agreement", "--human", path, run)
        _one_line(rc, lines, name, needle)


def test_config_file_that_is_not_text_is_one_line(tmp_path, capsys):
    cfg = tmp_path / "config.yaml"
    cfg.write_bytes(b"\xff\xfe\x00agent:\n")  # e.g. saved as UTF-16 by an editor
    rc, _, lines = _cli(capsys, "config", "--config", cfg)
    _one_line(rc, lines, str(cfg), "UTF-8")


def test_agreement_leaves_out_an_item_with_two_judge_rows(tmp_path):
    # item_0 judged twice (main and shard file) with opposite answers: agreement must not
    # silently take the first row
    from orig_local.evaluation.agreement import judge_answers

    run = tmp_path / "run"
    run.mkdir()

    def row(pid, answer):
        return json.dumps({"id": pid, "category": "animal", "verdicts": [
            {"qid": "q1", "answer": answer, "correct": answer, "expected": True, "error": None}]}) + "\n"

    (run / "judge.jsonl").write_text(row("item_0", True) + row("item_1", True))
    (run / "judge.shard-1-of-2.jsonl").write_text(row("item_0", False))
    answers, _, classes = judge_answers(run)
    assert answers == {("item_1", "q1"): True} and set(classes) == {"item_1"}
