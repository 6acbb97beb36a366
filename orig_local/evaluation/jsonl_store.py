"""Append-only JSONL result files that survive being killed, and lose nothing when damaged.

Every row is one line written with a single ``write`` of the whole line, flushed and
``fsync``-ed before the next row is written, so a kill can only leave a *partial last line*. On
open, such a tail (bytes after the last newline that are not a whole row) is cut off (the item
simply runs again); a whole row that only lacks its newline is kept. A finished id is never
written twice, and an id found twice is reported, never resolved by deleting a row. A corrupt line anywhere else (a disk error, a hand edit) is
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
    if scan.torn.strip() and _parse(scan.torn) is not None:  # a whole row that only lacks its newline
        lines.append(scan.torn)
        scan.torn = b""
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


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    """A small file (run.json) via temp file + fsync + rename; a full disk: DiskWriteError, no temp left."""
    return _write_atomic(Path(path), [data])


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
    return stored_status(row) in set(statuses)


_STATUSES = ("ok", "degraded", "failed")


def stored_status(row: dict) -> str:
    """ok | degraded | failed of a stored row: rows from before statuses existed are failed iff
    they carry an error; a status this version does not know never counts as success."""
    status = row.get("status")
    if status in _STATUSES:
        return status
    return "failed" if status is not None or row.get("error") else "ok"


def status_rank(row: dict) -> int:
    """0 ok, 1 degraded, 2 failed (:func:`stored_status`): of several rows for one id, the lowest
    is the one that counts (the store's done status, ``read_phase``, ``orig merge``)."""
    return _STATUSES.index(stored_status(row))


def iter_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """(1-based line number, line without its newline, whether a newline ended it), streamed."""
    with path.open("rb") as fh:
        for number, line in enumerate(fh, 1):
            complete = line.endswith(b"\n")
            yield number, line[:-1] if complete else line, complete


def _parse(line: bytes) -> dict | None:
    try:
        row = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    return row if isinstance(row, dict) and "id" in row else None


def parse_line(line: bytes) -> dict | None:
    """One line as a row: a JSON object with an ``id``, else None (corrupt, or a torn tail)."""
    return _parse(line)


def iter_rows(path: str | Path) -> Iterator[dict]:
    """Valid rows of a JSONL file one at a time (a report's memory does not grow with the
    file); corrupt lines and a torn tail are skipped, a complete last row without a newline is
    read. Not modified."""
    path = Path(path)
    if not path.is_file():
        return
    for _, line, _complete in iter_lines(path):
        if line.strip() and (row := _parse(line)) is not None:
            yield row


class JsonlStore:
    """One phase's result file: the ``done`` ids and their statuses, and a crash-safe :meth:`append`.

    Only ids and statuses stay in memory (a resume at 100k rows does not hold 100k rows); the
    rows themselves are read from disk when asked for (:meth:`rows`). ``retry``: statuses whose
    rows are dropped on open so those items run again (``{"failed"}`` for ``--retry-errors``,
    plus ``"degraded"`` for ``--retry-degraded``); ``drop_errors=True`` is ``retry={"failed"}``.
    An ok row is never dropped. An id with more than one row (a hand edit, a copied file) is
    reported and kept as it is; the item counts as done with its best status. ``corrupt``
    counts lines moved to the corrupt file on open; ``duplicates`` lists ids with several rows."""

    def __init__(self, path: str | Path, drop_errors: bool = False, retry: Iterable[str] = ()):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        retry = (set(retry) | ({"failed"} if drop_errors else set())) - {"ok"}
        self._status: dict[str, str] = {}
        self.duplicates: list[str] = []
        corrupt, drop, torn, unterminated = self._scan(retry)
        self.corrupt = len(corrupt)
        if corrupt:
            self._move_corrupt(corrupt)
        if corrupt or len(drop) > bool(torn):
            skip = drop | {n for n, _ in corrupt}
            _write_atomic(self.path, (line + b"\n" for n, line, _ in iter_lines(self.path)
                                      if n not in skip and line.strip()))
        elif torn:
            log.warning("%s: cutting a torn last line of %d bytes (a killed run); that item runs again",
                        self.path, len(torn))
            with self.path.open("r+b") as fh:
                fh.truncate(self.path.stat().st_size - len(torn))
                fh.flush()
                os.fsync(fh.fileno())
        elif unterminated:  # a whole row without its newline: keep it, end the line
            _append_bytes(self.path, b"\n")
        if len(drop) > bool(torn):
            log.info("%s: %d row(s) with status %s dropped to run again", self.path, len(drop) - bool(torn),
                     "/".join(sorted(retry)))
        if self.duplicates:
            log.warning("%s: %d id(s) have more than one row (%s); all are kept (none is deleted), the item "
                        "counts as done with its best status, and `orig report` lists them as data errors",
                        self.path, len(self.duplicates), ", ".join(self.duplicates[:5]))

    def _scan(self, retry: set[str]) -> tuple[list[tuple[int, str]], set[int], bytes, bool]:
        """One streamed pass: statuses by id; corrupt lines; line numbers to drop; torn tail."""
        corrupt: list[tuple[int, str]] = []
        drop: set[int] = set()
        torn, unterminated = b"", False
        if not self.path.is_file():
            return corrupt, drop, torn, unterminated
        seen: set[str] = set()
        for number, line, complete in iter_lines(self.path):
            if not line.strip():
                continue
            row = _parse(line)
            if row is None:
                if complete:
                    corrupt.append((number, line.decode("utf-8", errors="replace")))
                else:
                    torn = line
                    drop.add(number)  # a rewrite leaves it out too
                continue
            unterminated = not complete
            rid, status = str(row["id"]), stored_status(row)
            if rid in seen and rid not in self.duplicates:
                self.duplicates.append(rid)
            seen.add(rid)
            if status in retry:
                drop.add(number)
                continue
            if rid not in self._status or _STATUSES.index(status) < _STATUSES.index(self._status[rid]):
                self._status[rid] = status
        return corrupt, drop, torn, unterminated

    def _move_corrupt(self, corrupt: list[tuple[int, str]]) -> None:
        target = corrupt_path(self.path)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _append_bytes(target, b"".join(_line({"file": self.path.name, "line": n, "text": text, "moved_at": stamp})
                                       for n, text in corrupt))
        log.warning("%s: %d corrupt line(s) (line %s) moved to %s; every valid row is kept and those items "
                    "run again", self.path, len(corrupt), ", ".join(str(n) for n, _ in corrupt[:10]), target)

    @property
    def done(self) -> set[str]:
        return set(self._status)

    @property
    def statuses(self) -> dict[str, str]:
        """id -> ok | degraded | failed of every finished item (a copy)."""
        return dict(self._status)

    def status(self, id: str) -> str | None:
        """The item's stored status, None when it has no row."""
        return self._status.get(id)

    def rows(self) -> list[dict]:
        """Every valid row, read from disk now (file order)."""
        return list(iter_rows(self.path))

    def append(self, row: dict[str, Any]) -> None:
        if row["id"] in self._status:
            raise ValueError(f"{self.path}: {row['id']} already written")
        _append_bytes(self.path, _line(row))
        self._status[row["id"]] = stored_status(row)

    def __iter__(self) -> Iterator[dict]:
        return iter_rows(self.path)

    def __len__(self) -> int:
        return len(self._status)
