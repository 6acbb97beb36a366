"""The servers a study starts die with it: a stand-in server that ignores SIGTERM during
start-up and spawns children (one of them leaving the process group) is gone, whole tree,
after the study is SIGKILLed while the server starts, and after a start-up that times out."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orig_local.llm.local_server import ServerProcess, ServerStartError, free_port
from orig_local.study.guard import GRACE_ENV, PARENT_ENV

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux only")]

STANDIN = Path(__file__).with_name("stubborn_server_standin.py")
ROOT = Path(__file__).resolve().parents[1]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:].split()[0] != b"Z"  # a zombie is dead, awaiting its reaper


def _wait_for_pids(path: Path, timeout_s: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return json.loads(path.read_text().splitlines()[0])
        time.sleep(0.1)
    raise AssertionError("the stand-in server never started its children")


def _all_gone(pids, timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [p for p in pids if _alive(p)]
        if not left:
            return []
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


def _kill_leftovers(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


STUDY = """
import os, sys
from orig_local.llm.local_server import ServerProcess, free_port
env = dict(os.environ, {parent}=str(os.getpid()))
command = [sys.executable, "-m", "orig_local.study.guard", sys.executable, {standin!r}]
ServerProcess(command, host="127.0.0.1", port=free_port(), model="m", env=env, startup_timeout_s=600,
              log_path={log!r}).start()
"""


def test_a_study_killed_during_server_start_up_leaves_no_process(tmp_path):
    pids_file = tmp_path / "pids.jsonl"
    env = dict(os.environ, STUBBORN_PIDS=str(pids_file), PYTHONPATH=str(ROOT), **{GRACE_ENV: "2"})
    # a study process that starts its server as StudyServer.start does (through the guard)
    study = subprocess.Popen([sys.executable, "-c", STUDY.format(parent=PARENT_ENV, standin=str(STANDIN),
                                                                   log=str(tmp_path / "server.log"))], env=env)
    try:
        pids = _wait_for_pids(pids_file)
    except BaseException:
        study.kill()  # its guard takes the server down
        raise
    guard = int(subprocess.run(["ps", "-o", "ppid=", "-p", str(pids["server"])], capture_output=True,
                               text=True).stdout.strip())
    everyone = [guard, *pids.values()]
    try:
        assert all(_alive(p) for p in everyone)
        study.kill()  # SIGKILL: no finally, no signal handler of the study runs
        study.wait()
        left = _all_gone(everyone, timeout_s=30)
        assert not left, f"still running after the study was SIGKILLed: {left} of {pids} (guard {guard})"
    finally:
        study.kill()
        _kill_leftovers(everyone)


def test_a_server_that_does_not_start_in_time_is_stopped_whole(tmp_path, monkeypatch):
    pids_file = tmp_path / "pids.jsonl"
    env = dict(os.environ, STUBBORN_PIDS=str(pids_file), PYTHONPATH=str(ROOT),
               **{GRACE_ENV: "1", PARENT_ENV: str(os.getpid())})
    server = ServerProcess([sys.executable, "-m", "orig_local.study.guard", sys.executable, str(STANDIN)],
                           host="127.0.0.1", port=free_port(), model="m", env=env, startup_timeout_s=8,
                           log_path=tmp_path / "server.log")
    with pytest.raises(ServerStartError, match="not healthy after 8s"):
        server.start()  # stops the server before it raises
    pids = _wait_for_pids(pids_file, timeout_s=1)
    try:
        assert not _all_gone(list(pids.values()), timeout_s=15)
    finally:
        _kill_leftovers(pids.values())
