"""Judge benchmark: is the client the bottleneck at real image sizes?

The real ``openai`` backend and the real judge phase (``run_judge_phase``) against a loopback
OpenAI-compatible stub that answers every request at once (its own process, so it does not share
this process's GIL). Each item: one generated 1328x1328 PNG (photo-like noise, ~2-3 MB like a
diffusion model's output), ``--text`` text questions and ``--image`` image questions, each image
question with a 1024x768 JPEG reference drawn from a pool shared by all items (as FIG-Eval's
references are). Chat cache off: every question is a request.

For each phase concurrency (items in flight) it prints items/s, client CPU per item, and the
process's resident memory (peak during the round, above the figure before the first round).
Goals (issue 20): >= 20 items/s, throughput growing with concurrency, RSS flat in concurrency.
Items per client CPU-second says what the client sustains per core when the machine is shared
(items/s then also pays for the stub server and everyone else's load). Memory: an item holds
its generated image's base64 (~4/3 of its file) while its questions are asked, and only items
the chat layer has request slots for hold one (``--chat-concurrency`` requests: 64 / 8
questions = 8 items; 32, the default of ``judge.concurrency``, = 4), so RSS stops growing with
the phase's concurrency there; request bodies add nothing.

    .venv/bin/python benchmarks/bench_judge.py [--items 120] [--concurrency 1,4,16] [--rounds 2]
                                               [--chat-concurrency 64]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import _bench  # noqa: F401  (puts this checkout on sys.path)
import numpy as np
from _bench import Samples, figure, footer, header
from bench_chat import stub_server
from PIL import Image

from orig_local.evaluation.items import BenchmarkItem, Question
from orig_local.evaluation.jsonl_store import JsonlStore
from orig_local.evaluation.judge import Judge
from orig_local.evaluation.phases.agent import run_agent_phase
from orig_local.evaluation.phases.common import AgentOutput
from orig_local.evaluation.phases.judge import run_judge_phase
from orig_local.llm import ChatConfig, make_chat_model


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) of another process so far."""
    import os

    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


class PeakRSS:
    """Samples this process's RSS every 20 ms while a round runs."""

    def __init__(self):
        self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def photo_like(rng: np.random.Generator, size: tuple[int, int]) -> Image.Image:
    """Smooth colour fields plus grain: compresses like a real picture (a flat image would be
    a few KB, pure noise twice a real one)."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    base = np.stack([127 + 100 * np.sin(x / rng.uniform(40, 200) + c) * np.cos(y / rng.uniform(40, 200))
                     for c in range(3)], axis=-1)
    grain = rng.normal(0, 6, size=(h, w, 3))
    return Image.fromarray(np.clip(base + grain, 0, 255).astype(np.uint8))


def build_run(root: Path, n_items: int, n_text: int, n_image: int, n_refs: int) -> tuple[list[BenchmarkItem], Path]:
    rng = np.random.default_rng(0)
    refs_dir = root / "refs"
    refs_dir.mkdir(parents=True)
    refs = []
    for k in range(n_refs):
        path = refs_dir / f"ref{k}.jpg"
        photo_like(rng, (1024, 768)).save(path, quality=90)
        refs.append(str(path))
    items = []
    for i in range(n_items):
        qs = [Question(id=f"t{k}", text=f"True or False: fact {k} of item {i}") for k in range(n_text)]
        qs += [Question(id=f"i{k}", text=f"True or False: looks like reference {k}", modality="image",
                        reference_image=refs[(i + k) % n_refs]) for k in range(n_image)]
        items.append(BenchmarkItem(id=f"p{i}", prompt=f"prompt {i}", category="others", questions=qs))
    run = root / "run"
    run_agent_phase(items, run, lambda it: AgentOutput(final_prompt=it.prompt), progress=False)
    (run / "images").mkdir(parents=True)
    gen = JsonlStore(run / "generate.jsonl")
    # a handful of distinct pictures, each written under every item's name: the judge reads
    # every file from disk as it would in a real run, without minutes of set-up here
    pictures = [photo_like(rng, (1328, 1328)) for _ in range(4)]
    for i, it in enumerate(items):
        pictures[i % len(pictures)].save(run / "images" / f"{it.id}.png")
        gen.append({"id": it.id, "category": it.category, "image": f"images/{it.id}.png", "error": None})
    return items, run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=120)
    ap.add_argument("--text", type=int, default=5)
    ap.add_argument("--image", type=int, default=3)
    ap.add_argument("--refs", type=int, default=20, help="reference images shared by all items")
    ap.add_argument("--concurrency", default="1,4,16", help="items in flight, comma-separated")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--chat-concurrency", type=int, default=64, help="requests in flight to the server")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    header("Judge phase at 1328x1328 against an instant loopback server", items=args.items,
           questions=f"{args.text} text + {args.image} image", concurrency=args.concurrency, rounds=args.rounds,
           chat_concurrency=args.chat_concurrency)
    tmp = Path(tempfile.mkdtemp())
    server, port = stub_server(0.0, content="true")
    try:
        items, run = build_run(tmp, args.items, args.text, args.image, args.refs)
        png = (run / "images" / "p0.png").stat().st_size / 2**20
        print(f"generated image {png:.2f} MB PNG; {args.refs} shared 1024x768 JPEG references")
        base_rss = rss_mb()
        config = ChatConfig(backend="openai", base_url=f"http://127.0.0.1:{port}/v1", model="stub",
                            cache=False, concurrency=args.chat_concurrency)
        n = [0]

        def one_round(concurrency: int) -> tuple[float, float, float, float]:
            n[0] += 1
            target = tmp / f"judge{n[0]}"
            shutil.copytree(run, target)
            judge = Judge(make_chat_model(config))  # a new judge: references are encoded again
            s0 = cpu_of(server.pid)
            with PeakRSS() as rss:
                c0, w0 = time.process_time(), time.perf_counter()
                summary = run_judge_phase(items, target, judge, concurrency=concurrency, progress=False, close=True)
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            ok = summary["ok"] if isinstance(summary, dict) else summary.ok
            if ok != len(items):
                raise SystemExit(f"only {ok}/{len(items)} items judged ok: the figures would be wrong ({summary})")
            shutil.rmtree(target)
            return wall, cpu, rss.peak - base_rss, cpu_of(server.pid) - s0

        one_round(levels[0])  # warm-up: imports, connections
        for c in levels:
            samples, peaks, served = Samples(), [], []
            for _ in range(args.rounds):
                wall, cpu, peak, server_cpu = one_round(c)
                samples.add(wall, cpu)
                peaks.append(peak)
                served.append(server_cpu)
            print(f"\nphase concurrency {c} ({args.items} items x {args.text + args.image} questions)")
            figure("items per second", [args.items / w for w in samples.wall], "items/s", goal=20)
            figure("client CPU per item", [1000 * x / args.items for x in samples.cpu], "ms",
                   higher_is_better=False)
            # what one client core sustains, whatever else the machine runs (the wall figure
            # above also pays for the stub server and other load on a shared machine)
            figure("items per client CPU-second", [args.items / x for x in samples.cpu], "items/CPU-s", goal=20)
            figure("stub server CPU per item (other process)", [1000 * x / args.items for x in served], "ms",
                   higher_is_better=False)
            figure("peak RSS above start", peaks, "MB", higher_is_better=False)
    finally:
        server.terminate()
        shutil.rmtree(tmp, ignore_errors=True)
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
