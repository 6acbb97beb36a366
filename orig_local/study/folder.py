"""What a study keeps in its folder beside the runs: the lock that lets one ``orig study``
process work on it, the event log ``study.jsonl``, and who holds the lock (for ``--status``)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from orig_local.errors import UsageError


class EventLog:
    """``<out>/study.jsonl``: one line per server start/stop and phase, for people and tests."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event: str, **fields) -> None:
        row = {"at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "event": event, "pid": os.getpid(), **fields}
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


class StudyLock:
    """One study process per study folder (a second one would run the same phases twice).
    An ``flock``: released by the kernel when the holder dies, however it dies."""

    def __init__(self, out: Path):
        self.path = out / "study.lock"
        self.fd: int | None = None

    def __enter__(self) -> StudyLock:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise UsageError(f"another `orig study` (pid {holder}) is running on {self.path.parent}",
                             hint="wait for it, or stop it first") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def running_study(out: Path) -> str | None:
    """'pid N: <what it is doing>' when a study holds ``out``'s lock, else None."""
    import fcntl

    path = out / "study.lock"
    if not path.is_file():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None  # nobody holds it
    except BlockingIOError:
        pid = path.read_text().strip() or "?"
    finally:
        os.close(fd)
    doing = "starting"
    events = out / "study.jsonl"
    if events.is_file():
        for line in reversed(events.read_text(encoding="utf-8").splitlines()):
            row = json.loads(line) if line.strip() else {}
            if row.get("event") == "phase_start":
                doing = f"{row['phase']} of {row['run']} since {row['at']}"
                break
            if row.get("event") in ("server_start", "server_ready"):
                doing = f"{row['role']} server {row['model']} ({row['event']} at {row['at']})"
                break
    return f"pid {pid}: {doing}"
