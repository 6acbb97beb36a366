"""Hostile web: every attack class of the test suite against loopback servers, one fresh
process per class, printing outcome, seconds and peak memory.

    python benchmarks/bench_hostile.py [--deadline 5] [--only NAME ...] [--repeats 1]

Goals (issues 11, 23): every attack ends as a typed failure within deadline + 1 s; peak RSS
under 300 MB in the fetching process and in each parse/decode worker; worst event-loop lag
under 300 ms; 0 escapes of the address guard. The one slow class (a decode killed at the
deadline, "(slow)") takes a full deadline; ``--only`` runs a subset, ``--skip-slow`` leaves it out.

How: this process runs the servers (127.0.0.1, plus 127.0.0.2 as an "internal" service that
no fetch may reach); each class runs in a child (``--child``) that builds the real reader or
image fetcher, fetches, and reports its result, wall time, CPU time and ``ru_maxrss`` for
itself and for its children (the parse workers). A guard escape is a hit on the internal
server, or a refused address that was not refused as ``blocked``. Nothing leaves loopback:
addresses outside it are only ever refused, and DNS is an injected resolver.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RSS_GOAL_MB = 300
LAG_GOAL_MS = 300
SLACK_S = 1.0


# --------------------------------------------------------------------------- hostile content

def gzip_stream(chunks, wbits: int = 31) -> bytes:
    comp = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return b"".join([comp.compress(c) for c in chunks] + [comp.flush()])


def zero_bomb(gigabytes: float) -> bytes:
    """``gzip, gzip`` around ``gigabytes`` GB of zeros (~7 KB for 4 GB), built in pieces."""
    inner = gzip_stream(b"\0" * 4_000_000 for _ in range(int(gigabytes * 250)))
    return gzip_stream([inner])


def near_cap_png(pixels: int) -> bytes:
    import io

    from PIL import Image, ImageDraw

    side = int(pixels ** 0.5)
    im = Image.new("RGB", (side, side), (30, 90, 160))
    ImageDraw.Draw(im).rectangle([side // 4, side // 4, side // 2, side // 2], fill=(240, 200, 20))
    buf = io.BytesIO()
    im.save(buf, "PNG", compress_level=1)
    return buf.getvalue()


def _jpeg(width: int, height: int, **save) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.linear_gradient("L").resize((width, height)).convert("RGB").save(buf, "JPEG", **save)
    return buf.getvalue()


def progressive_declaring(side: int) -> bytes:
    """~0.5 KB progressive JPEG (no chroma subsampling) whose header declares side x side."""
    import struct

    data = bytearray(_jpeg(16, 16, progressive=True, subsampling=0, quality=50))
    sof = data.find(b"\xff\xc2")
    struct.pack_into(">HH", data, sof + 5, side, side)
    return bytes(data)


def repeated_scans(n: int, width: int, height: int) -> bytes:
    data = _jpeg(width, height, progressive=True, quality=30)
    eoi = data.rfind(b"\xff\xd9")
    last = data[data.rfind(b"\xff\xda", 0, eoi):eoi]
    return data[:eoi] + last * n + b"\xff\xd9"


def png_text_chunks(n: int) -> bytes:
    import io
    import struct

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (1024, 768), (30, 90, 160)).save(buf, "PNG")
    data = buf.getvalue()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    return data[:33] + b"".join(chunk(b"tEXt", b"k%d\x00v" % i) for i in range(n)) + data[33:]


def many_headers(body: bytes):
    def route(h):
        h.send_response(200)
        h.send_header("Content-Type", "text/html; charset=utf-8")
        for i in range(10_000):
            h.send_header(f"{i:x}", "v")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return route


def endless(head: bytes, piece: bytes):
    """``head`` then ``piece`` forever (1-byte chunks, 100 Continue lines) until the client leaves."""
    def route(h):
        try:
            h.wfile.write(head)
            while not h.server.stopping.is_set():
                h.wfile.write(piece * 200)
        except OSError:
            pass
    return route


def build_routes(tmp: Path):
    from orig_local.retrieval.testserver import article_html, bomb_png, redirect, respond, stall, stream

    article = article_html("Veltrane Harbor Lighthouse", [
        "The Veltrane Harbor Lighthouse stands on a black basalt outcrop at the end of the north "
        "breakwater, where it has guided fishing boats into the harbour since 1887.",
        "Its tower is painted in teal and orange spiral bands that wind around it five times."]).encode()
    bomb = zero_bomb(4.0)
    parse_bomb = ("<html><body>" + "<p>lorem ipsum dolor</p>" * 150_000 + "</body></html>").encode()
    utf16 = b"\xff\xfe" + ("The lighthouse keeper's cottage is a museum now. " * 20).encode("utf-16-le")
    big_png = near_cap_png(15_500_000)
    return {
        "/article": respond(article),
        "/gzip-gzip": respond(bomb, headers={"Content-Encoding": "gzip, gzip"}),
        "/gzip-gzip-image": respond(bomb, "image/png", headers={"Content-Encoding": "gzip, gzip"}),
        "/three-codings": respond(gzip_stream([gzip_stream([gzip_stream([article])])]),
                                  headers={"Content-Encoding": "gzip, gzip, gzip"}),
        "/parse-bomb": respond(parse_bomb),
        "/stall": stall(60),
        "/stall-before-headers": stall(60, after_headers=False),
        "/huge": stream(50_000_000),
        "/huge-declared": stream(50_000_000, declare_length=True),
        "/loop": redirect("/loop"),
        "/to-metadata": redirect("http://169.254.169.254/latest/meta-data/"),
        "/to-private": redirect("http://10.1.2.3/secret"),
        "/to-mapped": redirect("http://[::ffff:127.0.0.2]/secret"),
        "/to-nat64": redirect("http://[64:ff9b::a9fe:a9fe]/latest/"),
        "/bomb.png": respond(bomb_png(), "image/png"),
        "/near-cap.png": respond(big_png, "image/png"),
        "/utf16-plain": respond(utf16, "text/plain"),
        # issue 23: decode budget and deadline, fetch edge cases
        "/progressive-13k.jpg": respond(progressive_declaring(13_000), "image/jpeg"),
        "/scans-2000.jpg": respond(repeated_scans(2_000, 4000, 3000), "image/jpeg"),
        "/png-20k-chunks.png": respond(png_text_chunks(20_000), "image/png"),
        "/headers-10k": many_headers(article),
        "/charset-punycode": respond(article, "text/html; charset=punycode"),
        "/drip": endless(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n",
                         b"1\r\nx\r\n"),
        "/continue-flood": endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    }


# --------------------------------------------------------------------------- classes

def classes(base: str, internal: str) -> list[dict]:
    """One spec per attack class: what to fetch, how, and which outcome is correct."""
    port = internal.rsplit(":", 1)[1].rstrip("/")
    loop_ok = {"allow_loopback": True}
    return [
        # resources: memory and time
        dict(name="gzip,gzip bomb 4 GB (page)", kind="page", url=f"{base}/gzip-gzip", fetch=loop_ok, expect="too_large"),
        dict(name="gzip,gzip bomb 4 GB (image)", kind="image", url=f"{base}/gzip-gzip-image", fetch=loop_ok, expect="too_large"),
        dict(name="3 stacked codings", kind="page", url=f"{base}/three-codings", fetch=loop_ok, expect="decode_error"),
        # the parse worker's heap cap (reader.worker_memory_mb) ends it long before the deadline
        dict(name="parse bomb 150k <p>", kind="page", url=f"{base}/parse-bomb", fetch=loop_ok, expect="too_large"),
        dict(name="stall after headers", kind="page", url=f"{base}/stall", fetch=loop_ok, expect="timeout"),
        dict(name="stall before headers", kind="page", url=f"{base}/stall-before-headers", fetch=loop_ok, expect="timeout"),
        dict(name="50 MB body, streamed", kind="page", url=f"{base}/huge", fetch=loop_ok, expect="too_large"),
        dict(name="50 MB body, declared", kind="page", url=f"{base}/huge-declared", fetch=loop_ok, expect="too_large"),
        dict(name="redirect loop", kind="page", url=f"{base}/loop", fetch=loop_ok, expect="redirects"),
        dict(name="PNG bomb 400 MP declared", kind="image", url=f"{base}/bomb.png", fetch=loop_ok, expect="bomb"),
        dict(name="near-cap PNG 15.5 MP (accepted)", kind="image", url=f"{base}/near-cap.png", fetch=loop_ok, expect="ok"),
        dict(name="UTF-16 text/plain (accepted)", kind="page", url=f"{base}/utf16-plain", fetch=loop_ok, expect="ok"),
        # issue 23: image decode budget/deadline (the killed decode is the slow part: 1 x deadline)
        dict(name="progressive JPEG 13k^2 x4 at once", kind="image", url=f"{base}/progressive-13k.jpg", fetch=loop_ok,
             expect="bomb", concurrent=4),
        dict(name="JPEG 2,000 scans", kind="image", url=f"{base}/scans-2000.jpg", fetch=loop_ok, expect="bomb"),
        dict(name="JPEG 2,000 scans, cap off (slow)", kind="image", url=f"{base}/scans-2000.jpg", expect="timeout",
             fetch={**loop_ok, "max_jpeg_scans": 100_000, "decode_memory_mb": 2000}),
        dict(name="PNG 20k text chunks (accepted)", kind="image", url=f"{base}/png-20k-chunks.png", fetch=loop_ok,
             expect="ok"),
        # issue 23: fetch edge cases
        dict(name="10k response headers (accepted)", kind="page", url=f"{base}/headers-10k", fetch=loop_ok, expect="ok"),
        dict(name="charset=punycode (accepted)", kind="page", url=f"{base}/charset-punycode", fetch=loop_ok,
             expect="ok"),
        dict(name="1-byte chunk drip", kind="page", url=f"{base}/drip", fetch=loop_ok, expect="timeout"),
        dict(name="100 Continue flood", kind="page", url=f"{base}/continue-flood", fetch=loop_ok, expect="timeout"),
        dict(name="punycode host xn--ls8h", kind="page", url="http://xn--ls8h.test/", expect="invalid_url"),
        dict(name="punycode host xn--", kind="page", url="http://xn--/", expect="invalid_url"),
        dict(name="punycode host xn--localhost-", kind="image", url="http://xn--localhost-/a.png", expect="invalid_url"),
        # the address guard (loopback refused unless a class allows it for its first hop)
        dict(name="loopback literal", kind="page", url=f"{internal}secret", expect="blocked"),
        dict(name="IPv4-mapped loopback", kind="page", url=f"http://[::ffff:127.0.0.2]:{port}/secret", expect="blocked"),
        dict(name="IPv4-compatible loopback", kind="page", url=f"http://[::127.0.0.2]:{port}/secret", expect="blocked"),
        dict(name="NAT64 loopback", kind="page", url=f"http://[64:ff9b::7f00:2]:{port}/secret", expect="blocked"),
        dict(name="NAT64 local-use prefix", kind="page", url=f"http://[64:ff9b:1::a00:1]:{port}/", expect="blocked"),
        dict(name="6to4 loopback", kind="page", url=f"http://[2002:7f00:2::]:{port}/secret", expect="blocked"),
        dict(name="Teredo to 10.0.0.1", kind="page", url=f"http://[2001:0:808:808::f5ff:fffe]:{port}/", expect="blocked"),
        dict(name="site-local fec0::/10", kind="page", url=f"http://[fec0::1]:{port}/", expect="blocked"),
        dict(name="name -> loopback", kind="page", url=f"http://internal.test:{port}/secret",
             resolver=[["127.0.0.2"]], expect="blocked"),
        dict(name="name -> public + private", kind="page", url=f"http://mixed.test:{port}/secret",
             resolver=[["93.184.216.34", "10.0.0.7"]], expect="blocked"),
        dict(name="redirect -> metadata", kind="page", url=f"{base}/to-metadata", fetch=loop_ok, expect="blocked"),
        dict(name="redirect -> private", kind="page", url=f"{base}/to-private", fetch=loop_ok, expect="blocked"),
        dict(name="redirect -> NAT64 metadata", kind="page", url=f"{base}/to-nat64", fetch=loop_ok, expect="blocked"),
        # DNS rebinding: checked answer 127.0.0.1 (allowed here), later answers the internal host
        dict(name="DNS rebinding", kind="page", url=f"http://rebind.test:{base.rsplit(':', 1)[1]}/article",
             resolver=[["127.0.0.1"], ["127.0.0.2"]], fetch=loop_ok, expect="ok", rebinding=True),
    ]


# --------------------------------------------------------------------------- child

def child(spec: dict) -> None:
    import asyncio

    from orig_local.retrieval.base import FetchFailure
    from orig_local.retrieval.config import FetchConfig, ReaderConfig
    from orig_local.retrieval.httpfetch import HttpSession
    from orig_local.retrieval.images import WebImageFetcher
    from orig_local.retrieval.reader import WebPageReader

    deadline = spec["deadline"]
    fetch_cfg = FetchConfig(timeout_s=deadline, per_host_interval_s=0, **spec.get("fetch", {}))
    resolver = None
    if spec.get("resolver"):
        import ipaddress

        answers, queries = spec["resolver"], []

        async def resolver(host, port):  # noqa: F811 - the injected DNS
            queries.append(host)
            return [ipaddress.ip_address(a) for a in answers[min(len(queries), len(answers)) - 1]]

    async def run():
        session = HttpSession(fetch_cfg, resolver=resolver)
        reader = WebPageReader(ReaderConfig(timeout_s=deadline, max_bytes=5_000_000), session)
        fetcher = WebImageFetcher(fetch_cfg, session)
        try:
            if spec["kind"] == "page":  # start the parse worker first: not part of the attack
                await asyncio.to_thread(reader.workers.warm)
            elif fetcher.decoder.workers is not None:  # likewise the image decode worker
                await asyncio.to_thread(fetcher.decoder.workers.warm)
            lag, stop = 0.0, False

            async def probe():  # ticks every 10 ms; records the worst extra wait
                nonlocal lag
                while not stop:
                    t = time.monotonic()
                    await asyncio.sleep(0.01)
                    lag = max(lag, time.monotonic() - t - 0.01)

            ticker = asyncio.create_task(probe())
            start, cpu = time.monotonic(), time.process_time()
            if spec["kind"] == "page":
                result = await reader.read(spec["url"])
            else:  # several at once: the decode memory budget must hold across them
                results = await asyncio.gather(*(fetcher.fetch(spec["url"]) for _ in range(spec.get("concurrent", 1))))
                result = next((r for r in results if not isinstance(r, FetchFailure) or r.kind != spec["expect"]),
                              results[0])
            seconds, cpu = time.monotonic() - start, time.process_time() - cpu
            stop = True
            await ticker
        finally:
            await reader.aclose()
            await fetcher.aclose()
            await session.aclose()
        outcome = result.kind if isinstance(result, FetchFailure) else "ok"
        detail = result.detail if isinstance(result, FetchFailure) else type(result).__name__
        nul = "\x00" in getattr(result, "text", "")
        return outcome, detail[:90], seconds, cpu, nul, lag

    outcome, detail, seconds, cpu, nul, lag = asyncio.run(run())
    me = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps({"outcome": outcome, "detail": detail, "seconds": seconds, "cpu": cpu,
                      "rss_mb": me, "worker_rss_mb": kids, "nul": nul, "lag_ms": lag * 1000}))


# --------------------------------------------------------------------------- parent

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deadline", type=float, default=5.0, help="reader/fetcher timeout_s (s)")
    ap.add_argument("--only", nargs="*", help="run classes whose name contains one of these")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--skip-slow", action="store_true", help="leave out the classes marked (slow)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return 0

    from orig_local.retrieval.testserver import LoopbackServer

    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; "
          f"deadline {args.deadline:g} s; one fresh process per class; repeats {args.repeats}")
    with tempfile.TemporaryDirectory() as tmp:
        routes = build_routes(Path(tmp))
        internal_hits = {"n": 0}

        def internal_route(h):  # anything that reaches this host escaped the guard
            internal_hits["n"] += 1
            h.send_response(200)
            h.send_header("Content-Length", "6")
            h.end_headers()
            h.wfile.write(b"secret")

        server = LoopbackServer(routes).start()
        internal = _internal_server(internal_route)
        try:
            specs = classes(server.url(""), f"http://127.0.0.2:{internal.server_address[1]}/")
            if args.only:
                specs = [s for s in specs if any(o.lower() in s["name"].lower() for o in args.only)]
            if args.skip_slow:
                specs = [s for s in specs if "(slow)" not in s["name"]]
            rows = [run_class(spec, args, internal_hits) for spec in specs]
        finally:
            internal.shutdown()
            server.stop()
    return report(rows, args.deadline)


def _internal_server(route):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            route(self)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.2", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return srv


def run_class(spec: dict, args, internal_hits: dict) -> dict:
    runs = []
    for _ in range(args.repeats):
        before = internal_hits["n"]
        payload = json.dumps({**spec, "deadline": args.deadline})
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run([sys.executable, __file__, "--child", payload], capture_output=True, text=True,
                              timeout=args.deadline + 60, env=env)
        if proc.returncode != 0 or not proc.stdout.strip():
            runs.append({"outcome": "CRASH", "detail": (proc.stderr.strip().splitlines() or ["?"])[-1][:90],
                         "seconds": float("nan"), "cpu": float("nan"), "rss_mb": float("nan"),
                         "worker_rss_mb": float("nan"), "nul": False, "lag_ms": float("nan"), "escaped": internal_hits["n"] > before})
            continue
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["escaped"] = internal_hits["n"] > before or (spec["expect"] == "blocked" and row["outcome"] != "blocked")
        runs.append(row)
    return {"spec": spec, "runs": runs}


def report(rows: list[dict], deadline: float) -> int:
    print(f"\n{'class':34s} {'expected':12s} {'outcome':12s} {'s (min/med/max)':>20s} {'CPU s':>6s} "
          f"{'RSS MB':>7s} {'worker':>7s} {'lag ms':>6s}  ok")
    failures = escapes = 0
    worst_s = worst_rss = worst_lag = 0.0
    for row in rows:
        spec, runs = row["spec"], row["runs"]
        secs = [r["seconds"] for r in runs]
        outcome = runs[-1]["outcome"]
        rss = max(r["rss_mb"] for r in runs)
        wrss = max(r["worker_rss_mb"] for r in runs)
        ok = (all(r["outcome"] == spec["expect"] for r in runs) and max(secs) <= deadline + SLACK_S
              and rss < RSS_GOAL_MB and wrss < RSS_GOAL_MB and not any(r["escaped"] or r["nul"] for r in runs)
              and max(r["lag_ms"] for r in runs) < LAG_GOAL_MS)
        failures += not ok
        escapes += sum(r["escaped"] for r in runs)
        lag = max(r["lag_ms"] for r in runs)
        worst_s, worst_rss, worst_lag = max(worst_s, max(secs)), max(worst_rss, rss, wrss), max(worst_lag, lag)
        spread = f"{min(secs):.2f}/{statistics.median(secs):.2f}/{max(secs):.2f}"
        print(f"{spec['name']:34s} {spec['expect']:12s} {outcome:12s} {spread:>20s} "
              f"{statistics.median(r['cpu'] for r in runs):6.2f} {rss:7.0f} {wrss:7.0f} {lag:6.0f}  {'yes' if ok else 'NO'}"
              + ("" if ok else f"   ({runs[-1]['detail']})"))
    print(f"\nslowest class {worst_s:.2f} s   (goal: <= deadline + {SLACK_S:g} s = {deadline + SLACK_S:g} s)")
    print(f"peak RSS      {worst_rss:.0f} MB  (goal: < {RSS_GOAL_MB} MB per process: fetcher, and each parse worker)")
    print(f"guard escapes {escapes}        (goal: 0)")
    print(f"event-loop lag {worst_lag:.0f} ms worst (goal: < {LAG_GOAL_MS} ms; a 10 ms ticker ran beside every fetch)")
    print(f"classes off goal: {failures} of {len(rows)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
