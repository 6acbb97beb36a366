"""Rows are on disk the moment they exist: one slow item never holds back finished ones, a kill
loses only what was unfinished, and the phase keeps a bounded number of tasks alive."""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _eval_fakes import FakeAgent, make_mini_benchmark

from orig_local.evaluation.jsonl_store import read_rows
from orig_local.evaluation.loaders import load_benchmark
from orig_local.evaluation.phases.agent import run_agent_phase

WORKER = Path(__file__).parent / "eval_slow_first_worker.py"
N = 30


def _wait_rows(proc: subprocess.Popen, path: Path, k: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and len(read_rows(path)) >= k:
            return
        if proc.poll() is not None:
            pytest.fail(f"worker ended early: {proc.stderr.read().decode()[-2000:]}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"fewer than {k} rows on disk after {timeout} s")


def test_slow_first_item_does_not_hold_back_finished_rows_and_kill_resumes(tmp_path):
    bench = make_mini_benchmark(tmp_path / "bench", n=N)
    run = tmp_path / "run"
    out = run / "agent.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(WORKER), str(bench), str(run), "600"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        _wait_rows(proc, out, N - 1)  # every item but the stuck first one
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    before = out.read_bytes()
    ids = [r["id"] for r in read_rows(out)]
    assert "item_0" not in ids and sorted(ids) == sorted(f"item_{i}" for i in range(1, N))

    # resume: only the unfinished item runs, nothing is lost or written twice
    agent = FakeAgent()
    summary = run_agent_phase(load_benchmark("jsonl", bench), run, agent, progress=False)
    assert agent.calls == 1 and summary.ran == 1 and summary.skipped == N - 1
    after = out.read_bytes()
    assert after.startswith(before)  # the rows written before the kill are byte-identical
    rows = [json.loads(line) for line in after.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(f"item_{i}" for i in range(N))
    assert all(r["status"] == "ok" for r in rows)


def test_tasks_alive_stay_bounded_and_rows_follow_completion(tmp_path):
    bench = make_mini_benchmark(tmp_path / "bench", n=N)
    items = load_benchmark("jsonl", bench)
    alive: list[int] = []
    fake = FakeAgent()
    rows = tmp_path / "run" / "agent.jsonl"

    async def agent(item):
        # item_0 finishes only once every other item's row is on disk (not after a fixed delay,
        # which a loaded machine can outlast): a phase that appended in item order would hold
        # those rows back behind it, and fail the order check below after the 30 s bound
        alive.append(len(asyncio.all_tasks()))
        if item.id == "item_0":
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not (rows.is_file() and len(read_rows(rows)) >= N - 1):
                await asyncio.sleep(0.01)
        else:
            await asyncio.sleep(0.005)
        return fake(item)

    run_agent_phase(items, tmp_path / "run", agent, concurrency=3, progress=False)
    # the loop's own task + at most 2 x concurrency item tasks, whatever the item count
    assert max(alive) <= 1 + 2 * 3
    ids = [r["id"] for r in read_rows(tmp_path / "run" / "agent.jsonl")]
    assert len(ids) == N and ids[-1] == "item_0"  # the slow item came last, not first
