"""Live progress of a study phase where the user is looking (the study's terminal), not only in
the phase's log file: while ``orig eval --phase X`` runs as a child process, the study counts the
rows it appends to the phase file and prints ``items done/todo, rate, ETA`` every interval.

Counting reads only the bytes appended since the last look (a newline per row), so a
100k-row phase file costs nothing per tick."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


class RowCounter:
    """New rows (newline-terminated lines) appended to ``path`` since construction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.is_file() else 0
        self.rows = 0

    def poll(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:  # not created yet
            return self.rows
        self.offset += len(chunk)
        self.rows += chunk.count(b"\n")
        return self.rows


def progress_text(done: int, todo: int | None, seconds: float) -> str:
    """``12/60 items, 0.4 item/s, ETA 2 min`` (no ETA before the first row)."""
    total = f"/{todo}" if todo else ""
    text = f"{done}{total} items"
    if done and seconds > 0:
        rate = done / seconds
        text += f", {rate:.2g} item/s"
        if todo and todo > done:
            left = (todo - done) / rate
            text += f", ETA {_duration(left)}"
    return text


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def wait_with_progress(wait: Callable[[float], int | None], counter: RowCounter, todo: int | None,
                       echo: Callable[[str], None], label: str, interval_s: float) -> int:
    """Call ``wait(timeout)`` (None while the child runs) until it returns an exit status; every
    ``interval_s`` print ``label: <progress>`` when rows were added since the last line."""
    started = time.monotonic()
    shown = 0
    while True:
        rc = wait(interval_s)
        if rc is not None:
            return rc
        done = counter.poll()
        if done != shown:
            shown = done
            echo(f"      {label}: {progress_text(done, todo, time.monotonic() - started)}")
