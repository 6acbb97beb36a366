"""A phase killed with SIGKILL mid-run resumes to the same JSONL as an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, FakeGenerator, make_mini_benchmark, scripted_judge

from orig_local.evaluation.jsonl_store import JsonlStore, read_rows
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.generate import run_generate_phase
from orig_local.evaluation.phases.judge import run_judge_phase

WORKER = Path(__file__).parent / "eval_resume_worker.py"
N = 8


def _rows(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(ln) for ln in lines]  # every line parses: nothing torn
    for r in rows:
        r.pop("timing", None)  # wall-clock seconds differ between runs
    return rows


def _run_worker(bench, run_dir, phase, delay):
    return subprocess.Popen([sys.executable, str(WORKER), str(bench), str(run_dir), phase, str(delay)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _kill_after(proc, path: Path, k: int, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(read_rows(path)) >= k:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            return
        if proc.poll() is not None:
            pytest.fail(f"worker ended before being killed: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("worker too slow")


@pytest.fixture
def bench(tmp_path):
    return make_mini_benchmark(tmp_path / "bench", n=N)


@pytest.fixture
def reference_run(tmp_path, bench):
    """The uninterrupted run, in-process."""
    items = load_benchmark("jsonl", bench)
    ref = tmp_path / "ref"
    run_agent_phase(items, ref, FakeAgent(), progress=False)
    run_generate_phase(items, ref, FakeGenerator(), progress=False)
    run_judge_phase(items, ref, scripted_judge(), concurrency=1, progress=False)
    return ref


@pytest.mark.parametrize("phase", ["generate", "judge"])
def test_killed_phase_resumes_to_identical_jsonl(tmp_path, bench, reference_run, phase):
    items = load_benchmark("jsonl", bench)
    run = tmp_path / "run"
    run_agent_phase(items, run, FakeAgent(), progress=False)
    if phase == "judge":
        run_generate_phase(items, run, FakeGenerator(), progress=False)
    out = run / f"{phase}.jsonl"

    proc = _run_worker(bench, run, phase, 0.25)
    _kill_after(proc, out, 3)
    written = len(read_rows(out))
    assert 3 <= written < N, "the kill must land mid-phase"
    # A kill can also land inside a write: simulate the torn tail it would leave.
    with out.open("ab") as fh:
        fh.write(b'{"id": "item_7", "category": "sp')

    proc = _run_worker(bench, run, phase, 0.0)
    assert proc.wait(timeout=120) == 0, proc.stderr.read().decode()[-2000:]

    # rows are appended in completion order: compare them by id
    got, want = (sorted(_rows(p), key=lambda r: r["id"]) for p in (out, reference_run / f"{phase}.jsonl"))
    assert [r["id"] for r in got] == sorted(f"item_{i}" for i in range(N))  # none lost, none twice
    assert got == want
    # images referenced by the rows exist and are complete
    if phase == "generate":
        from PIL import Image

        for r in got:
            with Image.open(run / r["image"]) as im:
                im.load()


def test_store_repairs_torn_tail_and_refuses_duplicates(tmp_path):
    path = tmp_path / "x.jsonl"
    store = JsonlStore(path)
    store.append({"id": "a", "v": 1})
    with path.open("ab") as fh:
        fh.write(b'{"id": "b", "v"')
    store = JsonlStore(path)
    assert store.done == {"a"} and path.read_bytes().endswith(b"}\n")
    store.append({"id": "b", "v": 2})
    assert [r["id"] for r in read_rows(path)] == ["a", "b"]
    with pytest.raises(ValueError):
        store.append({"id": "a", "v": 3})


def test_retry_errors_drops_failed_rows_atomically(tmp_path):
    path = tmp_path / "x.jsonl"
    store = JsonlStore(path)
    store.append({"id": "a", "error": None})
    store.append({"id": "b", "error": "boom"})
    store = JsonlStore(path, drop_errors=True)
    assert store.done == {"a"} and [r["id"] for r in read_rows(path)] == ["a"]
