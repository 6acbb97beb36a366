"""Chat-layer benchmark: is the client ever the bottleneck, and what does a cache hit cost?

1. ``openai`` backend against a loopback stub server that answers every request after a fixed
   ``--latency`` (like a batching vLLM): N requests, ``--concurrency`` in flight. Printed: wall
   time vs the ideal ceil(N / concurrency) x latency, and requests/s. Target: wall <= 1.2 x ideal.
   One warm-up round, then ``--rounds`` timed rounds (cache off), with the client's CPU time.
2. Cache: the same N requests again at temperature 0 — all served from sqlite; ms per call.
3. Real tiny Qwen2.5-VL, one text+image request: in-process ``transformers`` vs over
   ``transformers serve`` (median of ``--reps``), prompt tokens agreeing.

    .venv/bin/python benchmarks/bench_chat.py [--requests 256] [--concurrency 32] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import _bench  # noqa: F401  (puts this checkout on sys.path)
from _bench import Samples, figure, footer, header

from orig_local.llm import ChatConfig, make_chat_model, system, user


def _serve_stub(port: int, latency: float, content: str = "ok") -> None:
    body = json.dumps({"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 1}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's server
        disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(latency)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):  # /health
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024  # the default backlog of 5 drops a burst of new connections

    Server(("127.0.0.1", port), Handler).serve_forever()


def stub_server(latency: float, content: str = "ok"):
    """The stub runs in its own process: sharing the client's GIL would measure the stub."""
    import multiprocessing

    from orig_local.llm.local_server import free_port

    port = free_port()
    proc = multiprocessing.get_context("spawn").Process(target=_serve_stub, args=(port, latency, content), daemon=True)
    proc.start()
    import httpx

    for _ in range(200):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1.0)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return proc, port


async def client_overhead(args, cache_dir: Path) -> None:
    server, port = stub_server(args.latency)
    base_url = f"http://127.0.0.1:{port}/v1"
    requests = [[user(f"question {i}")] for i in range(args.requests)]
    ideal = max(math.ceil(args.requests / args.concurrency) * args.latency, 1e-9)
    try:
        model = make_chat_model(ChatConfig(backend="openai", base_url=base_url, model="stub", cache=False,
                                           concurrency=args.concurrency))
        samples = Samples()
        for rnd in range(args.rounds + 1):  # round 0: warm-up (connections, imports)
            c0, w0 = time.process_time(), time.perf_counter()
            await asyncio.gather(*[model.chat(m) for m in requests])
            if rnd:
                samples.add(time.perf_counter() - w0, time.process_time() - c0)
        await model.aclose()
        print(f"\nopenai client: {args.requests} requests, concurrency {args.concurrency}, server latency "
              f"{args.latency:.2f}s, ideal {ideal:.2f}s")
        figure("wall / ideal", [w / ideal for w in samples.wall], "x", goal=1.2, higher_is_better=False)
        figure("requests per second", [args.requests / w for w in samples.wall], "req/s")
        figure("client CPU per request", [1000 * c / args.requests for c in samples.cpu], "ms",
               higher_is_better=False)

        cached = make_chat_model(ChatConfig(backend="openai", base_url=base_url, model="stub",
                                            concurrency=args.concurrency), cache_dir=cache_dir)
        await asyncio.gather(*[cached.chat(m) for m in requests])  # fills the cache (and warms up)
        hits = Samples()
        for _ in range(args.rounds):
            c0, w0 = time.process_time(), time.perf_counter()
            replies = await asyncio.gather(*[cached.chat(m) for m in requests])
            hits.add(time.perf_counter() - w0, time.process_time() - c0)
            assert all(r.cached for r in replies)
        await cached.aclose()
        print(f"\ncache: the {args.requests} requests again, all served from sqlite (server not contacted)")
        figure("cache hit, wall per call", [1000 * w / args.requests for w in hits.wall], "ms",
               higher_is_better=False)
        figure("cache hit, CPU per call", [1000 * c / args.requests for c in hits.cpu], "ms",
               higher_is_better=False)
    finally:
        server.terminate()


async def tiny_paths(reps: int) -> None:
    from PIL import Image

    from orig_local.llm.local_server import transformers_server
    from orig_local.paths import tiny_models_dir
    from orig_local.tiny.build import build_one

    path = build_one("qwen2_5_vl", tiny_models_dir())
    messages = [system("Be brief."), user(Image.new("RGB", (96, 96), (200, 40, 30)), "Describe it.")]

    async def timed(model) -> tuple[list[float], int]:
        await model.chat(messages, max_tokens=16)  # warm-up
        times, tokens = [], 0
        for _ in range(reps):
            reply = await model.chat(messages, max_tokens=16)
            times.append(reply.latency_s)
            tokens = reply.usage.prompt_tokens
        await model.aclose()
        return times, tokens

    local = await timed(make_chat_model(ChatConfig(backend="transformers", model=str(path), device="cpu", cache=False)))
    with transformers_server(path) as server:
        remote = await timed(make_chat_model(ChatConfig(backend="openai", base_url=server.base_url,
                                                        model=server.model, cache=False)))
    print(f"\ntiny Qwen2.5-VL (random weights), text+image, 16 new tokens, {reps} rounds after a warm-up; "
          f"prompt tokens {local[1]} in-process vs {remote[1]} served")
    figure("in-process transformers", [1000 * t for t in local[0]], "ms", higher_is_better=False)
    figure("over transformers serve", [1000 * t for t in remote[0]], "ms", higher_is_better=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of the client benchmark")
    parser.add_argument("--skip-tiny", action="store_true", help="only the client/cache part")
    args = parser.parse_args()
    header("Chat layer: client overhead, cache hits, tiny model paths", requests=args.requests,
           concurrency=args.concurrency, latency=f"{args.latency}s", rounds=args.rounds, reps=args.reps)
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(client_overhead(args, Path(tmp)))
    if not args.skip_tiny:
        asyncio.run(tiny_paths(args.reps))
    footer()
    return 0


if __name__ == "__main__":
    sys.exit(main())
