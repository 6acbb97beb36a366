"""A full disk while writing the lock's pid, run.json or the report is one line, no traceback,
and leaves no temp file. /dev/full answers every write with ENOSPC, like a full disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _scale_runs import write_run  # noqa: E402

from orig_local.cli import main  # noqa: E402
from orig_local.evaluation.jsonl_store import DiskWriteError  # noqa: E402
from orig_local.evaluation.rundir import hold_run, write_meta_file  # noqa: E402

pytestmark = pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full to stand in for a full disk")


def test_lock_pid_on_a_full_disk(tmp_path, capsys):
    (tmp_path / ".lock").symlink_to("/dev/full")
    with pytest.raises(DiskWriteError, match="lock file"):
        with hold_run(tmp_path):
            pass
    # through the CLI: `orig merge` holds the lock of its output folder
    run = write_run(tmp_path / "runs" / "r", 3, images=False)
    (run / ".lock").symlink_to("/dev/full")
    assert main(["merge", str(run)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left" in err[0] and ".lock" in err[0], err


def test_run_json_on_a_full_disk_leaves_no_temp_file(tmp_path):
    tmp = tmp_path / f"run.json.{os.getpid()}.tmp"
    tmp.symlink_to("/dev/full")
    with pytest.raises(DiskWriteError, match="run.json"):
        write_meta_file(tmp_path, {"label": "x"})
    assert not tmp.exists() and not tmp.is_symlink() and not (tmp_path / "run.json").exists()
    write_meta_file(tmp_path, {"label": "x"})  # space again: written whole
    assert (tmp_path / "run.json").read_text().startswith("{")


def test_memory_error_is_one_line(monkeypatch, capsys):
    import orig_local.cli.report_cmd as report_cmd

    def boom(args):
        raise MemoryError()

    monkeypatch.setattr(report_cmd, "run", boom)
    assert main(["report", "nowhere"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0], err
