"""A pool of parse worker processes (``python -m orig_local.retrieval.parse_worker``).

Parsing runs in worker processes for two reasons measured on hostile pages: a 4.5 MB page of
150k paragraphs kept trafilatura busy for 93 s, and a thread cannot be stopped, only a process
can; and extraction in a thread holds the GIL for seconds, stalling the event loop. A worker that
overruns the deadline is killed and replaced. Limits on size or element count alone would not
bound time (trafilatura's cost depends on the tree's shape, not only its size) and would not free
the event loop. A worker costs one fork from a preloaded server (a few ms, once) and ~1 ms of
pickling per page.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import threading
import time
from typing import Any

from orig_local.retrieval import parse_worker
from orig_local.retrieval.base import FetchFailure, Page
from orig_local.retrieval.config import ReaderConfig
from orig_local.retrieval.httpfetch import RawResponse
from orig_local.retrieval.parse_worker import read_frame, write_frame


class _Worker:
    """One ``parse_worker`` process. Talks through pipes with blocking calls, which
    :class:`ParseWorkers` makes from threads under a deadline."""

    def __init__(self, args: tuple[str, ...] = ()):
        import subprocess
        import sys
        from pathlib import Path

        env = dict(os.environ)
        root = str(Path(parse_worker.__file__).resolve().parents[2])  # so `-m` finds this copy
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "orig_local.retrieval.parse_worker", *args], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, close_fds=True)
        self.ready = False

    def call(self, request: Any) -> Any:
        self.wait_ready()
        assert self.process.stdin is not None and self.process.stdout is not None  # both are PIPEs
        write_frame(self.process.stdin, request)
        return read_frame(self.process.stdout)

    def wait_ready(self) -> None:
        if not self.ready:
            assert self.process.stdout is not None
            if read_frame(self.process.stdout) != "ready":
                raise EOFError("parse worker did not start")
            self.ready = True

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait(timeout=5)
        for pipe in (self.process.stdin, self.process.stdout):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


class ParseTimeout(Exception):
    pass


class ParseWorkers:
    """Up to ``size`` parse processes (``python -m orig_local.retrieval.parse_worker``),
    started on demand and reused. :meth:`run` waits for a free worker and for its answer until
    a deadline; a worker past the deadline is killed and a replacement is started at once, so
    the next page does not pay its start-up (~0.5 s, mostly importing trafilatura).

    Plain subprocesses rather than ``multiprocessing``: no fork of this threaded process, and no
    re-import of the user's ``__main__`` script in every worker. Loop-independent (threads and
    pipes), so one pool can serve several event loops in turn."""

    STARTUP_S = 30.0  # longest wait for a worker's start-up (importing), apart from any deadline

    def __init__(self, size: int, *, images: bool = False, memory_mb: int | None = None):
        """``images``: workers that decode images (``parse_worker --images``) instead of pages.
        ``memory_mb``: heap each page worker may grow by past its start (``reader.worker_memory_mb``)."""
        import weakref

        self.size = max(1, size)
        self._args: tuple[str, ...] = ("--images",) if images else (
            (f"--memory-mb={memory_mb}",) if memory_mb else ())
        self._idle: list[_Worker] = []
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._free = threading.BoundedSemaphore(self.size)
        self._closed = False  # after close(): no replacement workers (nobody would stop them)
        # a pool dropped without close() (a fetcher nobody closed) still stops its processes
        weakref.finalize(self, ParseWorkers._kill_all, self._all)

    @staticmethod
    def _kill_all(workers: list[_Worker]) -> None:
        for worker in list(workers):
            worker.kill()

    def warm(self) -> None:
        """Start one worker and wait until it is ready (blocking; call from a thread)."""
        worker = self._take()
        try:
            worker.wait_ready()
        except (EOFError, OSError):
            self._discard(worker)
            raise
        self._give_back(worker)

    def prestart(self) -> None:
        """Start one worker without waiting for it (so its start-up overlaps a download), unless
        one is already there. Non-blocking: the process imports in the background."""
        with self._lock:
            if not self._all and not self._closed:
                worker = _Worker(self._args)
                self._all.append(worker)
                self._idle.append(worker)

    def _pop_idle(self) -> _Worker | None:
        """A live idle worker (dead ones are dropped), or None. The caller holds the lock."""
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            self._all.remove(worker)
        return None

    def _take_idle(self) -> _Worker | None:
        with self._lock:
            return self._pop_idle()

    def _take(self) -> _Worker:
        """An idle worker, else a newly started one (blocking: call from a thread)."""
        with self._lock:
            worker = self._pop_idle()
            if worker is None:
                worker = _Worker(self._args)
                self._all.append(worker)
            return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(worker)
                return
        worker.kill()  # the pool was closed meanwhile

    def _discard(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
            if not self._closed and len(self._all) < self.size:  # a warm replacement for the next page
                replacement = _Worker(self._args)
                self._all.append(replacement)
                self._idle.append(replacement)

    async def run(self, raw: RawResponse, config: ReaderConfig, deadline: float,
                  query: str | None = None) -> Page | FetchFailure:
        """Parse one page in a worker; raise :class:`ParseTimeout` past ``deadline`` (a worker
        still starting, e.g. the replacement of one killed a moment ago, is waited for apart)."""
        return await self.submit((raw, config, query), raw.url, deadline, startup_s=self.STARTUP_S)

    async def submit(self, request: Any, url: str, deadline: float, startup_s: float = 0.0) -> Any:
        """Send ``request`` to a worker and return its answer; a worker that dies is
        ``FetchFailure(decode_error)`` for ``url``; past ``deadline`` it is killed and
        :class:`ParseTimeout` raised. ``startup_s``: up to this long, a worker still starting
        (importing) is waited for outside the deadline (its start-up is the pool's cost, not
        this request's); 0 counts the start-up against the deadline."""
        # a thread-level slot, polled: an asyncio semaphore would tie the pool to one loop, and a
        # blocking acquire in a thread could not be abandoned at the deadline without leaking it
        while not self._free.acquire(blocking=False):
            if time.monotonic() >= deadline:
                raise ParseTimeout()
            await asyncio.sleep(0.005)
        try:
            worker = self._take_idle()
            if worker is None:
                worker = await asyncio.to_thread(self._take)  # a start blocks
            if startup_s and not worker.ready:
                deadline += await self._wait_started(worker, startup_s)
            task = asyncio.ensure_future(asyncio.to_thread(worker.call, request))
            try:
                result = await asyncio.wait_for(asyncio.shield(task), max(0.0, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                # kill first: that ends the blocked read in the thread, then the slot is free
                await asyncio.to_thread(self._discard, worker)
                await asyncio.gather(task, return_exceptions=True)
                raise ParseTimeout() from None
            except (EOFError, OSError, pickle.UnpicklingError) as exc:  # the worker died
                await asyncio.to_thread(self._discard, worker)
                return FetchFailure(url=url, kind="decode_error", detail=f"worker process died: {exc!r}")
            except BaseException:  # cancelled by the caller: the worker may still be busy
                self._discard(worker)
                raise
            self._give_back(worker)
            return result
        finally:
            self._free.release()

    async def _wait_started(self, worker: _Worker, limit_s: float) -> float:
        """Seconds spent waiting for ``worker`` to be ready; ParseTimeout after ``limit_s``."""
        start = time.monotonic()
        task = asyncio.ensure_future(asyncio.to_thread(worker.wait_ready))
        try:
            await asyncio.wait_for(asyncio.shield(task), limit_s)
        except (asyncio.TimeoutError, EOFError, OSError) as exc:
            await asyncio.to_thread(self._discard, worker)
            await asyncio.gather(task, return_exceptions=True)
            raise ParseTimeout() from exc
        return time.monotonic() - start

    def close(self) -> None:
        with self._lock:
            self._closed = True
            workers, self._all, self._idle = self._all, [], []
        for worker in workers:
            worker.kill()

