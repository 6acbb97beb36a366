"""The layout of a run folder, and reading a phase's rows across shard files.

::

    runs/X/
      run.json                 what was run (benchmark, data, condition, models, label)
      config.yaml              the resolved config of the last invocation
      config.<phase>.yaml      the resolved config that ran each phase (judge: config.judge-<name>.yaml)
      configs/<start>-<phases>.yaml   every invocation's resolved config
      agent.jsonl              one row per prompt: final prompt, references, stage totals
      generate.jsonl           one row per prompt: image file, seed, seconds
      judge.jsonl              one row per prompt: every question's verdict (judge-<name>.jsonl
                               for other judges)
      retrieval.jsonl          one row per prompt: every gold fact's Align verdict (Eq. 12)
      <phase>.shard-I-of-N.jsonl   rows written by shard I (``orig merge`` folds them in)
      <phase>.corrupt.jsonl    corrupt lines moved out of <phase>.jsonl (with line numbers)
      .lock                    advisory lock: one writer per run folder (per shard when sharded)
      images/<id>.png  refs/<id>/<j>.png  evidence/<id>.json (+ images)  traces/<id>.json
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orig_local.errors import DataError, PreflightError
from orig_local.evaluation.jsonl_store import (
    DISK_ERRNOS,
    DiskWriteError,
    read_rows,
    scan_rows,
    status_rank,
    write_bytes_atomic,
)
from orig_local.evaluation.phases import PHASE_NAMES
from orig_local.evaluation.phases import PHASES as PHASE_SPECS

log = logging.getLogger(__name__)

PHASES = PHASE_NAMES  # each phase writes <phase>.jsonl (judge phases: <phase>-<judge name>.jsonl)
_SHARD = re.compile(r"^(?P<base>.+)\.shard-(?P<i>\d+)-of-(?P<n>\d+)\.jsonl$")


def phase_file(run_dir: Path, phase: str, judge_name: str | None = None,
               shard: tuple[int, int] | None = None) -> Path:
    base = phase
    if judge_name and PHASE_SPECS[phase].needs == "judge":
        base = f"{phase}-{judge_name}"
    if shard and shard[1] > 1:
        return Path(run_dir) / f"{base}.shard-{shard[0]}-of-{shard[1]}.jsonl"
    return Path(run_dir) / f"{base}.jsonl"


def shard_files(run_dir: Path, base: str) -> list[Path]:
    return sorted(p for p in Path(run_dir).glob(f"{base}.shard-*-of-*.jsonl")
                  if (m := _SHARD.match(p.name)) and m.group("base") == base)


def read_phase(run_dir: Path, phase: str, judge_name: str | None = None) -> dict[str, dict]:
    """id -> row over the main file and every shard file. Where an id has several rows, the one
    with the best status wins (ok, then degraded, then failed; the first of equals), the same rule
    by which :class:`JsonlStore` counts the item as done: a later phase must read the row that made
    the item count as done, not an earlier failed one."""
    main = phase_file(run_dir, phase, judge_name)
    rows: dict[str, dict] = {}
    for path in [main] + shard_files(run_dir, main.name[: -len(".jsonl")]):
        for row in read_rows(path):
            held = rows.get(row["id"])
            if held is None or status_rank(row) < status_rank(held):
                rows[row["id"]] = row
    return rows


def phase_files(run_dir: Path) -> list[Path]:
    """Every phase result file in ``run_dir`` (main and shard files, not the corrupt-line files)."""
    return sorted(p for p in Path(run_dir).glob("*.jsonl")
                  if not p.name.endswith(".corrupt.jsonl") and p.name.split(".")[0].split("-")[0] in PHASES)


def check_run_dir(run_dir: str | Path) -> Path:
    """A run folder that exists and holds results (run.json or a phase file), else a DataError.
    For commands that read runs (``orig report``, ``orig merge``): they must not create one."""
    path = Path(run_dir)
    if not path.is_dir():
        raise DataError(f"no run folder at {path}", hint="pass the --out folder of an `orig eval` run")
    if not (path / "run.json").is_file() and not phase_files(path):
        raise DataError(f"{path} holds no run results (no run.json, no <phase>.jsonl)",
                        hint="pass the --out folder of an `orig eval` run")
    return path


def corrupt_counts(run_dir: str | Path) -> dict[str, int]:
    """Corrupt lines per phase file still in place (readers skip them; resuming moves them to
    ``<phase>.corrupt.jsonl``), plus lines already moved (key ``<name>.corrupt.jsonl``)."""
    counts: dict[str, int] = {}
    for path in phase_files(Path(run_dir)):
        n = len(scan_rows(path).corrupt)
        if n:
            counts[path.name] = n
    for path in sorted(Path(run_dir).glob("*.corrupt.jsonl")):
        counts[path.name] = sum(1 for ln in path.read_bytes().splitlines() if ln.strip())
    return counts


def judge_names(run_dir: Path) -> list[str | None]:
    """Judges with results in this run: None (judge.jsonl) and each judge-<name>."""
    names: list[str | None] = []
    for p in sorted(Path(run_dir).glob("judge*.jsonl")):
        if p.name.endswith(".corrupt.jsonl"):
            continue
        shard = _SHARD.match(p.name)
        base = shard.group("base") if shard else p.stem
        name = None if base == "judge" else base.removeprefix("judge-")
        if name not in names:
            names.append(name)
    return names


def read_meta(run_dir: Path) -> dict:
    path = Path(run_dir) / "run.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def data_path(meta: dict) -> str | None:
    """The run's benchmark data as an absolute path: run.json's ``data`` when absolute, else
    the resolved path its data identity recorded (older runs stored ``--data`` as typed)."""
    data = meta.get("data")
    ident = (meta.get("benchmark_identity") or {}).get("data")
    if data and Path(str(data)).is_absolute():
        return str(data)
    if ident and Path(str(ident)).is_absolute():
        return str(ident)
    return str(data) if data else None


def write_meta_file(run_dir: Path, meta: dict) -> None:
    """run.json, atomically (shard processes may write it at the same time)."""
    # temp file + fsync + rename; a full disk removes the temp file and names run.json
    write_bytes_atomic(Path(run_dir) / "run.json", (json.dumps(meta, indent=2, ensure_ascii=False) + "\n").encode())


# --------------------------------------------------------------------------- one writer per folder


class RunFolderBusy(PreflightError):
    """Another process is writing this run folder (or this shard of it)."""


def _lock_names(shard: tuple[int, int] | None) -> list[tuple[str, bool]]:
    """(lock file, exclusive) pairs: a whole-folder writer holds ``.lock`` exclusively; shard i of
    n holds it shared (shards run side by side) and ``.lock-shard-i-of-n`` exclusively."""
    if shard and shard[1] > 1:
        return [(".lock", False), (f".lock-shard-{shard[0]}-of-{shard[1]}", True)]
    return [(".lock", True)]


def _busy(run_dir: Path, name: str) -> RunFolderBusy:
    holder = ""
    try:
        holder = (run_dir / name).read_text(encoding="utf-8").strip()
    except OSError:
        pass
    who = f" (pid {holder})" if holder.isdigit() else ""
    return RunFolderBusy(f"{run_dir} is in use by another orig process{who}",
                         hint="wait for it to finish, or pass another --out")


def check_not_held(run_dir: Path, shard: tuple[int, int] | None = None) -> None:
    """Preflight: raise RunFolderBusy if another process holds the folder; writes nothing."""
    import fcntl

    for name, exclusive in _lock_names(shard):
        path = Path(run_dir) / name
        if not path.is_file():
            continue
        with path.open("rb") as fh:
            try:
                fcntl.flock(fh, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _busy(Path(run_dir), name) from None
            except OSError:  # no locks on this filesystem: hold_run says so
                return
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def hold_run(run_dir: Path, shard: tuple[int, int] | None = None) -> Iterator[None]:
    """Advisory lock (``fcntl.flock``) on the run folder for the duration of a run: a second
    writer fails at once with :class:`RunFolderBusy`. Released when the process ends, however."""
    import fcntl

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    handles = []
    try:
        for name, exclusive in _lock_names(shard):
            fd = os.open(run_dir / name, os.O_RDWR | os.O_CREAT, 0o644)
            handles.append(fd)
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
            except BlockingIOError:
                raise _busy(run_dir, name) from None
            except OSError as exc:  # a filesystem without locks (some network mounts): go on, say so
                log.warning("%s: cannot lock (%s); make sure no other process writes this run folder", run_dir, exc)
                continue
            if exclusive:
                _write_pid(run_dir / name, fd)
        yield
    finally:
        for fd in handles:
            os.close(fd)  # closing drops the lock


def _write_pid(path: Path, fd: int) -> None:
    """The holder's pid in the lock file (shown to a second writer); a full disk is one line."""
    try:
        pid = str(os.getpid()).encode()
        os.pwrite(fd, pid, 0)
        os.ftruncate(fd, len(pid))
    except OSError as exc:
        if exc.errno in DISK_ERRNOS:
            raise DiskWriteError(f"cannot write the lock file {path}: {exc.strerror or exc}",
                                 hint="free space, then rerun the same command") from exc
        raise


def run_label(run_dir: Path) -> str:
    meta = read_meta(run_dir)
    return meta.get("label") or Path(run_dir).resolve().name


def backbone_size(preset: str | None) -> float | None:
    """72 from 'qwen2.5-vl-72b' (the backbone-scale plot's x axis); None if no size in it."""
    if not preset:
        return None
    m = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", preset.replace("_", "-"))
    return float(m.group(1)) if m else None
