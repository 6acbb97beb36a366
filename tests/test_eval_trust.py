"""Results you can trust (issue 9), checked from outside on the CLI, on the bundled mini
benchmark, against real OpenAI-compatible servers on 127.0.0.1: a failure never looks like
success, a run that cannot work fails before writing anything, nothing is lost, every run
says what produced it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from openai_loopback import OpenAILoopback

from orig_local.cli import main
from orig_local.evaluation.data import mini_path
from orig_local.llm.local_server import free_port

pytestmark = pytest.mark.timeout(120)

MINI = str(mini_path())
IDS = ["mini_landmark", "mini_animal", "mini_sports"]  # the mini benchmark's order


def _eval(out: Path, *extra: str) -> list[str]:
    return ["-q", "eval", "--benchmark", "jsonl", "--data", MINI, "--out", str(out), "-s", "cache_dir=''", *extra]


def _served(server: OpenAILoopback, role: str = "backbone") -> list[str]:
    return ["-s", f"{role}.backend=openai", "-s", f"{role}.base_url={server.base_url}",
            "-s", f"{role}.model={server.model}", "-s", f"{role}.connect_retries=0"]


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _rows(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in _lines(path)]


# --------------------------------------------------------------------------- preflight


def test_backbone_at_a_closed_port_exits_2_at_once_naming_the_url(tmp_path):
    port = free_port()  # nothing listens there
    url = f"http://127.0.0.1:{port}/v1"
    out = tmp_path / "x" / "run"
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "orig_local", "eval", "--offline", "--benchmark", "jsonl", "--data", MINI,
         "--condition", "orig", "-s", "backbone.backend=openai", "-s", f"backbone.base_url={url}",
         "-s", "backbone.model=x", "--generator", "tiny-qwen-image", "--out", str(out), "--phase", "agent"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and url in lines[0] and "orig serve" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists() and not out.parent.exists()  # nothing written, no folder created


def test_judge_serving_another_model_is_a_preflight_error_naming_both(tmp_path, capsys):
    out = tmp_path / "run"
    with OpenAILoopback(model="served-judge") as server:
        rc = main(_eval(out, "--phase", "judge", "-s", "judge.backend=openai",
                        "-s", f"judge.base_url={server.base_url}", "-s", "judge.model=wanted-judge"))
        assert server.chat_requests == 0
    err = capsys.readouterr().err
    assert rc == 2
    assert "served-judge" in err and "wanted-judge" in err and "judge.model=" in err
    assert not out.exists()


def test_generate_phase_without_a_generator_names_the_flag(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_eval(out, "--condition", "direct", "--phase", "generate")) == 2
    assert "--generator" in capsys.readouterr().err and not out.exists()


def test_missing_or_unparseable_data_is_an_error_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(tmp_path / "nope.jsonl"), "--out", str(out),
               "--condition", "direct", "--phase", "agent"])
    assert rc == 2 and "nope.jsonl" in capsys.readouterr().err and not out.exists()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "x", "class": "animal"}\n{"id": "b", "prompt": \n')
    rc = main(["-q", "eval", "--benchmark", "jsonl", "--data", str(bad), "--out", str(out),
               "--condition", "direct", "--phase", "agent"])
    err = capsys.readouterr().err
    assert rc == 2 and "bad.jsonl" in err and "Traceback" not in err and not out.exists()


@pytest.mark.parametrize("flag,value,named", [("--classes", "landmarks,dragons", "dragons"),
                                               ("--ids", "mini_animal,mini_nope", "mini_nope")])
def test_unknown_ids_or_classes_are_errors_listing_valid_values(tmp_path, capsys, flag, value, named):
    """A selection that names something the benchmark lacks is never a silently smaller run."""
    out = tmp_path / "run"
    rc = main(_eval(out, "--condition", "direct", "--phase", "agent", flag, value))
    err = capsys.readouterr().err
    assert rc == 2 and named in err and "valid" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()
    rc = main(_eval(out, "--condition", "direct", "--phase", "agent", "--classes", "sport"))  # alias of sports
    assert rc == 0 and [r["id"] for r in _rows(out / "agent.jsonl")] == ["mini_sports"]


def test_a_generator_that_cannot_load_fails_its_items_and_keeps_earlier_rows(tmp_path, capsys):
    """The preset exists but cannot load here (no such GPU): every item of the phase is failed,
    with the reason; the exit status says so; the agent rows are untouched."""
    out = tmp_path / "run"
    assert main(_eval(out, "--condition", "direct", "--phase", "agent")) == 0
    before = (out / "agent.jsonl").read_bytes()
    rc = main(_eval(out, "--condition", "direct", "--phase", "generate", "--generator", "tiny-sd3",
                    "-s", "generator.device=cuda:7"))
    err = capsys.readouterr().err
    assert rc == 1 and "failed items: generate 3" in err and "Traceback" not in err
    rows = _rows(out / "generate.jsonl")
    assert len(rows) == 3 and all(r["status"] == "failed" and r["error"] and r["image"] is None for r in rows)
    assert (out / "agent.jsonl").read_bytes() == before


# --------------------------------------------------------------------------- failures are counted and rerun


def test_server_killed_mid_phase_then_retry_errors_reruns_exactly_the_failed(tmp_path, capsys):
    out = tmp_path / "run"
    args = _eval(out, "--condition", "prompt_enhanced", "--phase", "agent", "-s", "agent.concurrency=1")
    server = OpenAILoopback(die_after=1).start()  # answers the first item, then crashes
    try:
        rc = main(args + _served(server))
    finally:
        server.stop()
    err = capsys.readouterr().err
    assert rc == 1
    assert "failed items: agent 2" in err and "--retry-errors" in err
    rows = _rows(out / "agent.jsonl")
    rows = sorted(rows, key=lambda r: IDS.index(r["id"]))  # completion order on disk
    assert [r["id"] for r in rows] == IDS
    assert rows[0]["status"] == "ok" and rows[0]["error"] is None
    assert "rendered in rich, accurate detail" in rows[0]["final_prompt"]
    for r in rows[1:]:
        assert r["status"] == "failed" and "ChatConnectionError" in r["error"]
        assert r["final_prompt"] == r["prompt"]  # the raw-prompt fallback, marked failed
    first_line = _lines(out / "agent.jsonl")[0]

    # a plain rerun does not hide or redo them: they stay failed (and the exit status says so)
    with OpenAILoopback(port=server.port) as back:
        assert main(args + _served(back)) == 1
        assert back.chat_requests == 0
        # --retry-errors reruns exactly the failed ones
        assert main(args + _served(back) + ["--retry-errors"]) == 0
        assert back.chat_requests == 2
        assert any("Quillon" in p for p in back.prompts) and any("Marrowby" in p for p in back.prompts)
        assert not any("Veltrane" in p for p in back.prompts)
    rows = _rows(out / "agent.jsonl")
    assert sorted(r["id"] for r in rows) == sorted(IDS)
    assert all(r["status"] == "ok" for r in rows)
    assert _lines(out / "agent.jsonl")[0] == first_line  # the finished row untouched


def test_circuit_breaker_stops_the_phase_and_says_how_to_resume(tmp_path, capsys):
    out = tmp_path / "run"
    args = _eval(out, "--condition", "prompt_enhanced", "--phase", "agent", "-s", "agent.concurrency=1",
                 "-s", "eval.max_consecutive_failures=2")
    with OpenAILoopback(die_after=0) as server:  # models list answers, every chat request drops
        rc = main(args + _served(server))
    err = capsys.readouterr().err
    assert rc == 1
    assert "stopped after 2 consecutive" in err and "--retry-errors" in err
    rows = _rows(out / "agent.jsonl")
    assert sorted(r["id"] for r in rows) == sorted(IDS[:2]) and all(r["status"] == "failed" for r in rows)


def test_judge_question_errors_are_counted_and_rerun(tmp_path, capsys):
    """Every question of an item errors (the judge's replies are not true/false): the item is
    failed, the phase counts it, and --retry-errors asks the judge again."""
    out = tmp_path / "run"
    gen = ["--condition", "direct", "--offline", "--generator", "tiny-sd3"]
    judge_args = ["-s", "eval.judge_answer_format=text"]
    assert main(_eval(out, *gen, "--phase", "agent")) == 0
    assert main(_eval(out, *gen, "--phase", "generate", "--limit", "1")) == 0
    with OpenAILoopback(model="j", reply=lambda body: "maybe") as server:
        rc = main(_eval(out, *gen, "--phase", "judge", "--limit", "1", "--json", *judge_args,
                        *_served(server, "judge")))
        assert rc == 1
        row = _rows(out / "judge.jsonl")[0]
        assert row["status"] == "failed" and row["n_errors"] == len(row["verdicts"]) > 0
        assert "questions errored" in row["error"]
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["failed"] == 1 and summary["ok"] == 0
        asked = server.chat_requests
    with OpenAILoopback(model="j", reply=lambda body: "true") as server:
        rc = main(_eval(out, *gen, "--phase", "judge", "--limit", "1", "--retry-errors", *judge_args,
                        *_served(server, "judge")))
        assert rc == 0 and server.chat_requests == asked
    row = _rows(out / "judge.jsonl")[0]
    assert row["status"] == "ok" and row["n_errors"] == 0


def test_interrupt_exits_130_with_how_to_resume(tmp_path, capsys, monkeypatch):
    import orig_local.evaluation.orchestrate as orchestrate

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(orchestrate, "run_phases", interrupted)
    assert main(_eval(tmp_path / "run", "--condition", "direct", "--phase", "agent")) == 130
    err = capsys.readouterr().err
    assert "rerun the same command to resume" in err and "Traceback" not in err


def test_generate_never_exits_0_on_a_raw_prompt_fallback(tmp_path, capsys):
    def args(url):  # a server that passes the preflight, then dies at the first chat request
        return ["-q", "generate", "A Quillon glassback beetle on a leaf", "--offline", "--condition", "orig",
                "-s", "backbone.backend=openai", "-s", f"backbone.base_url={url}", "-s", "backbone.model=x",
                "-s", "backbone.connect_retries=0", "-s", "agent.dedup=false", "-s", "cache_dir=''",
                "-s", "generator.preset=null"]

    with OpenAILoopback(model="x", die_after=0) as server:
        assert main(args(server.base_url) + ["--out", str(tmp_path / "a")]) == 1
    captured = capsys.readouterr()
    assert "FAILED" in captured.err and "ChatConnectionError" in captured.err
    assert "search unavailable" not in captured.out + captured.err
    trace = json.loads((tmp_path / "a" / "trace.json").read_text())
    assert trace["status"] == "failed" and trace["transport_failure"] is True
    with OpenAILoopback(model="x", die_after=0) as server:
        assert main(args(server.base_url) + ["--out", str(tmp_path / "b"), "--allow-degraded"]) == 0
    # a server that is down before the first request: the preflight says so (exit 2), nothing written
    assert main(args(f"http://127.0.0.1:{free_port()}/v1") + ["--out", str(tmp_path / "c")]) == 2
    assert not (tmp_path / "c").exists()


# --------------------------------------------------------------------------- nothing lost


def test_corrupt_middle_line_is_moved_aside_and_the_others_kept_byte_identical(tmp_path, capsys, caplog):
    out = tmp_path / "run"
    args = _eval(out, "--condition", "direct", "--phase", "agent")
    assert main(args) == 0
    path = out / "agent.jsonl"
    lines = _lines(path)
    assert len(lines) == 3
    path.write_bytes(lines[0] + b'{"id": "mini_animal", "final_pro\x00mpt": tr\n' + lines[2])

    from orig_local.evaluation.rundir import corrupt_counts, read_phase

    with caplog.at_level("WARNING"):
        assert set(read_phase(out, "agent")) == {"mini_landmark", "mini_sports"}  # what report reads
    assert "1 corrupt line(s)" in caplog.text
    assert corrupt_counts(out) == {"agent.jsonl": 1}

    assert main(args) == 0  # resume
    new = _lines(path)
    assert new[0] == lines[0] and new[1] == lines[2]  # lines 1 and 3 byte-identical
    assert json.loads(new[2])["id"] == "mini_animal"  # the corrupt item ran again
    moved = _rows(out / "agent.corrupt.jsonl")
    assert len(moved) == 1 and moved[0]["line"] == 2 and "final_pro" in moved[0]["text"]
    assert corrupt_counts(out) == {"agent.corrupt.jsonl": 1}
    assert "moved to" in caplog.text


def test_only_a_torn_last_line_is_cut(tmp_path):
    from orig_local.evaluation.jsonl_store import JsonlStore

    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c", "v')
    store = JsonlStore(path)
    assert store.done == {"a", "b"} and path.read_bytes() == b'{"id": "a"}\n{"id": "b"}\n'
    assert not (tmp_path / "x.corrupt.jsonl").exists()


def test_disk_full_names_the_file_keeps_rows_and_resume_completes(tmp_path, capsys):
    """/dev/full answers every write with ENOSPC, like a full disk."""
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    from orig_local.errors import OrigError
    from orig_local.evaluation.jsonl_store import DiskWriteError, JsonlStore

    jsonl = tmp_path / "full.jsonl"
    jsonl.symlink_to("/dev/full")
    with pytest.raises(DiskWriteError) as info:
        JsonlStore(jsonl).append({"id": "a"})
    assert isinstance(info.value, OrigError) and str(jsonl) in info.value.one_line()

    out = tmp_path / "run"
    with OpenAILoopback() as server:
        args = _eval(out, "--condition", "prompt_enhanced", "--phase", "agent", "-s", "agent.concurrency=1",
                     *_served(server))
        (out / "traces").mkdir(parents=True)
        (out / "traces" / "mini_animal.json").symlink_to("/dev/full")  # the 2nd item's trace
        rc = main(args)
        err = capsys.readouterr().err
        assert rc == 1
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and "mini_animal.json" in lines[0] and "resume" in lines[0], err
        assert [r["id"] for r in _rows(out / "agent.jsonl")] == IDS[:1]  # the finished row is intact
        (out / "traces" / "mini_animal.json").unlink()
        assert main(args) == 0
    assert sorted(r["id"] for r in _rows(out / "agent.jsonl")) == sorted(IDS)


def test_second_writer_on_the_same_out_fails_at_once(tmp_path, capsys):
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from orig_local.evaluation.rundir import hold_run\n"
         "with hold_run(sys.argv[1]):\n print('held', flush=True); time.sleep(60)", str(out)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        rc = main(_eval(out, "--condition", "direct", "--phase", "agent"))
        assert time.monotonic() - t0 < 10
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert rc == 2 and "in use by another orig process" in err and f"pid {holder.pid}" in err
    assert not (out / "agent.jsonl").exists() and not (out / "run.json").exists()
    assert main(_eval(out, "--condition", "direct", "--phase", "agent")) == 0  # released with its holder


@pytest.mark.parametrize("command", ["report", "merge"])
def test_report_and_merge_on_a_missing_or_empty_folder(tmp_path, capsys, command):
    missing = tmp_path / "missing_dir"
    assert main([command, str(missing)]) == 2
    assert not missing.exists() and "no run folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([command, str(empty)]) == 2
    assert list(empty.iterdir()) == []


# --------------------------------------------------------------------------- provenance and data binding


def test_run_json_records_versions_commit_models_and_server(tmp_path):
    out = tmp_path / "run"
    with OpenAILoopback() as server:
        assert main(_eval(out, "--condition", "prompt_enhanced", "--phase", "agent", *_served(server),
                          "-s", "backbone.preset=tiny-qwen2.5-vl", "-s", "backbone.api_key=sk-secret-123")) == 0
    assert "sk-secret-123" not in (out / "run.json").read_text()
    from orig_local.provenance import _redacted

    assert _redacted(["orig", "-s", "judge.api_key=sk-1"]) == ["orig", "-s", "judge.api_key=<redacted>"]
    meta = json.loads((out / "run.json").read_text())
    prov = meta["provenance"]
    import orig_local

    assert prov["code"]["orig_local"] == orig_local.__version__
    if (Path(orig_local.__file__).parents[1] / ".git").exists():
        assert len(prov["code"]["git_commit"]) == 40 and isinstance(prov["code"]["git_dirty"], bool)
    libs = prov["libraries"]
    assert libs["python"] == ".".join(map(str, sys.version_info[:3]))
    from importlib.metadata import version

    assert libs["transformers"] == version("transformers") and "torch" in libs and "vllm" in libs
    assert prov["host"]["host"] and isinstance(prov["host"]["gpus"], list)
    assert prov["started_at"] <= prov["ended_at"] and len(prov["config_sha256"]) == 64
    backbone = prov["models"]["backbone"]
    assert backbone["preset"] == "tiny-qwen2.5-vl" and backbone["hub_id"] == "tiny:qwen2_5_vl"
    assert "revision" in backbone and backbone["tiny_random_weights"] is True
    assert backbone["model"] == "loopback-model" and backbone["server"]["id"] == "loopback-model"
    assert backbone["server"]["owned_by"] == "loopback"
    assert meta["benchmark_identity"]["loader"] == "jsonl" and len(meta["benchmark_identity"]["sha256"]) == 64
    assert meta["history"][-1]["summaries"][0]["ok"] == 3
    from orig_local.provenance import summary_lines

    block = "\n".join(summary_lines(prov))
    assert "tiny-qwen2.5-vl (tiny:qwen2_5_vl" in block and "tiny random weights" in block
    assert "served as 'loopback-model'" in block and f"transformers {libs['transformers']}" in block


def test_run_folder_refuses_other_data(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_eval(out, "--condition", "direct", "--phase", "agent", "--limit", "1")) == 0
    # growing the selection on the same data is fine
    assert main(_eval(out, "--condition", "direct", "--phase", "agent", "--limit", "2")) == 0
    other = tmp_path / "other"
    shutil.copytree(Path(MINI).parent, other)
    data = other / Path(MINI).name
    text = data.read_text().replace("Veltrane Harbor Lighthouse at dusk", "Veltrane Harbor Lighthouse at dawn")
    data.write_text(text)
    before = (out / "run.json").read_bytes()
    args = ["-q", "eval", "--benchmark", "jsonl", "--data", str(data), "--out", str(out), "--condition", "direct",
            "--phase", "agent", "-s", "cache_dir=''"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "other data" in err and "--out" in err
    assert (out / "run.json").read_bytes() == before
    assert json.loads(before)["data"] == MINI


def test_image_exits_1_with_one_line_when_the_generator_fails(tmp_path, capsys):
    out = tmp_path / "x.png"
    rc = main(["-q", "image", "a red kite", "--preset", "tiny-sd3", "-s", "generator.device=cuda:7",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 1 and "FAILED" in err and "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.strip()]) == 1 and not out.exists()
    assert main(["-q", "image", "a red kite", "--ref", str(tmp_path / "missing.png"), "--out", str(out)]) == 2
