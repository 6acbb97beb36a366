"""A small on-disk key -> JSON cache (sqlite), shared by chat, search and judge calls.

Keys are hashes of canonical requests; values are JSON documents. sqlite gives atomic writes,
so a crash never leaves a half-written entry, and several processes can share one file.

Writes are not fsynced one by one (``synchronous=NORMAL`` in WAL mode: sqlite syncs at
checkpoints). A process killed at any point loses nothing it committed and never corrupts the
file; a power cut may lose the last few entries, which a cache can afford - each one is just
asked again. An fsync per entry cost 1-4 ms (more on network home folders) on the agent's event
loop. Async callers write through :meth:`aset`, which runs in a worker thread.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any


class DiskCache:
    def __init__(self, path: str | Path, namespace: str = "default"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.namespace = namespace
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # see the module docstring
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entries (ns TEXT, key TEXT, value TEXT, created REAL,"
            " PRIMARY KEY (ns, key))"
        )
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Any | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM entries WHERE ns=? AND key=?", (self.namespace, key)
            ).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return json.loads(row[0])

    def set(self, key: str, value: Any) -> None:
        blob = json.dumps(value, ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
                (self.namespace, key, blob, time.time()),
            )
            self._db.commit()

    async def aset(self, key: str, value: Any) -> None:
        """:meth:`set` off the event loop (serialising and committing are blocking work)."""
        import asyncio

        await asyncio.to_thread(self.set, key, value)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute(
                "SELECT COUNT(*) FROM entries WHERE ns=?", (self.namespace,)
            ).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
