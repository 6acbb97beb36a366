"""Append-only JSONL result files that survive being killed.

Every row is one line written with a single ``write`` of the whole line, flushed and
``fsync``-ed before the next item starts, so a kill can only leave a *partial last line*. On
open, such a tail (no newline, or not JSON) is cut off (the item simply runs again); a finished
id is never written twice. Rewrites (dropping error rows for a retry, merging shards) go
through write-to-temp-then-rename, so a file is always either the old or the new version.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Iterable, Iterator

log = logging.getLogger(__name__)


def _good_prefix(data: bytes) -> tuple[int, list[dict]]:
    """Length of the longest prefix of complete JSON lines, and their rows."""
    rows: list[dict] = []
    end = 0
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl == -1:
            break
        line = data[pos:nl]
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a corrupt line: keep only what precedes it
        end = pos = nl + 1
    return end, rows


def read_rows(path: str | Path) -> list[dict]:
    """Complete rows of a JSONL file (a torn last line is ignored, the file is not touched)."""
    path = Path(path)
    if not path.is_file():
        return []
    return _good_prefix(path.read_bytes())[1]


def write_rows_atomic(path: str | Path, rows: Iterable[dict]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # per-process temp name: shard processes starting together may rewrite the same main file
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


class JsonlStore:
    """One phase's result file: ``done`` ids, ``rows`` and a crash-safe :meth:`append`."""

    def __init__(self, path: str | Path, drop_errors: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = self.path.read_bytes() if self.path.is_file() else b""
        end, rows = _good_prefix(data)
        if end < len(data):
            log.warning("%s: cutting a torn/corrupt tail of %d bytes (a killed run); those items run again",
                        self.path, len(data) - end)
            with self.path.open("r+b") as fh:
                fh.truncate(end)
                fh.flush()
                os.fsync(fh.fileno())
        # Last row wins if a file was ever hand-edited to hold an id twice.
        by_id: dict[str, dict] = {}
        for row in rows:
            by_id[row["id"]] = row
        if drop_errors and any(r.get("error") for r in by_id.values()):
            by_id = {k: r for k, r in by_id.items() if not r.get("error")}
            write_rows_atomic(self.path, by_id.values())
        elif len(by_id) != len(rows):
            write_rows_atomic(self.path, by_id.values())
        self._rows = by_id

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
        line = (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
        # O_APPEND + one write per row: concurrent shards never interleave within a line.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        self._rows[row["id"]] = row

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows())

    def __len__(self) -> int:
        return len(self._rows)
