"""Image decoding under a real budget and a real deadline (issue 23 point 1): progressive and
multi-scan JPEGs are budgeted by their full-size coefficient buffers or refused, a decode that
overruns the deadline is killed in its worker process, and header planning of a PNG with
thousands of chunks stays off the event loop. Images are built here at realistic sizes."""

from __future__ import annotations

import asyncio
import io
import struct
import time
import zlib

import pytest
from PIL import Image

from orig_local.retrieval.base import FetchedImage, FetchFailure
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.images import ImageDecoder, decode_plan

SLACK = 1.5  # scheduling slack on a busy 2-core machine


def photo(width: int = 1024, height: int = 768, **save) -> bytes:
    im = Image.linear_gradient("L").resize((width, height)).convert("RGB")
    buf = io.BytesIO()
    im.save(buf, "JPEG", **save)
    return buf.getvalue()


def declaring(side: int, progressive: bool = True) -> bytes:
    """A ~0.5 KB JPEG whose frame header declares ``side`` x ``side`` (no chroma subsampling)."""
    data = bytearray(photo(16, 16, progressive=progressive, subsampling=0, quality=50))
    sof = data.find(b"\xff\xc2" if progressive else b"\xff\xc0")
    struct.pack_into(">HH", data, sof + 5, side, side)
    return bytes(data)


def repeated_scans(n: int, width: int = 1024, height: int = 768) -> bytes:
    """A progressive JPEG whose last scan is repeated ``n`` times (each repeat is a full pass)."""
    data = photo(width, height, progressive=True, quality=30)
    eoi = data.rfind(b"\xff\xd9")
    last = data[data.rfind(b"\xff\xda", 0, eoi):eoi]
    return data[:eoi] + last * n + b"\xff\xd9"


def png_with_text_chunks(n: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (1024, 768), (30, 90, 160)).save(buf, "PNG")
    data = buf.getvalue()

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    head = 8 + 25  # signature + IHDR
    return data[:head] + b"".join(chunk(b"tEXt", b"k%d\x00v" % i) for i in range(n)) + data[head:]


@pytest.fixture
async def decoder():
    d = ImageDecoder(FetchConfig(timeout_s=2.0, max_side=512))
    await asyncio.to_thread(d.workers._take)  # start one worker ahead (its start-up is not under test)
    yield d
    await d.aclose()


def test_progressive_jpeg_is_budgeted_by_its_full_declared_size():
    cfg = FetchConfig()
    plan = decode_plan(declaring(13_000), cfg)
    assert isinstance(plan, str) and "coefficient" in plan, plan  # ~1 GB of coefficients, not 24 MB
    baseline = decode_plan(declaring(13_000, progressive=False), cfg)
    assert not isinstance(baseline, str) and baseline[2] < 64_000_000  # reduced-scale decode is cheap
    real = decode_plan(photo(progressive=True), cfg)  # an ordinary progressive photo is admitted
    assert not isinstance(real, str) and real[2] > 1024 * 768 * 2  # with its coefficient buffers


async def test_four_progressive_bombs_at_once_are_refused_before_decoding(decoder):
    results = await asyncio.gather(*(decoder.decode(declaring(13_000), f"u{i}") for i in range(4)))
    assert all(isinstance(r, FetchFailure) and r.kind == "bomb" for r in results), results
    assert decoder.in_use == 0


async def test_realistic_photos_decode_in_the_worker(decoder):
    for data in (photo(), photo(progressive=True), photo(4000, 3000, progressive=True)):
        got = await decoder.decode(data, "u")
        assert isinstance(got, FetchedImage) and max(got.image.size) == 512, got


def test_too_many_scans_are_refused():
    plan = decode_plan(repeated_scans(2_000, 256, 192), FetchConfig())
    assert isinstance(plan, str) and "scans" in plan


async def test_a_decode_past_the_deadline_is_killed_and_the_next_one_decodes():
    """2,000 full passes over a 4000x3000 image: the worker is killed at the deadline."""
    d = ImageDecoder(FetchConfig(timeout_s=1.0, max_side=512, max_jpeg_scans=10_000, decode_memory_mb=2000))
    try:
        await asyncio.to_thread(d.workers._take)
        slow = repeated_scans(2_000, 4000, 3000)
        start = time.monotonic()
        got = await d.decode(slow, "slow", deadline=time.monotonic() + 1.0)
        elapsed = time.monotonic() - start
        assert isinstance(got, FetchFailure) and got.kind == "timeout", got
        assert elapsed < 1.0 + ImageDecoder.DECODE_GRACE_S + SLACK, elapsed
        ok = await d.decode(photo(), "next")
        assert isinstance(ok, FetchedImage), ok
    finally:
        await d.aclose()


async def test_png_chunk_planning_does_not_stall_the_event_loop(decoder):
    data = png_with_text_chunks(20_000)
    lag, stop = 0.0, False

    async def probe():
        nonlocal lag
        while not stop:
            t = time.monotonic()
            await asyncio.sleep(0.01)
            lag = max(lag, time.monotonic() - t - 0.01)

    ticker = asyncio.create_task(probe())
    try:
        got = await decoder.decode(data, "chunks")
    finally:
        stop = True
        await ticker
    assert isinstance(got, (FetchedImage, FetchFailure)), got
    assert lag < 0.3, f"event loop stalled {lag * 1000:.0f} ms"


async def test_closing_the_decoder_stops_its_workers():
    d = ImageDecoder(FetchConfig())
    await d.decode(photo(), "u")
    procs = [w.process for w in d.workers._all]
    assert procs and all(p.poll() is None for p in procs)
    await d.aclose()
    assert all(p.poll() is not None for p in procs)
