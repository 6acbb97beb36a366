"""Bounded memory and a free event loop at scale: the scripted/simulated backends do not keep
every request (they back dry runs, cost plans and the demo over thousands of prompts), cache
writes leave the event loop, and the cache file survives a SIGKILL mid-write."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import weakref
from pathlib import Path

import pytest
from PIL import Image

from orig_local.cache import DiskCache
from orig_local.llm import ChatConfig, make_chat_model, user
from orig_local.llm.scripted import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[1]


def test_scripted_backends_keep_only_the_latest_requests():
    for backend in ("scripted", "simulated"):
        model = make_chat_model(ChatConfig(backend=backend, cache=False), replies=["ok"], cycle=True) \
            if backend == "scripted" else make_chat_model(ChatConfig(backend=backend, cache=False))
        if backend == "simulated":  # its responder answers agent stages; any reply will do here
            model.replies = ["ok"]
        async def run(model=model):
            first = Image.new("RGB", (128, 128), (1, 2, 3))
            await model.chat([user(first, "q0")])
            for i in range(1, 600):
                await model.chat([user(Image.new("RGB", (128, 128), (i % 256, 0, 0)), f"q{i}")])
            return weakref.ref(first)

        alive = asyncio.run(run())
        gc.collect()
        assert model.calls == 600
        assert model.keep_requests <= len(model.requests) <= 2 * model.keep_requests
        assert model.requests[-1]["messages"][0].text == "q599"  # the latest are the ones kept
        assert alive() is None, f"{backend}: the first request's image is still held"


def test_chat_cache_writes_run_off_the_event_loop(tmp_path, monkeypatch):
    threads = []
    real = DiskCache.set

    def recording(self, key, value):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(self, key, value)

    monkeypatch.setattr(DiskCache, "set", recording)
    model = ScriptedChatModel(ChatConfig(backend="scripted"), cache=DiskCache(tmp_path / "c.sqlite", "chat"),
                              replies=["a", "b"])

    async def run():
        return [await model.chat([user("x")]), await model.chat([user("x")])]

    first, again = asyncio.run(run())
    assert threads == [False]  # one write, in a worker thread; the repeat is a hit
    assert (first.cached, again.cached, again.text) == (False, True, "a")
    assert len(DiskCache(tmp_path / "c.sqlite", "chat")) == 1  # committed: another connection sees it


WRITER = """
import sys
from orig_local.cache import DiskCache
cache = DiskCache(sys.argv[1], "chat")
for i in range(300):
    cache.set(f"k{i}", {"text": "x" * 2000, "i": i})
print("committed", flush=True)
i = 300
while True:  # killed somewhere in here
    cache.set(f"k{i}", {"text": "y" * 2000, "i": i})
    i += 1
"""


def test_a_cache_killed_mid_write_keeps_every_committed_entry(tmp_path):
    path = tmp_path / "chat.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    try:
        assert proc.stdout.readline().strip() == "committed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    cache = DiskCache(path, "chat")
    assert all(cache.get(f"k{i}") == {"text": "x" * 2000, "i": i} for i in range(300))
    assert len(cache) >= 300
    cache.close()


@pytest.mark.parametrize("n", [1])
def test_make_chat_model_passes_keep_requests(n):
    model = make_chat_model(ChatConfig(backend="scripted"), replies=["ok"], keep_requests=n)
    assert model.keep_requests == n
