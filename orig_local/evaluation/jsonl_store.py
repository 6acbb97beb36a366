"""Append-only JSONL result files that survive being killed, and lose nothing when damaged.

Every row is one line written with a single ``write`` of the whole line, flushed and
``fsync``-ed before the next item starts, so a kill can only leave a *partial last line*. On
open, such a tail (bytes after the last newline) is cut off (the item simply runs again); a
finished id is never written twice. A corrupt line anywhere else (a disk error, a hand edit) is
*moved* to ``<name>.corrupt.jsonl`` with its line number and every valid row is kept, byte for
byte. Rewrites (dropping failed rows for a retry, moving corrupt lines, merging shards) go
through write-to-temp-then-rename, so a file is always either the old or the new version.
A full disk ends in one :class:`DiskWriteError` naming the file; the rows before it are intact.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orig_local.errors import OrigError

log = logging.getLogger(__name__)

# Errors that say the disk, not the item, is the problem: stop at once (rows so far are intact).
DISK_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO}


class DiskWriteError(OrigError, OSError):
    """A result or asset could not be written (disk full, read-only, quota)."""

    exit_code = 1


def _disk_error(path: Path, exc: OSError) -> DiskWriteError:
    return DiskWriteError(f"cannot write {path}: {exc.strerror or exc}",
                          hint="rows already written are intact; free space, then rerun the same command to resume")


@dataclass
class RowScan:
    """A JSONL file read leniently: its valid rows (with their exact bytes), the corrupt lines
    (1-based line number, text) and the torn tail (bytes after the last newline)."""

    rows: list[dict] = field(default_factory=list)
    raw: list[bytes] = field(default_factory=list)  # each valid row's line, newline included
    corrupt: list[tuple[int, str]] = field(default_factory=list)
    torn: bytes = b""


def scan_bytes(data: bytes) -> RowScan:
    scan = RowScan()
    lines = data.split(b"\n")
    scan.torn = lines.pop()  # b"" when the file ends with a newline
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError):
            row = None
        if not isinstance(row, dict) or "id" not in row:
            scan.corrupt.append((number, line.decode("utf-8", errors="replace")))
            continue
        scan.rows.append(row)
        scan.raw.append(line + b"\n")
    return scan


def scan_rows(path: str | Path) -> RowScan:
    """Scan ``path`` (missing file: nothing). The file is not touched."""
    path = Path(path)
    return scan_bytes(path.read_bytes()) if path.is_file() else RowScan()


def read_rows(path: str | Path) -> list[dict]:
    """Complete, valid rows of a JSONL file; corrupt lines are skipped with a warning that counts
    them (a torn last line is ignored silently: a run in progress or killed). Not modified."""
    scan = scan_rows(path)
    if scan.corrupt:
        log.warning("%s: %d corrupt line(s) skipped (line %s); %d valid row(s) read. Resuming the run "
                    "moves them to %s", path, len(scan.corrupt), ", ".join(str(n) for n, _ in scan.corrupt[:5]),
                    len(scan.rows), corrupt_path(Path(path)).name)
    return scan.rows


def corrupt_path(path: Path) -> Path:
    """Where the corrupt lines of ``x.jsonl`` go: ``x.corrupt.jsonl`` beside it."""
    return path.with_name(path.name[: -len(".jsonl")] + ".corrupt.jsonl" if path.name.endswith(".jsonl")
                          else path.name + ".corrupt.jsonl")


def _write_atomic(path: Path, lines: Iterable[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # per-process temp name: shard processes starting together may rewrite the same main file
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as fh:
            for line in lines:
                fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno in DISK_ERRNOS:
            raise _disk_error(path, exc) from exc
        raise
    return path


def _line(row: dict) -> bytes:
    return (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def write_rows_atomic(path: str | Path, rows: Iterable[dict]) -> Path:
    return _write_atomic(Path(path), (_line(r) for r in rows))


def _append_bytes(path: Path, data: bytes) -> None:
    """One ``write`` per line with O_APPEND (concurrent shards never interleave within a line),
    fsync-ed; on a disk error the partial line is cut again before raising."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    size = os.fstat(fd).st_size
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as exc:
        try:
            os.ftruncate(fd, size)
        except OSError:
            pass  # the torn tail is cut on the next open anyway
        if exc.errno in DISK_ERRNOS:
            raise _disk_error(path, exc) from exc
        raise
    finally:
        os.close(fd)


def row_failed(row: dict, statuses: Iterable[str]) -> bool:
    """Whether ``row``'s status is one of ``statuses`` (rows without one: failed iff error)."""
    status = row.get("status") or ("failed" if row.get("error") else "ok")
    return status in set(statuses)


class JsonlStore:
    """One phase's result file: ``done`` ids, ``rows`` and a crash-safe :meth:`append`.

    ``retry``: statuses whose rows are dropped on open so those items run again (``{"failed"}``
    for ``--retry-errors``, plus ``"degraded"`` for ``--retry-degraded``); ``drop_errors=True``
    is ``retry={"failed"}``. ``corrupt`` counts lines moved to the corrupt file on open."""

    def __init__(self, path: str | Path, drop_errors: bool = False, retry: Iterable[str] = ()):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        retry = set(retry) | ({"failed"} if drop_errors else set())
        scan = scan_rows(self.path)
        self.corrupt = len(scan.corrupt)
        if scan.corrupt:
            self._move_corrupt(scan.corrupt)
        # Last row wins if a file was ever hand-edited to hold an id twice.
        by_id: dict[str, tuple[dict, bytes]] = {}
        for row, raw in zip(scan.rows, scan.raw, strict=True):
            by_id.pop(row["id"], None)
            by_id[row["id"]] = (row, raw)
        dropped = [k for k, (r, _) in by_id.items() if retry and row_failed(r, retry)]
        for k in dropped:
            del by_id[k]
        if scan.corrupt or dropped or len(by_id) != len(scan.rows):
            _write_atomic(self.path, (raw for _, raw in by_id.values()))
        elif scan.torn:
            log.warning("%s: cutting a torn last line of %d bytes (a killed run); that item runs again",
                        self.path, len(scan.torn))
            with self.path.open("r+b") as fh:
                fh.truncate(self.path.stat().st_size - len(scan.torn))
                fh.flush()
                os.fsync(fh.fileno())
        if dropped:
            log.info("%s: %d row(s) with status %s dropped to run again", self.path, len(dropped),
                     "/".join(sorted(retry)))
        self._rows = {k: r for k, (r, _) in by_id.items()}

    def _move_corrupt(self, corrupt: list[tuple[int, str]]) -> None:
        target = corrupt_path(self.path)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _append_bytes(target, b"".join(_line({"file": self.path.name, "line": n, "text": text, "moved_at": stamp})
                                       for n, text in corrupt))
        log.warning("%s: %d corrupt line(s) (line %s) moved to %s; every valid row is kept and those items "
                    "run again", self.path, len(corrupt), ", ".join(str(n) for n, _ in corrupt[:10]), target)

    @property
    def done(self) -> set[str]:
        return set(self._rows)

    def rows(self) -> list[dict]:
        return list(self._rows.values())

    def get(self, id: str) -> dict | None:
        return self._rows.get(id)

    def append(self, row: dict[str, Any]) -> None:
        if row["id"] in self._rows:
            raise ValueError(f"{self.path}: {row['id']} already written")
        _append_bytes(self.path, _line(row))
        self._rows[row["id"]] = row

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self._rows)
