"""Safe image fetching: download (bounded, guarded) -> type checks -> verify -> decode under a
pixel cap -> EXIF transpose, RGB, downscale -> content hash + dHash -> duplicate drop.

Memory is bounded twice. Per decode: the header's size is read before any pixel is decoded;
JPEGs are decoded at a reduced scale (``draft``) and the cap applies to the pixels actually
decoded (``fetch.max_pixels``), so a near-cap image costs at most ~``max_pixels`` x 4 bytes x a
few copies. A progressive or multi-scan JPEG costs more: libjpeg keeps a coefficient buffer for
the *full declared* size whatever the reduced scale (a 1.3 KB progressive JPEG declaring
13000x13000 took 1 GB), so its estimate includes that buffer, and one whose estimate exceeds
``fetch.decode_memory_mb`` is refused; a JPEG with more than ``fetch.max_jpeg_scans`` scans is
refused (each scan is another pass over the image). Across decodes: an :class:`ImageDecoder`
admits a decode only while the estimated memory of all decodes in flight stays within
``fetch.decode_memory_mb``; the others wait (within the fetch deadline).

Time is bounded by running each decode in a worker process (``parse_worker --images``) that is
killed at the deadline, as page parsing is; the header planning runs in a thread, off the
event loop (a PNG with thousands of text chunks takes a second to open). Pillow's own global
``MAX_IMAGE_PIXELS`` is left alone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

from orig_local.imagehash import Fingerprint, fingerprint, same_picture
from orig_local.retrieval.base import FetchedImage, FetchFailure
from orig_local.retrieval.config import FetchConfig
from orig_local.retrieval.httpfetch import HttpSession
from orig_local.retrieval.imagedecode import ACCEPT, NEUTRAL_TYPES, decode_image, decode_plan
from orig_local.retrieval.parse_pool import ParseTimeout, ParseWorkers

log = logging.getLogger(__name__)


class ImageDecoder:
    """Runs :func:`decode_image` in worker processes under a shared memory budget and a
    deadline: a decode starts only while the estimated bytes of all decodes in flight stay
    within ``decode_memory_mb`` (one decode is always admitted when nothing else runs); waiting
    and decoding together end at the deadline (the worker is killed), plus
    ``DECODE_GRACE_S`` for a decode admitted at the last moment. ``fetch.decode_workers`` = 0
    decodes in a thread instead (no deadline on the decode itself)."""

    DECODE_GRACE_S = 0.5

    def __init__(self, config: FetchConfig, workers: ParseWorkers | None = None):
        self.config = config
        self.budget = config.decode_memory_mb * 1_000_000
        self.in_use = 0
        self._cond: tuple[object, asyncio.Condition] | None = None
        self._owns_workers = workers is None
        if workers is None and config.decode_workers != 0:
            workers = ParseWorkers(config.decode_workers or min(2, os.cpu_count() or 1), images=True)
        self.workers = workers

    def prestart(self) -> None:
        """Start a decode worker now, so its start-up overlaps the download."""
        if self.workers is not None:
            self.workers.prestart()

    async def aclose(self) -> None:
        if self.workers is not None and self._owns_workers:
            await asyncio.to_thread(self.workers.close)

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._cond[0] is not loop:
            self._cond = (loop, asyncio.Condition())
        return self._cond[1]

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "", deadline: float | None = None) -> FetchedImage | FetchFailure:
        """``deadline`` (``time.monotonic()``) bounds the wait for budget and the decode;
        default: ``timeout_s`` from now."""
        if deadline is None:
            deadline = time.monotonic() + self.config.timeout_s
        plan = await asyncio.to_thread(decode_plan, data, self.config)  # headers: off the loop
        if isinstance(plan, str):
            return FetchFailure(url=url, kind="bomb", detail=plan)
        need = min(plan[2], self.budget)
        cond = self._condition()
        async with cond:
            while self.in_use and self.in_use + need > self.budget:
                left = deadline - time.monotonic()
                if left <= 0:
                    return FetchFailure(url=url, kind="timeout", detail="waited too long for decode memory")
                try:
                    await asyncio.wait_for(cond.wait(), left)
                except asyncio.TimeoutError:
                    return FetchFailure(url=url, kind="timeout", detail="waited too long for decode memory")
            self.in_use += need
        try:
            if self.workers is None:
                return await asyncio.to_thread(decode_image, data, url, self.config, page_url, content_type)
            request = ("image", data, url, self.config, page_url, content_type)
            try:
                return await self.workers.submit(request, url, max(deadline, time.monotonic() + self.DECODE_GRACE_S),
                                                 startup_s=ParseWorkers.STARTUP_S)
            except ParseTimeout:
                return FetchFailure(url=url, kind="timeout", detail=f"decoding did not finish within the "
                                    f"{self.config.timeout_s:g} s deadline")
        finally:
            async with cond:
                self.in_use -= need
                cond.notify_all()


class Deduplicator:
    """Drops exact (sha256) and near (guarded dHash within ``max_distance`` bits:
    :func:`~orig_local.imagehash.same_picture`) duplicates of images seen since the last
    :meth:`reset`. Semantic near-duplicates are the CLIP dedup's job."""

    def __init__(self, max_distance: int = 6):
        self.max_distance = max_distance
        self.reset()

    def reset(self) -> None:
        self._sha: dict[str, str] = {}
        self._seen: list[tuple[Fingerprint, str]] = []

    def check(self, image: FetchedImage) -> FetchFailure | None:
        if image.bytes_sha256 in self._sha:
            return FetchFailure(url=image.url, kind="duplicate", detail=f"same bytes as {self._sha[image.bytes_sha256]}")
        if image.dhash is not None and image.image is not None:
            fp = fingerprint(image.image, image.dhash)
            for other, other_url in self._seen:
                same, why = same_picture(fp, other, self.max_distance)
                if same:
                    return FetchFailure(url=image.url, kind="duplicate", detail=f"near-duplicate of {other_url} ({why})")
        return None

    def add(self, image: FetchedImage) -> None:
        self._sha[image.bytes_sha256] = image.url
        if image.dhash is not None and image.image is not None:
            self._seen.append((fingerprint(image.image, image.dhash), image.url))


class WebImageFetcher:
    """Downloads and decodes images from the web (see the module doc). ``fetch_bytes`` is the
    network half (recorded into snapshots); ``decode`` the deterministic half."""

    def __init__(self, config: FetchConfig | None = None, session: HttpSession | None = None):
        self.config = config or FetchConfig()
        self.session = session or HttpSession(self.config)
        self.decoder = ImageDecoder(self.config)

    async def decode(self, data: bytes, url: str, page_url: str | None = None,
                     content_type: str = "") -> FetchedImage | FetchFailure:
        return await self.decoder.decode(data, url, page_url, content_type)

    async def aclose(self) -> None:
        """Stop the decode workers (the session is closed by whoever made it)."""
        await self.decoder.aclose()

    async def fetch_bytes(self, url: str) -> tuple[bytes, str] | FetchFailure:
        cfg = self.config
        raw = await self.session.get(url, max_bytes=cfg.max_bytes, max_redirects=cfg.max_redirects,
                                     timeout_s=cfg.timeout_s, accept=ACCEPT)
        if isinstance(raw, FetchFailure):
            return raw
        if raw.status >= 400:
            return FetchFailure(url=url, kind="http_error", detail=f"HTTP {raw.status}")
        ctype = raw.content_type
        if not ctype.startswith("image/") and ctype not in NEUTRAL_TYPES:
            return FetchFailure(url=url, kind="not_image", detail=f"Content-Type {ctype}")
        if not raw.body:
            return FetchFailure(url=url, kind="empty", detail="no bytes")
        return raw.body, ctype

    async def fetch(self, url: str, page_url: str | None = None) -> FetchedImage | FetchFailure:
        deadline = time.monotonic() + self.config.timeout_s  # download, decode memory and decoding
        self.decoder.prestart()
        got = await self.fetch_bytes(url)
        if isinstance(got, FetchFailure):
            return got
        data, ctype = got
        return await self.decoder.decode(data, url, page_url, ctype, deadline=max(deadline, time.monotonic()))
